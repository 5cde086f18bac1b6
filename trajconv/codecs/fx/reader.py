"""fx reader: ``~/.fx/sessions/<id>/`` of any layout fx has written -> Snapshot.

Format facts: ``codecs/fx/README.md`` (upstream vercel-labs/fx; legacy and ``event_log_v1``
behaviour checked against fx 0.0.5 built from source). ``session.json``'s top-level
``schema_version`` picks the layout:

* 1, 2 - monolithic: the whole history inside ``session.json``;
* 3 - ``event_log_v1``: semantic frames in ``events.jsonl``, committed up to the
  ``commit.<generation>.json`` watermark; bytes past it are a crashed append. History
  comes from ``history_turn_committed`` frames and committed state replacements (migration,
  compaction), never from the manifest, which is only a projection;
* 4 - conversation frames in ``events.jsonl`` with tool outputs in ``tool-results/``.
  A tool result whose body is missing or whose size differs from ``stored_bytes`` is a
  FormatError; the preview is never used instead. A torn last line and an unfinished trailing
  turn are the crash tail fx itself drops: counted, not projected.

Record ids: schema 4 ``fx:<seq>`` (frame seq == line number, checked); schema 3
``fx:<seq>/<place>``; legacy ``fx:h<index>/<place>``. Native units: schema 4 counts each line
and each image attachment; legacy and schema-3 turns count their items (user message, image,
step text, call, result, final answer, interruption, file evidence, background command,
compaction summary) and schema 3 also each non-turn frame and each uncommitted line.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.common import json_document
from trajconv.codecs.fx import layout, native
from trajconv.codecs.jsonl import (
    Utf8Tally,
    count_units,
    iter_file_objects,
    iter_objects,
    read_bounded,
)
from trajconv.errors import FormatError
from trajconv.snapshot import secrets
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_ms
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.snapshot.spool import CHUNK, Blob, Spool

if TYPE_CHECKING:  # ijson's parser only for a legacy history (schema 4 has none)
    from trajconv.codecs.fx import streamed

READER = "fx/1"
SKIP_NAMES = ("owner.live", "history-cache.bin")
Obj = dict[str, Any]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ms_time(value: Any) -> str | None:
    ms = _int(value)
    return time_from_ms(ms) if ms is not None and ms >= 0 else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _arguments(text: Any) -> Any:
    """Parsed ``arguments_json``, or ``{"_raw": text}`` when it is not JSON (docs/design.md §2)."""
    if not isinstance(text, str):
        return {"_raw": ""}
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"_raw": text}


def _media(name: str) -> str:
    if name.endswith(".jsonl"):
        return "application/x-ndjson"
    if name.endswith(".json"):
        return "application/json"
    if name.endswith(".txt"):
        return "text/plain"
    return "application/octet-stream"


def _session_files(sdir: Path, limits: Limits) -> list[tuple[str, Path, int]]:
    """Every file of the session folder (locks, liveness marker and binary cache aside), with
    its size, in path order. Symbolic links are neither kept nor followed."""
    found: list[tuple[str, Path, int]] = []
    folders = [(sdir, "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    rel = prefix + entry.name
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        folders.append((Path(entry.path), rel + "/"))
                    elif entry.is_file(follow_symlinks=False) and not (
                        entry.name.endswith(".lock") or entry.name in SKIP_NAMES
                    ):
                        size = entry.stat(follow_symlinks=False).st_size
                        found.append((rel, Path(entry.path), size))
        except PermissionError:
            # nothing to keep in an unreadable folder; a missing session.json is the error
            continue
    found.sort(key=lambda item: item[0].split("/"))
    total = 0
    for _rel, _path, size in found:
        total += size
        limits.check("max_session_bytes", total, sdir)
    return found


class _Files(Mapping[str, bytes]):
    """The session folder's files by name (``session.json`` aside: it is parsed as it is read),
    each kept in the Snapshot as it is added.

    A JSON file's native bytes are held (small metadata). Any other file is read, when asked
    for, from the bytes the Snapshot kept: a large file's spool copy, or for a small one (a
    tool-result body) its place in a private pack file: the builder's own pack cannot be read
    back, and holding thousands of bodies would make memory grow with the session.
    """

    def __init__(self, b: SnapshotBuilder, limits: Limits) -> None:
        self._b = b
        self._limits = limits
        self.json: dict[str, bytes] = {}
        self.copies: dict[str, Blob] = {}
        self.events_utf8 = Utf8Tally()
        self._small: dict[str, tuple[int, int]] = {}  # name -> (offset, size) in the pack
        self._spool = Spool()
        self._pack = self._spool.new_file("small-files").open("w+b")
        self._packed = 0

    def add(self, name: str, path: Path, size: int) -> None:
        media = _media(name)
        if media == "application/json":
            data = read_bounded(path, self._limits.max_session_bytes)
            self._b.add_artifact(name, media, data)
            self.json[name] = data
        elif size <= CHUNK and name != layout.EVENTS:
            data = read_bounded(path, self._limits.max_session_bytes)
            self._b.add_artifact(name, media, data)
            self._pack.write(data)
            self._small[name] = (self._packed, len(data))
            self._packed += len(data)
        else:
            # the event log (parsed line by line from its copy) and large files: in chunks
            self.copies[name] = self._b.add_artifact_file(
                name,
                media,
                path,
                self._limits.max_session_bytes,
                "max_session_bytes",
                # the log's parse tells whether it is UTF-8 (see _v4_frames)
                utf8=self.events_utf8.verdict if name == layout.EVENTS else None,
            )

    def __getitem__(self, name: str) -> bytes:
        if name in self.json:
            return self.json[name]
        if name in self.copies:
            return self.copies[name].read()
        offset, size = self._small[name]
        self._pack.flush()
        return os.pread(self._pack.fileno(), size, offset)

    def __contains__(self, name: object) -> bool:
        return name in self.json or name in self.copies or name in self._small

    def __iter__(self) -> Iterator[str]:
        yield from self.json
        yield from self.copies
        yield from self._small

    def __len__(self) -> int:
        return len(self.json) + len(self.copies) + len(self._small)

    def close(self) -> None:
        self._pack.close()


def _load(
    sdir: Path, files: _Files, b: SnapshotBuilder, limits: Limits
) -> tuple[Obj, streamed.History | None]:
    """Keep the session's files in the Snapshot; ``session.json`` parsed, or outlined and its
    legacy history left to stream (streamed.py) when it is large."""
    meta: Obj | None = None
    history: streamed.History | None = None
    for name, path, size in _session_files(sdir, limits):
        if name != layout.SESSION_JSON:
            files.add(name, path, size)
            continue
        if size > limits.stream_json_bytes:
            meta, history = _load_large(name, path, b, limits)
            continue
        data = read_bounded(path, limits.max_session_bytes)
        meta = json_document(data, name)
        if secrets.has_secret_key(meta):
            b.add_artifact(name, "application/json", data)
        else:
            # only members are stripped (secrets.strip), so without a secret-looking name the
            # artifact is these bytes; add_artifact would scan all their text to find that out.
            with b.artifact_writer(name, "application/json") as out:
                out.write(data)
    if meta is None:
        raise FormatError(sdir / layout.SESSION_JSON, "missing")
    return meta, history


def _load_large(
    name: str, path: Path, b: SnapshotBuilder, limits: Limits
) -> tuple[Obj, streamed.History | None]:
    """Copy a large ``session.json`` into the Snapshot, outlining it on the way."""
    from trajconv.codecs.fx import streamed

    outline = streamed.Outline(name, limits.max_json_depth)
    copy = b.add_artifact_file(
        name,
        "application/json",
        path,
        limits.max_session_bytes,
        "max_session_bytes",
        watch=outline.feed,
    )
    outline.close()
    if outline.streamable and outline.members.get("schema_version") in native.LEGACY_SCHEMAS:
        assert copy.path is not None  # a copied file
        return outline.members, outline.history(copy.path)
    data = copy.read()  # the whole path (streamed.py says when)
    meta = json_document(data, name)
    if secrets.has_secret_key(meta):
        # replaces the copy's entry: the credential stays only in the private spool
        b.add_artifact(name, "application/json", data)
    return meta, None


# --------------------------------------------------------------------------- legacy / v3 turns


@dataclass
class _Place:
    """Where a history turn came from: its artifact, line, id prefix and JSON path."""

    artifact: str
    line: int | None
    prefix: str
    path: str


def _objects(step: Obj, key: str, at: _Place, sub: str) -> Iterator[tuple[int, Obj]]:
    """The items of the list ``step[key]`` (none when absent), each an object, else a
    FormatError naming the item's JSON path."""
    for k, item in enumerate(step.get(key) or []):
        if not isinstance(item, dict):
            raise FormatError(
                at.artifact, f"{at.path}{sub}.{key}[{k}] is not an object", line=at.line
            )
        yield k, item


