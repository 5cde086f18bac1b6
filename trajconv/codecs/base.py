"""The codec protocol (docs/design.md §5) and what every codec shares.

A codec binds a harness's reader, writer and discovery. ``CODEC`` objects are
registered under the ``trajconv.codecs`` entry-point group and loaded lazily;
a codec module imports its reader and writer only when they are used.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from trajconv.errors import FormatError, LimitError, UnsafePathError, UsageError, writing

if TYPE_CHECKING:  # listing codecs (`trajconv codecs`) need not import pydantic
    from trajconv.snapshot.diagnostics import Diagnostics
    from trajconv.snapshot.models import Diagnostic, Snapshot, ToolResult


@dataclass(frozen=True)
class Limits:
    """Bounds every reader enforces; each breach is a LimitError naming the limit.

    Defaults can be raised per call or with ``TRAJCONV_<NAME>`` environment variables.
    """

    max_session_bytes: int = 4 * 1024**3
    """Total native bytes of one session (journal, sidecars, blobs)."""
    max_line_bytes: int = 256 * 1024**2
    """One line, event, row or blob."""
    max_json_depth: int = 256
    """Nesting depth of one JSON value."""
    max_records: int = 10_000_000
    """Records in one Snapshot."""
    max_expansion: int = 8
    """What a reader may expand one native session into, as a multiple of the native bytes
    it read (at least :data:`EXPANSION_FLOOR`): a Cursor message blob referenced N times
    counts N times, so a small store cannot become a huge Snapshot."""
    stream_json_bytes: int = 8 * 1024**2
    """A JSON document larger than this is parsed as a stream (fx schema 1/2 ``session.json``,
    which holds the whole history), not whole."""

    @classmethod
    def from_env(cls, **overrides: int | None) -> Limits:
        values: dict[str, int] = {}
        for name in cls.__dataclass_fields__:
            var = f"TRAJCONV_{name.upper()}"
            env = os.environ.get(var)
            if env is not None:
                if not env.strip().isdigit() or int(env) < 1:
                    raise UsageError(f"{var}={env!r}: a limit is a whole number above 0")
                values[name] = int(env)
            given = overrides.get(name)
            if given is not None:
                if given < 1:
                    flag = "--" + name.replace("_", "-")
                    raise UsageError(f"{flag} {given}: a limit is a whole number above 0")
                values[name] = given
        return cls(**values)

    def check(self, name: str, value: int, file: str | Path, line: int | None = None) -> None:
        if value > getattr(self, name):
            raise LimitError(file, name, getattr(self, name), line=line)

    def check_expansion(self, expanded: int, read: int, file: str | Path) -> None:
        """``expanded`` bytes projected from ``read`` native bytes: over
        ``max_expansion`` times ``max(read, EXPANSION_FLOOR)`` is a LimitError."""
        if expanded > self.max_expansion * max(read, EXPANSION_FLOOR):
            raise LimitError(file, "max_expansion", self.max_expansion)


EXPANSION_FLOOR = 16 * 1024**2
"""The native size ``max_expansion`` multiplies for a session smaller than this."""


def json_depth_ok(value: Any, limit: int) -> bool:
    """True when ``value`` nests no deeper than ``limit`` (iterative, no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


@dataclass(frozen=True)
class SessionRef:
    """One session found by ``discover``: cheap facts only."""

    harness: str
    session_id: str
    path: Path
    title: str | None = None
    cwd: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    size: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "path": str(self.path)}


@dataclass(frozen=True)
class ExportFile:
    """One file of an export, relative to OUT (``home/...`` or a readout).

    ``data`` is the bytes, or a function giving them in pieces: the export writer
    calls it once and writes each piece as it comes, so a large file is never held.
    """

    path: str
    data: bytes | Callable[[], Iterable[bytes]]
    mode: int = 0o600

    def chunks(self) -> Iterable[bytes]:
        return (self.data,) if isinstance(self.data, bytes) else self.data()

    def read(self) -> bytes:
        """All the bytes at once (tests and small files)."""
        return b"".join(self.chunks())


