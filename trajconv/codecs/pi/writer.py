"""Pi coding agent writer: Snapshot -> ``home/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``.

Pi has no import command: a session is a file in the folder of its cwd, found by
``pi --session <id>`` there (the codec's README.md, "Writer"), so the export uses the generic
``prepare.py``. Lowering, in one pass over the records:

* the header ``{"type": "session", "version": 3, "id", "timestamp", "cwd"}`` (plus
  ``parentSession`` naming the parent's file when the Snapshot names a parent pi's own folder
  for this cwd would hold: never, so a parent id is ``untranslated-parent-session``);
* one ``message`` entry per user record; the assistant side of a model step is one
  ``assistant`` message whose content is its reasoning (``thinking``), then its text, then its
  calls (``toolCall``), in record order; a record that cannot follow in that order (text after
  a call, a second text) opens the next assistant message; each tool result is a
  ``toolResult`` message (``isError`` = the result failed, ``toolName`` from its call);
* entries chain linearly (``parentId`` = the entry before), so the last line is the leaf and
  the whole file is the conversation pi sends; entry ids are 8 hex digits derived from the
  Snapshot id and the record's position (``ids-derived``), the session id is the source's when
  it is a UUID (pi's own kind), else uuid5 of the Snapshot id;
* the assistant messages name ``api: "openai-completions"``, the ``provider`` option (default:
  for a pi source the provider its file names last, else the source harness's name) and the
  record's model; pi replays a ``thinking`` block as
  reasoning (``reasoning_content``, the block's ``thinkingSignature``) only to that same
  provider, api and model, and as text to any other (``transformMessages``), so reasoning of a
  model other than the session's last is ``reasoning-as-text``; ``usage`` is zero and
  ``stopReason`` is ``toolUse`` / ``stop`` (``defaults-assumed``);
* a title is a ``session_info`` entry at the end; system text and observations have no place
  pi sends as such (``untranslated-system`` / ``untranslated-observation``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Any, BinaryIO

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    home_folders,
    name_status_not_sent,
    safe_component,
)
from trajconv.codecs.common import name_unheld, spooled, start_write
from trajconv.codecs.pi import layout
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Snapshot, ToolResult
from trajconv.snapshot.spool import Spool

#: the session format version pi 0.73.1 writes (``CURRENT_SESSION_VERSION``)
VERSION = 3
API = "openai-completions"
#: the field pi's ``openai-completions`` provider takes reasoning from and sends it back in
THINKING_SIGNATURE = "reasoning_content"
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": ZERO_COST,
}
EPOCH = "1970-01-01T00:00:00.000Z"

JsonObj = dict[str, Any]


def _ms(time: str) -> int:
    return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{ms % 1000:03d}Z"
    )


def session_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The source's id when it is a UUID (pi's ids are UUIDv7), else uuid5 of the Snapshot."""
    sid = snapshot.session.id
    try:
        return str(uuid.UUID(sid))
    except ValueError:
        diags.add("ids-derived", "session id")
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:pi:{snapshot.id}"))


