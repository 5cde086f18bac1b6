"""OpenHands writer: Snapshot -> ``home/.openhands/conversations/<hex id>/events/``.

The CLI (``openhands`` 1.16.0, ``openhands-sdk`` 1.21.0) resumes a conversation from its
``events/`` alone: without ``base_state.json`` it writes a fresh one from its own settings and
the model request still carries every earlier event (the codec's README.md, "What the writer
cannot hold"). So only ``events/event-NNNNN-<event id>.json`` is written, one SDK event a
file, as ``EventLog`` writes them (``model_dump_json(exclude_none=True)``,
``openhands/sdk/conversation/event_store.py``; field order of the models in
``openhands/sdk/event/llm_convertible/``). Lowering, in one pass over the records:

* event 0 is a ``SystemPromptEvent``: ``Agent.init_state`` (``openhands/sdk/agent/agent.py``)
  adds none once one is among the first events, and refuses a conversation whose user message
  comes first. Its text is the Snapshot's own OpenHands system prompt (the record read from a
  ``SystemPromptEvent``); a session of another harness has none, so it is written empty
  (``target-prompt-missing``). Its ``tools`` list is empty: the CLI sends the model the tools
  of its own agent (``make_llm_completion(tools=self.tools_map...)``), not the event's;
* a user record is a ``MessageEvent`` (``source`` ``user``); other system text a
  ``MessageEvent`` of role ``system`` (``source`` ``environment``), sent as a system message;
* one model step (reasoning, texts, then tool calls) is an assistant ``MessageEvent`` (texts
  as content parts, reasoning as ``reasoning_content``) or, when it calls tools, one
  ``ActionEvent`` per call sharing one ``llm_response_id`` (the SDK joins them into one
  assistant message; the texts and reasoning are the first one's ``thought`` and
  ``reasoning_content``); ``action`` is left out (None: "non-executable"), as the Snapshot
  does not hold the SDK's typed action;
* a tool result is an ``ObservationEvent`` holding an ``MCPToolObservation`` (the SDK's
  observation of a tool from outside: its text sent as it is, ``is_error`` for a failure,
  which the SDK heads with ``Observation.ERROR_MESSAGE_HEADER``); an OpenHands ``terminal``
  result is a ``TerminalObservation`` again (``openhands/tools/terminal/definition.py``), its
  ``exit_code`` kept, its text the one the reader took (metadata lines included), so the
  metadata is left at its defaults, which add no line;
* event, response and conversation ids: the conversation id is the Snapshot's session id when
  it is a UUID (OpenHands' own are 32 hex digits), else uuid5 of the Snapshot id, written as
  32 hex digits; every event id and ``llm_response_id`` is uuid5 of the Snapshot id and the
  record's id (``ids-derived``);
* a sub-agent (a child of the Snapshot that the session spawned) is a conversation of its
  own in ``subagents/<hex id>/events/``, as the CLI keeps a ``task`` sub-agent's; its id is
  the child's session id when it is a UUID, else uuid5 of the child's id;
* times: ``timestamp`` is the record's time as the SDK writes its own, wall-clock without a
  zone (``datetime.now().isoformat()``), here in UTC, which no reader can take back as a
  moment (``untranslated-time``); a record without a time is written without ``timestamp``,
  which the SDK fills in with the time it loads the event (``Event.timestamp``'s
  ``default_factory``; ``time-stamped-on-load``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    exit_code_shown,
    folder_plan,
    name_status_not_sent,
)
from trajconv.codecs.common import derived_uuid, is_uuid, name_unheld, open_write
from trajconv.codecs.openhands import layout
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import (
    AssistantRecord,
    ReasoningRecord,
    Record,
    Snapshot,
    SystemRecord,
    ToolResultRecord,
)

#: ``Observation.ERROR_MESSAGE_HEADER`` (``openhands/sdk/tool/schema.py``)
ERROR_HEADER = "[An error occurred during execution.]\n"
CONVERSATIONS = f"{layout.DIR}/{layout.CONVERSATIONS}"

JsonObj = dict[str, Any]


def _text(text: str) -> JsonObj:
    """A ``TextContent`` as the SDK dumps it."""
    return {"cache_prompt": False, "type": "text", "text": text}


def _stamp(time: str) -> str:
    """A Snapshot time as the SDK's own timestamps look: ISO wall-clock (UTC), no zone."""
    moment = datetime.fromisoformat(time.replace("Z", "+00:00")).astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds")