@dataclass
class ExportPlan:
    """What a writer wants written; the shared machinery writes it atomically.

    ``target`` and ``snapshot_id`` are the centre's to fill (:meth:`LazyCodec.plan`: the
    codec's name and the Snapshot it was given), so no writer can name another; so is
    ``resume_argv``, the codec's ``resume`` command for ``session_id``, unless the writer
    gives one (a session the harness opens by another name)."""

    session_id: str
    files: list[ExportFile]
    session_paths: list[str]
    """Home-relative folders or files that make up the session; prepare refuses if any exists."""
    resume_argv: list[str] = field(default_factory=list)
    """Empty: the codec's ``resume`` command for ``session_id`` (filled by the centre)."""
    diagnostics: tuple[Diagnostic, ...] = ()
    dir_modes: dict[str, int] = field(default_factory=dict)
    """Home-relative folders and the modes the harness gives them."""
    prepare_script: str | None = None
    """A codec's own prepare.py (database targets); the generic one when ``None``."""
    installable: bool = True
    """False for a document format (ATIF) that no harness resumes from: the export has no
    ``prepare.py``, and its manifest names no prepare or resume command."""
    notes: list[str] = field(default_factory=list)
    try_home: str | None = "home"
    """OUT-relative folder to use as HOME to try the export before installing it; ``None``
    when there is none (a database target's session exists once prepare.py wrote it)."""
    children_written: tuple[str, ...] = ()
    """The ids (``Child.id``) of the Snapshot's sub-agents this plan writes as the target's
    own children; every other child is counted as ``untranslated-subagent`` by
    :func:`name_untranslated_children` (``trajconv.write`` calls it for every plan)."""
    target: str = field(init=False, default="")
    """The codec that wrote the plan (filled by the centre)."""
    snapshot_id: str = field(init=False, default="")
    """The id of the Snapshot the plan writes (filled by the centre)."""


def home_folders(*folders: str, shared: str = "") -> dict[str, int]:
    """An export's ``dir_modes``: each of ``folders`` (home-relative) and every folder above
    it, 0o700 (a session's own folders, the user's alone), but ``shared`` and every folder
    above it 0o755 (what a harness keeps for all its sessions and makes world-readable)."""
    public = _with_parents(shared) if shared else []
    return {
        **{path: 0o700 for folder in folders for path in _with_parents(folder)},
        **dict.fromkeys(public, 0o755),
    }


def _with_parents(folder: str) -> list[str]:
    parts = PurePosixPath(folder).parts
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def folder_plan(
    folder: str,
    files: list[ExportFile],
    *,
    diags: Diagnostics,
    notes: list[str],
    shared: str = "",
    below: Iterable[str] = (),
    children_written: tuple[str, ...] = (),
) -> ExportPlan:
    """The plan of a session a harness keeps as one folder of its home named by the session
    id (``folder``, home-relative): that folder is the session (prepare refuses when it
    exists), and it, the folders ``below`` it and every folder above it get the modes
    :func:`home_folders` gives (``shared`` is the harness's folder of all sessions)."""
    return ExportPlan(
        session_id=PurePosixPath(folder).name,
        files=files,
        session_paths=[folder],
        diagnostics=diags.to_models(),
        dir_modes=home_folders(folder, *below, shared=shared),
        notes=notes,
        children_written=children_written,
    )


@dataclass(frozen=True)
class Export:
    out_dir: Path
    target: str
    session_id: str
    snapshot_id: str
    manifest: dict[str, Any]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def resume_argv(self) -> list[str]:
        resume = self.manifest["resume"]
        return list(resume["argv"]) if resume is not None else []

    @property
    def installable(self) -> bool:
        """Whether the export has a ``prepare.py`` that installs it into a home."""
        return self.manifest["prepare"] is not None

    def try_first(self) -> str:
        """A shell line that tries the export without touching the real home."""
        import shlex

        resume = " ".join(shlex.quote(a) for a in self.resume_argv)
        out = self.out_dir.resolve()
        home = self.manifest["resume"].get("home")
        if home:
            return f"HOME={shlex.quote(str(out / home))} {resume}"
        prepare = shlex.quote(str(out / "prepare.py"))
        return f'H=$(mktemp -d) && python {prepare} --home "$H" && HOME="$H" {resume}'


