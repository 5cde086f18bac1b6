"""Qwen Code reader: ``chats/<id>.jsonl`` (or a sub-agent's ``subagents/<parent>/agent-<id>.jsonl``)
-> Snapshot.

A session file is a ChatRecord journal (README "Records"): every line is one record with
``uuid`` and ``parentUuid``; the conversation is the ``parentUuid`` chain back from the last
conversation record (``selectTranscriptLeaf`` / ``walkTranscriptUuidChain`` in the CLI). A
first pass keeps only each record's parent (about 100 bytes a line) to find that chain; the
second projects the records on it in file order (a parent is always written before its child).

One native unit is one line. A line's unit goes to the first record made from it; otherwise
it is counted: ``rewound`` (off the chain), ``lifecycle-dropped`` (telemetry, attribution and
the other ``system`` subtypes the CLI never sends its model), ``compaction-state`` (a
compression that keeps no history), ``empty-content``, ``unknown-kind``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.genai import add_function_call, answer_function_response, parts_of
from trajconv.codecs.jsonl import Utf8Tally, copy_jsonl, iter_file_objects, read_bounded
from trajconv.codecs.qwen import layout
from trajconv.codecs.tool_calls import CallProjector
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "qwen/1"
PREFIX = "qwen"
#: system subtypes that are not conversation (``NON_CONVERSATION_RECORD_SUBTYPES`` and the
#: artifact subtypes): never a leaf of the chain
NOT_CONVERSATION = frozenset(
    {
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
        "session_artifact_event",
        "session_artifact_snapshot",
    }
)
#: user subtypes that are the CLI's own text, not a prompt the user typed
HARNESS_USER = frozenset({"notification", "cron", "goal_runtime", "background_task_completed"})
#: a user text part the CLI wraps a hook's context in
HOOK_CONTEXT = "<qwen:user-prompt-submit-context>"
COMPRESSION = "chat_compression"


def _valid(obj: dict[str, Any]) -> bool:
    """``validateTranscriptRecord``'s identity checks."""
    parent = obj.get("parentUuid")
    return (
        isinstance(obj.get("uuid"), str)
        and bool(obj["uuid"])
        and (parent is None or isinstance(parent, str))
        and isinstance(obj.get("sessionId"), str)
        and obj.get("type") in layout.RECORD_TYPES
    )


def _conversation(obj: dict[str, Any]) -> bool:
    subtype = obj.get("subtype")
    return not (
        obj.get("type") == "system" and isinstance(subtype, str) and subtype in NOT_CONVERSATION
    )


def _command_answered(obj: dict[str, Any], prev: dict[str, Any] | None) -> bool:
    """Whether ``obj`` is the result of a slash command that the CLI answered itself, so that
    ``prev``, the command as the user typed it, is not sent to the model
    (``SessionApiHistoryAccumulator.add``, ``slash_command``)."""
    payload = obj.get("systemPayload")
    if obj.get("subtype") != "slash_command" or not isinstance(payload, dict) or prev is None:
        return False
    items = payload.get("outputHistoryItems")
    msg = prev.get("message") if isinstance(prev.get("message"), dict) else {}
    parts = msg.get("parts") if isinstance(msg, dict) else None
    return (
        payload.get("phase") == "result"
        and payload.get("sentToModel") is not True
        and isinstance(items, list)
        and bool(items)
        and all(isinstance(i, dict) and i.get("type") == "assistant" for i in items)
        and prev.get("type") == "user"
        and prev.get("subtype") is None
        and isinstance(parts, list)
        and len(parts) == 1
        and parts[0] == {"text": payload.get("rawCommand")}
    )


def _chain(path: Path, name: str, limits: Limits) -> tuple[set[str], set[str]]:
    """The uuids on the ``parentUuid`` chain back from the last conversation record, and
    those of typed slash commands the CLI answered itself (never sent to the model)."""
    parents: dict[str, str | None] = {}
    leaf: str | None = None
    prev: dict[str, Any] | None = None  # the last record with a message
    commands: set[str] = set()
    for _, obj in iter_file_objects(path, name, Diagnostics(), limits):
        if not _valid(obj):
            continue
        parents[obj["uuid"]] = obj.get("parentUuid")  # _valid: absent counts as null
        if _conversation(obj):
            leaf = obj["uuid"]
        if _command_answered(obj, prev):
            commands.add(str(prev["uuid"]))  # type: ignore[index]
        if obj["type"] != "system" and isinstance(obj.get("message"), dict):
            prev = obj
        elif obj.get("subtype") == "slash_command":
            prev = None
    chain: set[str] = set()
    current = leaf
    while current is not None and current in parents and current not in chain:
        chain.add(current)
        current = parents[current]
    return chain, commands


