"""Grok Build reader: ``updates.jsonl`` + ``summary.json`` -> Snapshot.

Format facts: ``codecs/grok/README.md`` (Grok Build 1.0.6 source, observed
on 1.0.41). Rules implemented here:

* chunk runs join with no separator and are flushed on a role change, a tool
  event or a turn boundary (a new prompt, ``hostTurn``, ``turn_completed``);
* a ``tool_call`` becomes a tool-call record; only the first terminal
  ``tool_call_update`` becomes its tool-result, later terminal and progress
  updates are counted;
* ``rewind_marker`` drops the rewound prompts from the live records; their lines
  stay in the journal artifact and are counted as ``rewound``;
* record ids are ``grok:L<line>``: ``eventId`` suffixes repeat after a resume
  (observed on 1.0.41), so ids come from the append-stable line number and the
  ``eventId`` is kept in evidence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.common import other_files
from trajconv.codecs.grok import layout, native
from trajconv.codecs.jsonl import (
    Utf8Tally,
    copy_jsonl,
    iter_file_objects,
    project_jsonl,
    read_bounded,
)
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import SnapshotBuilder, evidence, time_from_iso, time_from_ms
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "grok/1"
JOURNAL = layout.UPDATES
_CHUNK_ROLES = {native.AGENT_CHUNK: "assistant", native.THOUGHT_CHUNK: "reasoning"}


@dataclass
class _Run:
    kind: str  # user | assistant | reasoning | system
    line: int
    native: str
    time: str | None
    turn: int | None
    event_id: str | None
    model: str | None
    parts: list[str]
    units: int


class _Turns:
    """Prompt starts by Grok's rule (the codec README); shared by the rewind pre-pass and the
    projection."""

    def __init__(self) -> None:
        self.starts: list[int] = []  # first line of each live prompt
        self.in_user_run = False
        self.run_index: Any = None
        self.seen_marked = False

    def user_chunk(self, line: int, prompt_index: Any) -> str:
        """Classify a user chunk: 'start' (new prompt), 'cont' or 'phantom'."""
        if prompt_index is None and self.seen_marked:
            self.in_user_run = False
            return "phantom"
        if prompt_index is not None:
            self.seen_marked = True
        if self.in_user_run and prompt_index == self.run_index:
            return "cont"
        self.in_user_run = True
        self.run_index = prompt_index
        self.starts.append(line)
        return "start"

    def other(self) -> None:
        self.in_user_run = False

    @property
    def current(self) -> int | None:
        return len(self.starts) - 1 if self.starts else None

    def rewind(self, target: Any, marker_line: int) -> tuple[int, int] | None:
        if (
            isinstance(target, int)
            and not isinstance(target, bool)
            and 0 <= target < len(self.starts)
        ):
            dead = (self.starts[target], marker_line)
            del self.starts[target:]
            self.in_user_run = False
            return dead
        return None


def _stamp(params: dict[str, Any], obj: dict[str, Any]) -> tuple[str | None, str | None]:
    """A line's time and ``eventId``, read only for the lines that start a record."""
    pmeta = native.meta(params)
    event_id = pmeta.get("eventId")
    if not isinstance(event_id, str):
        event_id = None
    ms = pmeta.get("agentTimestampMs")
    if isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0:
        return time_from_ms(ms), event_id
    ts = obj.get("timestamp")
    if isinstance(ts, int | float) and not isinstance(ts, bool) and ts > 0:
        # Wake's fixtures write milliseconds here; Grok writes seconds.
        return time_from_ms(ts if ts > 10**12 else ts * 1000), event_id
    return None, event_id


class _MarkerScan:
    """Watches the journal's chunks as they are copied for a rewind marker."""

    WORD = b"rewind_marker"

    def __init__(self) -> None:
        self.found = False
        self._tail = b""  # the last bytes before a chunk, where a word across the cut starts

    def __call__(self, chunk: bytes) -> None:
        keep = len(self.WORD) - 1
        if not self.found and (self.WORD in chunk or self.WORD in self._tail + chunk[:keep]):
            self.found = True
        self._tail = (self._tail + chunk[-keep:])[-keep:]