# -- what a codec declares about its harness (the protocol; docs/design.md "Codecs") -----


@dataclass(frozen=True)
class HomeSpec:
    """One place a harness keeps its sessions: a folder under the user's home, which an
    environment variable may name instead. A format with no home (ATIF) declares none: the
    current folder is never a home."""

    folder: str
    """Relative to the user's home, POSIX separators (``.claude``, ``.local/share/opencode``)."""
    label: str
    """The harness's own name, for messages (``Claude Code``)."""
    env: tuple[str, ...] = ()
    """Environment variables that name the folder itself, first set wins (``CLAUDE_CONFIG_DIR``)."""

    def resolve(self, user_home: Path | None = None) -> Path:
        """This home on this machine: the first set ``env`` variable, else ``user_home`` (or
        the user's home) joined with ``folder``."""
        if user_home is None:
            for var in self.env:
                value = os.environ.get(var)
                if value:
                    return Path(value).expanduser()
        return (user_home if user_home is not None else Path.home()) / self.folder

    def within(self, path: Path) -> Path:
        """``path`` given by a user as ``--home``: a user home (the folder is joined) or the
        harness folder itself (kept)."""
        folder = Path(self.folder)
        if path.parts[-len(folder.parts) :] == folder.parts:
            return path
        return path / folder


#: how sure a codec is that a path is its own (``Claim.confidence``)
CERTAIN = 100
"""A file or folder name, or a header, that only this harness writes."""
LIKELY = 60
"""The right shape (a JSONL whose first line has this harness's keys) that another may share."""
POSSIBLE = 20
"""A generic container (a folder holding JSON files) this codec can read."""


@dataclass(frozen=True)
class Claim:
    """A codec's answer to "is this path yours?": how sure it is and what it found."""

    confidence: int
    """:data:`CERTAIN`, :data:`LIKELY` or :data:`POSSIBLE` (higher wins; a tie is listed, never
    guessed)."""
    what: str
    """``session`` (one session's files), ``home`` (a native home with sessions) or ``store``."""
    sessions: tuple[str, ...] = ()
    """Session ids seen while deciding, when that was cheap (may be empty)."""


@dataclass(frozen=True)
class Capabilities:
    """What a harness's native format can hold, so the centre never special-cases a name."""

    subagents: bool = False
    """Child sessions (sub-agents) linked to the call that spawned them."""
    reasoning: bool = False
    """Reasoning records (of any model) kept and replayed."""
    tool_status: bool = False
    """A tool result's failure flag."""
    exit_code: bool = False
    """A command's exit status as a field."""
    images: bool = False
    """Images in messages."""
    resumable: bool = True
    """Its exports install into a home and resume in the harness (False: a document format)."""


@dataclass(frozen=True)
class WriteOption:
    """One typed, documented writer option. The CLI shows it as ``--<codec>-<name>`` (with
    ``_`` as ``-``) in ``--help``, rejects it for other targets, and passes it to the writer's
    ``plan`` as the keyword ``name``."""

    name: str
    help: str
    default: str | None = None
    choices: tuple[str, ...] | None = None
    """The allowed values, when there is a fixed set."""

    def flag(self, codec: str) -> str:
        return f"--{codec}-{self.name.replace('_', '-')}"


@runtime_checkable
class Codec(Protocol):
    name: str
    aliases: tuple[str, ...]
    description: str
    can_read: bool
    can_write: bool
    can_discover: bool
    homes: tuple[HomeSpec, ...]
    capabilities: Capabilities
    write_options: tuple[WriteOption, ...]

    def default_home(self) -> Path:
        """The native home this harness uses on this machine (honouring its env vars)."""
        ...

    def claims(self, path: Path) -> Claim | None:
        """Whether ``path`` (a session file or folder, a store, a home) is this harness's,
        cheaply (names and a first line, never a whole read); ``None`` when it is not."""
        ...

    def discover(self, home: Path) -> list[SessionRef]: ...

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot: ...

    def plan(
        self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any
    ) -> ExportPlan: ...