class _TurnLifter:
    """Lifts legacy / schema-3 history turns into records; one unit per turn item."""

    def __init__(self, b: SnapshotBuilder) -> None:
        self.b = b
        self.d: Diagnostics = b.diagnostics
        self.turn = -1

    def _ev(self, at: _Place, sub: str, kind: str) -> EvidenceFields:
        return evidence(artifact=at.artifact, line=at.line, json_path=at.path + sub, native=kind)

    def _sample(self, at: _Place, sub: str) -> str:
        where = f"{at.artifact}:{at.line}" if at.line is not None else at.artifact
        return f"{where} {at.path}{sub}"

    def lift(self, turn: Any, at: _Place) -> None:
        if not isinstance(turn, dict):
            raise FormatError(at.artifact, f"history turn {at.path} is not an object", line=at.line)
        kind = turn.get("kind")
        if kind == native.TURN_COMPACTED:
            # a compaction summary stands for removed turns; fx keeps it as internal context
            self.d.add("compaction-state", self._sample(at, ""), name=kind)
            return
        if kind not in (native.TURN_ASSISTANT, native.TURN_BACKGROUND, native.TURN_INTERRUPTED):
            self.d.add("unknown-kind", self._sample(at, ""), name=str(kind))
            return
        self.turn += 1
        user = turn.get("user")
        if not isinstance(user, dict):
            raise FormatError(at.artifact, f"history turn {at.path} has no user", line=at.line)
        text = native.durable_text(user.get("text"))
        if text is None:
            raise FormatError(at.artifact, f"{at.path}.user.text is not text", line=at.line)
        self.b.add_text(
            "user",
            f"{at.prefix}user",
            text,
            time=None,
            turn=self.turn,
            evidence=self._ev(at, ".user", "user"),
        )
        images = user.get("images")
        if isinstance(images, list) and images:
            self.d.add(
                "non-text-content", self._sample(at, ".user.images"), len(images), name="image"
            )
        execution = turn.get("execution")
        if isinstance(execution, dict):
            self._execution(execution, at)
        final = turn.get("assistant")
        if kind == native.TURN_BACKGROUND:
            self.d.add("lifecycle-dropped", self._sample(at, ".log_path"), name=kind)
        if final is not None:  # a counted unit: its text, else named as holding none
            reply = native.durable_text(final)
            if reply:
                # an interrupted turn's text is what the model had said when it stopped
                native_kind = (
                    "interrupted.partial_text" if kind == native.TURN_INTERRUPTED else "assistant"
                )
                self.b.add_text(
                    "assistant",
                    f"{at.prefix}assistant",
                    reply,
                    time=None,
                    turn=self.turn,
                    evidence=self._ev(at, ".assistant", native_kind),
                )
            else:
                self.d.add("empty-content", self._sample(at, ".assistant"), name="assistant")
        if kind == native.TURN_INTERRUPTED:
            call = turn.get("tool_call")
            if isinstance(call, dict):
                rid = self._call(call, at, ".tool_call", f"{at.prefix}tool_call")
                self.d.add("pending-tool-call", rid)
            reason = turn.get("terminal_reason", "cancelled")
            self.b.add_text(
                "system",
                f"{at.prefix}interrupted",
                native.INTERRUPT_PREFIX + str(reason),
                time=None,
                turn=self.turn,
                evidence=self._ev(at, ".terminal_reason", "interrupted"),
            )

    def _call(self, call: Obj, at: _Place, sub: str, rid: str) -> str:
        call_id = native.durable_text(call.get("id"))
        name = native.durable_text(call.get("name"))
        if call_id is None or name is None:
            raise FormatError(
                at.artifact, f"tool call {at.path}{sub} lacks id or name", line=at.line
            )
        args = _arguments(native.durable_text(call.get("arguments_json")))
        self.b.add_call(
            rid,
            call_id,
            name,
            args,
            time=None,
            turn=self.turn,
            evidence=self._ev(at, sub, "tool_call"),
        )
        return rid

    def _execution(self, execution: Obj, at: _Place) -> None:
        steps = execution.get("tool_steps")
        answered: set[str] = set()
        calls: list[tuple[str, str]] = []
        for j, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict):
                raise FormatError(
                    at.artifact,
                    f"{at.path}.execution.tool_steps[{j}] is not an object",
                    line=at.line,
                )
            sub = f".execution.tool_steps[{j}]"
            text = native.durable_text(step.get("assistant"))
            if text:
                self.b.add_text(
                    "assistant",
                    f"{at.prefix}s{j}/assistant",
                    text,
                    time=None,
                    turn=self.turn,
                    evidence=self._ev(at, f"{sub}.assistant", "assistant"),
                )
            elif step.get("assistant") is not None:  # "" or a value that holds no text
                self.d.add("empty-content", self._sample(at, f"{sub}.assistant"), name="assistant")
            for k, call in _objects(step, "tool_calls", at, sub):
                rid = self._call(call, at, f"{sub}.tool_calls[{k}]", f"{at.prefix}s{j}/call{k}")
                calls.append((str(native.durable_text(call.get("id"))), rid))
            for k, res in _objects(step, "tool_results", at, sub):
                answered.add(
                    self._result(res, at, f"{sub}.tool_results[{k}]", f"{at.prefix}s{j}/result{k}")
                )
        for call_id, rid in calls:
            if call_id not in answered:
                self.d.add("pending-tool-call", rid)
        files = execution.get("files")
        if isinstance(files, list) and files:
            self.d.add(
                "lifecycle-dropped",
                self._sample(at, ".execution.files"),
                len(files),
                name="file_evidence",
            )

    def _result(self, res: Obj, at: _Place, sub: str, rid: str) -> str:
        call_id = native.durable_text(res.get("tool_call_id"))
        output = native.durable_text(res.get("output"))
        if call_id is None or output is None:
            raise FormatError(
                at.artifact,
                f"tool result {at.path}{sub} lacks tool_call_id or output",
                line=at.line,
            )
        status = res.get("status")
        ok = True if status == "success" else False if status == "failure" else None
        self.b.add_result(
            rid,
            call_id,
            ok,
            output,
            time=_ms_time(res.get("created_at_ms")),
            turn=self.turn,
            evidence=self._ev(at, sub, "tool_result"),
            truncated=res.get("truncated") is True,
            exit_code=native.exit_code_of(res.get("command_process_presentation")),
        )
        return call_id


