"""Cursor CLI writer: Snapshot -> ``cursor/<id>.readout.json`` + ``prepare.py``.

Cursor keeps a chat in a SQLite database, so the export holds the portable
readout (format ``cursor-agent-sqlite-readout-v1``: every meta row, every blob
base64, the source records under ``provenance``) and a stdlib-only
``prepare.py`` that verifies every blob hash and builds
``~/.cursor/chats/<md5(resolved cwd)>/<id>/store.db`` (DESIGN section 6).

Two ways to fill the readout:

* a Snapshot read from Cursor carries every referenced blob in its artifacts;
  they are written back unchanged (byte-identical root, ids and messages);
* any other Snapshot is lowered (``shared/formats/cursor-agentkv.md`` section 7):
  one JSON message blob per system / user / observation / tool result and one
  per run of assistant, reasoning and tool-call records, a field-8 turn per
  human prompt (UserMessage + thinking / assistant steps) so Cursor's turn view
  and ``@cursor/sdk`` see the conversation, and a root encoded with the
  ``protobuf`` package that is decoded again to check its ids.

Cursor messages have no per-message time, so record times are
``untranslated-time``; a tool's exit status is ``untranslated-exit-code``.
"""

from __future__ import annotations

import base64
import uuid
from datetime import datetime
from importlib import resources
from typing import Any

import orjson

from trajconv.codecs.base import ExportFile, ExportPlan, check_continuable, safe_component
from trajconv.codecs.cursor import layout, native, proto, reader
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Artifact, Snapshot

#: Root state kinds a reader reports that Cursor cannot be handed back truthfully
#: without the original blobs (compaction archives, subagents, branches).
STATE_CODES = ("compaction-state",)


def prepare_script() -> str:
    return resources.files("trajconv.codecs.cursor").joinpath("prepare_store.py").read_text("utf-8")


def _ms(time: str | None) -> int | None:
    if time is None:
        return None
    return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp() * 1000)


def _art_bytes(art: Artifact) -> bytes:
    data = art.data or ""
    return base64.b64decode(data) if art.encoding == "base64" else data.encode("utf-8")


def agent_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The store's ``agentId``: the session id when it is a UUID, else uuid5 of the Snapshot."""
    try:
        return str(uuid.UUID(snapshot.session.id))
    except ValueError:
        diags.add("ids-derived", "agentId")
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:cursor-agent"))


# --------------------------------------------------------------------------- lossless


def _from_cursor(
    snapshot: Snapshot,
) -> tuple[dict[str, Any], dict[str, str], list[tuple[str, bytes]]] | None:
    """Meta, other meta rows and blobs of a Snapshot read from Cursor, or None."""
    if snapshot.source.harness != "cursor":
        return None
    arts = {a.name: a for a in snapshot.artifacts}
    index_art, meta_art = arts.get(reader.INDEX), arts.get(reader.META_ARTIFACT)
    if index_art is None or meta_art is None or index_art.data is None or meta_art.data is None:
        return None
    index = orjson.loads(_art_bytes(index_art))
    meta_doc = orjson.loads(_art_bytes(meta_art))
    blobs: list[tuple[str, bytes]] = []
    for entry in index.get("blobs", []):
        art = arts.get(entry["artifact"])
        if art is None or art.data is None:
            return None
        data = _art_bytes(art)
        if native.blob_id(data) != entry["id"]:
            return None
        blobs.append((entry["id"], data))
    meta, _ = native.strip_secrets(meta_doc.get("meta", {}))
    return meta, dict(meta_doc.get("other_rows", {})), blobs


# --------------------------------------------------------------------------- lowering