def _dead_lines(path: Path, limits: Limits, marker: bool) -> list[tuple[int, int]]:
    """Line ranges removed by rewind markers (pre-pass, only when a marker exists)."""
    if not marker:
        return []
    turns = _Turns()
    dead: list[tuple[int, int]] = []
    quiet = Diagnostics()
    try:
        for number, obj in iter_file_objects(path, JOURNAL, quiet, limits):
            if any(a <= number <= b for a, b in dead):
                continue
            unpacked = native.unpack(obj)
            if unpacked is None:
                continue
            _, update, kind = unpacked
            if kind == native.USER_CHUNK and not native.meta(update).get("hostTurn"):
                turns.user_chunk(number, native.meta(update).get("promptIndex"))
            elif kind == "rewind_marker":
                span = turns.rewind(update.get("target_prompt_index"), number)
                if span:
                    dead.append(span)
            else:
                turns.other()
    except LimitError:
        # An overlong line: the projection refuses the journal there at the latest, so
        # markers past it change nothing, and the line is not read whole here either.
        pass
    return dead


#: user entries Grok 1.0.41 injects into ``chat_history.jsonl`` for the model (workspace facts,
#: workflow reminders); no ``updates.jsonl`` line holds them
CONTEXT_PREFIXES = ("<user_info>", "<system-reminder>")


def _model_view(sdir: Path, b: SnapshotBuilder) -> dict[str, str]:
    """Tool results as Grok showed them to the model, by call id, from ``chat_history.jsonl``.

    The journal's ``tool_call_update`` holds the display form: a shell result without its
    ``exit: N`` line, a listing or an edit as ``rawOutput`` JSON. The history Grok replays to
    the model holds the text the model saw (issue 23), so that text is the result's output
    when the history has it. Injected context entries are counted (``context-not-projected``);
    their bytes stay in the history artifact. A line that is not an object is skipped: the
    history is a sidecar, kept whole as an artifact.
    """
    path = sdir / layout.CHAT_HISTORY
    seen: dict[str, str] = {}
    if not path.is_file():
        return seen
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                item = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(item, dict):
                continue
            if item.get("type") == "tool_result" and isinstance(item.get("content"), str):
                call_id = item.get("tool_call_id")
                if isinstance(call_id, str):
                    seen[call_id] = item["content"]
            elif item.get("type") == "user":
                content = item.get("content")
                parts = content if isinstance(content, list) else [content]
                text = "".join(native.content_text(c) or "" for c in parts)
                if text.startswith(CONTEXT_PREFIXES):
                    b.diagnostics.add("context-not-projected", f"{layout.CHAT_HISTORY}:{number}")
    return seen