class _Lowerer:
    def __init__(
        self, snapshot: Snapshot, diags: Diagnostics, out: BinaryIO, provider: str, model: str
    ) -> None:
        self.snap = snapshot
        self.diags = diags
        self.out = out
        self.provider = provider
        self.model = model
        self.ids: set[str] = set()
        self.parent: str | None = None
        self.time: str | None = None
        self.synthesized = 0
        self.msg: JsonObj | None = None
        self.msg_time: str | None = None
        self.msg_seq = 0
        self.names: dict[str, str] = {}
        self.lines = 0
        self.last_model: str | None = None
        self.moved = 0

    def entry_id(self, seq: int) -> str:
        digest = hashlib.sha256(f"{self.snap.id}:{seq}".encode()).hexdigest()
        for size in (8, 12, 16, 64):
            if digest[:size] not in self.ids:
                self.ids.add(digest[:size])
                return digest[:size]
        raise AssertionError("sha256 repeated itself")

    def stamp(self, time: str | None) -> str:
        """The record's time, or the one before it (``timestamps-synthesized``)."""
        if time is None:
            self.synthesized += 1
            time = self.time or self.snap.session.created_at or EPOCH
        self.time = time
        return time

    def write(self, seq: int, entry: JsonObj) -> None:
        eid = self.entry_id(seq)
        line = {"type": entry.pop("type"), "id": eid, "parentId": self.parent, **entry}
        self.out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode())
        self.out.write(b"\n")
        self.parent = eid
        self.lines += 1

    def message(self, seq: int, time: str, message: JsonObj) -> None:
        self.write(seq, {"type": "message", "timestamp": time, "message": message})

    # -- the assistant message being gathered
    def block(self, seq: int, time: str | None, block: JsonObj, model: str | None) -> None:
        order = {"thinking": 0, "text": 1, "toolCall": 2}[block["type"]]
        msg = self.msg
        if msg is not None:
            last = order_of(msg["content"][-1])
            other = model is not None and model != msg["model"]
            if order < last or (order == last == 1) or other:
                self.flush()
                msg = None
        if msg is None:
            self.msg_time = self.stamp(time)
            self.msg_seq = seq
            msg = self.msg = {
                "role": "assistant",
                "content": [],
                "api": API,
                "provider": self.provider,
                "model": model or self.model,
                "usage": ZERO_USAGE,
                "stopReason": "stop",
                "timestamp": _ms(self.msg_time),
            }
        elif time is None:
            self.synthesized += 1  # reads back with its message's time
        else:
            if time != self.msg_time:
                self.moved += 1  # one message holds one time: its first block's
            self.time = time
        msg["content"].append(block)
        self.last_model = msg["model"]

    def flush(self) -> None:
        if self.msg is None:
            return
        if any(b["type"] == "toolCall" for b in self.msg["content"]):
            self.msg["stopReason"] = "toolUse"
        assert self.msg_time is not None
        self.message(self.msg_seq, self.msg_time, self.msg)
        self.msg = None

    def user(self, seq: int, time: str | None, text: str) -> None:
        self.flush()
        at = self.stamp(time)
        content = [{"type": "text", "text": text}]
        self.message(seq, at, {"role": "user", "content": content, "timestamp": _ms(at)})

    def result(self, seq: int, time: str | None, res: ToolResult) -> None:
        self.flush()
        at = self.stamp(time)
        message: JsonObj = {
            "role": "toolResult",
            "toolCallId": res.call_id,
            "toolName": self.names.get(res.call_id, ""),
            "content": [{"type": "text", "text": res.output}],
            "isError": res.ok is False,
            "timestamp": _ms(at),
        }
        self.message(seq, at, message)


def order_of(block: JsonObj) -> int:
    return {"thinking": 0, "text": 1, "toolCall": 2}[str(block["type"])]


def own_provider(snapshot: Snapshot) -> str | None:
    """For a Snapshot read from pi, the provider its session file names last (a
    ``model_change`` or an assistant message; the reader keeps only the model), read from the
    file kept as the artifact, one line at a time."""
    name = snapshot.source.locator.rsplit("/", 1)[-1]
    art = next((a for a in snapshot.artifacts if a.name == name), None)
    if art is None or art.blob is None:
        return None
    provider = None
    rest = b""
    for chunk in [*art.chunks(), b"\n"]:
        *lines, rest = (rest + chunk).split(b"\n")
        for line in lines:
            if b'"provider"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            msg = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(msg, dict) and isinstance(msg.get("provider"), str):
                provider = msg["provider"]
            elif isinstance(entry, dict) and isinstance(entry.get("provider"), str):
                provider = entry["provider"]
    return provider


