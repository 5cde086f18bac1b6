"""OpenHands reader: ``conversations/<id>/`` (``events/event-*.json``) -> Snapshot.

One native unit is one event file (README "Events"); the events are read in index order.
An event's unit goes to the first record made from it; otherwise it is counted:
``lifecycle-dropped`` (state updates, pauses, condensation requests: never sent to the
model), ``compaction-state`` (a condensation that holds no summary: what it forgot is in the
artifacts), ``empty-content``, ``unknown-kind``. ``base_state.json`` is kept as an artifact
(the model it names is the session's model). A ``task`` sub-agent's conversation
(``subagents/<id>/``) is a child of its parent's Snapshot.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.common import json_document
from trajconv.codecs.jsonl import read_bounded
from trajconv.codecs.openhands import layout
from trajconv.codecs.tool_calls import CallProjector
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "openhands/1"
PREFIX = "openhands"
#: events that are the conversation's bookkeeping, never sent to the model
LIFECYCLE = frozenset(
    {
        "ConversationStateUpdateEvent",
        "PauseEvent",
        "CondensationRequest",
        "TokenEvent",
        "HookExecutionEvent",
    }
)
#: the terminal tool's exit code line (``TerminalObservation``'s text)
_EXIT = re.compile(r"\[The command completed with exit code (-?\d+)\.\]")


def _texts(content: Any) -> list[str]:
    """The texts of a content list (``TextContent``), in order."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return out


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw if raw is not None else {}


#: ``Observation.ERROR_MESSAGE_HEADER`` (``openhands/sdk/tool/schema.py``)
ERROR_HEADER = "[An error occurred during execution.]\n"


def _llm_text(observ: dict[str, Any]) -> str:
    """An observation's text as the CLI sends it to the model (``to_llm_content``): the error
    header when ``is_error``, then its content; a ``TerminalObservation`` wraps its text in
    ``metadata.prefix``/``suffix`` and adds the working directory, interpreter and exit code
    lines (``openhands/tools/terminal/definition.py``). Other observation kinds' own
    renderings (task, browser) are not reproduced: their content is their text."""
    text = "".join(_texts(observ.get("content")))
    head = ERROR_HEADER if observ.get("is_error") is True else ""
    meta = observ.get("metadata")
    if observ.get("kind") != "TerminalObservation" or not isinstance(meta, dict):
        return head + text
    out = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
    if meta.get("working_dir"):
        out += f"\n[Current working directory: {meta['working_dir']}]"
    if meta.get("py_interpreter_path"):
        out += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    if type(meta.get("exit_code")) is int and meta["exit_code"] != -1:
        out += f"\n[Command finished with exit code {meta['exit_code']}]"
    return head + out


