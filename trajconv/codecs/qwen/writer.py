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

import uuid
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import orjson

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    check_continuable,
    dropped_code,
    name_joined_models,
    name_status_not_sent,
    safe_component,
)
from trajconv.codecs.genai import SHELL, SNAPSHOT, exit_code
from trajconv.codecs.qwen import layout
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Record, Snapshot, ToolResultRecord
from trajconv.snapshot.spool import Blob, Spool

EPOCH = "1970-01-01T00:00:00.000Z"


def _line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def session_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The session's id when it is a UUID (the CLI resumes only those), else one derived."""
    try:
        return str(uuid.UUID(snapshot.session.id))
    except ValueError:
        diags.add("ids-derived", "session id")
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:qwen-session"))


class _Journal:
    """ChatRecords written to ``out`` as they close (only the open answer is held)."""

    def __init__(
        self,
        out: BinaryIO,
        snapshot: Snapshot,
        sid: str,
        cwd: str,
        model: str | None,
        diags: Diagnostics,
    ) -> None:
        self.out = out
        self.snapshot_id = snapshot.id
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

    def uid(self, seq: int, what: str = "") -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.snapshot_id}:qwen:{seq}{what}"))

    def base(self, seq: int, rtype: str, time: str, what: str = "") -> dict[str, Any]:
        rec = {
            "uuid": self.uid(seq, what),
            "parentUuid": self.last_uuid,
            "sessionId": self.sid,
            "timestamp": time,
            "type": rtype,
            "cwd": self.cwd,
        }
        return rec

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
        model = next((m for _rid, m in self.models if m), None) or self.model
        name_joined_models(self.diags, model, self.models)
        self.models = []
        if model:
            rec["model"] = model
            self.last_model = model
        self.emit(rec)

    def user(self, seq: int, text: str, time: str) -> None:
        self.close()
        rec = self.base(seq, "user", time)
        rec["message"] = {"role": "user", "parts": [{"text": text}]}
        self.emit(rec)
        self.prompts += 1

    def compression(self, seq: int, text: str, time: str) -> None:
        self.close()
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
            self.open = self.base(rec.seq, "assistant", time)
            self.open["message"] = {"role": "model", "parts": []}
        elif rec.time is not None and rec.time != self.open["timestamp"]:
            self.diags.add("untranslated-time", rec.id)
        self.open["message"]["parts"].append(part)
        if rec.kind in ("assistant", "reasoning"):
            self.models.append((rec.id, getattr(rec, "model", None)))

    def result(self, rec: ToolResultRecord, time: str, own: bool) -> None:
        res = rec.result
        self.close()
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


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    model: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags = Diagnostics()
    drop = check_continuable(snapshot, "qwen", allow_lossy=allow_lossy)
    session = snapshot.session
    workdir = cwd or session.cwd
    if not workdir:
        raise RefusedError("refusing to write qwen: the session has no cwd; pass --cwd DIR")
    if session.cwd and workdir != session.cwd:
        diags.add("untranslated-cwd", "session cwd")
    sid = safe_component(session_id(snapshot, diags), "session id")
    own = snapshot.source.harness == "qwen"
    spool = Spool()
    body_path = spool.new_file("chat.jsonl")
    last: str | None = None
    with body_path.open("wb") as out:
        j = _Journal(out, snapshot, sid, workdir, model or session.model, diags)
        for rec in snapshot.records:
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            time = rec.time or last or session.created_at
            if rec.time is None:
                diags.add("timestamps-synthesized", rec.id)
            if time is None:
                time = EPOCH
            last = time
            if rec.kind == "user":
                j.user(rec.seq, rec.text, time)
            elif rec.kind == "system" and rec.text.lstrip().startswith(SNAPSHOT):
                j.compression(rec.seq, rec.text, time)
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
        if session.title:
            title = j.base(-1, "system", session.updated_at or j.last_time or EPOCH, ":title")
            title["subtype"] = "custom_title"
            title["systemPayload"] = {"customTitle": session.title}
            j.emit(title)
    if j.prompts == 0:
        raise RefusedError("refusing to write qwen: no user message; the CLI resumes none such")
    if j.count:
        diags.add("ids-derived", "record uuids")
    if session.created_at and session.created_at != j.first_time:
        diags.add("untranslated-time", "session created_at")
    if session.updated_at and session.updated_at != j.last_time:
        diags.add("untranslated-time", "session updated_at")
    if session.model and j.last_model != session.model:
        diags.add("untranslated-model", "session model")
    if session.branch:
        diags.add("untranslated-branch", "session branch")
    if session.parent_session_id:
        # written as a main session of the project, which the CLI resumes
        diags.add("untranslated-parent-session", "session parent")
    rel = f"{layout.DIR}/{layout.PROJECTS}/{layout.encode_cwd(workdir)}/{layout.CHATS}/{sid}.jsonl"
    return ExportPlan(
        target="qwen",
        session_id=sid,
        snapshot_id=snapshot.id,
        files=[ExportFile(f"home/{rel}", _spooled(body_path, spool), 0o600)],
        session_paths=[rel],
        resume_argv=["qwen", "--resume", sid],
        diagnostics=diags.to_models(),
        dir_modes={},
        notes=[
            f"run the resume command in {workdir} (Qwen Code finds a session in the current "
            "folder's project: projects/<encoded cwd>/chats/<id>.jsonl)",
        ],
    )
