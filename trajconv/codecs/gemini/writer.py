"""Gemini CLI writer: Snapshot -> ``home/.gemini/tmp/<slug>/chats/session-<minute>-<id8>.jsonl``.

The file holds what a live 0.61.0 session holds once settled (README "Writing"): a metadata
line, then one line per message. A ``gemini`` message carries its thoughts, its text and its
``toolCalls`` with each call's ``result`` (a ``functionResponse``) and ``status``; the CLI's
resume (``convertSessionToClientHistory``) replays it as a model turn (text + one
``functionCall`` per call) followed by a user turn of the function responses. Unlike the live
CLI, the writer does not add a second copy of the results as a user message (the live CLI's
copy makes a resumed model see every result twice).

The export also holds ``tmp/<slug>/.project_root`` (the cwd), by which the CLI finds the
project when ``projects.json`` does not name it. The export's own ``prepare.py``
(``prepare_session.py``) puts the session under the slug the target home already uses for that
cwd, or claims a free one as the CLI does; it never replaces a file.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources
from typing import Any, BinaryIO

import orjson

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    name_joined_models,
)
from trajconv.codecs.common import open_write, spooled
from trajconv.codecs.gemini import layout
from trajconv.codecs.gemini.reader import resumable
from trajconv.codecs.genai import SHELL, SNAPSHOT, exit_code
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Record, Snapshot, ToolResult
from trajconv.snapshot.spool import Spool

EPOCH = "1970-01-01T00:00:00.000Z"
_THOUGHT = re.compile(r"^\*\*(.+?)\*\*\s?(.*)$", re.DOTALL)


def prepare_script() -> str:
    return (
        resources.files("trajconv.codecs.gemini").joinpath("prepare_session.py").read_text("utf-8")
    )


def _line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def thought(text: str, time: str) -> dict[str, Any]:
    """A reasoning text as a recorded thought: ``**subject** description`` is split back."""
    match = _THOUGHT.match(text)
    if match:
        return {"subject": match.group(1), "description": match.group(2), "timestamp": time}
    return {"subject": "", "description": text, "timestamp": time}


def shown_as_error(tool: str, result: ToolResult) -> bool:
    """Whether a result is written (and so shown to the model) as an ``error`` response.

    A failed result is, except a shell command's whose output says ``Exit Code: N``: the CLI
    records such a command as a success with that output, and so shows it (README)."""
    if result.ok is not False:
        return False
    return not (tool == SHELL and result.exit_code and exit_code(result.output) == result.exit_code)


class _Messages:
    """Gemini CLI messages, each written to ``out`` when it closes (never all held)."""

    def __init__(self, out: BinaryIO, snapshot_id: str, diags: Diagnostics, model: str | None):
        self.out = out
        self.snapshot_id = snapshot_id
        self.diags = diags
        self.model = model
        self.open: dict[str, Any] | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        self.count = 0
        self.prompts = 0
        #: the model of the last message written (the reader takes the session's from it)
        self.last_model: str | None = None

    def mid(self, seq: int) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.snapshot_id}:gemini:{seq}"))

    def close(self) -> None:
        msg, self.open = self.open, None
        if msg is None:
            return
        # one model per message: the first of its answers' own, else the session's
        parts: list[tuple[str, str | None]] = msg.pop("_models")
        model = next((m for _rid, m in parts if m), None) or self.model
        name_joined_models(self.diags, model, parts)
        if model:
            msg["model"] = model
        else:
            del msg["model"]
        del msg["_timed_by"]
        pending = [c for c in msg.get("toolCalls", []) if "status" not in c]
        for call in pending:
            self.diags.add("untranslated-pending-call", call.pop("_rid"))
        calls = [c for c in msg.get("toolCalls", []) if "status" in c]
        for call in calls:
            call.pop("_rid", None)
        if calls:
            msg["toolCalls"] = calls
        else:
            msg.pop("toolCalls", None)
        if not msg["content"] and not msg["thoughts"] and not calls:
            return
        self.last_model = msg.get("model") or self.last_model
        self.out.write(_line(msg))
        self.count += 1
        self.calls = {}

    def user(self, seq: int, text: str, time: str, rid: str | None = None) -> None:
        """A user message; ``rid``, a user record's, is named when the CLI would take the text
        for a command (``/``, ``?``) or its own context, which it never sends on."""
        self.close()
        msg = {"id": self.mid(seq), "timestamp": time, "type": "user", "content": [{"text": text}]}
        if rid is not None and not resumable(msg):
            self.diags.add("user-read-as-command", rid)
        self.out.write(_line(msg))
        self.count += 1
        self.prompts += 1

    def gemini(self, rec: Record, time: str, *, after: str) -> dict[str, Any]:
        """The open ``gemini`` message, or a new one when ``after`` (what comes) cannot
        follow what it holds: thoughts come first, results close the calls.

        A thought keeps its own time; text and calls read back with the message's
        ``timestamp`` (the first one's time): a later one of another time is named, as is an
        answer's model the message's model replaces (:meth:`close`)."""
        msg = self.open
        if msg is not None:
            has_results = any("status" in c for c in msg.get("toolCalls", []))
            blocked = (
                (after == "reasoning" and (msg["content"] or msg.get("toolCalls")))
                or (after == "text" and (msg["content"] or msg.get("toolCalls")))
                or (after == "call" and has_results)
            )
            if blocked:
                self.close()
                msg = None
        if msg is None:
            msg = {
                "id": self.mid(rec.seq),
                "timestamp": time,
                "type": "gemini",
                "content": "",
                "thoughts": [],
                "model": None,  # set when the message closes
                "_models": [],
                "_timed_by": after,
            }
            self.open = msg
        if after != "reasoning":
            if msg["_timed_by"] == "reasoning":
                msg["timestamp"], msg["_timed_by"] = time, after
            elif rec.time is not None and rec.time != msg["timestamp"]:
                self.diags.add("untranslated-time", rec.id)
        if rec.kind in ("assistant", "reasoning"):
            msg["_models"].append((rec.id, getattr(rec, "model", None)))
        return msg


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "gemini", allow_lossy=allow_lossy, cwd=cwd)
    slug = layout.slugify(workdir)
    session = snapshot.session
    spool = Spool()
    body_path = spool.new_file("messages.jsonl")
    first_time: str | None = None
    last_time: str | None = None
    with body_path.open("wb") as out:
        msgs = _Messages(out, snapshot.id, diags, session.model)
        for rec in snapshot.records:
            if rec.time:
                first_time = first_time or rec.time
                last_time = rec.time
            time = rec.time or last_time or session.created_at
            if time is None:
                time = EPOCH
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            if rec.kind == "user":
                msgs.user(rec.seq, rec.text, time, rec.id)
            elif rec.kind == "system" and rec.text.lstrip().startswith(SNAPSHOT):
                # a compression summary: the CLI keeps it as a user message the model reads
                msgs.user(rec.seq, rec.text, time)
            elif rec.kind == "reasoning":
                msg = msgs.gemini(rec, time, after="reasoning")
                msg["thoughts"].append(thought(rec.text, time))
            elif rec.kind == "assistant":
                msg = msgs.gemini(rec, time, after="text")
                msg["content"] = rec.text
            elif rec.kind == "tool-call":
                msg = msgs.gemini(rec, time, after="call")
                call: dict[str, Any] = {
                    "id": rec.call.id,
                    "name": rec.call.name,
                    "args": rec.call.arguments if isinstance(rec.call.arguments, dict) else {},
                    "_rid": rec.id,
                }
                if not isinstance(rec.call.arguments, dict):
                    # Gemini function calls take an object; other JSON is kept as its text.
                    call["args"] = {"input": rec.call.arguments}
                    diags.add("defaults-assumed", rec.id)
                msg.setdefault("toolCalls", []).append(call)
                msgs.calls[rec.call.id] = call
            elif rec.kind == "tool-result":
                res = rec.result
                called = msgs.calls.get(res.call_id)
                if called is None or "status" in called:
                    diags.add("untranslated-orphan-result", rec.id)
                    continue
                if res.ok is None:
                    diags.add("tool-status-assumed", rec.id)
                if res.exit_code is not None and exit_code(res.output) != res.exit_code:
                    diags.add("untranslated-exit-code", rec.id)
                failed = shown_as_error(called["name"], res)
                key = "error" if failed else "output"
                called["result"] = [
                    {
                        "functionResponse": {
                            "id": res.call_id,
                            "name": called["name"],
                            "response": {key: res.output},
                        }
                    }
                ]
                called["status"] = "error" if failed else "success"
                called["timestamp"] = time
            else:
                diags.add(f"untranslated-{rec.kind}", rec.id)
                continue
            if rec.time is None:  # written with the time before it (the format needs one)
                diags.add("timestamps-synthesized", rec.id)
        msgs.close()
    # the metadata line needs both times: from the records, else the epoch
    untimed = [f for f in ("created_at", "updated_at") if getattr(session, f) is None]
    if untimed:
        diags.add("timestamps-synthesized", "session " + ", ".join(untimed), count=len(untimed))
    if msgs.count:
        diags.add("ids-derived", "message ids", count=1)
    if session.title is None:
        diags.add("title-missing", "summary")
    if session.branch:
        diags.add("untranslated-branch", "session branch")
    if session.model and msgs.last_model != session.model:
        # the file has no session model: a reader takes the last answer's
        diags.add("untranslated-model", "session model")
    if session.parent_session_id:
        # written as a main session of the project (a subagent's file would not list)
        diags.add("untranslated-parent-session", "session parent")
    started = session.created_at or first_time or EPOCH
    updated = session.updated_at or last_time or started
    meta: dict[str, Any] = {
        "sessionId": sid,
        "projectHash": layout.project_hash(workdir),
        "startTime": started,
        "lastUpdated": updated,
        "kind": "main",
    }
    if session.title:
        meta["summary"] = session.title
    minute = datetime.fromisoformat(started.replace("Z", "+00:00")).astimezone(UTC)
    name = f"session-{minute.strftime('%Y-%m-%dT%H-%M')}-{sid[:8]}.jsonl"
    chunks = spooled(body_path, spool)

    def data() -> Iterator[bytes]:
        yield _line(meta)
        yield from chunks()

    base = f"home/.gemini/{layout.TMP}/{slug}"
    rel = f".gemini/{layout.TMP}/{slug}/{layout.CHATS}/{name}"
    if msgs.prompts == 0:
        raise RefusedError(
            "refusing to write gemini: no user message; the CLI neither lists nor resumes such "
            "a session (and its cleanup deletes it)"
        )
    return ExportPlan(
        session_id=sid,
        files=[
            ExportFile(f"{base}/{layout.MARKER}", workdir.encode(), 0o644),
            ExportFile(f"{base}/{layout.CHATS}/{name}", data, 0o644),
        ],
        session_paths=[rel],
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(),
        notes=[
            f"run the resume command in {workdir} (Gemini CLI finds sessions by the cwd's project)",
            "Gemini CLI's session cleanup (settings general.sessionRetention, on by default, "
            "30 days by lastUpdated) deletes old sessions at its next start: prepare.py refuses "
            "such a session unless the cleanup is off or --touch is given (gemini codec README)",
        ],
    )
