"""Copilot CLI writer: Snapshot → ``home/.copilot/session-state/<uuid>/``.

Writes ``events.jsonl`` and ``workspace.yaml`` the way Copilot CLI 1.0.102 writes
them (``codecs/copilot/README.md`` and "Observed"): compact lines in
envelope order ``type, data, id, timestamp, parentId``, a linear ``parentId``
chain starting at ``null`` on a ``session.start`` line, files 0600 in a 0700
folder. Every line is meant to validate against the CLI's own
``session-events.schema.json`` (the tests check it against the installed CLI).

What the CLI's replay needs (observed with ``copilot --acp`` ``session/load``, see
README): a tool call is shown only when a ``tool.execution_start`` exists for it,
so every tool-call record gets one after its ``assistant.message``; reasoning is
kept (inline ``reasoningText``) but the CLI does not replay it.

Event ids, ``messageId`` and ``reasoningId`` are uuid5 of the Snapshot id and the
event's position (``ids-derived``); times come from the records, and events with
no time of their own take the nearest earlier one (``timestamps-synthesized``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from pydantic import JsonValue

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    folder_plan,
    name_status_not_sent,
)
from trajconv.codecs.common import open_write
from trajconv.codecs.copilot import layout, native
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import (
    AssistantRecord,
    ReasoningRecord,
    Snapshot,
    ToolCallRecord,
)
from trajconv.snapshot.spool import Blob, Spool

#: the CLI version whose on-disk format this writer follows (and the loader tests pin)
TARGET_VERSION = "1.0.102"
EPOCH = "1970-01-01T00:00:00.000Z"
OBSERVATION_INFO_TYPE = "observation"


@dataclass
class _Group:
    """Records that become one ``assistant.message``: reasoning, text, then tool calls."""

    reasoning: ReasoningRecord | None = None
    text: AssistantRecord | None = None
    calls: list[ToolCallRecord] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.reasoning is None and self.text is None and not self.calls

    @property
    def first(self) -> ReasoningRecord | AssistantRecord | ToolCallRecord:
        head = self.reasoning or self.text or self.calls[0]
        return head

    @property
    def model(self) -> str | None:
        if self.text is not None:
            return self.text.model
        return self.reasoning.model if self.reasoning is not None else None

    def accepts(
        self, rec: ReasoningRecord | AssistantRecord | ToolCallRecord, by_time: bool
    ) -> bool:
        """True when ``rec`` can join: same turn, in the reader's order, same model.

        One model response is one ``assistant.message`` (Copilot sends each back as one
        assistant message; splitting one made the model see empty assistant messages, issue
        23). A Copilot source marks its messages by time (``by_time``: the records of one
        event share it); other sources' responses are the runs of reasoning, text and calls
        between users and tool results, whatever their times.
        """
        if self.empty:
            return True
        head = self.first
        if rec.turn != head.turn or (by_time and rec.time != head.time):
            return False
        if isinstance(rec, ReasoningRecord):
            return False
        if isinstance(rec, AssistantRecord):
            if self.text is not None or self.calls:
                return False
            return self.reasoning is None or self.reasoning.model == rec.model
        return True


class _Uuid5:
    """``str(uuid.uuid5(uuid.NAMESPACE_URL, prefix + name))``, several times faster.

    The writer derives one or two ids for every line, all with one prefix: it is hashed
    once, and the text is made from the digest without a UUID object.
    """

    def __init__(self, prefix: str) -> None:
        self._sha = hashlib.sha1(uuid.NAMESPACE_URL.bytes + prefix.encode(), usedforsecurity=False)

    def __call__(self, name: str) -> str:
        sha = self._sha.copy()
        sha.update(name.encode())
        raw = bytearray(sha.digest()[:16])
        raw[6] = raw[6] & 0x0F | 0x50  # version 5 (RFC 4122 §4.1.3)
        raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant (§4.1.1)
        h = raw.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _Emitter:
    """Writes the lines after ``session.start`` to ``out`` as the records come.

    ``session.start`` is line 0: its id is fixed here (ids follow positions) and the
    line itself is made after the pass, which finds what it says. Its time, ``start_time``,
    is what untimed lines take until a record has a time.
    """

    def __init__(
        self, snapshot: Snapshot, diags: Diagnostics, out: BinaryIO, start_time: str
    ) -> None:
        self.uuid5 = _Uuid5(f"trajconv:{snapshot.id}:copilot:")
        self.diags = diags
        self.out = out
        self.count = 0  # lines so far, session.start included: ids are derived from it
        self.start_id = self.derived_id("event")
        self.count = 1
        self.prev = self.start_id
        self.time = start_time
        self.open_turn: int | None = None

    def derived_id(self, what: str) -> str:
        return self.uuid5(f"{what}:{self.count}")

    def emit(
        self,
        kind: str,
        data: dict[str, Any],
        time: str | None,
        *,
        bookkeeping: bool = False,
        arguments: tuple[JsonValue, ...] = (),
    ) -> None:
        """Write one line; a record without a time takes the nearest earlier one.

        ``arguments`` are the tool arguments in ``data``, its only values that may hold
        floats (:func:`native.event_line`).
        """
        if time is None:
            time = self.time
            if not bookkeeping:
                self.diags.add("timestamps-synthesized", kind)
        else:
            self.time = time
        event_id = self.derived_id("event")
        self.out.write(native.event_line(kind, data, event_id, time, self.prev, arguments))
        self.count += 1
        self.prev = event_id

    def turn(self, turn: int | None, time: str | None) -> None:
        if turn is None or turn == self.open_turn:
            return
        self.close_turn()
        self.open_turn = turn
        self.emit(native.TURN_START, {"turnId": str(turn)}, time, bookkeeping=True)

    def close_turn(self) -> None:
        if self.open_turn is not None:
            self.emit(native.TURN_END, {"turnId": str(self.open_turn)}, None, bookkeeping=True)
            self.open_turn = None

    def group(self, group: _Group) -> None:
        if group.empty:
            return
        head = group.first
        self.turn(head.turn, head.time)
        # one message, one time (the first record's): its calls are read back with it too
        for part in (group.reasoning, group.text, *group.calls):
            if part is not None and part.time != head.time:
                self.diags.add("untranslated-time", part.id)
        data: dict[str, Any] = {
            "messageId": self.derived_id("message"),
            "content": group.text.text if group.text is not None else "",
        }
        if group.model:
            data["model"] = group.model
        if group.calls:
            data["toolRequests"] = [
                {
                    "toolCallId": rec.call.id,
                    "name": rec.call.name,
                    "arguments": rec.call.arguments,
                    "type": "function",
                }
                for rec in group.calls
            ]
        if group.reasoning is not None:
            data["reasoningText"] = group.reasoning.text
        if self.open_turn is not None:
            data["turnId"] = str(self.open_turn)
        arguments = tuple(rec.call.arguments for rec in group.calls)
        self.emit(native.ASSISTANT_MESSAGE, data, head.time, arguments=arguments)
        if head.time is None:  # the line's borrowed time is named once; each part reads it back
            untimed = [p for p in (group.reasoning, group.text) if p is not None and p.time is None]
            for part in untimed[1:]:
                self.diags.add("timestamps-synthesized", part.id)
        for rec in group.calls:
            start: dict[str, Any] = {
                "toolCallId": rec.call.id,
                "toolName": rec.call.name,
                "arguments": rec.call.arguments,
            }
            if self.open_turn is not None:
                start["turnId"] = str(self.open_turn)
            self.emit(native.TOOL_START, start, rec.time, arguments=(rec.call.arguments,))


def _events(start_line: bytes, body: Blob) -> Callable[[], Iterator[bytes]]:
    """``events.jsonl`` in pieces: session.start, then the spooled lines after it."""

    def chunks() -> Iterator[bytes]:
        yield start_line
        yield from body.chunks()

    return chunks


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    # Copilot keeps a call without its result (the CLI resumes it as pending work), so only
    # an unfinished last turn and results without their call are refused.
    diags, drop, workdir, sid = open_write(
        snapshot, "copilot", allow_lossy=allow_lossy, cwd=cwd, refuse_pending=False
    )
    session = snapshot.session
    diags.add("ids-derived", "events.jsonl id/parentId, messageId")

    # session.start carries the first record time when the session has none, and that
    # time stands in for untimed records before it: found here, almost always in record 0.
    created = session.created_at or next((r.time for r in snapshot.records if r.time), None)
    if created is None:
        diags.add("timestamps-synthesized", "session.start")
    elif session.created_at is None:  # the first record's time stands in: say so
        diags.add("timestamps-synthesized", "workspace.yaml created_at")

    # One pass over the records (each pass re-parses them): the lines after session.start
    # go to a spool file as they are made; session.start and workspace.yaml are made after
    # it from the facts it finds.
    spool = Spool()
    body_path = spool.new_file(layout.EVENTS)
    last_time: str | None = None
    unmodelled = False
    with body_path.open("wb") as body:
        out = _Emitter(snapshot, diags, body, created or EPOCH)
        group = _Group()
        by_time = snapshot.source.harness == "copilot"  # the source is Copilot itself
        for rec in snapshot.records:
            if rec.time:
                last_time = rec.time
            if isinstance(rec, ReasoningRecord | AssistantRecord) and rec.model is None:
                unmodelled = True
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            if isinstance(rec, ReasoningRecord | AssistantRecord | ToolCallRecord):
                if not group.accepts(rec, by_time):
                    out.group(group)
                    group = _Group()
                if isinstance(rec, ReasoningRecord):
                    group.reasoning = rec
                elif isinstance(rec, AssistantRecord):
                    group.text = rec
                else:
                    group.calls.append(rec)
                continue
            out.group(group)
            group = _Group()
            if rec.kind == "user":
                out.close_turn()
                out.emit(native.USER_MESSAGE, {"content": rec.text}, rec.time)
            elif rec.kind == "tool-result":
                out.turn(rec.turn, rec.time)
                res = rec.result
                ok = res.ok
                if ok is None:
                    diags.add("tool-status-assumed", rec.id)
                    ok = True
                data: dict[str, Any] = {"toolCallId": res.call_id, "success": ok}
                if ok:
                    data["result"] = {"content": res.output}
                else:
                    data["error"] = {"message": res.output}
                if res.exit_code is not None:
                    data["shellExecution"] = {"exitCode": res.exit_code}
                # kept in shellExecution and success, which Copilot does not send the model
                name_status_not_sent(diags, rec.id, res, own=by_time)
                if out.open_turn is not None:
                    data["turnId"] = str(out.open_turn)
                out.emit(native.TOOL_COMPLETE, data, rec.time)
            elif rec.kind == "system":
                out.turn(rec.turn, rec.time)
                if not by_time:
                    # kept as system.message, which Copilot does not send its model (its own
                    # hold the system prompt of their day, not conversation)
                    diags.add("system-not-sent", rec.id)
                out.emit(native.SYSTEM_MESSAGE, {"content": rec.text, "role": "system"}, rec.time)
            elif rec.kind == "observation":
                out.turn(rec.turn, rec.time)
                if rec.evidence.native in (native.SESSION_ERROR, native.SESSION_WARNING):
                    # session.error/.warning need an errorType/warningType the Snapshot does
                    # not hold: the note is kept, as session.info, and the change is named
                    diags.add("untranslated-note-kind", rec.id, name=rec.evidence.native)
                out.emit(
                    native.SESSION_INFO,
                    {"infoType": OBSERVATION_INFO_TYPE, "message": rec.text},
                    rec.time,
                )
        out.group(group)
        out.close_turn()
    updated = session.updated_at or last_time or created
    if session.updated_at is None and updated is not None:
        diags.add("timestamps-synthesized", "workspace.yaml updated_at")

    version = (
        snapshot.source.harness_version
        if snapshot.source.harness == "copilot" and snapshot.source.harness_version
        else TARGET_VERSION
    )
    context: dict[str, Any] = {"cwd": workdir}
    if session.branch:
        context["branch"] = session.branch
    start: dict[str, Any] = {
        "sessionId": sid,
        "version": 1,
        "producer": "copilot-agent",
        "copilotVersion": version,
        "startTime": created or EPOCH,
    }
    # The reader gives a message without ``model`` the session's current model, so the session
    # model is written as ``selectedModel`` only when no reasoning/assistant record lacks one.
    if session.model and not unmodelled:
        start["selectedModel"] = session.model
    elif session.model:
        diags.add("untranslated-model", "session.start selectedModel")
    if session.parent_session_id:  # the reader knows no parent session field
        diags.add("untranslated-parent-session", "session.start")
    start["context"] = context
    start_line = native.event_line(
        native.SESSION_START, start, out.start_id, created or EPOCH, None, ()
    )
    body_blob = Blob(path=body_path, size=body_path.stat().st_size, keep=spool)

    if session.title is None:
        diags.add("title-missing", layout.WORKSPACE)
    workspace: dict[str, str | int | bool | None] = {
        "id": sid,
        "cwd": workdir,
        "branch": session.branch,
        "name": session.title,
        "user_named": False if session.title is not None else None,
        "summary_count": 0,
        "created_at": created,
        "updated_at": updated,
    }
    rel = f".copilot/{layout.SESSION_STATE}/{sid}"
    base = f"home/{rel}"
    files = [
        ExportFile(f"{base}/{layout.EVENTS}", _events(start_line, body_blob), 0o600),
        ExportFile(f"{base}/{layout.WORKSPACE}", native.workspace_text(workspace).encode(), 0o600),
    ]
    return folder_plan(
        rel,
        files,
        diags=diags,
        notes=[
            f"the session's cwd is {workdir}; Copilot CLI 1.0.102 refuses to load a session "
            "into a directory that does not exist, so run the resume command in one that does",
            "a Copilot home other than ~/.copilot is chosen with COPILOT_HOME",
        ],
    )