def _read_legacy(meta: Obj, b: SnapshotBuilder, history: streamed.History | None) -> None:
    """Lift ``meta["history"]``, or the ``history`` streamed from a large document."""
    from trajconv.codecs.fx import streamed

    if history is None:
        turns = meta.get("history")
        if not isinstance(turns, list):
            raise FormatError(layout.SESSION_JSON, "legacy session without a history array")
        history = streamed.History(len(turns), iter(turns))
    if _int(meta.get("history_len")) != history.length:
        raise FormatError(layout.SESSION_JSON, "history_len does not equal len(history)")
    lifter = _TurnLifter(b)
    for i, turn in enumerate(history.turns):
        lifter.lift(turn, _Place(layout.SESSION_JSON, None, f"fx:h{i}/", f"$.history[{i}]"))
    root = meta.get("workspace_root")
    b.session = Session(
        id=b.source.session_id,
        cwd=_str(root),
        created_at=_ms_time(meta.get("created_at_ms")),
        updated_at=_ms_time(meta.get("updated_at_ms")),
    )


# --------------------------------------------------------------------------- schema 3


@dataclass
class _V3State:
    cwd: str | None = None
    model: str | None = None
    created: int | None = None
    updated: int | None = None
    #: (turn, place) in the order of the durable history
    history: list[tuple[Any, _Place]] = field(default_factory=list)


