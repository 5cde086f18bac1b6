"""Qwen Code writer: Snapshot -> ``home/.qwen/projects/<encoded cwd>/chats/<id>.jsonl``.

The file is a ChatRecord journal as a live 0.24.4 session writes it (README "Writing"): one
record per line, each naming the one before it (``parentUuid``), all with the session's
``sessionId`` and ``cwd``. A prompt is a ``user`` record; an answer's reasoning, text and calls
one ``assistant`` record (``thought`` / ``text`` / ``functionCall`` parts); each result a
``tool_result`` record (a ``functionResponse`` part, ``toolCallResult.status``); a
``<state_snapshot>`` summary a ``system`` ``chat_compression`` record whose
``compressedHistory`` holds it (the resumed CLI sends that history instead of what came
before); a title a closing ``custom_title`` record.

``qwen --resume <id>`` looks for ``<id>.jsonl`` (a UUID) in the project folder of the current
directory and takes it only when the first record's ``sessionId`` is that id and its ``cwd``
is the current project; so the session is written for one folder: ``--cwd`` or the session's.
The generic ``prepare.py`` installs the file into a home.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

import orjson

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    name_joined_models,
    name_status_not_sent,
    safe_component,
)
from trajconv.codecs.common import start_write
from trajconv.codecs.genai import SHELL, SNAPSHOT, exit_code
from trajconv.codecs.qwen import layout
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Record, Session, Snapshot, ToolResultRecord
from trajconv.snapshot.spool import Blob, Spool

EPOCH = "1970-01-01T00:00:00.000Z"
#: how the CLI opens the message that tells its model a background task ended
NOTIFICATION = "<task-notification>"


def _line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


#: the ids ``qwen --resume`` takes as ids (``session-id.ts``, 0.24.4): a UUID of version 1 to 5;
#: any other text it looks up as a session title
RESUMABLE_ID = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I
)


def session_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The session's id when the CLI resumes it by id, else one derived from the source's
    harness and session id (a UUID 5: the same source session, grown or not, gets the same)."""
    if RESUMABLE_ID.match(snapshot.session.id):
        return snapshot.session.id.lower()
    diags.add("ids-derived", "session id")
    source = f"{snapshot.source.harness}:{snapshot.session.id}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:qwen-session:{source}"))