class _Projector:
    def __init__(
        self, b: SnapshotBuilder, dead: list[tuple[int, int]], seen: dict[str, str]
    ) -> None:
        self.b = b
        self.d = b.diagnostics
        self.dead = dead
        self.seen = seen
        self.turns = _Turns()
        self.run: _Run | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        self.model: str | None = None

    def flush(self) -> None:
        run, self.run = self.run, None
        if run is None:
            return
        ev = evidence(
            artifact=JOURNAL,
            line=run.line,
            native=run.native,
            native_id=run.event_id,
            units=run.units,
        )
        self.b.add_text(
            run.kind,
            f"grok:L{run.line}",
            "".join(run.parts),
            time=run.time,
            turn=run.turn,
            evidence=ev,
            model=run.model,
        )

    def text(
        self,
        kind: str,
        native_kind: str,
        number: int,
        text: str,
        params: dict[str, Any],
        obj: dict[str, Any],
    ) -> None:
        """Add a chunk to the open run, or start one; a run's time and event id are its
        first line's (``params`` and ``obj`` are read only then)."""
        run = self.run
        if run is not None and run.kind == kind:
            run.parts.append(text)
            run.units += 1
            return
        self.flush()
        model = self.model if kind in ("assistant", "reasoning") else None
        time, event_id = _stamp(params, obj)
        self.run = _Run(
            kind, number, native_kind, time, self.turns.current, event_id, model, [text], 1
        )

    def line(self, number: int, obj: dict[str, Any]) -> None:
        if self.dead and any(a <= number <= b for a, b in self.dead):
            self.turns.other()
            self.flush()
            self.d.add("rewound", f"{JOURNAL}:{number}")
            return
        unpacked = native.unpack(obj)
        if unpacked is None:
            self.d.add("invalid-line", f"{JOURNAL}:{number}")
            return
        params, update, kind = unpacked
        umeta = update.get("_meta")
        if isinstance(umeta, dict) and isinstance(umeta.get("modelId"), str):
            self.model = umeta["modelId"]
        role = _CHUNK_ROLES.get(kind)
        if role is not None:  # most lines: tested first
            self.turns.other()
            text = native.content_text(update.get("content"))
            if text is None:
                self.d.add("non-text-content", f"{JOURNAL}:{number}", name=kind)
                return
            self.text(role, kind, number, text, params, obj)
        elif kind == native.USER_CHUNK:
            self.user_chunk(number, update, umeta if isinstance(umeta, dict) else {}, params, obj)
        elif kind == native.TOOL_CALL:
            self.turns.other()
            self.flush()
            self.tool_call(number, update, *_stamp(params, obj))
        elif kind == native.TOOL_UPDATE:
            self.turns.other()
            self.flush()
            self.tool_update(number, update, *_stamp(params, obj))
        else:
            self.turns.other()
            self.lifecycle(kind, f"{JOURNAL}:{number}", update)

    def user_chunk(
        self,
        number: int,
        update: dict[str, Any],
        umeta: dict[str, Any],
        params: dict[str, Any],
        obj: dict[str, Any],
    ) -> None:
        place = f"{JOURNAL}:{number}"
        text = native.content_text(update.get("content"))
        if umeta.get("hostTurn") is True:
            # A host-initiated turn boundary: Grok flushes here and does not take it as user input.
            self.turns.other()
            self.flush()
            if text is None:
                self.d.add("non-text-content", place, name=native.USER_CHUNK)
                return
            self.text("system", "user_message_chunk(hostTurn)", number, text, params, obj)
            self.flush()
            return
        role = self.turns.user_chunk(number, umeta.get("promptIndex"))
        if role == "start":
            self.flush()
        if text is None:
            self.d.add("non-text-content", place, name=native.USER_CHUNK)
            return
        if role == "phantom":
            # Unmarked user chunks after marked prompts are runtime echoes.
            self.text("system", "user_message_chunk(unmarked)", number, text, params, obj)
            return
        self.text("user", native.USER_CHUNK, number, text, params, obj)

    def tool_call(
        self, number: int, update: dict[str, Any], time: str | None, event_id: str | None
    ) -> None:
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            self.d.add("invalid-line", f"{JOURNAL}:{number}")
            return
        tool_meta = native.meta(update).get("x.ai/tool")
        name = update.get("name") if isinstance(update.get("name"), str) else None
        if name is None and isinstance(tool_meta, dict) and isinstance(tool_meta.get("name"), str):
            name = tool_meta["name"]
        if name is None:
            name = str(update.get("title") or "")
        args = update.get("rawInput")
        ev = evidence(artifact=JOURNAL, line=number, native=native.TOOL_CALL, native_id=event_id)
        self.b.add_call(
            f"grok:L{number}", call_id, name, args, time=time, turn=self.turns.current, evidence=ev
        )
        self.calls[call_id] = {"done": False, "record": f"grok:L{number}"}
        if update.get("status") in native.TERMINAL:
            # A collapsed call (as Grok's replay writes it) carries its own result.
            self.result(number, call_id, update, time, event_id, units=0)

    def tool_update(
        self, number: int, update: dict[str, Any], time: str | None, event_id: str | None
    ) -> None:
        place = f"{JOURNAL}:{number}"
        call_id = update.get("toolCallId")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            self.d.add("orphan-tool-result", place)
            return
        if update.get("status") not in native.TERMINAL:
            self.d.add("superseded-progress", place)
            return
        if call["done"]:
            self.d.add("repeated-terminal-result", place)
            return
        self.result(number, str(call_id), update, time, event_id, units=1)

    def result(
        self,
        number: int,
        call_id: str,
        update: dict[str, Any],
        time: str | None,
        event_id: str | None,
        units: int,
    ) -> None:
        raw = update.get("rawOutput")
        exit_code = raw.get("exit_code") if isinstance(raw, dict) else None
        if not isinstance(exit_code, int) or isinstance(exit_code, bool):
            exit_code = None
        truncated = isinstance(raw, dict) and raw.get("truncated") is True
        ev = evidence(
            artifact=JOURNAL,
            line=number,
            native=native.TOOL_UPDATE,
            native_id=event_id,
            units=units,
        )
        rid = f"grok:L{number}" if units else f"grok:L{number}:result"
        self.b.add_result(
            rid,
            call_id,
            update.get("status") == "completed",
            self.seen.get(call_id, native.tool_output(update)),
            time=time,
            turn=self.turns.current,
            evidence=ev,
            truncated=truncated,
            exit_code=exit_code,
        )
        self.calls[call_id]["done"] = True

    def lifecycle(self, kind: str, place: str, update: dict[str, Any]) -> None:
        if kind == "turn_completed":
            self.flush()
        if kind in native.COMPACTION_KINDS:
            self.d.add("compaction-state", place, name=kind)
        elif kind in native.ACP_STATE_KINDS or kind in native.XAI_KINDS:
            self.d.add("lifecycle-dropped", place, name=kind)
        else:
            self.d.add("unknown-kind", place, name=kind)

    def finish(self) -> None:
        self.flush()
        for call in self.calls.values():
            if not call["done"]:
                self.d.add("pending-tool-call", call["record"])