def _last_model(snapshot: Snapshot) -> str | None:
    model = None
    for rec in snapshot.records:
        if rec.kind in ("assistant", "reasoning") and rec.model:
            model = rec.model
    return model


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags, drop, workdir = start_write(snapshot, "pi", allow_lossy=allow_lossy, cwd=cwd)
    session = snapshot.session
    if cwd and session.cwd and cwd != session.cwd:
        diags.add("untranslated-cwd", "header cwd")
    own = snapshot.source.harness == "pi"
    sid = safe_component(session_id(snapshot, diags), "session id")
    diags.add("ids-derived", "entry ids")
    found = own_provider(snapshot) if own else None
    if provider is None and found is None:
        diags.add("defaults-assumed", "assistant provider (the source harness's name)")
    provider = provider or found or snapshot.source.harness
    default_model = model or _last_model(snapshot) or session.model
    if default_model is None:
        default_model = "unknown"
        diags.add("defaults-assumed", "assistant message model")
    if not own:
        diags.add("defaults-assumed", "assistant api (openai-completions)")
    diags.add("defaults-assumed", "assistant usage (zero) and stopReason")

    created = session.created_at
    spool = Spool()
    path = spool.new_file("session.jsonl")
    with path.open("wb") as out:
        low = _Lowerer(snapshot, diags, out, provider, default_model)
        header_time = created or next((r.time for r in snapshot.records if r.time), None)
        if created is None:
            diags.add("timestamps-synthesized", "header timestamp")
        header: JsonObj = {
            "type": "session",
            "version": VERSION,
            "id": sid,
            "timestamp": header_time or EPOCH,
            "cwd": workdir,
        }
        out.write(json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        low.time = header_time
        if default_model != "unknown":
            # pi opens every session so: the model it continues with (``buildSessionContext``)
            at = header_time or EPOCH
            low.write(-1, {"type": "model_change", "timestamp": at, "provider": provider,
                           "modelId": default_model})  # fmt: skip
            low.last_model = default_model
        for rec in snapshot.records:
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            if rec.kind == "user":
                low.user(rec.seq, rec.time, rec.text)
            elif rec.kind == "assistant":
                low.block(rec.seq, rec.time, {"type": "text", "text": rec.text}, rec.model)
                if rec.model is None:
                    diags.add("model-assumed", rec.id)
            elif rec.kind == "reasoning":
                block = {"type": "thinking", "thinking": rec.text}
                block["thinkingSignature"] = THINKING_SIGNATURE
                low.block(rec.seq, rec.time, block, rec.model)
                if rec.model is None:
                    diags.add("model-assumed", rec.id)
                if (rec.model or default_model) != default_model and rec.text.strip():
                    diags.add("reasoning-as-text", rec.id)
            elif rec.kind == "tool-call":
                call = rec.call
                args = call.arguments
                if not isinstance(args, dict):
                    diags.add("untranslated-tool-arguments", rec.id)
                    args = {"_raw": args if isinstance(args, str) else json.dumps(args)}
                low.names[call.id] = call.name
                low.block(
                    rec.seq,
                    rec.time,
                    {"type": "toolCall", "id": call.id, "name": call.name, "arguments": args},
                    None,
                )
            elif rec.kind == "tool-result":
                res = rec.result
                if res.ok is None:
                    diags.add("tool-status-assumed", rec.id)
                name_status_not_sent(diags, rec.id, res, own=own)
                low.result(rec.seq, rec.time, res)
            else:
                diags.add(f"untranslated-{rec.kind}", rec.id)
        low.flush()
        if session.title:
            at = low.time or header_time or EPOCH
            low.write(len(snapshot.records), {"type": "session_info", "timestamp": at,
                                              "name": session.title})  # fmt: skip
    if low.synthesized:
        diags.add("timestamps-synthesized", "entry times", count=low.synthesized)
    if low.moved:
        diags.add("untranslated-time", "times of blocks joined into one message", count=low.moved)
    if session.updated_at and low.time and session.updated_at != low.time:
        diags.add("untranslated-time", "updated time (the last entry's)")
    elif session.updated_at is None and low.time is not None:
        diags.add("timestamps-synthesized", "updated time (the last entry's)")
    if session.model and session.model != (low.last_model or default_model):
        diags.add("untranslated-model", "session model (the last assistant message's)")
    name_unheld(
        diags,
        session,
        {"untranslated-parent-session": "parentSession (a file path)", "untranslated-branch": None},
    )
    if session.title is None:
        diags.add("title-missing", "session_info")

    folder = layout.folder_for_cwd(workdir)
    name = layout.file_name(header_time or EPOCH, sid)
    resume: list[str] = []  # the codec's `pi --session <id>`, unless pi must open the file
    notes = []
    if len(folder.encode()) > layout.MAX_NAME:
        # pi cannot make this cwd's folder (ENAMETOOLONG): the file goes into a shorter one,
        # and ``--session`` names the file itself, which pi opens wherever it is
        folder = layout.short_folder(workdir)
        resume = ["pi", "--session", f"~/.pi/agent/{layout.SESSIONS}/{folder}/{name}"]
        notes.append(
            "the cwd's own session folder name is longer than a file name may be, so pi cannot "
            "list the session there; the resume command opens the file by its path"
        )
    rel = f".pi/agent/{layout.SESSIONS}/{folder}/{name}"
    return ExportPlan(
        session_id=sid,
        files=[ExportFile(f"home/{rel}", spooled(path, spool), 0o644)],
        session_paths=[rel],
        resume_argv=resume,
        diagnostics=diags.to_models(),
        dir_modes=home_folders(shared=f".pi/agent/{layout.SESSIONS}/{folder}"),
        notes=[
            *notes,
            f"run the resume command in {workdir}: pi looks a session id up in the folder of "
            "the directory it runs in (elsewhere it offers a fork and exits)",
            f"the assistant messages name provider {provider!r} and model {default_model!r}; "
            "pass --provider/--model when another is configured (pi then sends earlier "
            "reasoning as text)",
        ],
    )