#: Reader codes that count a unit the reader could not make out at all (as against a unit
#: it recognised and left out on purpose, such as ``lifecycle-dropped`` or ``rewound``).
UNRECOGNISED = frozenset({"unknown-kind", "invalid-line", "torn-line", "blank-line"})


def refuse_unrecognised(snapshot: Snapshot, path: Path, harness: str) -> None:
    """Refuse what a reader recognised nothing of: no record, no sub-agent, and every unit
    it saw counted as one it could not make out. Such a Snapshot is another harness's file
    read as this one's (issue 33: a Codex rollout read ``--from claude`` was written as an
    empty session, exit 0), not an empty session; one check for every reader."""
    from trajconv.snapshot.diagnostics import lookup as lookup_code

    if len(snapshot.records) or snapshot.children:
        return
    counted = [d for d in snapshot.diagnostics if lookup_code(d.code).units]
    if not counted or any(d.code not in UNRECOGNISED for d in counted):
        return
    found = ", ".join(f"{d.code} x{d.count}" for d in counted)
    raise FormatError(
        path,
        f"not a {harness} session: the {harness} reader recognised none of it ({found}); "
        "say which harness wrote it with --from (trajconv codecs lists them)",
    )


@dataclass(frozen=True)
class LazyCodec:
    """A codec whose modules load on first use: ``<package>.layout.default_home``,
    ``<package>.discover.discover``, ``<package>.reader.read`` and ``<package>.writer.plan``.

    Listing codecs (``trajconv codecs``, ``--help``) imports none of them. A codec in a
    package named for it declares no ``name``: ``LazyCodec(package=__name__, ...)`` in
    ``trajconv.codecs.pi`` is the codec ``pi``.
    """

    name: str = ""
    """``--from``/``--to`` name; by default the last part of ``package``."""
    aliases: tuple[str, ...] = ()
    description: str = ""
    """One line for ``trajconv codecs`` and the format pages (required)."""
    package: str = ""
    """The package holding the modules (required: ``__name__`` of the ``__init__.py``)."""
    can_read: bool = True
    """The codec reads native sessions into Snapshots."""
    can_write: bool = True
    """The codec writes Snapshots as native exports."""
    can_discover: bool = True
    """The codec lists sessions under a native home."""
    homes: tuple[HomeSpec, ...] = ()
    """Where the harness keeps sessions; none for a document format."""
    capabilities: Capabilities = field(default_factory=Capabilities)
    write_options: tuple[WriteOption, ...] = ()
    resume: tuple[str, ...] = ()
    """How the harness resumes one of its sessions: the argv, ``{session}`` standing for the
    session id (``("claude", "--resume", "{session}")``); the centre makes it the
    ``resume_argv`` of every plan whose writer gives none. Empty for a document format."""

    def __post_init__(self) -> None:
        if not self.package or not self.description:
            raise TypeError("a LazyCodec declares its package (__name__) and a description")
        if not self.name:
            object.__setattr__(self, "name", self.package.rpartition(".")[2])

    def _fn(self, module: str, attr: str) -> Any:
        import importlib

        return getattr(importlib.import_module(f"{self.package}.{module}"), attr)

    def default_home(self) -> Path:
        """``<package>.layout.default_home()`` when the layout defines one, else the first
        of ``homes`` resolved on this machine."""
        import importlib

        layout = importlib.import_module(f"{self.package}.layout")
        own = getattr(layout, "default_home", None)
        if callable(own):
            home: Path = own()
            return home
        if not self.homes:
            raise UsageError(f"{self.name} keeps no sessions in a home; give a path")
        return self.homes[0].resolve()

    def claims(self, path: Path) -> Claim | None:
        """``<package>.layout.claims(path)``; OSError (an unreadable path) is no claim."""
        try:
            claim: Claim | None = self._fn("layout", "claims")(path)
        except OSError:
            return None
        return claim

    def discover(self, home: Path) -> list[SessionRef]:
        refs: list[SessionRef] = self._fn("discover", "discover")(home)
        return refs

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot:
        # A reader writes only into its spool under $TMPDIR: a full disk there is named so
        # (a reader's own "cannot read" must not blame the native file for it).
        with writing(tempfile.gettempdir()):
            snap: Snapshot = self._fn("reader", "read")(path, session=session, limits=limits)
        refuse_unrecognised(snap, path, self.name)
        return snap

    def plan(self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
        with writing(tempfile.gettempdir()):
            plan: ExportPlan = self._fn("writer", "plan")(
                snapshot, allow_lossy=allow_lossy, **options
            )
        plan.target, plan.snapshot_id = self.name, snapshot.id
        if not plan.resume_argv:
            plan.resume_argv = [arg.replace("{session}", plan.session_id) for arg in self.resume]
        return plan


def safe_component(value: str, what: str, file: str | Path = "<snapshot>") -> str:
    """Accept ``value`` as one path component, or raise UnsafePathError naming it."""
    bad = (
        not value
        or value in (".", "..")
        or "/" in value
        or "\\" in value
        or "\x00" in value
        or any(ord(ch) < 0x20 for ch in value)
        or len(value.encode("utf-8")) > 255
    )
    if bad:
        raise UnsafePathError(file, f"{what} {value!r} cannot be used as a file name")
    return value


# -- what every writer checks before it writes ------------------------------------------

CONVERSATIONAL = ("user", "assistant", "reasoning", "tool-call", "tool-result")


@dataclass
class Continuity:
    """What decides whether a target can continue a Snapshot, found in one pass."""

    pending: list[str] = field(default_factory=list)
    """Record ids of tool calls that no tool-result answers."""
    orphans: list[str] = field(default_factory=list)
    """Record ids of tool results whose call is not before them."""
    open_turn: str | None = None
    """The record that leaves the last turn open (no final assistant answer), if any."""


def continuity(snapshot: Snapshot) -> Continuity:
    from trajconv.snapshot.spool import record_dicts

    found = Continuity()
    calls: list[tuple[str, str]] = []  # (call id, record id) of every call
    seen: set[str] = set()
    answered: set[str] = set()
    last: tuple[str, str] | None = None  # kind and id of the last conversational record
    for r in record_dicts(snapshot.records):  # plain JSON: cheaper than models
        kind = r["kind"]
        if kind == "tool-call":
            calls.append((r["call"]["id"], r["id"]))
            seen.add(r["call"]["id"])
        elif kind == "tool-result":
            answered.add(r["result"]["call_id"])
            if r["result"]["call_id"] not in seen:
                found.orphans.append(r["id"])
        if kind in CONVERSATIONAL:
            last = (kind, r["id"])
    found.pending = [rid for cid, rid in calls if cid not in answered]
    if last is not None and last[0] != "assistant":
        found.open_turn = last[1]
    return found


#: Codex's heads: ``exec_command`` output's ``Process exited with code N`` after up to four
#: ``Name: value`` lines (``Chunk ID``, ``Wall time``), ``apply_patch``'s ``Exit code: N``
CODEX_EXEC_EXIT = re.compile(r"^(?:[A-Za-z ]+: [^\n]*\n){0,4}?Process exited with code (-?\d+)\n")
CODEX_PATCH_EXIT = re.compile(r"^Exit code: (-?\d+)\n")
#: how the harnesses here show a command's exit status to the model inside a result's text:
#: Grok's first line ``exit: N``, Copilot's ``<shellId: … exit code N>``, Deep Agents'
#: closing ``[Command succeeded|failed with exit code N]``, Claude Code's first line
#: ``Exit code N``, Codex's heads, Gemini CLI's ``Exit Code: N`` line, Pi's closing
#: ``Command exited with code N`` (each seen in
#: recorded requests: the continuation baselines)
_EXIT_SHOWN = (
    re.compile(r"\Aexit: (-?\d+)\n"),
    re.compile(r"<shellId: [^>]* exit code (-?\d+)>\s*\Z"),
    re.compile(r"\[Command (?:succeeded|failed) with exit code (-?\d+)\]\s*\Z"),
    CODEX_EXEC_EXIT,
    CODEX_PATCH_EXIT,
    re.compile(r"\AExit code (-?\d+)\n"),
    re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE),
    re.compile(r"(?:^|\n)Command exited with code (-?\d+)\s*\Z"),  # Pi's bash tool, last line
)