class _Projector(CallProjector):
    def __init__(self, b: SnapshotBuilder, root: str) -> None:
        super().__init__(b)
        self.root = root
        self.model: str | None = None
        self.first: str | None = None
        self.last: str | None = None
        self.art = ""
        self.emitted = 0
        self.task_calls: list[str] = []

    def _ev(self, native: str, nid: str | None, path: str | None = None) -> EvidenceFields:
        units = 1 if self.emitted == 0 else 0
        self.emitted += 1
        return evidence(self.art, json_path=path, native=native, native_id=nid, units=units)

    def text(
        self, kind: str, rid: str, text: str, time: str | None, native: str, nid: str, path: str
    ) -> None:
        ev = self._ev(native, nid, path)
        if kind in ("assistant", "reasoning"):
            self.b.add_text(
                kind, rid, text, time=time, turn=self.turn, evidence=ev, model=self.model
            )
        else:
            self.b.add_text(kind, rid, text, time=time, turn=self.turn, evidence=ev)

    def event(self, obj: dict[str, Any], art: str) -> str | None:
        """Project one event; the code counting its unit when no record took it."""
        self.art = art
        self.emitted = 0
        kind = obj.get("kind")
        eid = str(obj.get("id") or art)
        rid = f"{PREFIX}:{eid}"
        stamp = obj.get("timestamp")
        time = time_from_iso(stamp) if isinstance(stamp, str) else None
        if time is not None:
            self.first = self.first or time
            self.last = time
        if kind == "SystemPromptEvent":
            prompt = obj.get("system_prompt")
            texts = _texts([prompt]) if isinstance(prompt, dict) else []
            for i, t in enumerate(t for t in texts if t):
                self.text("system", f"{rid}:{i}", t, time, kind, eid, "$.system_prompt")
        elif kind == "MessageEvent":
            msg = obj.get("llm_message") if isinstance(obj.get("llm_message"), dict) else {}
            assert isinstance(msg, dict)
            role = msg.get("role")
            source = obj.get("source")
            if role == "user" and source == "user":
                self.turn = 0 if self.turn is None else self.turn + 1
            reasoning = msg.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                self.text(
                    "reasoning",
                    f"{rid}:reasoning",
                    reasoning,
                    time,
                    kind,
                    eid,
                    "$.llm_message.reasoning_content",
                )
            out = "assistant" if role == "assistant" else ("user" if source == "user" else "system")
            for i, t in enumerate(_texts(msg.get("content"))):
                if t:
                    self.text(
                        out,
                        f"{rid}:{i}",
                        t,
                        time,
                        f"{kind}/{role}",
                        eid,
                        f"$.llm_message.content[{i}]",
                    )
            for i, t in enumerate(_texts(obj.get("extended_content"))):
                if t:
                    self.text(
                        "system",
                        f"{rid}:ext:{i}",
                        t,
                        time,
                        f"{kind}/extended",
                        eid,
                        f"$.extended_content[{i}]",
                    )
        elif kind == "ActionEvent":
            self.action(obj, rid, eid, time)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            self.observation(obj, kind, eid, time)
        elif kind == "Condensation":
            summary = obj.get("summary")
            if isinstance(summary, str) and summary:
                self.text("system", rid, summary, time, kind, eid, "$.summary")
            return None if self.emitted else "compaction-state"
        elif kind == "CondensationSummaryEvent":
            summary = obj.get("summary")
            if isinstance(summary, str) and summary:
                self.text("system", rid, summary, time, kind, eid, "$.summary")
        elif kind == "ConversationErrorEvent":
            detail = obj.get("detail") or obj.get("code")
            if isinstance(detail, str) and detail:
                self.text("system", rid, detail, time, kind, eid, "$.detail")
        elif kind in LIFECYCLE:
            return "lifecycle-dropped"
        else:
            return "unknown-kind"
        return None if self.emitted else "empty-content"

    def action(self, obj: dict[str, Any], rid: str, eid: str, time: str | None) -> None:
        kind = "ActionEvent"
        reasoning = obj.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self.text(
                "reasoning", f"{rid}:reasoning", reasoning, time, kind, eid, "$.reasoning_content"
            )
        for i, t in enumerate(_texts(obj.get("thought"))):
            if t:
                self.text("assistant", f"{rid}:thought:{i}", t, time, kind, eid, f"$.thought[{i}]")
        call = obj.get("tool_call") if isinstance(obj.get("tool_call"), dict) else {}
        assert isinstance(call, dict)
        call_id = str(obj.get("tool_call_id") or call.get("id") or f"{rid}:call")
        if call_id in self.calls:
            self.d.add("ids-not-unique", self.art)
            call_id = f"{rid}:call"
        name = str(call.get("name") or obj.get("tool_name") or "")
        ev = self._ev(f"{kind}/{name}", call_id, "$.tool_call")
        self.add_call(
            f"{rid}:call", call_id, name, _arguments(call.get("arguments")), time=time, evidence=ev
        )
        if name == "task":
            self.task_calls.append(call_id)

    def observation(self, obj: dict[str, Any], kind: str, eid: str, time: str | None) -> None:
        call_id = str(obj.get("tool_call_id") or "")
        if call_id not in self.calls:
            self.d.add("unlinked-result", self.art)
        code: int | None = None
        if kind == "ObservationEvent":
            observ = obj.get("observation") if isinstance(obj.get("observation"), dict) else {}
            assert isinstance(observ, dict)
            output = _llm_text(observ)
            ok: bool | None = observ.get("is_error") is not True
            raw = observ.get("exit_code")
            if type(raw) is int and raw != -1:
                code = raw
            elif observ.get("kind") == "TerminalObservation":
                found = _EXIT.search(output)
                code = int(found[1]) if found else None
        elif kind == "AgentErrorEvent":
            output, ok = str(obj.get("error") or ""), False
        else:
            output, ok = f"Action rejected: {obj.get('rejection_reason') or ''}", False
        ev = self._ev(kind, call_id, "$")
        self.answer(
            f"{PREFIX}:{eid}:result",
            call_id or f"{PREFIX}:{eid}",
            ok,
            output,
            time=time,
            evidence=ev,
            exit_code=code,
        )