class _Lowering:
    """Records -> Vercel-AI-shaped message dicts and field-8 turns (spec sections 5, 6)."""

    def __init__(self, snapshot: Snapshot, diags: Diagnostics, drop: set[str]) -> None:
        self.snapshot = snapshot
        self.diags = diags
        self.drop = drop
        self.blobs: dict[str, bytes] = {}
        self.messages: list[str] = []
        self.turns: list[str] = []
        self.assistant: dict[str, Any] | None = None
        self.turn: dict[str, Any] | None = None
        self.call_names: dict[str, str] = {}

    def put(self, data: bytes) -> str:
        bid = native.blob_id(data)
        self.blobs.setdefault(bid, data)
        return bid

    def emit(self, message: dict[str, Any]) -> None:
        self.messages.append(self.put(native.json_bytes(message)))

    def close_assistant(self) -> None:
        if self.assistant is not None:
            self.emit(self.assistant)
            self.assistant = None

    def close_turn(self) -> None:
        if self.turn is None:
            return
        user = proto.new("UserMessage")
        user.text = self.turn["text"]
        user.message_id = self.turn["message_id"]
        entry = proto.new("ConversationTurnStructure")
        agent = entry.agent_conversation_turn
        agent.user_message = bytes.fromhex(self.put(proto.encode(user)))
        for kind, text in self.turn["steps"]:
            step = proto.new("ConversationStep")
            if kind == "thinking":
                step.thinking_message.text = text
            else:
                step.assistant_message.text = text
            agent.steps.append(bytes.fromhex(self.put(proto.encode(step))))
        agent.request_id = self.turn["request_id"]
        agent.user_message_id = self.turn["message_id"]
        self.turns.append(self.put(proto.encode(entry)))
        self.turn = None

    def derived(self, seq: int, what: str) -> str:
        self.diags.add("ids-derived", what)
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.snapshot.id}:{seq}:{what}"))

    def _assistant_msg(self, model: str | None) -> dict[str, Any]:
        if self.assistant is None:
            self.assistant = {"role": "assistant", "content": []}
        if model and "providerOptions" not in self.assistant:
            self.assistant["providerOptions"] = {"cursor": {"modelName": model}}
        return self.assistant

    def record(self, rec: Any) -> None:
        if rec.id in self.drop:
            code = (
                "untranslated-pending-call"
                if rec.kind == "tool-call"
                else ("untranslated-orphan-result")
            )
            self.diags.add(code, rec.id)
            return
        if rec.time is not None:
            self.diags.add("untranslated-time", rec.id)
        kind = rec.kind
        if kind in ("assistant", "reasoning", "tool-call"):
            msg = self._assistant_msg(getattr(rec, "model", None))
            if kind == "assistant":
                msg["content"].append({"type": "text", "text": rec.text})
                if self.turn is not None:
                    self.turn["steps"].append(("assistant", rec.text))
            elif kind == "reasoning":
                part: dict[str, Any] = {"type": "reasoning", "text": rec.text}
                if rec.model:
                    part["providerOptions"] = {"cursor": {"modelName": rec.model}}
                msg["content"].append(part)
                if self.turn is not None:
                    self.turn["steps"].append(("thinking", rec.text))
            else:
                self.call_names[rec.call.id] = rec.call.name
                msg["content"].append(
                    {
                        "type": "tool-call",
                        "toolCallId": rec.call.id,
                        "toolName": rec.call.name,
                        "args": rec.call.arguments,
                    }
                )
            return
        self.close_assistant()
        if kind == "system":
            self.emit({"role": "system", "content": rec.text})
        elif kind == "observation":
            # injected context: a user row without requestId (spec section 5)
            self.emit({"role": "user", "content": [{"type": "text", "text": rec.text}]})
        elif kind == "user":
            self.close_turn()
            request_id = self.derived(rec.seq, "requestId")
            message_id = self.derived(rec.seq, "messageId")
            self.emit(
                {
                    "role": "user",
                    "id": message_id,
                    "content": [{"type": "text", "text": rec.text}],
                    "providerOptions": {"cursor": {"requestId": request_id}},
                }
            )
            self.turn = {
                "text": rec.text,
                "message_id": message_id,
                "request_id": request_id,
                "steps": [],
            }
        elif kind == "tool-result":
            res = rec.result
            tool: dict[str, Any] = {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": res.call_id,
                        "toolName": self.call_names.get(res.call_id, ""),
                        "result": res.output,
                    }
                ],
            }
            if res.ok is not None:
                tool["providerOptions"] = {
                    "cursor": {"highLevelToolCallResult": {"isError": not res.ok}}
                }
            if res.exit_code is not None:
                self.diags.add("untranslated-exit-code", rec.id)
            self.emit(tool)

    def finish(self, cwd: str | None) -> tuple[str, list[tuple[str, bytes]]]:
        self.close_assistant()
        self.close_turn()
        root = proto.new("ConversationStateStructure")
        root.root_prompt_messages_json.extend(bytes.fromhex(m) for m in self.messages)
        root.turns.extend(bytes.fromhex(t) for t in self.turns)
        if cwd:
            root.previous_workspace_uris.append(native.uri_from_cwd(cwd))
        data = proto.encode(root)
        # The root must decode back to the same ids (issue 6, Writer).
        again = proto.decode("ConversationStateStructure", data)
        if [r.hex() for r in again.root_prompt_messages_json] != self.messages:
            raise RefusedError("cursor writer: root protobuf did not re-decode to its ids")
        root_id = self.put(data)
        ordered = [(root_id, self.blobs[root_id])]
        ordered += [(bid, blob) for bid, blob in self.blobs.items() if bid != root_id]
        return root_id, ordered


