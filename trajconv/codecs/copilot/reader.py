"""Copilot CLI session → Snapshot (``codecs/copilot/README.md``).

Every line of ``events.jsonl`` is one native unit. It ends as part of a record
(``evidence.units`` = 1 on the first record it yields, 0 on the others) or in a
unit-counting diagnostic, so conservation holds line by line.

Projection:

* ``user.message`` → user (``content``; ``transformedContent``, what the model was sent,
  stays in the artifact and a different one is counted as ``context-not-projected``);
* ``assistant.message`` → reasoning (``reasoningText``), assistant (``content`` when not
  empty), one tool-call per ``toolRequests[]`` entry; ``assistant.reasoning`` → reasoning;
* ``tool.user_requested`` → tool-call; ``tool.execution_start`` → tool-call only when no
  request announced the call, otherwise folded into it (``superseded-progress``);
* ``tool.execution_complete`` → tool-result (``ok`` = ``success``; output = ``error.message``
  on failure else ``result.content``, the model-facing text; ``shellExecution.exitCode`` →
  ``exit_code``); a second completion of one call → ``repeated-terminal-result``;
* ``system.message`` and ``skill.invoked`` → system; ``session.info|warning|error`` →
  observation (the CLI's own replay shows them as ``Info:``/``Error:`` notes);
* ``session.compaction_complete`` → ``compaction-state``; lifecycle types →
  ``lifecycle-dropped``; anything else → ``unknown-kind`` (sampled by type name).

Turns: ``assistant.turn_start`` events are counted by position (``turnId`` restarts at
``"0"`` in every process, spec "Observed"); records after the n-th turn start get turn n,
and user messages get the number of the turn start that follows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits, json_depth_ok
from trajconv.codecs.common import other_files
from trajconv.codecs.copilot import layout, native
from trajconv.codecs.jsonl import Utf8Tally, check_not_utf16, copy_jsonl, read_bounded, salvage
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.snapshot.spool import CHUNK

READER = "copilot/1"
HARNESS = "copilot"
JSONL_MEDIA = "application/x-ndjson"
YAML_MEDIA = "application/yaml"
MARKDOWN_MEDIA = "text/markdown"
MEDIA = {
    ".md": MARKDOWN_MEDIA,
    ".json": "application/json",
    ".jsonl": JSONL_MEDIA,
    ".yaml": YAML_MEDIA,
    ".db": "application/vnd.sqlite3",
}


class _State:
    """Per-session reading state."""

    def __init__(self, builder: SnapshotBuilder, artifact: str, limits: Limits, file: Path) -> None:
        self.b = builder
        self.artifact = artifact
        self.limits = limits
        self.file = file
        self.seen_ids: set[str] = set()
        self.prev_id: str | None = None
        self.turn: int | None = None
        self.turn_starts = 0
        self.pending_user: list[int] = []
        self.calls: dict[str, int] = {}
        self.completed: set[str] = set()
        self.model: str | None = None
        self.first_model: str | None = None
        self.start: dict[str, Any] = {}
        self.named: dict[tuple[str, str], list[int]] = {}  # (code, name) -> [count, first line]

    # -- helpers -----------------------------------------------------------------------
    def use_model(self, value: Any) -> None:
        """The model the session runs on from here, when ``value`` names one."""
        model = native.text_of(value)
        if model:
            self.model = model
            self.first_model = self.first_model or model

    def diag(self, code: str, line: int, name: str | None = None) -> None:
        if name is None:
            self.b.diagnostics.add(code, f"{self.artifact}:{line}")
            return
        # Most lines of a long session are lifecycle events. A diagnostic sampled by name
        # shows names and counts, not lines, so it is tallied here and added once per name,
        # in the order the names first came (which keeps the same names).
        tally = self.named.get((code, name))
        if tally is None:
            self.named[code, name] = [1, line]
        else:
            tally[0] += 1

    def add_named(self) -> None:
        for (code, name), (count, line) in self.named.items():
            self.b.diagnostics.add(code, f"{self.artifact}:{line}", count=count, name=name)

    def base_id(self, event: native.Event) -> str:
        eid = event.id
        if eid is None or eid in self.seen_ids:
            if eid is not None:
                self.b.diagnostics.add("ids-not-unique", f"{self.artifact}:{event.line}")
            return f"{HARNESS}:line:{event.line}"
        self.seen_ids.add(eid)
        return f"{HARNESS}:{eid}"

    def ev(self, event: native.Event, units: int, json_path: str | None = None) -> EvidenceFields:
        return evidence(
            artifact=self.artifact,
            line=event.line,
            json_path=json_path,
            native=event.type,
            native_id=event.id,
            units=units,
        )


def _event_time(event: native.Event) -> str | None:
    return time_from_iso(event.timestamp) if event.timestamp else None


#: lifecycle types with nothing to note: most lines of a long session are these
_DROPPED = native.LIFECYCLE_TYPES - {native.SESSION_START, native.MODEL_CHANGE, native.TURN_START}


def _lift(state: _State, event: native.Event) -> None:
    """Turn one persisted event into records or a unit diagnostic."""
    b = state.b
    data = event.data
    kind = event.type
    line = event.line

    if event.ephemeral or kind in _DROPPED:
        state.diag("lifecycle-dropped", line, kind)
        return

    if kind == native.SESSION_START:
        if not state.start:
            state.start = data
            # The Snapshot's hash chain starts from its source: session.start is the
            # journal's first line, so the version is set before any record is
            # spooled (a later one costs the builder a second pass over the records).
            b.source = b.source.model_copy(
                update={"harness_version": _pick(data.get("copilotVersion"))}
            )
            state.use_model(data.get("selectedModel"))
        state.diag("lifecycle-dropped", line, kind)
        return
    if kind == native.MODEL_CHANGE:
        state.use_model(data.get("newModel"))
        state.diag("lifecycle-dropped", line, kind)
        return
    if kind == native.TURN_START:
        state.turn = state.turn_starts
        state.turn_starts += 1
        for seq in state.pending_user:
            b.amend(seq, turn=state.turn)
        state.pending_user.clear()
        b.release()
        state.diag("lifecycle-dropped", line, kind)
        return

    time = _event_time(event)  # every event from here on may become records
    if kind == native.USER_MESSAGE:
        text = native.text_of(data.get("content"))
        if text is None:
            state.diag("invalid-line", line)
            return
        shown = data.get("transformedContent")
        if isinstance(shown, str) and shown != text:
            # what the model was sent (e.g. a <current_datetime> block before the prompt)
            state.diag("context-not-projected", line)
        seq = b.add_text(
            "user",
            state.base_id(event),
            text,
            time=time,
            turn=None,
            evidence=state.ev(event, 1),
        )
        if not state.pending_user:
            b.hold(seq)  # its turn is known only at the next turn start
        state.pending_user.append(seq)
        return

    if kind == native.ASSISTANT_MESSAGE:
        base = state.base_id(event)
        model = native.text_of(data.get("model")) or state.model
        if native.text_of(data.get("model")):
            state.first_model = state.first_model or model
        units = 1
        said = (("reasoning", f"{base}#reasoning", "reasoningText"), ("assistant", base, "content"))
        for kind, rid, key in said:
            text = native.text_of(data.get(key))
            if text:
                b.add_text(
                    kind,
                    rid,
                    text,
                    time=time,
                    turn=state.turn,
                    evidence=state.ev(event, units, f"$.data.{key}"),
                    model=model,
                )
                units = 0
        for index, request in enumerate(native.tool_requests(data)):
            seq = b.add_call(
                f"{base}#tool:{index}",
                request.tool_call_id,
                request.name,
                request.arguments,
                time=time,
                turn=state.turn,
                evidence=state.ev(event, units, f"$.data.toolRequests[{index}]"),
            )
            state.calls.setdefault(request.tool_call_id, seq)
            units = 0
        if units:
            opaque = data.get("reasoningOpaque") or data.get("encryptedContent")
            state.diag("redacted-content" if opaque else "empty-content", line)
        return

    if kind == native.ASSISTANT_REASONING:
        text = native.text_of(data.get("content"))
        if not text:
            state.diag("empty-content", line)
            return
        b.add_text(
            "reasoning",
            state.base_id(event),
            text,
            time=time,
            turn=state.turn,
            evidence=state.ev(event, 1),
            model=state.model,
        )
        return

    if kind in (native.TOOL_USER_REQUESTED, native.TOOL_START):
        call_id = native.text_of(data.get("toolCallId"))
        name = native.text_of(data.get("toolName"))
        if call_id is None or name is None:
            state.diag("invalid-line", line)
            return
        if call_id in state.calls:
            state.diag("superseded-progress", line, kind)
            return
        seq = b.add_call(
            state.base_id(event),
            call_id,
            name,
            data.get("arguments", {}),
            time=time,
            turn=state.turn,
            evidence=state.ev(event, 1),
        )
        state.calls[call_id] = seq
        return

    if kind == native.TOOL_COMPLETE:
        outcome = native.tool_outcome(data)
        if outcome is None:
            state.diag("invalid-line", line)
            return
        if outcome.call_id not in state.calls:
            state.diag("orphan-tool-result", line)
            return
        if outcome.call_id in state.completed:
            state.diag("repeated-terminal-result", line)
            return
        state.completed.add(outcome.call_id)
        b.add_result(
            state.base_id(event),
            outcome.call_id,
            outcome.ok,
            outcome.output,
            time=time,
            turn=state.turn,
            evidence=state.ev(event, 1),
            exit_code=outcome.exit_code,
        )
        return

    # system prompts and injected context -> system; info/warning/error notes -> observation
    if kind == native.SYSTEM_MESSAGE or kind in native.INJECTED_TYPES:
        role, key = "system", "content"
    elif kind in native.NOTE_TYPES:
        role, key = "observation", "message"
    else:
        role = ""
    if role:
        text = native.text_of(data.get(key))
        if not text:
            state.diag("empty-content", line)
            return
        b.add_text(
            role,
            state.base_id(event),
            text,
            time=time,
            turn=state.turn,
            evidence=state.ev(event, 1),
        )
        return

    if kind == native.COMPACTION_COMPLETE:
        state.diag("compaction-state", line, kind)
        return
    state.diag("unknown-kind", line, kind)


def _read_events(state: _State, events: Path, utf8: Utf8Tally) -> None:
    """Parse the spooled copy of ``events.jsonl`` one line at a time.

    ``orjson`` accepts only UTF-8, so ``utf8`` learns whether the journal is UTF-8 from
    the lines that did not parse alone (the builder need not decode it again).
    """
    limits = state.limits
    max_line = limits.max_line_bytes
    max_depth = limits.max_json_depth
    max_records = limits.max_records
    b = state.b
    loads = orjson.loads
    number = 0
    with events.open("rb", buffering=CHUNK) as fh:  # a read call per MiB, not per 8 KiB
        readline = fh.readline
        # at most max_line + 1 bytes, so an overlong line is refused without being held
        while raw := readline(max_line + 1):
            number += 1
            terminated = raw.endswith(b"\n")
            if len(raw) - terminated > max_line:
                raise LimitError(state.file, "max_line_bytes", max_line, line=number)
            try:
                value = loads(raw)  # the newline is JSON whitespace
            except orjson.JSONDecodeError:
                # A blank line never parses, so it is told apart here, off the hot path.
                # The CLI skips empty, whitespace-only and NUL-only lines.
                if not raw.strip(b" \t\r\n\x00"):
                    state.diag("blank-line", number)
                    continue
                if number == 1:
                    check_not_utf16(raw, state.file)
                saved = salvage(raw)
                if saved is None:
                    if utf8.ok:
                        try:
                            raw.decode("utf-8")
                        except UnicodeDecodeError:
                            utf8.ok = False
                    # Only an unterminated last line is a torn write; anything else is invalid.
                    state.diag("invalid-line" if terminated else "torn-line", number)
                    continue
                value, code = saved
                state.diag(code, number)
                if code == "replaced-bytes":
                    utf8.ok = False
            except RecursionError:
                raise LimitError(state.file, "max_json_depth", max_depth, line=number) from None
            # A value cannot nest deeper than the line has '[' and '{' bytes, so the walk
            # is needed only for the rare line with that many.
            if raw.count(b"[") + raw.count(b"{") >= max_depth and not json_depth_ok(
                value, max_depth
            ):
                raise LimitError(state.file, "max_json_depth", max_depth, line=number)
            event = native.parse_event(value, number)
            if event is None:
                state.diag("invalid-line", number)
                continue
            if not event.ephemeral:
                # parentId chains the persisted events linearly.
                if not event.has_parent or event.parent_id != state.prev_id:
                    b.diagnostics.add("chain-break", f"{state.artifact}:{number}")
                state.prev_id = event.id
            _lift(state, event)
            if b.record_count > max_records:
                raise LimitError(state.file, "max_records", max_records)
    utf8.complete = True


def _sidecars(folder: Path, builder: SnapshotBuilder, limits: Limits, budget: int) -> None:
    """Every other file of the session folder, byte for byte (locks and temp files aside)."""
    known = (layout.EVENTS, layout.WORKSPACE)
    for path, rel in other_files(folder, known, limits, budget, skip_dirs=("temp",)):
        media = MEDIA.get(path.suffix, "application/octet-stream")
        builder.add_artifact(rel, media, read_bounded(path, limits.max_session_bytes))


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits.from_env()
    paths = layout.resolve(Path(path), session)
    artifact = paths.events.name  # artifact names are relative to the session folder
    builder = SnapshotBuilder(
        Source(
            harness=HARNESS,
            harness_version=None,
            session_id=paths.session_id,
            locator=paths.locator,
        ),
        READER,
    )
    utf8 = Utf8Tally()  # the parse below tells whether the journal is UTF-8
    blob, events = copy_jsonl(builder, artifact, paths.events, limits, utf8)
    if not any(chunk.strip() for chunk in blob.chunks()):
        raise FormatError(paths.events, "empty: the CLI requires session.start on line 1")

    workspace: native.Workspace | None = None
    if paths.folder is not None:
        ws_path = paths.folder / layout.WORKSPACE
        if ws_path.is_file():
            ws_bytes = read_bounded(ws_path, limits.max_line_bytes, "max_line_bytes")
            builder.add_artifact(layout.WORKSPACE, YAML_MEDIA, ws_bytes)
            try:
                workspace = native.parse_workspace(ws_bytes.decode("utf-8"))
            except (UnicodeDecodeError, native.WorkspaceError):
                builder.diagnostics.add("metadata-invalid", layout.WORKSPACE)
        else:
            builder.diagnostics.add("metadata-missing", layout.WORKSPACE)
        _sidecars(paths.folder, builder, limits, blob.size)

    state = _State(builder, artifact, limits, paths.events)
    _read_events(state, events, utf8)
    state.add_named()
    pending = sorted(state.calls.keys() - state.completed)
    if pending:
        builder.diagnostics.add("pending-tool-call", pending[0], count=len(pending))

    start = state.start
    context = start.get("context") if isinstance(start.get("context"), dict) else {}
    assert isinstance(context, dict)
    ws = workspace.values if workspace is not None else {}
    created = _pick(ws.get("created_at"), start.get("startTime"))
    updated = _pick(ws.get("updated_at"))
    builder.session = Session(
        id=paths.session_id,
        title=workspace.title if workspace is not None else None,
        cwd=_pick(ws.get("cwd"), context.get("cwd")),
        branch=_pick(ws.get("branch"), context.get("branch")),
        model=state.first_model,
        created_at=time_from_iso(created) if created else None,
        updated_at=time_from_iso(updated) if updated else None,
    )
    return builder.build()


def _pick(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value
    return None