def exit_code_shown(output: str, code: int) -> bool:
    """True when a tool result's text already tells the model the exit status ``code``."""
    for pattern in _EXIT_SHOWN:
        match = pattern.search(output)
        if match is not None and int(match.group(1)) == code:
            return True
    return False


def name_status_not_sent(diags: Diagnostics, rec_id: str, result: ToolResult, *, own: bool) -> None:
    """For a target that sends its model only a tool result's text (Chat Completions has no
    status field), name what ``result`` loses there although the native files may keep it: an
    exit status the text does not show (``untranslated-exit-code``) and a recorded failure
    (``untranslated-tool-status``: a model that saw an error flag, Anthropic's ``is_error`` or
    a Gemini ``error`` response, is sent the text alone). Nothing is named for a source of the
    target's own harness (``own``): its text is what its model was sent."""
    if own:
        return
    if result.exit_code is not None and not exit_code_shown(result.output, result.exit_code):
        diags.add("untranslated-exit-code", rec_id)
    if result.ok is False:
        diags.add("untranslated-tool-status", rec_id)


def name_joined_models(
    diags: Diagnostics, message_model: str | None, parts: Iterable[tuple[str, str | None]]
) -> None:
    """Records joined into one native message that holds one model (``message_model``), as
    ``(record id, model)``: each whose own model differs is named, ``untranslated-model`` when
    its model is lost, ``model-assumed`` when it has none and reads back with the message's."""
    for rid, model in parts:
        if model != message_model:
            diags.add("untranslated-model" if model else "model-assumed", rid)