def _turn_items(turn: Any) -> int:
    """Native units inside one history turn (the same walk ``_TurnLifter`` projects)."""
    if not isinstance(turn, dict):
        return 1
    if turn.get("kind") not in (
        native.TURN_ASSISTANT,
        native.TURN_BACKGROUND,
        native.TURN_INTERRUPTED,
    ):
        return 1
    raw_user = turn.get("user")
    user: Obj = raw_user if isinstance(raw_user, dict) else {}
    images = user.get("images")
    n = 1 + (len(images) if isinstance(images, list) else 0)
    raw_exec = turn.get("execution")
    execution: Obj = raw_exec if isinstance(raw_exec, dict) else {}
    for step in execution.get("tool_steps") or []:
        if isinstance(step, dict):
            n += 1 if step.get("assistant") is not None else 0
            n += len(step.get("tool_calls") or []) + len(step.get("tool_results") or [])
    files = execution.get("files")
    n += len(files) if isinstance(files, list) else 0
    n += 1 if turn.get("assistant") is not None else 0
    n += 1 if turn.get("kind") == native.TURN_BACKGROUND else 0
    if turn.get("kind") == native.TURN_INTERRUPTED:
        n += 1 + (1 if isinstance(turn.get("tool_call"), dict) else 0)
    return n


def _watermark(sdir: Path, files: _Files, sid: str, generation: Any) -> Obj:
    name = f"commit.{generation}.json"
    if name not in files:
        found = [
            n
            for n in files
            if n.startswith("commit.")
            and n.endswith(".json")
            and "/" not in n
            and n != "commit.pending.json"
        ]
        if len(found) != 1:
            raise FormatError(
                sdir / name,
                "missing commit watermark: the event log has no "
                "committed boundary, fx cannot read this session",
            )
        name = found[0]
    mark = json_document(files[name], name)
    if mark.get("session_id") != sid:
        raise FormatError(name, "watermark names another session")
    for key in ("through_seq", "through_event_log_bytes"):
        if _int(mark.get(key)) is None or mark[key] < 0:
            raise FormatError(name, f"watermark {key} is not a non-negative integer")
    mark["_name"] = name
    return mark


