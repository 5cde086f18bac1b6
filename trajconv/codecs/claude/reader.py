"""Claude Code reader: ``projects/<key>/<id>.jsonl`` (or a sub-agent transcript) -> Snapshot.

Format facts: ``codecs/claude/README.md`` (observed with 2.1.332). Rules implemented:

* the conversation is the ``parentUuid`` chain from the leaf the CLI resumes: the last
  ``last-prompt.leafUuid`` that names a chain line, else the newest leaf (latest timestamp,
  then last in the file); a ``compact_boundary`` (``parentUuid`` null) is crossed through its
  ``logicalParentUuid``. Chain lines off that path are counted as ``rewound`` (branches left
  behind), sidechain lines inside a main file as ``nested-namespace``;
* one record per content block (an assistant line holds one block in 2.1.x): ``text`` ->
  user / assistant, ``thinking`` -> reasoning (the signature stays in the artifact; evidence
  points at the block), ``tool_use`` -> tool-call, ``tool_result`` -> tool-result with ``ok``
  from ``is_error`` (absent = success) and the exit status from an ``Exit code N`` heading;
* user text the CLI writes itself (``isMeta``, task notifications, command echoes, interrupt
  markers, compaction summaries) becomes ``system`` records, never user prompts; assistant
  lines of the ``<synthetic>`` model (API error notices) too;
* ``attachment`` lines (harness context) and side lines (``last-prompt``, ``queue-operation``,
  ``api-request*``, ``cost-state`` ...) are counted by name; an attachment with ``rendered``
  text (which a resumed CLI sends to the model) is also counted as ``context-not-projected``;
  titles come from the side lines;
* record ids are ``claude:<uuid>`` (``:<block>`` for the second and later blocks of a line).

The chain needs one pass over the file before the records (``uuid`` -> parent, about 100 bytes
a line). When the chain runs in file order (every file the CLI writes) records are then made
in one streaming pass; a shuffled file is projected from the chain lines held in memory.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajconv.codecs.base import Limits
from trajconv.codecs.claude import layout, native
from trajconv.codecs.common import LineUnit
from trajconv.codecs.jsonl import Utf8Tally, copy_jsonl, file_lines, iter_file_objects, read_bounded
from trajconv.codecs.tool_calls import CallProjector
from trajconv.codecs.tool_results import answered
from trajconv.errors import LimitError
from trajconv.snapshot.builder import SnapshotBuilder, time_from_iso
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "claude/1"
#: the parent a torn chain line still names (the CLI writes ``parentUuid`` first)
_PARENT = re.compile(rb'\s*\{\s*"parentUuid"\s*:\s*"([^"\\]+)"')


#: a transcript up to this size keeps the lines its first pass parsed for the second
#: (held, they take about 3.5 times the file's size: 37 MiB for 10 MB); a larger one is
#: parsed again, so memory stays bounded (issue 38: the second parse was a tenth of a read)
HOLD_BYTES = 16 << 20

_Held = list[tuple[int, dict[str, Any]] | tuple[str, str | None]]
"""The first pass's lines in file order: ``(number, object)`` for each good line, and
``(code, sample)`` for each line the iterator counted instead (blank, torn ...)."""


class _TornLines(Diagnostics):
    """The first pass's diagnostics, keeping the number of every torn line; with ``held``,
    also each one in the order the lines came (to be counted again in the Snapshot)."""

    def __init__(self, held: _Held | None = None) -> None:
        super().__init__()
        self.lines: list[int] = []
        self.held = held

    def add(
        self, code: str, sample: str | None = None, count: int = 1, *, name: str | None = None
    ) -> None:
        if code == "torn-line" and sample is not None:
            self.lines.append(int(sample.rsplit(":", 1)[1]))
        if self.held is not None:
            self.held.append((code, sample))  # the line iterator counts one, by sample
        super().add(code, sample, count, name=name)


def _replay(held: _Held, diags: Diagnostics) -> Iterator[tuple[int, dict[str, Any]]]:
    """The lines the first pass held, as ``iter_file_objects`` gives them again: each
    good line, and each line it counted instead counted in ``diags`` in its place."""
    for first, second in held:
        if isinstance(first, int):
            assert isinstance(second, dict)
            yield first, second
        else:
            assert not isinstance(second, dict)
            diags.add(first, second)


@dataclass
class _Scan:
    """What the first pass learns: the tree and the session facts (held per chain line for
    the whole read, so only what the chain needs: which lines have children is worked out
    from ``parent`` when no ``last-prompt`` names the leaf)."""

    parent: dict[str, str | None] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    stamp: dict[str, str] = field(default_factory=dict)
    sidechain: set[str] = field(default_factory=set)
    leaf_hint: str | None = None
    titles: dict[str, str] = field(default_factory=dict)
    version: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    branch: str | None = None
    first_time: str | None = None
    last_time: str | None = None

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        ts = obj.get("timestamp")
        if isinstance(ts, str):
            self.first_time = min(self.first_time or ts, ts)
            self.last_time = max(self.last_time or ts, ts)
        if isinstance(obj.get("version"), str) and self.version is None:
            self.version = obj["version"]
        if isinstance(obj.get("sessionId"), str) and self.session_id is None:
            self.session_id = obj["sessionId"]
        if native.is_chain(obj):
            uid = obj.get("uuid")
            if not isinstance(uid, str) or uid in self.line_of:
                return
            parent = obj.get("parentUuid")
            if parent is None and isinstance(obj.get("logicalParentUuid"), str):
                parent = obj["logicalParentUuid"]  # compaction boundary: history goes on
            parent = parent if isinstance(parent, str) else None
            self.parent[uid] = parent
            self.line_of[uid] = number
            if isinstance(ts, str):
                self.stamp[uid] = ts
            if obj.get("isSidechain") is True:
                self.sidechain.add(uid)
            self.cwd = native.str_or_none(obj.get("cwd")) or self.cwd
            self.branch = native.str_or_none(obj.get("gitBranch")) or self.branch
        elif kind == "last-prompt":
            if isinstance(obj.get("leafUuid"), str):
                self.leaf_hint = obj["leafUuid"]
            self._title(kind, obj.get("lastPrompt"))
        elif kind == "custom-title":
            self._title(kind, obj.get("customTitle"))
        elif kind == "ai-title":
            self._title(kind, obj.get("aiTitle"))
        elif kind == "summary":
            self._title(kind, obj.get("summary"))

    def _title(self, kind: str, value: Any) -> None:
        text = native.str_or_none(value)
        if text is not None:
            self.titles[kind] = text.strip()

    def chain(
        self,
        subagent: bool,
        torn: Sequence[int] = (),
        torn_text: Callable[[int], bytes] | None = None,
    ) -> list[int]:
        """Line numbers of the resumed conversation, root first.

        ``torn``: the numbers of torn lines (not JSON), and ``torn_text(n)`` the bytes of
        one. A chain line whose parent is missing right after a torn line is the child of
        that line, whose own record is lost (``torn-line``): the walk goes on from the
        parent the torn bytes still name (``parentUuid`` comes first on a line), else
        from the chain line before it in the file, so one torn line costs that line, not
        the turns before it (issue 33: they were counted ``rewound``)."""
        leaf = self.leaf_hint if self.leaf_hint in self.line_of else None
        if leaf is None:
            has_child = set(self.parent.values())
            leaves = [
                u for u in self.line_of if u not in has_child and (u in self.sidechain) == subagent
            ]
            if not leaves:
                return []
            leaf = max(leaves, key=lambda u: (self.stamp.get(u, ""), self.line_of[u]))
        path: list[int] = []
        seen: set[str] = set()
        node: str | None = leaf
        by_line = {n: u for u, n in self.line_of.items()} if torn else {}
        while node is not None and node not in seen:
            if node not in self.line_of:
                node = self._across_torn(path[-1], torn, torn_text, by_line) if path else None
                if node is None or node in seen:
                    break
            seen.add(node)
            path.append(self.line_of[node])
            node = self.parent.get(node)
        path.reverse()
        return path

    def _across_torn(
        self,
        child: int,
        torn: Sequence[int],
        torn_text: Callable[[int], bytes] | None,
        by_line: dict[int, str],
    ) -> str | None:
        """The chain line a torn line before line ``child`` had as its parent."""
        before = [t for t in torn if t < child]
        if not before:
            return None
        gap = max(before)
        if any(gap < n < child for n in by_line):
            return None  # a whole chain line lies between: the torn line is not the parent
        named = _PARENT.match(bytes(torn_text(gap))) if torn_text is not None else None
        if named is not None and named.group(1).decode() in self.line_of:
            return named.group(1).decode()
        earlier = [n for n in by_line if n < gap]
        return by_line[max(earlier)] if earlier else None


class _Projector(CallProjector):
    def __init__(self, b: SnapshotBuilder, name: str) -> None:
        super().__init__(b)
        self.name = name
        self.model: str | None = None
        self.first_prompt: str | None = None

    # -- one chain line
    def line(self, number: int, obj: dict[str, Any]) -> None:
        place = f"{self.name}:{number}"
        kind = obj.get("type")
        uid = str(obj.get("uuid"))
        ts = obj.get("timestamp")
        time = time_from_iso(ts) if isinstance(ts, str) else None
        unit = _Unit(self, number, uid, time)
        if kind == "user":
            self.user(unit, obj)
        elif kind == "assistant":
            self.assistant(unit, obj)
        elif kind == "system":
            subtype = obj.get("subtype")
            content = obj.get("content")
            if subtype in ("compact_boundary", "microcompact_boundary"):
                self.d.add("compaction-state", place, name=f"system:{subtype}")
            elif isinstance(content, str) and content.strip():
                unit.text("system", content, f"system:{subtype}", None)
            else:
                self.d.add("lifecycle-dropped", place, name=f"system:{subtype}")
        else:
            sub = obj.get("attachment")
            sub_type = sub.get("type") if isinstance(sub, dict) else None
            self.d.add("lifecycle-dropped", place, name=f"{kind}:{sub_type}" if sub_type else kind)
            if native.rendered(obj):
                # the CLI sends this text to the model again when the session is resumed
                self.d.add("context-not-projected", place, name=sub_type)
        unit.finish()

    def user(self, unit: _Unit, obj: dict[str, Any]) -> None:
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        harness = (
            obj.get("isMeta") is True
            or obj.get("isCompactSummary") is True
            or obj.get("isVisibleInTranscriptOnly") is True
            or isinstance(obj.get("origin"), dict)
            or obj.get("promptSource") == "system"
        )
        if isinstance(content, str):
            self.user_text(unit, content, harness, None)
            return
        if not isinstance(content, list):
            unit.drop("invalid-line")
            return
        for i, block in enumerate(content):
            path = f"$.message.content[{i}]"
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "text" and isinstance(block.get("text"), str):
                self.user_text(unit, block["text"], harness, path)
            elif btype == "tool_result":
                self.result(unit, block, path)
            else:
                unit.drop("non-text-content", name=str(btype))

    def user_text(self, unit: _Unit, text: str, harness: bool, path: str | None) -> None:
        if not text.strip():
            unit.drop("empty-content")
        elif harness or native.HARNESS_TEXT.match(text):
            unit.text("system", text, "user(harness)", path)
        else:
            self.turn = 0 if self.turn is None else self.turn + 1
            self.first_prompt = self.first_prompt or text
            unit.text("user", text, "user", path)

    def result(self, unit: _Unit, block: dict[str, Any], path: str) -> None:
        call_id = answered(unit, block.get("tool_use_id"), self.calls, self.done)
        if call_id is None:
            return
        output = native.text_of(block.get("content"))
        if output is None:
            output = ""
        if isinstance(block.get("content"), list) and any(
            isinstance(c, dict) and c.get("type") != "text" for c in block["content"]
        ):
            self.d.add("block-dropped", f"{self.name}:{unit.number}", name="tool_result:image")
        failed = block.get("is_error") is True
        match = native.EXIT_CODE.match(output)
        exit_code = int(match.group(1)) if match else None
        self.done.add(call_id)
        unit.result(call_id, not failed, output, "tool_result", path, exit_code)

    def assistant(self, unit: _Unit, obj: dict[str, Any]) -> None:
        msg = obj.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            unit.drop("invalid-line")
            return
        model = native.str_or_none(msg.get("model"))
        synthetic = model == native.SYNTHETIC_MODEL or obj.get("isApiErrorMessage") is True
        if model and not synthetic:
            self.model = model
        for i, block in enumerate(msg["content"]):
            path = f"$.message.content[{i}]"
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "text" and isinstance(block.get("text"), str):
                if not block["text"].strip():
                    unit.drop("empty-content")
                elif synthetic:
                    unit.text("system", block["text"], "assistant(synthetic)", path)
                else:
                    unit.text("assistant", block["text"], "text", path, model)
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                unit.text("reasoning", block["thinking"], "thinking", path, model)
            elif btype == "redacted_thinking":
                unit.drop("redacted-content", name=btype)
            elif btype == "tool_use" and isinstance(block.get("id"), str):
                call_id, name = block["id"], str(block.get("name") or "")
                args = block.get("input")
                unit.add(
                    lambda rid, ev, c=call_id, n=name, a=args: self.b.add_call(
                        rid, c, n, a, time=unit.time, turn=self.turn, evidence=ev
                    ),
                    "tool_use",
                    path,
                    remember=call_id,
                )
            else:
                unit.drop("non-text-content", name=str(btype))


class _Unit(LineUnit):
    """One line: its first record carries the unit; a line with none is counted once. A
    tool call's record is remembered by its call id (for the results that follow)."""

    def __init__(self, proj: _Projector, number: int, uid: str, time: str | None) -> None:
        super().__init__(proj, "claude", number, uid, time)
        self.calls = proj.calls

    def add(
        self,
        make: Callable[..., object],
        native_kind: str,
        path: str | None,
        remember: str | None = None,
    ) -> str:
        rid = super().add(make, native_kind, path)
        if remember is not None:
            self.calls.setdefault(remember, rid)
        return rid