def dropped_code(kind: str) -> str:
    """The diagnostic for a record a lossy write leaves out (see :func:`check_continuable`)."""
    return "untranslated-pending-call" if kind == "tool-call" else "untranslated-orphan-result"


def check_continuable(
    snapshot: Snapshot, target: str, *, allow_lossy: bool, refuse_pending: bool = True
) -> set[str]:
    """Refuse a Snapshot the target cannot continue truthfully, unless ``allow_lossy``.

    An unfinished last turn and tool results without their call are refused; so are
    calls without their result when ``refuse_pending`` (targets that need them in
    pairs). Returns the record ids a lossy write leaves out.
    """
    from trajconv.errors import RefusedError

    found = continuity(snapshot)
    if found.open_turn is not None and not allow_lossy:
        raise RefusedError(
            f"refusing to write {target}: the last turn is unfinished at record "
            f"{found.open_turn} (no final assistant answer); pass --allow-lossy to write it "
            "anyway"
        )
    pending = found.pending if refuse_pending else []
    if (pending or found.orphans) and not allow_lossy:
        first = (pending or found.orphans)[0]
        what = "a tool call without its result" if pending else "a tool result without its call"
        raise RefusedError(
            f"refusing to write {target}: record {first} is {what}, which {target} needs "
            "in pairs; pass --allow-lossy to leave such records out"
        )
    return {*pending, *found.orphans}


def name_untranslated_children(snapshot: Snapshot, plan: ExportPlan) -> None:
    """Count every record of a sub-agent the plan does not write as a child, by child
    (``untranslated-subagent``: one per record, the samples name each child session), so
    no writer loses a child without saying so, whatever it does with children."""
    from trajconv.snapshot.diagnostics import Diagnostics

    written = set(plan.children_written)
    left = [c for c in snapshot.children if c.id not in written]
    if not left:
        return
    diags = Diagnostics()
    diags.extend(plan.diagnostics)
    for child in left:
        where = f"child {child.session.id} (of call {child.parent_call_id})"
        diags.add("untranslated-subagent", where, count=max(len(child.records), 1))
    plan.diagnostics = diags.to_models()