def _summary(sdir: Path, b: SnapshotBuilder, limits: Limits) -> dict[str, Any]:
    path = sdir / layout.SUMMARY
    if not path.is_file():
        b.diagnostics.add("metadata-missing", layout.SUMMARY)
        return {}
    data = read_bounded(path, min(limits.max_session_bytes, 64 * 1024**2))
    b.add_artifact(layout.SUMMARY, "application/json", data)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        b.diagnostics.add("metadata-invalid", layout.SUMMARY)
        return {}
    if not isinstance(value, dict):
        b.diagnostics.add("metadata-invalid", layout.SUMMARY)
        return {}
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _is_subagent(summary: dict[str, Any]) -> bool:
    """Whether a child's parent is worth looking for in the other sessions' registries:
    Grok marks a sub-agent's own session with a ``session_kind`` that starts with
    ``subagent`` (README "Input contract"); a session whose ``summary.json`` is missing or
    unreadable says nothing, so its parent is looked for too."""
    if not summary:
        return True
    kind = summary.get("session_kind")
    return isinstance(kind, str) and kind.startswith("subagent")


#: ``sessions/`` root -> child id -> the ``subagents/<child>/meta.json`` naming it, from one
#: walk of the root. Reading every session of a home looks a parent up for each sub-agent;
#: a walk of all sessions per child made reading a home quadratic in its sessions.
_REGISTRY: dict[Path, dict[str, list[Path]]] = {}


def _registry_walk(root: Path) -> dict[str, list[Path]]:
    """Every ``<group>/<session>/subagents/<child>/meta.json`` under ``root``, by child id
    (no link followed: issue 34, a link may point anywhere)."""
    found: dict[str, list[Path]] = {}
    for group in _real_dirs(root):
        for sdir in _real_dirs(group):
            subs = sdir / "subagents"
            if subs.is_symlink() or not subs.is_dir():
                continue
            for child in _real_dirs(subs):
                meta = child / "meta.json"
                if not meta.is_symlink() and meta.is_file():
                    found.setdefault(child.name, []).append(meta)
    for metas in found.values():
        metas.sort()
    _REGISTRY[root] = found
    return found