def _base_state(b: SnapshotBuilder, conv: Path, rel: str, limits: Limits) -> dict[str, Any]:
    path = conv / layout.BASE_STATE
    if not path.is_file():
        b.diagnostics.add("metadata-missing", f"{rel}{layout.BASE_STATE}")
        return {}
    data = read_bounded(path, limits.max_session_bytes)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        b.add_artifact(f"{rel}{layout.BASE_STATE}", "application/json", data)
        b.diagnostics.add("metadata-invalid", f"{rel}{layout.BASE_STATE}")
        return {}
    b.add_artifact(f"{rel}{layout.BASE_STATE}", "application/json", data, parsed=obj)
    return obj if isinstance(obj, dict) else {}


def _model(state: dict[str, Any]) -> str | None:
    agent = state.get("agent") if isinstance(state.get("agent"), dict) else {}
    assert isinstance(agent, dict)
    llm = agent.get("llm") if isinstance(agent.get("llm"), dict) else {}
    assert isinstance(llm, dict)
    model = llm.get("model")
    return model if isinstance(model, str) and model else None


def _cwd(state: dict[str, Any]) -> str | None:
    ws = state.get("workspace") if isinstance(state.get("workspace"), dict) else {}
    assert isinstance(ws, dict)
    cwd = ws.get("working_dir")
    return cwd if isinstance(cwd, str) and cwd else None


def _project(
    b: SnapshotBuilder,
    conv: Path,
    rel: str,
    limits: Limits,
    budget: list[int],
    events: list[Path] | None = None,
) -> tuple[_Projector, dict[str, Any]]:
    """Project a conversation folder; ``events``: its event files, when listed already."""
    state = _base_state(b, conv, rel, limits)
    proj = _Projector(b, rel)
    proj.model = _model(state)
    total = 0
    for path in layout.event_files(conv) if events is None else events:
        art = f"{rel}{layout.EVENTS}/{path.name}"
        data = read_bounded(path, limits.max_session_bytes)
        total += len(data)
        if total > limits.max_session_bytes:
            raise LimitError(path, "max_session_bytes", limits.max_session_bytes)
        # parsed first (a bad file is refused either way) so the secret check reuses it
        obj = json_document(data, path, "an event file holds no JSON object")
        b.add_artifact(art, "application/json", data, parsed=obj)
        before = b.record_count
        code = proj.event(obj, art)
        if code is not None:
            name = str(obj.get("kind") or "event") if code != "empty-content" else None
            b.diagnostics.add(code, art, name=name)
        budget[0] -= b.record_count - before
        if budget[0] < 0:
            raise LimitError(path, "max_records", limits.max_records)
    proj.finish()
    return proj, state


def _session(sid: str, proj: _Projector, state: dict[str, Any], parent: str | None) -> Session:
    return Session(
        id=sid,
        parent_session_id=parent,
        title=None,
        cwd=_cwd(state),
        model=proj.model,
        created_at=proj.first,
        updated_at=proj.last,
    )


def _source(sid: str, locator: str) -> Source:
    return Source(harness="openhands", harness_version=None, session_id=sid, locator=locator)


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    conv = layout.resolve(path, session)
    events = layout.event_files(conv)
    if not events:
        raise FormatError(conv, "an OpenHands conversation with no events/event-*.json")
    is_sub = conv.parent.name == layout.SUBAGENTS
    parent = conv.parent.parent.name if is_sub else None
    sid = conv.name
    b = SnapshotBuilder(_source(sid, f"{layout.CONVERSATIONS}/{sid}"), READER)
    budget = [limits.max_records]
    proj, state = _project(b, conv, "", limits, budget, events)
    b.session = _session(sid, proj, state, parent)
    if not is_sub:
        subs = layout.subagents(conv)
        for i, sub in enumerate(subs):
            # the i-th ``task`` call spawned the i-th sub-agent (folders sorted by id: the
            # link is by order only when there is one of each)
            call = proj.task_calls[i] if len(subs) == len(proj.task_calls) else None
            if call is None:
                b.diagnostics.add("subagent-unlinked", f"{layout.SUBAGENTS}/{sub.name}")
            rel = f"{layout.SUBAGENTS}/{sub.name}/"
            kid = b.child(_source(sub.name, f"{layout.CONVERSATIONS}/{sid}/{rel}"), call)
            kproj, kstate = _project(kid, sub, rel, limits, budget)
            kid.session = _session(sub.name, kproj, kstate, sid)
    return b.build()
