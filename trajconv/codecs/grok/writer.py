"""Grok Build writer: Snapshot -> ``home/.grok/sessions/<encoded cwd>/<uuid>/``.

Follows Grok's own import rules (``x.ai/session/import`` in
``extensions/session_state.rs``, summarised in ``codecs/grok/README.md``
): the session id is a UUID, folders are 0700, ``updates.jsonl`` lines are
compact in envelope key order, and ``summary.json`` is written last as the
commit marker. Unlike an import, the writer also writes ``chat_history.jsonl``:
Grok's rebuild puts a turn's user message after its tool calls when the turn
opens with a tool call (the codec README), and it keeps a
hand-written history as it is. That history is what Grok sends the model when the
session is continued, so it is written the way Grok writes its own (observed in the
recorded fixtures and their continuation baseline, although the codec README calls
thoughts display-only): each prompt inside ``<user_query>``, and a ``reasoning`` item
before the response it belongs to, which Grok replays as ``reasoning_content``.

Grok has no slot for system text or observations in its journal; those are
``untranslated-*``. Times and event ids are written only where the Snapshot has
them: Grok reads a missing line ``timestamp`` as 0 and tolerates lines without
``eventId``.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

import orjson

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    folder_plan,
    name_status_not_sent,
)
from trajconv.codecs.common import iso_ms as _ms
from trajconv.codecs.common import open_write, spooled
from trajconv.codecs.grok import layout, native
from trajconv.snapshot.models import Snapshot
from trajconv.snapshot.spool import Spool

EPOCH = "1970-01-01T00:00:00.000Z"


def _dumps(value: Any) -> str:
    """Any JSON value (tool arguments): orjson would write some floats differently."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _line_bytes(value: Any) -> bytes:
    """A JSON line of strings, ints and booleans only, as :func:`_dumps` writes it.

    orjson writes such values byte for byte like ``json`` (a test holds it to that),
    faster; an int past 64 bits, which orjson refuses, goes through ``json``.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return (_dumps(value) + "\n").encode()


def _envelope(sid: str, method: str, update: dict[str, Any], time: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "update": update}
    ms = _ms(time)
    obj: dict[str, Any] = {}
    if ms is not None:
        obj["timestamp"] = ms // 1000
        params["_meta"] = {"agentTimestampMs": ms}
    obj["method"] = method
    obj["params"] = params
    return obj


class _ChatHistory:
    """``chat_history.jsonl`` items in Grok's rebuild format, with the user message first,
    written to ``out`` as each item closes (the history is never held)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.count = 0
        self.open: dict[str, Any] | None = None
        self.parts: list[str] = []  # the open assistant item's text, joined when it closes

    def _write(self, item: dict[str, Any]) -> None:
        self.out.write(_line_bytes(item))
        self.count += 1

    def close(self) -> None:
        if self.open is not None:
            self.open["content"] = "".join(self.parts)
            self._write(self.open)
            self.open = None
            self.parts = []

    def _assistant(self) -> dict[str, Any]:
        if self.open is None:
            self.open = {"type": "assistant", "content": ""}
        return self.open

    def user(self, text: str) -> None:
        # Grok shows the model every prompt inside <user_query> (its own sessions' history
        # holds it so: fixtures/grok/recorded-*/…/chat_history.jsonl).
        self.close()
        wrapped = f"<user_query>\n{text}\n</user_query>"
        self._write({"type": "user", "content": [{"type": "text", "text": wrapped}]})

    def reasoning(self, text: str) -> None:
        """A reasoning item before the response it belongs to, as Grok writes its own; Grok
        sends these back to the model when the session is continued (``reasoning_content``)."""
        self.close()
        summary = [{"type": "summary_text", "text": text}]
        self._write({"type": "reasoning", "id": "", "summary": summary})

    def text(self, text: str) -> None:
        self._assistant()
        self.parts.append(text)

    def call(self, call_id: str, name: str, arguments: Any) -> None:
        item = self._assistant()
        args = arguments if isinstance(arguments, str) else _dumps(arguments)
        item.setdefault("tool_calls", []).append({"id": call_id, "name": name, "arguments": args})

    def result(self, call_id: str, output: str) -> None:
        self.close()
        self._write({"type": "tool_result", "tool_call_id": call_id, "content": output})


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "grok", allow_lossy=allow_lossy, cwd=cwd)
    group = layout.encode_cwd(workdir)

    # One pass over the records (each pass re-parses them): the journal and the history
    # go to spool files as they are made, and the facts summary.json needs are kept.
    spool = Spool()
    updates_path = spool.new_file(layout.UPDATES)
    chat_path = spool.new_file(layout.CHAT_HISTORY)
    num_messages = 0
    first_time: str | None = None
    last_time: str | None = None
    prompt = -1
    last_text_kind: str | None = None
    own = snapshot.source.harness == "grok"
    last_model: str | None = None
    with updates_path.open("wb") as updates, chat_path.open("wb") as chat_out:
        chat = _ChatHistory(chat_out)
        for rec in snapshot.records:
            if rec.time:
                first_time = first_time or rec.time
                last_time = rec.time
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            update: dict[str, Any]
            if rec.kind == "user":
                prompt += 1
                update = {
                    "sessionUpdate": native.USER_CHUNK,
                    "content": {"type": "text", "text": rec.text},
                    "_meta": {"promptIndex": prompt},
                }
                chat.user(rec.text)
            elif rec.kind == "assistant":
                update = {
                    "sessionUpdate": native.AGENT_CHUNK,
                    "content": {"type": "text", "text": rec.text},
                }
                if rec.model:  # a record's model is the update-level ``_meta.modelId``
                    update["_meta"] = {"modelId": rec.model}
                    last_model = rec.model
                elif last_model:  # the reader carries the last ``modelId`` forward
                    diags.add("model-assumed", rec.id)
                chat.text(rec.text)
            elif rec.kind == "reasoning":
                update = {
                    "sessionUpdate": native.THOUGHT_CHUNK,
                    "content": {"type": "text", "text": rec.text},
                }
                chat.reasoning(rec.text)
                if rec.model:
                    update["_meta"] = {"modelId": rec.model}
                    last_model = rec.model
                elif last_model:
                    diags.add("model-assumed", rec.id)
            elif rec.kind == "tool-call":
                update = {
                    "sessionUpdate": native.TOOL_CALL,
                    "toolCallId": rec.call.id,
                    "title": rec.call.name,
                    "rawInput": rec.call.arguments,
                }
                chat.call(rec.call.id, rec.call.name, rec.call.arguments)
            elif rec.kind == "tool-result":
                res = rec.result
                if res.ok is None:
                    diags.add("tool-status-assumed", rec.id)
                update = {
                    "sessionUpdate": native.TOOL_UPDATE,
                    "toolCallId": res.call_id,
                    "status": "failed" if res.ok is False else "completed",
                    "content": [
                        {"type": "content", "content": {"type": "text", "text": res.output}}
                    ],
                }
                raw: dict[str, Any] = {}
                if res.exit_code is not None:
                    raw["exit_code"] = res.exit_code
                if res.truncated:
                    raw["truncated"] = True
                if raw:
                    update["rawOutput"] = raw
                # rawOutput and status keep them, but the model is sent the history's text
                name_status_not_sent(diags, rec.id, res, own=own)
                chat.result(res.call_id, res.output)
            else:
                diags.add(f"untranslated-{rec.kind}", rec.id)
                continue
            if rec.kind in ("assistant", "reasoning") and rec.kind == last_text_kind:
                # Grok's chunks carry no message boundary: a reader joins the run.
                diags.add("untranslated-message-boundary", rec.id)
            last_text_kind = rec.kind if rec.kind in ("user", "assistant", "reasoning") else None
            line = _envelope(sid, native.ACP_METHOD, update, rec.time)
            updates.write(
                (_dumps(line) + "\n").encode() if rec.kind == "tool-call" else _line_bytes(line)
            )
            num_messages += 1
        chat.close()

    session = snapshot.session
    if session.model is None:
        diags.add("untranslated-model", "current_model_id")
    if session.title is None:
        diags.add("title-missing", "summary.json")
    created = session.created_at or first_time
    updated = session.updated_at or last_time or created
    if created is None:  # both from the epoch
        diags.add(
            "timestamps-synthesized",
            "summary.json created_at/updated_at",
            1 + (session.updated_at is None),
        )
    else:  # derived from the records' times: say so, one count per derived fact
        diags.add("timestamps-synthesized", "summary.json created_at", int(not session.created_at))
        diags.add("timestamps-synthesized", "summary.json updated_at", int(not session.updated_at))
    summary: dict[str, Any] = {
        "info": {"id": sid, "cwd": workdir},
        "session_summary": session.title or "",
        "created_at": created or EPOCH,
        "updated_at": updated or EPOCH,
        "num_messages": num_messages,
        "num_chat_messages": chat.count,
        "current_model_id": session.model or "",
        "next_trace_turn": prompt + 1,
        "chat_format_version": 1,
        "last_active_at": updated or EPOCH,
    }
    if session.title:
        summary["generated_title"] = session.title
    if session.parent_session_id:
        summary["parent_session_id"] = session.parent_session_id
    if session.branch:
        summary["head_branch"] = session.branch  # git context (the codec README)

    base = f"home/.grok/{layout.SESSIONS}/{group}/{sid}"
    files = [
        ExportFile(f"{base}/{layout.UPDATES}", spooled(updates_path, spool)),
        ExportFile(f"{base}/{layout.CHAT_HISTORY}", spooled(chat_path, spool)),
    ]
    if layout.needs_cwd_file(group):
        files.append(
            ExportFile(f"home/.grok/{layout.SESSIONS}/{group}/{layout.CWD_FILE}", workdir.encode())
        )
    files.append(
        ExportFile(
            f"{base}/{layout.SUMMARY}", (json.dumps(summary, ensure_ascii=False, indent=2)).encode()
        )
    )
    rel = base[len("home/") :]
    return folder_plan(
        rel,
        files,
        diags=diags,
        notes=[f"run the resume command in {workdir} (Grok groups sessions by cwd)"],
    )