def _side(number: int, obj: dict[str, Any], d: Diagnostics, name: str) -> None:
    kind = obj.get("type")
    place = f"{name}:{number}"
    if not isinstance(kind, str):
        d.add("invalid-line", place)
    elif kind in native.CHAIN_TYPES:
        d.add("invalid-line", place)  # a chain line without a uuid cannot be placed
    elif kind in native.SIDE_TYPES:
        d.add("lifecycle-dropped", place, name=kind)
    else:
        d.add("unknown-kind", place, name=kind)


def _links_skipped(links: list[Path], base: Path, b: SnapshotBuilder) -> None:
    for link in links:
        b.diagnostics.add("symlink-skipped", link.relative_to(base).as_posix())


def _subagent_meta(path: Path, b: SnapshotBuilder) -> None:
    links: list[Path] = []
    meta = layout.sidecar(path.with_name(path.stem + layout.META_SUFFIX), links)
    if meta is not None:
        b.add_artifact(meta.name, "application/json", read_bounded(meta, 16 * 1024**2))
    _links_skipped(links, path.parent, b)


def _children(path: Path, b: SnapshotBuilder, limits: Limits, budget: int) -> list[_Sub]:
    """The sub-agent transcripts beside a main transcript, kept byte for byte (to be read
    as children of the session once its calls are known); a symlinked one is not read
    but named (``symlink-skipped``)."""
    found = []
    links: list[Path] = []
    for sub in layout.subagent_files(path, links):
        rel = f"{layout.SUBAGENTS}/{sub.name}"
        budget += sub.stat().st_size
        limits.check("max_session_bytes", budget, sub)
        utf8 = Utf8Tally()
        _blob, copy = copy_jsonl(b, rel, sub, limits, utf8)
        meta = layout.sidecar(sub.with_name(sub.stem + layout.META_SUFFIX), links)
        call_id = None
        if meta is not None:
            kept = b.add_artifact(
                f"{layout.SUBAGENTS}/{meta.name}",
                "application/json",
                read_bounded(meta, 16 * 1024**2),
            )
            call_id = native.spawning_call(kept.read())
        found.append(_Sub(sub, rel, copy, utf8, call_id))
    _links_skipped(links, path.parent, b)
    return found