class _Lowerer:
    def __init__(self, key: str, diags: Diagnostics, own: bool) -> None:
        self.key = key
        self.diags = diags
        self.own = own
        self.events: list[JsonObj] = []
        self.names: dict[str, str] = {}
        self.commands: dict[str, str | None] = {}
        self.actions: dict[str, str] = {}
        self.unstamped = 0
        # the model step being gathered: (record id, time) of its first record, reasoning,
        # texts, calls
        self.step_head: tuple[str, str | None] | None = None
        self.reasoning: list[str] = []
        self.texts: list[str] = []
        self.calls: list[tuple[str, str | None, Any]] = []

    def event_id(self, rid: str) -> str:
        return derived_uuid(self.key, f"openhands-event:{rid}")

    def head(self, rid: str, time: str | None) -> JsonObj:
        out: JsonObj = {"id": self.event_id(rid)}
        if time is None:
            self.unstamped += 1
        else:
            out["timestamp"] = _stamp(time)
        return out

    def system_prompt(self, text: str, rid: str, time: str | None) -> None:
        self.events.append({
            **self.head(rid, time),
            "source": "agent",
            "system_prompt": _text(text),
            "tools": [],
            "kind": "SystemPromptEvent",
        })  # fmt: skip

    def message(
        self, source: str, role: str, texts: list[str], rid: str, time: str | None, **extra: Any
    ) -> None:
        msg: JsonObj = {"role": role, "content": [_text(t) for t in texts]}
        if extra.get("reasoning"):
            msg["reasoning_content"] = extra["reasoning"]
        msg["thinking_blocks"] = []
        event: JsonObj = {**self.head(rid, time), "source": source, "llm_message": msg}
        if role == "assistant":
            event["llm_response_id"] = derived_uuid(self.key, f"openhands-response:{rid}")
        event.update({"activated_skills": [], "extended_content": [], "kind": "MessageEvent"})
        self.events.append(event)

    def start(self, rid: str, time: str | None) -> None:
        if self.step_head is None:
            self.step_head = (rid, time)

    def gather(self, rec: AssistantRecord | ReasoningRecord) -> None:
        """A text or reasoning record into the model step; a new step when the step already
        holds what follows it (a call; for reasoning, a text too)."""
        text = rec.kind == "assistant"
        if self.calls or (not text and self.texts):
            self.flush()
        elif self.texts if text else self.reasoning:
            self.diags.add("untranslated-message-boundary", rec.id)
        self.start(rec.id, rec.time)
        (self.texts if text else self.reasoning).append(rec.text)

    def flush(self) -> None:
        if self.step_head is None:
            return
        rid, time = self.step_head
        reasoning = "\n\n".join(self.reasoning) if self.reasoning else None
        if not self.calls:
            self.message("agent", "assistant", self.texts, rid, time, reasoning=reasoning)
        response = derived_uuid(self.key, f"openhands-response:{rid}")
        for i, (call_rid, call_time, call) in enumerate(self.calls):
            event: JsonObj = {
                **self.head(call_rid, call_time),
                "source": "agent",
                "thought": [_text(t) for t in self.texts] if i == 0 else [],
            }
            if i == 0 and reasoning:
                event["reasoning_content"] = reasoning
            args = call.arguments
            if not isinstance(args, dict):
                self.diags.add("untranslated-tool-arguments", call_rid)
                args = {"_raw": args if isinstance(args, str) else json.dumps(args)}
            event.update({
                "thinking_blocks": [],
                "tool_name": call.name,
                "tool_call_id": call.id,
                "tool_call": {
                    "id": call.id,
                    "name": call.name,
                    "arguments": json.dumps(args, ensure_ascii=False),
                    "origin": "completion",
                },
                "llm_response_id": response,
                "security_risk": "UNKNOWN",
                "kind": "ActionEvent",
            })  # fmt: skip
            self.names[call.id] = call.name
            command = args.get("command")
            self.commands[call.id] = command if isinstance(command, str) else None
            self.actions[call.id] = event["id"]
            self.events.append(event)
        self.step_head = None
        self.reasoning, self.texts, self.calls = [], [], []

    def result(self, rec: ToolResultRecord) -> None:
        self.flush()
        res = rec.result
        output = res.output
        failed = res.ok is False
        if res.ok is None:
            self.diags.add("tool-status-assumed", rec.id)
        if failed and self.own and output.startswith(ERROR_HEADER):
            output = output[len(ERROR_HEADER) :]  # the reader added it: the SDK adds it again
        elif failed:
            # the SDK tells its model of a failure by heading the text with its error header
            self.diags.add("exit-status-in-text", rec.id)
        name = self.names.get(res.call_id, "")
        content = [_text(output)] if output else []
        observation: JsonObj
        if self.own and name == "terminal":
            # OpenHands' own terminal result: its text already holds the metadata lines the
            # reader joined in, so the metadata is the model's defaults (no lines added)
            observation = {
                "content": content,
                "is_error": failed,
                "command": self.commands.get(res.call_id),
                "exit_code": res.exit_code,
                "timeout": False,
                "metadata": {"exit_code": -1, "pid": -1, "prefix": "", "suffix": ""},
                "kind": "TerminalObservation",
            }
        else:
            observation = {
                "content": content,
                "is_error": failed,
                "tool_name": name,
                "kind": "MCPToolObservation",
            }
            if not self.own:
                name_status_not_sent(self.diags, rec.id, res, own=False)
            elif res.exit_code is not None and not exit_code_shown(res.output, res.exit_code):
                # an MCPToolObservation holds no exit code: only its text may show it
                self.diags.add("untranslated-exit-code", rec.id)
        self.events.append({
            **self.head(rec.id, rec.time),
            "source": "environment",
            "tool_name": name,
            "tool_call_id": res.call_id,
            "observation": observation,
            "action_id": self.actions.get(res.call_id, self.event_id(res.call_id)),
            "kind": "ObservationEvent",
        })  # fmt: skip