def _read_v3(sdir: Path, meta: Obj, files: _Files, b: SnapshotBuilder, limits: Limits) -> None:
    sid = b.source.session_id
    d = b.diagnostics
    if meta.get("storage_format") != "event_log_v1":
        raise FormatError(layout.SESSION_JSON, "schema 3 without storage_format event_log_v1")
    if layout.AUTHORITY in files:
        authority = json_document(files[layout.AUTHORITY], layout.AUTHORITY)
        if authority.get("session_id") != sid:
            raise FormatError(layout.AUTHORITY, "authority marker names another session")
    mark = _watermark(sdir, files, sid, meta.get("log_generation"))
    generation = mark.get("log_generation")
    data = files.get(layout.EVENTS)
    if data is None:
        raise FormatError(sdir / layout.EVENTS, "missing: schema 3 keeps its history there")
    through = int(mark["through_event_log_bytes"])
    if len(data) < through or (through and data[through - 1 : through] != b"\n"):
        raise FormatError(
            layout.EVENTS,
            f"the committed boundary ({through} bytes, "
            f"{mark['_name']}) is not a line end of the log",
        )
    committed, tail = data[:through], data[through:]
    state = _V3State()
    pending: dict[str, Any] = {}
    last: tuple[int, Any] | None = None
    for number, obj in iter_objects(committed, layout.EVENTS, d, limits):
        ev = _v3_event(number, obj, generation)
        last = (ev.seq, ev.event_id)
        _apply_v3(ev, state, pending, d)
        if ev.timestamp_ms >= 0:
            state.updated = ev.timestamp_ms
    if (last or (0, None)) != (mark["through_seq"], mark.get("through_event_id")) and through:
        raise FormatError(
            layout.EVENTS,
            f"the log does not end at the watermark ({mark['_name']}: seq {mark['through_seq']})",
        )
    if tail:
        # an append that crashed before its watermark: not committed, fx ignores it
        first = count_units(committed) + 1
        d.add("crash-tail", f"{layout.EVENTS}:{first}", count_units(tail), name="uncommitted")
    lifter = _TurnLifter(b)
    for turn, at in state.history:
        lifter.lift(turn, at)
    display = files.get(layout.DISPLAY)
    title = None
    if display is not None:
        try:
            value = orjson.loads(display)
            title = _str(value.get("title")) if isinstance(value, dict) else None
        except orjson.JSONDecodeError:
            d.add("metadata-invalid", layout.DISPLAY)
    b.session = Session(
        id=sid,
        title=title,
        cwd=state.cwd or _str(meta.get("workspace_root")),
        model=state.model,
        created_at=_ms_time(
            state.created if state.created is not None else meta.get("created_at_ms")
        ),
        updated_at=_ms_time(state.updated),
    )


def _v3_event(number: int, obj: Obj, generation: Any) -> native.FxEventV3:
    where = layout.EVENTS
    if obj.get("schema_version") != 1:
        raise FormatError(where, "unsupported event frame schema_version", line=number)
    if obj.get("log_generation") != generation:
        raise FormatError(where, "frame of another log generation", line=number)
    seq = _int(obj.get("seq"))
    if seq != number:
        raise FormatError(
            where, f"seq {obj.get('seq')!r} is not contiguous (expected {number})", line=number
        )
    kind, payload, ts = obj.get("kind"), obj.get("payload"), _int(obj.get("timestamp_ms"))
    if not isinstance(kind, str) or not isinstance(payload, dict) or ts is None:
        raise FormatError(where, "frame lacks kind, payload or timestamp_ms", line=number)
    return native.FxEventV3(number, seq, str(obj.get("event_id")), ts, kind, payload)