class _Journal:
    """ChatRecords written to ``out`` as they close (only the open answer is held)."""

    def __init__(
        self,
        out: BinaryIO,
        key: str,
        sid: str,
        cwd: str,
        model: str | None,
        diags: Diagnostics,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.out = out
        self.key = key
        self.extra = extra or {}
        self.sid = sid
        self.cwd = cwd
        self.model = model
        self.diags = diags
        self.last_uuid: str | None = None
        self.open: dict[str, Any] | None = None
        self.models: list[tuple[str, str | None]] = []
        self.names: dict[str, str] = {}  # call id -> tool name
        self.answered: set[str] = set()
        self.count = 0
        self.prompts = 0
        self.first_time: str | None = None
        self.last_time: str | None = None
        self.last_model: str | None = None
        # the open answer's text and thought records, and the run of user-role text records
        # just written: the CLI sends each run as one message (:meth:`joined`)
        self.texts: list[str] = []
        self.thoughts: list[str] = []
        self.user_run: list[str] = []

    def uid(self, seq: int, what: str = "") -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.key}:qwen:{seq}{what}"))

    def base(self, seq: int, rtype: str, time: str, what: str = "") -> dict[str, Any]:
        rec = {
            "uuid": self.uid(seq, what),
            "parentUuid": self.last_uuid,
            "sessionId": self.sid,
            "timestamp": time,
            "type": rtype,
            "cwd": self.cwd,
            **self.extra,
        }
        return rec

    def joined(self, ids: list[str]) -> None:
        """Name each record of a run the resumed CLI sends as one message that is joined to
        the one before it: its ``extractCuratedHistory`` (0.24.4) joins consecutive user
        Contents into one (their parts kept), and its OpenAI converter (``processContent``)
        sends one ``model`` Content as one assistant message, the text parts joined into one
        text and the thought parts into one reasoning text (README "What a resumed CLI sends
        its model")."""
        for rid in ids[1:]:
            self.diags.add("untranslated-message-boundary", rid)

    def end_user_run(self) -> None:
        """The run of user-role text records (prompts, notifications, a summary) ends: a
        model answer or a result follows, or the session ends."""
        self.joined(self.user_run)
        self.user_run = []

    def emit(self, rec: dict[str, Any]) -> None:
        self.out.write(_line(rec))
        self.last_uuid = rec["uuid"]
        self.count += 1
        self.first_time = self.first_time or rec["timestamp"]
        self.last_time = rec["timestamp"]

    def close(self) -> None:
        rec, self.open = self.open, None
        if rec is None:
            return
        self.joined(self.texts)
        self.joined(self.thoughts)
        self.texts, self.thoughts = [], []
        model = next((m for _rid, m in self.models if m), None) or self.model
        name_joined_models(self.diags, model, self.models)
        self.models = []
        if model:
            rec["model"] = model
            self.last_model = model
        self.emit(rec)

    def user(self, seq: int, rid: str, text: str, time: str) -> None:
        self.close()
        if text:  # the converter sends no empty part
            self.user_run.append(rid)
        rec = self.base(seq, "user", time)
        rec["message"] = {"role": "user", "parts": [{"text": text}]}
        self.emit(rec)
        self.prompts += 1

    def notification(self, seq: int, rid: str, text: str, time: str) -> None:
        """A background task's ``<task-notification>``: a user message the CLI adds itself
        (``subtype: notification``, ``provenance: system``), which its model is sent."""
        self.close()
        self.user_run.append(rid)
        rec = self.base(seq, "user", time)
        rec.update(provenance="system", subtype="notification")
        rec["message"] = {"role": "user", "parts": [{"text": text}]}
        self.emit(rec)

    def compression(self, seq: int, rid: str, text: str, time: str) -> None:
        self.close()
        self.user_run = [rid]  # what came before is not sent
        rec = self.base(seq, "system", time)
        rec["subtype"] = "chat_compression"
        rec["systemPayload"] = {
            "compressedHistory": [{"role": "user", "parts": [{"text": text}]}],
            "completedToolCallIds": [],
        }
        self.emit(rec)

    def part(self, rec: Record, time: str, part: dict[str, Any]) -> None:
        """Add a part to the open answer, or open one (a part after a call of it waits for
        the call's result, so it starts the next answer)."""
        if self.open is not None and any(
            "functionCall" in p and p["functionCall"]["id"] in self.answered
            for p in self.open["message"]["parts"]
        ):
            self.close()
        if self.open is None:
            self.end_user_run()
            self.open = self.base(rec.seq, "assistant", time)
            self.open["message"] = {"role": "model", "parts": []}
        elif rec.time is not None and rec.time != self.open["timestamp"]:
            self.diags.add("untranslated-time", rec.id)
        self.open["message"]["parts"].append(part)
        if part.get("text"):  # the converter skips an empty part
            (self.thoughts if part.get("thought") else self.texts).append(rec.id)
        if rec.kind in ("assistant", "reasoning"):
            self.models.append((rec.id, getattr(rec, "model", None)))

    def result(self, rec: ToolResultRecord, time: str, own: bool) -> None:
        res = rec.result
        self.close()
        self.end_user_run()  # a result is a tool message of its own, as is a prompt after it
        name = self.names.get(res.call_id, "")
        failed = res.ok is False
        out = self.base(rec.seq, "tool_result", time)
        out["message"] = {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": res.call_id,
                        "name": name,
                        "response": {"error" if failed else "output": res.output},
                    }
                }
            ],
        }
        info: dict[str, Any] = {"callId": res.call_id}
        if res.ok is None:
            self.diags.add("tool-status-assumed", rec.id)
        else:
            info["status"] = "error" if failed else "success"
        if res.exit_code is not None:
            info["resultDisplay"] = {"type": "shell_result", "exitCode": res.exit_code}
        out["toolCallResult"] = info
        name_status_not_sent(self.diags, rec.id, res, own=own)
        self.answered.add(res.call_id)
        self.emit(out)


def _spooled(path: Any, spool: Spool) -> Callable[[], Iterator[bytes]]:
    return Blob(path=path, size=path.stat().st_size, keep=spool).chunks


def _lower(
    records: Iterable[Record],
    j: _Journal,
    diags: Diagnostics,
    *,
    own: bool,
    drop: set[str],
    start: str | None,
) -> None:
    """Write ``records`` into the journal ``j`` in one pass (``drop``: left out, named)."""
    last: str | None = None
    for rec in records:
        if rec.id in drop:
            diags.add(dropped_code(rec.kind), rec.id)
            continue
        time = rec.time or last or start
        if rec.time is None:
            diags.add("timestamps-synthesized", rec.id)
        if time is None:
            time = EPOCH
        last = time
        if rec.kind == "user":
            j.user(rec.seq, rec.id, rec.text, time)
        elif rec.kind == "system" and rec.text.lstrip().startswith(SNAPSHOT):
            j.compression(rec.seq, rec.id, rec.text, time)
        elif rec.kind == "system" and rec.text.lstrip().startswith(NOTIFICATION):
            j.notification(rec.seq, rec.id, rec.text, time)
        elif rec.kind == "reasoning":
            j.part(rec, time, {"text": rec.text, "thought": True})
        elif rec.kind == "assistant":
            if rec.text:
                j.part(rec, time, {"text": rec.text})
            else:
                diags.add("untranslated-assistant", rec.id)
        elif rec.kind == "tool-call":
            args = rec.call.arguments
            if not isinstance(args, dict):
                # a function call takes an object; other JSON is kept as its text
                args = {"input": args}
                diags.add("defaults-assumed", rec.id)
            j.names[rec.call.id] = rec.call.name
            fc = {"id": rec.call.id, "name": rec.call.name, "args": args}
            j.part(rec, time, {"functionCall": fc})
        elif rec.kind == "tool-result":
            res = rec.result
            if res.exit_code is not None and j.names.get(res.call_id) == SHELL:
                shown = exit_code(res.output)
                if shown is not None and shown != res.exit_code:
                    diags.add("untranslated-exit-code", rec.id)
            j.result(rec, time, own)
        else:
            diags.add(f"untranslated-{rec.kind}", rec.id)
    j.close()
    j.end_user_run()