def _is_prompt(rec: Record) -> bool:
    return isinstance(rec, SystemRecord) and rec.evidence.native == "SystemPromptEvent"


def _conversation(
    key: str,
    records: Iterable[Record],
    created: str | None,
    diags: Diagnostics,
    drop: set[str],
    own: bool,
) -> list[JsonObj]:
    """The events of one conversation (the session's, or a sub-agent's): its records lowered
    in one pass; ``key`` (the Snapshot's or the child's id) seeds the derived ids."""
    low = _Lowerer(key, diags, own)
    prompt_written = False
    timed = 0
    for rec in records:
        if rec.id in drop:
            diags.add(dropped_code(rec.kind), rec.id)
            continue
        if not prompt_written:
            prompt_written = True
            if own and isinstance(rec, SystemRecord) and _is_prompt(rec):
                low.system_prompt(rec.text, rec.id, rec.time)
                continue
            diags.add("target-prompt-missing", "system prompt")
            low.system_prompt("", "system-prompt", created or rec.time)
        if rec.kind == "user":
            low.flush()
            low.message("user", "user", [rec.text], rec.id, rec.time)
        elif rec.kind == "system":
            low.flush()
            role = "system"
            if own and rec.evidence.native.startswith("MessageEvent/"):
                role = rec.evidence.native.split("/", 1)[1]
                role = role if role in ("system", "user") else "system"
            elif not own:
                # the source's harness may have sent it inside a user message: here it is a
                # system message of its own
                diags.add("context-as-system", rec.id)
            low.message("environment", role, [rec.text], rec.id, rec.time)
        elif rec.kind in ("reasoning", "assistant"):
            low.gather(rec)
        elif rec.kind == "tool-call":
            low.start(rec.id, rec.time)
            low.calls.append((rec.id, rec.time, rec.call))
        elif rec.kind == "tool-result":
            low.result(rec)
        else:
            diags.add(f"untranslated-{rec.kind}", rec.id)
        if rec.time is not None:
            timed += 1
        if rec.kind in ("assistant", "reasoning") and rec.model:
            diags.add("untranslated-model", rec.id)
    low.flush()
    if not prompt_written:
        diags.add("target-prompt-missing", "system prompt")
        low.system_prompt("", "system-prompt", created)
    diags.add("ids-derived", "event ids", count=len(low.events))
    if timed:
        # written without a zone, as the SDK writes its own: no reader takes them back
        diags.add("untranslated-time", "record times (no zone)", count=timed)
    if low.unstamped:
        diags.add("time-stamped-on-load", "events without a time", count=low.unstamped)
    return low.events


def _files(base: str, events: list[JsonObj]) -> list[ExportFile]:
    return [
        ExportFile(
            f"home/{base}/{layout.EVENTS}/event-{i:05d}-{event['id']}.json",
            json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode(),
            0o600,
        )
        for i, event in enumerate(events)
    ]


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "openhands", allow_lossy=allow_lossy, cwd=cwd)
    conv = uuid.UUID(sid).hex
    own = snapshot.source.harness == "openhands"
    session = snapshot.session
    base = f"{CONVERSATIONS}/{conv}"
    events = _conversation(snapshot.id, snapshot.records, session.created_at, diags, drop, own)
    files = _files(base, events)
    folders = [f"{base}/{layout.EVENTS}"]
    # a sub-agent's conversation is subagents/<hex id>/ in its parent's folder (the reader
    # links the i-th ``task`` call to the i-th folder); one that another child spawned has no
    # place there (the CLI nests one level only)
    written = []
    for child in snapshot.children:
        if child.session.parent_session_id not in (None, snapshot.session.id):
            continue
        kid_id = child.session.id
        if not is_uuid(kid_id):
            diags.add("ids-derived", "sub-agent conversation id")
            kid_id = derived_uuid(child.id, "openhands-subagent")
        folder = f"{base}/{layout.SUBAGENTS}/{uuid.UUID(kid_id).hex}"
        kid_own = child.source.harness == "openhands"
        kid = _conversation(
            child.id, child.records, child.session.created_at, diags, set(), kid_own
        )
        files += _files(folder, kid)
        folders.append(f"{folder}/{layout.EVENTS}")
        written.append(child.id)
    if session.created_at or session.updated_at:
        diags.add(
            "untranslated-time",
            "session times",
            count=(session.created_at is not None) + (session.updated_at is not None),
        )
    diags.add("untranslated-cwd", "session cwd (base_state.json is the CLI's own)")
    name_unheld(
        diags,
        session,
        {
            "untranslated-model": "session model (the CLI's settings name the model)",
            "untranslated-title": "session title (the CLI shows the first prompt)",
            "untranslated-branch": None,
            "untranslated-parent-session": "parent session",
        },
    )

    return folder_plan(
        base,
        files,
        diags=diags,
        notes=[f"run the resume command in {workdir}: the session's cwd"],
        shared=CONVERSATIONS,
        below=folders,
        children_written=tuple(written),
    )