@dataclass
class _Sub:
    """A sub-agent transcript kept as an artifact of its parent (``rel``), read from
    ``copy``; ``call_id`` is the ``toolUseId`` its ``.meta.json`` names."""

    path: Path
    rel: str
    copy: Path
    utf8: Utf8Tally
    call_id: str | None


def _project(
    b: SnapshotBuilder,
    copy: Path,
    name: str,
    transcript: Path,
    subagent: bool,
    limits: Limits,
    utf8: Utf8Tally,
) -> tuple[_Scan, _Projector]:
    """Scan the transcript's copy for its chain, then make its records in ``b``."""
    scan = _Scan()
    kept: _Held | None = [] if copy.stat().st_size <= HOLD_BYTES else None
    torn = _TornLines(kept)
    try:
        if kept is None:
            for number, obj in iter_file_objects(copy, name, torn, limits):
                scan.line(number, obj)
        else:
            for number, obj in iter_file_objects(copy, name, torn, limits, utf8):
                scan.line(number, obj)
                kept.append((number, obj))
    except LimitError:
        kept = None  # the projection below refuses the same line with the same error

    def torn_text(number: int) -> bytes:
        lines = file_lines(copy, limits.max_line_bytes)
        return next(itertools.islice(lines, number - 1, None), b"")

    chain = scan.chain(subagent, torn.lines, torn_text)
    on_chain = set(chain)
    in_order = all(a < b_ for a, b_ in itertools.pairwise(chain))
    b.source = b.source.model_copy(update={"harness_version": scan.version})

    proj = _Projector(b, name)
    held: dict[int, dict[str, Any]] = {}
    max_records = limits.max_records
    lines = (
        iter_file_objects(copy, name, b.diagnostics, limits, utf8)
        if kept is None
        else _replay(kept, b.diagnostics)
    )
    for number, obj in lines:
        uid = obj.get("uuid")
        if not native.is_chain(obj) or not isinstance(uid, str):
            _side(number, obj, b.diagnostics, name)
            continue
        if scan.line_of.get(uid) != number:  # the first pass kept the uuid's first line
            b.diagnostics.add("duplicate-message", f"{name}:{number}")
            continue
        if number not in on_chain:
            code = "nested-namespace" if uid in scan.sidechain and not subagent else "rewound"
            b.diagnostics.add(code, f"{name}:{number}")
        elif in_order:
            proj.line(number, obj)
        else:
            held[number] = obj
        if b.record_count > max_records:
            raise LimitError(transcript, "max_records", max_records, line=number)
    for number in chain if held else ():
        proj.line(number, held[number])
    proj.finish()
    return scan, proj