def _session_facts(session: Session, j: _Journal, diags: Diagnostics, where: str) -> None:
    """Name the session facts the file does not hold as they are: its times are its first
    and last records', its model the last answer's."""
    for fact, written in (("created_at", j.first_time), ("updated_at", j.last_time)):
        value = getattr(session, fact)
        if value is None and written is not None:
            diags.add("timestamps-synthesized", f"{where} {fact}")  # read back from a record
        elif value is not None and value != written:
            diags.add("untranslated-time", f"{where} {fact}")
    if session.model and j.last_model != session.model:
        diags.add("untranslated-model", f"{where} model")
    if session.branch:
        diags.add("untranslated-branch", f"{where} branch")


def _children(
    snapshot: Snapshot, sid: str, workdir: str, project: str, diags: Diagnostics, spool: Spool
) -> tuple[list[ExportFile], list[str]]:
    """Each sub-agent as ``subagents/<sid>/agent-<id>.jsonl`` and its ``.meta.json`` (the
    agent id, the parent session and the spawning call): the files and the children's ids."""
    files: list[ExportFile] = []
    written: list[str] = []
    own = snapshot.source.harness == "qwen"
    for n, child in enumerate(snapshot.children):
        agent = safe_component(child.session.id, "sub-agent id")
        path = spool.new_file(f"agent-{n}.jsonl")
        with path.open("wb") as out:
            extra = {"agentId": agent, "isSidechain": True}
            j = _Journal(out, f"{child.id}", sid, workdir, child.session.model, diags, extra)
            _lower(child.records, j, diags, own=own, drop=set(), start=child.session.created_at)
        _session_facts(child.session, j, diags, f"child {agent}")
        meta: dict[str, Any] = {"agentId": agent, "parentSessionId": sid}
        if child.parent_call_id:
            meta["toolUseId"] = child.parent_call_id
        if child.session.created_at:
            meta["createdAt"] = child.session.created_at
        base = f"home/{project}/{layout.SUBAGENTS}/{sid}/agent-{agent}"
        files.append(ExportFile(f"{base}.jsonl", _spooled(path, spool), 0o600))
        files.append(
            ExportFile(f"{base}.meta.json", orjson.dumps(meta, option=orjson.OPT_INDENT_2), 0o600)
        )
        written.append(child.id)
    return files, written


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    model: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags, drop, workdir = start_write(snapshot, "qwen", allow_lossy=allow_lossy, cwd=cwd)
    session = snapshot.session
    if session.cwd and workdir != session.cwd:
        diags.add("untranslated-cwd", "session cwd")
    if len(layout.encode_cwd(workdir).encode()) > layout.MAX_NAME:
        # the CLI keeps no session there: it does not shorten the folder name (observed)
        raise RefusedError(
            f"refusing to write qwen: the project folder name of {workdir!r} would be over "
            f"{layout.MAX_NAME} bytes, and Qwen Code keeps no session for such a folder; "
            "pass --cwd DIR with a shorter path"
        )
    sid = safe_component(session_id(snapshot, diags), "session id")
    own = snapshot.source.harness == "qwen"
    spool = Spool()
    body_path = spool.new_file("chat.jsonl")
    with body_path.open("wb") as out:
        j = _Journal(out, snapshot.id, sid, workdir, model or session.model, diags)
        _lower(snapshot.records, j, diags, own=own, drop=drop, start=session.created_at)
        if session.title:
            title = j.base(-1, "system", session.updated_at or j.last_time or EPOCH, ":title")
            title["subtype"] = "custom_title"
            title["systemPayload"] = {"customTitle": session.title}
            j.emit(title)
    if j.prompts == 0:
        raise RefusedError("refusing to write qwen: no user message; the CLI resumes none such")
    if j.count:
        diags.add("ids-derived", "record uuids")
    _session_facts(session, j, diags, "session")
    if session.parent_session_id:
        # written as a main session of the project, which the CLI resumes
        diags.add("untranslated-parent-session", "session parent")
    project = f"{layout.DIR}/{layout.PROJECTS}/{layout.encode_cwd(workdir)}"
    rel = f"{project}/{layout.CHATS}/{sid}.jsonl"
    kids, written = _children(snapshot, sid, workdir, project, diags, spool)
    return ExportPlan(
        session_id=sid,
        files=[ExportFile(f"home/{rel}", _spooled(body_path, spool), 0o600), *kids],
        session_paths=[rel, *(f.path.removeprefix("home/") for f in kids)],
        diagnostics=diags.to_models(),
        notes=[
            f"run the resume command in {workdir} (Qwen Code finds a session in the current "
            "folder's project: projects/<encoded cwd>/chats/<id>.jsonl)",
        ],
        children_written=tuple(written),
    )