def _real_dirs(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _parent_from_meta(sdir: Path, sid: str, b: SnapshotBuilder) -> str | None:
    """A child's parent, from the parent's ``subagents/<id>/meta.json``. The registries are
    walked once per root and kept; a child the kept walk does not name, or whose entry no
    longer reads, walks again, so a sub-agent written since is found."""
    root = sdir.parent.parent
    if root.name != layout.SESSIONS:
        return None
    cached = _REGISTRY.get(root)
    for fresh in (False, True) if cached is not None else (True,):
        metas = _registry_walk(root) if fresh or cached is None else cached
        for meta_path in metas.get(sid, ()):
            try:
                data = meta_path.read_bytes()
                meta = orjson.loads(data)
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(meta, dict):
                parent = _str(meta.get("parent_session_id")) or meta_path.parents[2].name
                b.add_artifact(f"parent:subagents/{sid}/meta.json", "application/json", data)
                return parent
    return None


def _sidecars(sdir: Path, b: SnapshotBuilder, limits: Limits, budget: int) -> None:
    """Every other file of the session folder, byte for byte (lock and temp files aside)."""
    for path, rel in other_files(sdir, (layout.UPDATES, layout.SUMMARY), limits, budget):
        if rel.endswith(".json"):
            # Small, and its secrets are stripped from the whole bytes.
            data = read_bounded(path, limits.max_session_bytes)
            b.add_artifact(rel, "application/json", data)
            continue
        media = "application/x-ndjson" if rel.endswith(".jsonl") else "application/octet-stream"
        b.add_artifact_file(rel, media, path, limits.max_session_bytes, "max_session_bytes")


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    sdir = layout.resolve(path, session)
    sid = sdir.name
    group = sdir.parent
    locator = (
        f"{layout.SESSIONS}/{group.name}/{sid}"
        if group.parent.name == layout.SESSIONS
        else f"{group.name}/{sid}"
    )
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id=sid, locator=locator), READER
    )
    summary = _summary(sdir, b, limits)
    journal = sdir / layout.UPDATES
    if not journal.is_file():
        raise FormatError(journal, "missing: a Grok session without updates.jsonl has no history")
    utf8 = Utf8Tally()  # the parse below tells whether the journal is UTF-8
    blob, copy = copy_jsonl(
        b, layout.UPDATES, journal, limits, utf8, watch=(marker := _MarkerScan())
    )
    _sidecars(sdir, b, limits, blob.size)
    for meta in sorted((sdir / "subagents").glob("*/meta.json")):
        # Grok keeps a sub-agent as a session of its own; this reader does not read it
        # into the parent's Snapshot, so a conversion of the parent does not carry it
        b.diagnostics.add("subagent-separate", f"subagents/{meta.parent.name}")

    info = summary.get("info") if isinstance(summary.get("info"), dict) else {}
    assert isinstance(info, dict)
    b.session = Session(
        id=sid,
        title=_str(summary.get("generated_title")) or _str(summary.get("session_summary")),
        cwd=_str(info.get("cwd")) or layout.decode_group(group),
        model=_str(summary.get("current_model_id")),
        branch=_str(summary.get("head_branch")),
        created_at=_iso(summary.get("created_at")),
        updated_at=_iso(summary.get("last_active_at")) or _iso(summary.get("updated_at")),
        parent_session_id=_str(summary.get("parent_session_id"))
        or (_parent_from_meta(sdir, sid, b) if _is_subagent(summary) else None),
    )
    proj = _Projector(b, _dead_lines(copy, limits, marker.found), _model_view(sdir, b))
    project_jsonl(proj.line, copy, JOURNAL, b, limits, utf8, journal)
    proj.finish()
    return b.build()


def _iso(value: Any) -> str | None:
    return time_from_iso(value) if isinstance(value, str) else None