def _time(obj: dict[str, Any]) -> str | None:
    stamp = obj.get("timestamp")
    return time_from_iso(stamp) if isinstance(stamp, str) else None


class _Projector(CallProjector):
    def __init__(self, b: SnapshotBuilder, art: str) -> None:
        super().__init__(b)
        self.art = art
        self.model: str | None = None
        self.title: str | None = None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.first: str | None = None
        self.last: str | None = None
        self.emitted = 0
        self.line = 0

    def _ev(self, native: str, nid: str | None, path: str | None = None) -> EvidenceFields:
        units = 1 if self.emitted == 0 else 0
        self.emitted += 1
        return evidence(
            self.art, line=self.line, json_path=path, native=native, native_id=nid, units=units
        )

    def record(self, obj: dict[str, Any], line: int) -> str | None:
        """Project one record on the chain; the code counting its line when no record took
        its unit (``None`` when one did)."""
        self.emitted = 0
        self.line = line
        uid = str(obj["uuid"])
        rtype = obj["type"]
        time = _time(obj)
        if time is not None:
            self.first = self.first or time
            self.last = time
        if isinstance(obj.get("cwd"), str) and obj["cwd"]:
            self.cwd = obj["cwd"]
        if isinstance(obj.get("gitBranch"), str) and obj["gitBranch"]:
            self.branch = obj["gitBranch"]
        rid = f"{PREFIX}:{uid}"
        subtype = obj.get("subtype")
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else None
        parts = parts_of(msg.get("parts")) if msg is not None else []
        if rtype == "system":
            return self.system(obj, rid, subtype, time)
        if rtype == "user":
            harness = isinstance(subtype, str) and subtype in HARNESS_USER
            texts = 0
            for i, part in enumerate(parts):
                if not isinstance(part, dict) or not isinstance(part.get("text"), str):
                    self.parts(part, rid, i, time, "user")
                    continue
                text = part["text"]
                if not text.strip():
                    continue
                kind = "system" if harness or text.lstrip().startswith(HOOK_CONTEXT) else "user"
                if kind == "user":
                    if texts == 0:
                        self.turn = 0 if self.turn is None else self.turn + 1
                    texts += 1
                ev = self._ev(f"user/{subtype or kind}", uid, f"$.message.parts[{i}]")
                self.b.add_text(
                    kind,
                    rid if i == 0 else f"{rid}:part:{i}",
                    text,
                    time=time,
                    turn=self.turn,
                    evidence=ev,
                )
        elif rtype == "assistant":
            model = obj.get("model") if isinstance(obj.get("model"), str) else None
            self.model = model or self.model
            for i, part in enumerate(parts):
                self.parts(part, rid, i, time, "assistant", model)
        elif rtype == "tool_result":
            status = obj.get("toolCallResult")
            for i, part in enumerate(parts):
                if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                    self.response(part["functionResponse"], status, uid, i, time)
                else:
                    self.parts(part, rid, i, time, "user")
        return None if self.emitted else "empty-content"

    def parts(
        self,
        part: Any,
        rid: str,
        i: int,
        time: str | None,
        role: str,
        model: str | None = None,
    ) -> None:
        """One part of a message: text, thought, function call or response."""
        if not isinstance(part, dict):
            return
        uid = rid.removeprefix(f"{PREFIX}:")
        path = f"$.message.parts[{i}]"
        if isinstance(part.get("functionCall"), dict):
            self.call(part["functionCall"], rid, time, path)
        elif isinstance(part.get("functionResponse"), dict):
            self.response(part["functionResponse"], None, uid, i, time)
        elif isinstance(part.get("text"), str):
            text = part["text"]
            if part.get("thought") is True:
                kind = "reasoning"
            elif not text:
                return
            else:
                kind = "assistant" if role == "assistant" else "system"
            ev = self._ev(f"{role}/{kind}", uid, path)
            pid = rid if i == 0 else f"{rid}:part:{i}"
            if kind in ("assistant", "reasoning"):
                self.b.add_text(
                    kind, pid, text, time=time, turn=self.turn, evidence=ev, model=model
                )
            else:
                self.b.add_text(kind, pid, text, time=time, turn=self.turn, evidence=ev)
        elif self.emitted:
            self.d.add("block-dropped", f"{self.art}:{self.line}", name=_part_kind(part))
        else:
            self.d.add("non-text-content", f"{self.art}:{self.line}", name=_part_kind(part))
            self.emitted += 1  # the line's unit is the diagnostic's

    def system(self, obj: dict[str, Any], rid: str, subtype: Any, time: str | None) -> str | None:
        payload = obj.get("systemPayload") if isinstance(obj.get("systemPayload"), dict) else {}
        assert isinstance(payload, dict)
        if subtype == "custom_title" and isinstance(payload.get("customTitle"), str):
            self.title = payload["customTitle"] or self.title
        if subtype != COMPRESSION:
            return "lifecycle-dropped"
        history = payload.get("compressedHistory")
        if not isinstance(history, list):
            return "compaction-state"
        # the history a resumed CLI sends instead of everything before this record: the
        # summary as a user message (harness text: a system record), the CLI's answer to it
        # as the model's turn
        uid = rid.removeprefix(f"{PREFIX}:")
        for ci, content in enumerate(history):
            if not isinstance(content, dict):
                continue
            role = "assistant" if content.get("role") == "model" else "user"
            for pi, part in enumerate(parts_of(content.get("parts"))):
                path = f"$.systemPayload.compressedHistory[{ci}].parts[{pi}]"
                if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                    kind = (
                        "reasoning"
                        if part.get("thought") is True
                        else ("assistant" if role == "assistant" else "system")
                    )
                    ev = self._ev(f"{COMPRESSION}/{kind}", uid, path)
                    self.b.add_text(
                        kind,
                        f"{rid}:history:{ci}:{pi}",
                        part["text"],
                        time=time,
                        turn=self.turn,
                        evidence=ev,
                        **({"model": None} if kind != "system" else {}),
                    )
                elif isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                    self.call(part["functionCall"], f"{rid}:history:{ci}", time, path)
                elif isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                    self.response(part["functionResponse"], None, f"{uid}:history:{ci}", pi, time)
        return None if self.emitted else "compaction-state"

    def call(self, fc: dict[str, Any], rid: str, time: str | None, path: str) -> None:
        call_id = fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else None
        if call_id is None or call_id in self.calls:
            call_id = f"{rid}:call:{len(self.calls)}"
            self.d.add("ids-not-unique", f"{self.art}:{self.line}")
        ev = self._ev("functionCall", call_id, path)
        self.calls[call_id] = add_function_call(
            self.b, fc, rid, call_id, time=time, turn=self.turn, evidence=ev
        )

    def response(self, fr: dict[str, Any], status: Any, uid: str, i: int, time: str | None) -> None:
        call_id = fr.get("id") if isinstance(fr.get("id"), str) else None
        if call_id is None or call_id not in self.calls:
            self.d.add("chain-break", f"{self.art}:{self.line}")
            call_id = call_id or f"{PREFIX}:{uid}:result:{i}"
        info = status if isinstance(status, dict) else {}
        state = info.get("status")
        display = info.get("resultDisplay")
        code: int | None = None
        if isinstance(display, dict) and display.get("type") == "shell_result":
            raw = display.get("exitCode")
            code = raw if type(raw) is int else None
        ev = self._ev(f"functionResponse/{state or 'plain'}", call_id, f"$.message.parts[{i}]")
        answer_function_response(
            self, f"{PREFIX}:{uid}", call_id, fr, state, time=time, evidence=ev, code=code
        )