def _apply_v3(
    ev: native.FxEventV3, state: _V3State, pending: dict[str, Any], d: Diagnostics
) -> None:
    place = f"{layout.EVENTS}:{ev.line}"
    p = ev.payload
    if ev.kind == native.HISTORY_TURN_COMMITTED:
        at = _Place(layout.EVENTS, ev.line, f"fx:{ev.seq}/", "$.payload.turn")
        state.history.append((p.get("turn"), at))
        return
    if ev.kind == native.STATE_CHUNK:
        rid = p.get("replacement_id")
        if not isinstance(pending.get("id"), str) or rid != pending["id"]:
            raise FormatError(layout.EVENTS, "state chunk outside its replacement", line=ev.line)
        try:
            raw = base64.b64decode(str(p.get("base64", "")), validate=True)
        except ValueError:
            raise FormatError(layout.EVENTS, "state chunk is not base64", line=ev.line) from None
        if hashlib.sha256(raw).hexdigest() != p.get("chunk_sha256"):
            raise FormatError(layout.EVENTS, "state chunk sha256 mismatch", line=ev.line)
        pending["chunks"].append(raw)
        d.add("compaction-state", place, name=ev.kind)
        return
    d.add(
        "lifecycle-dropped" if ev.kind in native.V3_LIFECYCLE else "unknown-kind",
        place,
        name=ev.kind,
    )
    if ev.kind == native.SESSION_STARTED:
        state.created = _int(p.get("created_at_ms"))
        state.cwd = _str(p.get("workspace_root"))
        prefs = p.get("preferences")
        state.model = _str(prefs.get("model")) if isinstance(prefs, dict) else None
    elif ev.kind == native.PREFERENCES_CHANGED:
        state.model = _str(p.get("model")) or state.model
    elif ev.kind == native.WORKSPACE_REBOUND:
        state.cwd = _str(p.get("workspace_root")) or state.cwd
    elif ev.kind == native.STATE_STARTED:
        pending.clear()
        pending.update(
            id=p.get("replacement_id"), sha=p.get("sha256"), chunks=[], line=ev.line, seq=ev.seq
        )
    elif ev.kind == native.STATE_COMMITTED:
        if p.get("replacement_id") != pending.get("id"):
            raise FormatError(layout.EVENTS, "state commit without its start", line=ev.line)
        blob = b"".join(pending["chunks"])
        if hashlib.sha256(blob).hexdigest() != pending["sha"]:
            raise FormatError(layout.EVENTS, "state replacement sha256 mismatch", line=ev.line)
        durable = json_document(blob, f"{layout.EVENTS}:{pending['line']} state")
        history = durable.get("history")
        if not isinstance(history, list):
            raise FormatError(layout.EVENTS, "replaced state has no history", line=ev.line)
        for turn, at in state.history:
            # turns a replacement (compaction) superseded stay in the log artifact only
            d.add(
                "compaction-state",
                f"{at.artifact}:{at.line} {at.path}",
                _turn_items(turn),
                name="superseded_turn",
            )
        state.history = [
            (
                turn,
                _Place(
                    layout.EVENTS,
                    pending["line"],
                    f"fx:{pending['seq']}/h{i}/",
                    f"$.state.history[{i}]",
                ),
            )
            for i, turn in enumerate(history)
        ]
        state.cwd = _str(durable.get("workspace_root")) or state.cwd
        prefs = durable.get("preferences")
        if isinstance(prefs, dict):
            state.model = _str(prefs.get("model")) or state.model
        state.created = _int(durable.get("created_at_ms")) or state.created
        pending.clear()


# --------------------------------------------------------------------------- schema 4


def _v4_frames(
    path: Path, d: Diagnostics, limits: Limits, utf8: Utf8Tally
) -> Iterator[native.FxFrame]:
    for number, obj in iter_file_objects(path, layout.EVENTS, d, limits, utf8):
        if obj.get("schema_version") not in native.FRAME_SCHEMAS:
            raise FormatError(
                layout.EVENTS,
                f"frame schema_version {obj.get('schema_version')!r} is not 1, 2 or 3",
                line=number,
            )
        if _int(obj.get("seq")) != number:
            # no blank lines are allowed, so seq equals the line number
            raise FormatError(
                layout.EVENTS,
                f"seq {obj.get('seq')!r} is not contiguous (expected {number})",
                line=number,
            )
        ts = _int(obj.get("timestamp_ms"))
        event = obj.get("event")
        if ts is None or ts < 0 or not isinstance(event, dict) or len(event) != 1:
            raise FormatError(
                layout.EVENTS,
                "frame needs timestamp_ms >= 0 and an event with exactly one kind",
                line=number,
            )
        ((kind, body),) = event.items()
        if not isinstance(body, dict):
            raise FormatError(layout.EVENTS, f"{kind} event is not an object", line=number)
        yield native.FxFrame(number, number, ts, str(kind), body)