def _session(sid: str, scan: _Scan, proj: _Projector, parent: str | None) -> Session:
    titles = scan.titles
    title = next((titles[k] for k in native.TITLE_TYPES if k in titles), None)
    return Session(
        id=sid,
        title=title or (proj.first_prompt.strip() if proj.first_prompt else None),
        cwd=scan.cwd,
        model=proj.model,
        branch=scan.branch,
        created_at=time_from_iso(scan.first_time) if scan.first_time else None,
        updated_at=time_from_iso(scan.last_time) if scan.last_time else None,
        parent_session_id=parent,
    )


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    transcript = layout.resolve(path, session)
    subagent = layout.is_subagent(transcript)
    name = transcript.name
    nested = subagent and transcript.parent.name == layout.SUBAGENTS
    # 2.1.x: <key>/<parent id>/subagents/agent-<id>.jsonl; older: <key>/agent-<id>.jsonl,
    # whose lines carry the parent's sessionId
    project = transcript.parents[2] if nested else transcript.parent
    parent_id: str | None = transcript.parents[1].name if nested else None
    locator = f"{project.name}/{transcript.relative_to(project).as_posix()}"
    sid = transcript.stem
    b = SnapshotBuilder(
        Source(harness="claude", harness_version=None, session_id=sid, locator=locator), READER
    )
    utf8 = Utf8Tally()
    blob, copy = copy_jsonl(b, name, transcript, limits, utf8)
    subs: list[_Sub] = []
    if subagent:
        _subagent_meta(transcript, b)
    else:
        subs = _children(transcript, b, limits, blob.size)

    scan, proj = _project(b, copy, name, transcript, subagent, limits, utf8)
    b.session = _session(sid, scan, proj, parent_id or (scan.session_id if subagent else None))
    for sub in subs:
        # a sub-agent of this session: a child linked to the Agent call its meta names
        call = sub.call_id if sub.call_id in proj.calls else None
        if sub.call_id is not None and call is None:
            b.diagnostics.add("subagent-unlinked", sub.rel)
        kid = b.child(
            Source(
                harness="claude",
                harness_version=None,
                session_id=sub.path.stem,
                locator=f"{project.name}/{sid}/{sub.rel}",
            ),
            call,
        )
        kid_scan, kid_proj = _project(kid, sub.copy, sub.rel, sub.path, True, limits, sub.utf8)
        kid.session = _session(sub.path.stem, kid_scan, kid_proj, sid)
    return b.build()