def _part_kind(part: dict[str, Any]) -> str:
    keys = sorted(k for k in part if k not in ("thought", "thoughtSignature"))
    return keys[0] if keys else "part"


def _subagent(path: Path) -> tuple[str, str] | None:
    """(agent id, parent session id) of ``subagents/<parent>/agent-<id>.jsonl``."""
    if path.parent.parent.name == layout.SUBAGENTS and path.name.startswith("agent-"):
        return layout.session_id_of(path), path.parent.name
    return None


def _project(
    b: SnapshotBuilder, file: Path, rel: str, limits: Limits, max_records: list[int]
) -> _Projector:
    """Copy ``file`` in as the artifact ``rel`` and project the records on its chain into
    ``b``; ``max_records`` holds the records still allowed (all sessions together)."""
    utf8 = Utf8Tally()
    _blob, copy = copy_jsonl(b, rel, file, limits, utf8)
    chain, commands = _chain(copy, rel, limits)
    proj = _Projector(b, rel)
    for number, obj in iter_file_objects(copy, rel, b.diagnostics, limits, utf8):
        place = f"{rel}:{number}"
        if not _valid(obj):
            b.diagnostics.add("unknown-kind", place, name=str(obj.get("type", "line")))
            continue
        if obj["uuid"] not in chain:
            if obj.get("subtype") == "custom_title":
                # a title record may stand off the chain (the CLI does not make it the tail)
                proj.system(obj, "", "custom_title", None)
                b.diagnostics.add("lifecycle-dropped", place, name="custom_title")
            else:
                b.diagnostics.add("rewound", place)
            continue
        if obj["uuid"] in commands:
            # a typed command the CLI answered itself: its model never saw it
            b.diagnostics.add("lifecycle-dropped", place, name="user:slash-command")
            continue
        before = b.record_count
        code = proj.record(obj, number)
        if code is not None:
            name = str(obj.get("subtype") or obj["type"]) if code == "lifecycle-dropped" else None
            b.diagnostics.add(code, place, name=name)
        max_records[0] -= b.record_count - before
        if max_records[0] < 0:
            raise LimitError(file, "max_records", limits.max_records, line=number)
    proj.finish()
    return proj