class _FrameLifter:
    def __init__(self, b: SnapshotBuilder, files: _Files) -> None:
        self.b = b
        self.d = b.diagnostics
        self.files = files
        self._turn = -1
        self.open = False
        self.pending: dict[str, tuple[str, str]] = {}

    @property
    def turn(self) -> int | None:
        """The current turn; ``None`` for frames before the first user message."""
        return self._turn if self._turn >= 0 else None

    def _ev(self, f: native.FxFrame, kind: str | None = None, units: int = 1) -> EvidenceFields:
        return evidence(
            artifact=layout.EVENTS,
            line=f.line,
            native=kind or f.kind,
            native_id=str(f.seq),
            units=units,
        )

    def frame(self, f: native.FxFrame) -> None:
        place = f"{layout.EVENTS}:{f.line}"
        time = time_from_ms(f.timestamp_ms)
        body = f.body
        if f.kind == native.USER:
            if self.open:
                self.d.add("chain-break", place)  # fx rejects a user inside an open turn
                self._close(place)
            self._turn += 1
            self.open = True
            self._add("user", f, self._text(body, f), time)
            images = body.get("images")
            if isinstance(images, list) and images:
                self.d.add("non-text-content", place, len(images), name="image")
        elif f.kind in native.IN_TURN and not self.open:
            self.d.add("chain-break", place)
            self._in_turn(f, time, place)
        elif f.kind in native.IN_TURN:
            self._in_turn(f, time, place)
        elif f.kind == native.TURN_COMPLETED:
            self.d.add("lifecycle-dropped", place, name=f.kind)
            self._close(place)
        elif f.kind == native.INTERRUPTED:
            partial = body.get("partial_text")
            if isinstance(partial, str) and partial:
                self.b.add_text(
                    "assistant",
                    f"fx:{f.seq}:partial",
                    partial,
                    time=time,
                    turn=self.turn,
                    evidence=self._ev(f, "interrupted.partial_text", units=0),
                )
            reason = (
                body.get("reason")
                if body.get("reason") in native.INTERRUPT_REASONS
                else ("cancelled")
            )
            self._add("system", f, native.INTERRUPT_PREFIX + str(reason), time)
            self._close(place)
        elif f.kind == native.CONTEXT_CHECKPOINT:
            self.d.add("compaction-state", place, name=f.kind)
        else:
            self.d.add("unknown-kind", place, name=f.kind)

    def _add(
        self, kind: str, f: native.FxFrame, text: str, time: str | None, model: str | None = None
    ) -> None:
        """A ``kind`` record of ``text``: frame ``f``'s unit, in the current turn."""
        self.b.add_text(
            kind, f"fx:{f.seq}", text, time=time, turn=self.turn, evidence=self._ev(f), model=model
        )

    def _text(self, body: Obj, f: native.FxFrame) -> str:
        text = body.get("text")
        if not isinstance(text, str):
            raise FormatError(layout.EVENTS, f"{f.kind} without text", line=f.line)
        return text

    def _in_turn(self, f: native.FxFrame, time: str | None, place: str) -> None:
        body = f.body
        if f.kind == native.STEERING:
            self._add("user", f, self._text(body, f), time)
        elif f.kind == native.ASSISTANT:
            text = self._text(body, f)
            replay = body.get("provider_replay")
            source = replay.get("source") if isinstance(replay, dict) else None
            model = _str(source.get("model")) if isinstance(source, dict) else None
            if text:
                self._add("assistant", f, text, time, model=model)
            else:
                self.d.add("empty-content", place, name=f.kind)
        elif f.kind == native.TOOL_CALL:
            call_id, name = body.get("call_id"), body.get("tool_name")
            if not isinstance(call_id, str) or not isinstance(name, str) or not call_id:
                raise FormatError(
                    layout.EVENTS, "tool_call lacks call_id or tool_name", line=f.line
                )
            self.b.add_call(
                f"fx:{f.seq}",
                call_id,
                name,
                _arguments(body.get("arguments_json")),
                time=time,
                turn=self.turn,
                evidence=self._ev(f),
            )
            self.pending[call_id] = (name, f"fx:{f.seq}")
        elif f.kind == native.TOOL_RESULT:
            self._result(f, time, place)

    def _body(self, f: native.FxFrame) -> bytes:
        ref = f.body.get("artifact_ref")
        stored = _int(f.body.get("stored_bytes"))
        if not isinstance(ref, str) or not layout.is_handle(ref):
            raise FormatError(
                layout.EVENTS,
                f"tool_result artifact_ref {ref!r} is not a valid tool-results handle",
                line=f.line,
            )
        name = f"{layout.TOOL_RESULTS}/{ref}"
        data = self.files.get(name)
        if data is None:
            raise FormatError(
                name,
                f"missing: the tool_result at {layout.EVENTS}:{f.line} "
                "names it (its preview is not its output)",
            )
        if stored is None or len(data) != stored:
            raise FormatError(
                name,
                f"size {len(data)} differs from stored_bytes {stored!r} "
                f"at {layout.EVENTS}:{f.line}",
            )
        return data

    def _result(self, f: native.FxFrame, time: str | None, place: str) -> None:
        body = f.body
        data = self._body(f)
        call_id = body.get("call_id")
        if not isinstance(call_id, str) or call_id not in self.pending:
            self.d.add("orphan-tool-result", place)
            return
        self.pending.pop(call_id)
        status = body.get("status")
        output_bytes = _int(body.get("output_bytes"))
        truncated = body.get("completeness") not in (None, "complete") or (
            output_bytes is not None and output_bytes > len(data)
        )
        self.b.add_result(
            f"fx:{f.seq}",
            call_id,
            True if status == "success" else False if status == "failure" else None,
            data.decode("utf-8", "replace"),
            time=time,
            turn=self.turn,
            evidence=self._ev(f),
            truncated=truncated,
            exit_code=native.exit_code_of(body.get("command_process_presentation")),
        )

    def _close(self, place: str) -> None:
        for _name, rid in self.pending.values():
            self.d.add("pending-tool-call", rid)
        self.pending.clear()
        self.open = False