def _meta(snapshot: Snapshot, agent: str, root_id: str, diags: Diagnostics) -> dict[str, Any]:
    session = snapshot.session
    meta: dict[str, Any] = {"agentId": agent, "latestRootBlobId": root_id}
    if session.title:
        meta["name"] = session.title
    else:
        diags.add("title-missing", "meta.name")
    created = _ms(session.created_at)
    if created is None:
        times = [r.time for r in snapshot.records if r.time]
        created = _ms(times[0]) if times else None
    if created is not None:
        meta["createdAt"] = created
    meta["mode"] = "default"
    meta["isRunEverything"] = False
    if session.model:
        meta["lastUsedModel"] = session.model
    return meta


def _provenance(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "snapshot_id": snapshot.id,
        "source": snapshot.source.model_dump(mode="json"),
        "session": snapshot.session.model_dump(mode="json"),
        "records": [r.model_dump(mode="json") for r in snapshot.records],
    }


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags = Diagnostics()
    state = [d for d in snapshot.diagnostics if d.code in STATE_CODES]
    if state and not allow_lossy:
        raise RefusedError(
            "refusing to write cursor: the session holds root state this codec cannot "
            f"continue ({', '.join(state[0].samples) or state[0].code}); pass --allow-lossy"
        )
    drop = check_continuable(snapshot, "cursor", allow_lossy=allow_lossy)
    workdir = cwd or snapshot.session.cwd
    if not workdir:
        diags.add("cwd-missing", "root field 9")
    lossless = _from_cursor(snapshot) if not drop else None
    if lossless is not None:
        meta, other_meta, blobs = lossless
        agent = safe_component(str(meta.get("agentId") or snapshot.session.id), "agent id")
        notes = ["blobs written back unchanged from the Cursor source"]
    else:
        agent = safe_component(agent_id(snapshot, diags), "agent id")
        low = _Lowering(snapshot, diags, drop)
        for rec in snapshot.records:
            low.record(rec)
        root_id, blobs = low.finish(workdir)
        meta = _meta(snapshot, agent, root_id, diags)
        other_meta = {}
        notes = ["store built from the Snapshot records (field-1 messages, field-8 turns)"]
    doc = native.readout_document(
        agent_id=agent,
        cwd=workdir,
        meta=meta,
        other_meta=other_meta,
        blobs=blobs,
        provenance=_provenance(snapshot),
    )
    path = f"{layout.READOUT_DIR}/{agent}{layout.READOUT_SUFFIX}"
    session_paths = [layout.store_rel(workdir, agent).rsplit("/", 1)[0]] if workdir else []
    if workdir:
        notes.append(f"run the resume command in {workdir} (Cursor groups chats by cwd)")
    return ExportPlan(
        target="cursor",
        session_id=agent,
        snapshot_id=snapshot.id,
        files=[ExportFile(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")],
        session_paths=session_paths,
        resume_argv=["cursor-agent", "--resume", agent],
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(),
        notes=notes,
    )