def _meta(b: SnapshotBuilder, file: Path, project: Path, limits: Limits) -> dict[str, Any]:
    """A sub-agent's ``agent-<id>.meta.json`` as an artifact, and its object (``{}`` when it
    is absent or unreadable, named)."""
    meta = file.with_name(f"{file.stem}.meta.json")
    if not meta.is_file():
        b.diagnostics.add("metadata-missing", meta.name)
        return {}
    data = read_bounded(meta, limits.max_session_bytes)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        b.diagnostics.add("metadata-invalid", meta.name)
        return {}
    b.add_artifact(meta.relative_to(project).as_posix(), "application/json", data)
    return obj if isinstance(obj, dict) else {}


def _session(sid: str, proj: _Projector, parent: str | None, model: Any = None) -> Session:
    return Session(
        id=sid,
        parent_session_id=parent,
        title=proj.title,
        cwd=proj.cwd,
        model=proj.model or (model if isinstance(model, str) and model else None),
        branch=proj.branch,
        created_at=proj.first,
        updated_at=proj.last,
    )


def _source(sid: str, file: Path, project: Path) -> Source:
    first = layout.first_record(file) or {}
    version = first.get("version")
    return Source(
        harness="qwen",
        harness_version=version if isinstance(version, str) else None,
        session_id=sid,
        locator=f"{layout.PROJECTS}/{project.name}/{file.relative_to(project).as_posix()}",
    )


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    file = layout.resolve(path, session)
    if layout.first_record(file) is None:
        raise FormatError(file, "not a Qwen Code session: the first line is not a record", line=1)
    alone = _subagent(file)  # a sub-agent's file read on its own
    project = file.parent.parent.parent if alone else file.parent.parent
    sid = alone[0] if alone else layout.session_id_of(file)
    b = SnapshotBuilder(_source(sid, file, project), READER)
    budget = [limits.max_records]
    meta = _meta(b, file, project, limits) if alone else {}
    proj = _project(b, file, file.relative_to(project).as_posix(), limits, budget)
    b.session = _session(sid, proj, alone[1] if alone else None, meta.get("model"))
    if alone is None:
        for sub in layout.subagent_files(file):
            kid_meta = _meta(b, sub, project, limits)
            call = kid_meta.get("toolUseId")
            if not isinstance(call, str) or call not in proj.calls:
                if isinstance(call, str):  # the spawning call is not in the session's records
                    b.diagnostics.add("chain-break", f"{sub.name}: toolUseId {call}")
                call = None
            kid_id = layout.session_id_of(sub)
            # linked to the call its meta names only when the parent made that call
            linked = call if isinstance(call, str) and call in proj.calls else None
            if isinstance(call, str) and linked is None:
                b.diagnostics.add("subagent-unlinked", sub.relative_to(project).as_posix())
            kid = b.child(_source(kid_id, sub, project), linked)
            kproj = _project(kid, sub, sub.relative_to(project).as_posix(), limits, budget)
            kid.session = _session(kid_id, kproj, sid, kid_meta.get("model"))
    return b.build()