def _read_v4(sdir: Path, meta: Obj, files: _Files, b: SnapshotBuilder, limits: Limits) -> None:
    events = files.copies.get(layout.EVENTS)
    if events is None:
        raise FormatError(sdir / layout.EVENTS, "missing: a schema-4 session needs events.jsonl")
    log = events.whole_file
    assert log is not None  # add_artifact_file copies a file whole
    lifter = _FrameLifter(b, files)

    def lift(frames: list[native.FxFrame]) -> None:
        for f in frames:
            lifter.frame(f)
            limits.check("max_records", b.record_count, layout.EVENTS, f.line)

    # An unfinished trailing turn is the crash tail fx drops, so a turn's frames
    # wait until it closes (or the next user message shows it was not the last).
    turn: list[native.FxFrame] = []
    for f in _v4_frames(log, b.diagnostics, limits, files.events_utf8):
        if f.kind == native.USER:
            lift(turn)
            turn = [f]
        elif turn:
            turn.append(f)
            if f.kind in native.CLOSING:
                lift(turn)
                turn = []
        else:
            lift([f])
    if layout.RECOVERY in files:
        lift(turn)  # a recovery checkpoint keeps the unfinished turn
        turn = []
    lifter._close(layout.EVENTS)
    for f in turn:
        b.diagnostics.add("crash-tail", f"{layout.EVENTS}:{f.line}", name=f.kind)
        images = f.body.get("images") if f.kind == native.USER else None
        if isinstance(images, list) and images:
            b.diagnostics.add("crash-tail", f"{layout.EVENTS}:{f.line}", len(images), name="image")
    # provider, effort, fast mode and language stay in the session.json artifact
    b.session = Session(
        id=b.source.session_id,
        title=_str(meta.get("title")),
        cwd=_str(meta.get("workspace_root")),
        model=_str(meta.get("model")),
        created_at=_ms_time(meta.get("created_at_ms")),
        updated_at=_ms_time(meta.get("updated_at_ms")),
    )


# --------------------------------------------------------------------------- entry


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    sdir = layout.resolve(Path(path), session)
    sid = layout.check_session_id(sdir.name, sdir)
    b = SnapshotBuilder(
        Source(
            harness="fx", harness_version=None, session_id=sid, locator=f"{layout.SESSIONS}/{sid}"
        ),
        READER,
    )
    files = _Files(b, limits)
    try:
        meta, history = _load(sdir, files, b, limits)
        _read_schema(sdir, meta, history, files, b, limits)
    finally:
        files.close()
    return b.build()


def _read_schema(
    sdir: Path,
    meta: Obj,
    history: streamed.History | None,
    files: _Files,
    b: SnapshotBuilder,
    limits: Limits,
) -> None:
    sid = b.source.session_id
    schema = meta.get("schema_version")
    if _int(schema) is None:
        raise FormatError(layout.SESSION_JSON, "no integer schema_version (InvalidSessionFormat)")
    if meta.get("id") != sid:
        raise FormatError(
            layout.SESSION_JSON, f"id {meta.get('id')!r} does not equal the folder name {sid!r}"
        )
    if schema in native.LEGACY_SCHEMAS:
        _read_legacy(meta, b, history)
    elif schema == native.EVENT_LOG_SCHEMA:
        _read_v3(sdir, meta, files, b, limits)
    elif schema == native.CURRENT_SCHEMA:
        _read_v4(sdir, meta, files, b, limits)
    else:
        raise FormatError(
            layout.SESSION_JSON,
            f"unsupported session schema_version {schema} (UnsupportedSessionSchema)",
        )
