"""Cursor CLI writer: Snapshot -> ``cursor/<id>.readout.json`` + ``prepare.py``.

Cursor keeps a chat in a SQLite database, so the export holds the portable
readout (format ``cursor-agent-sqlite-readout-v1``: every meta row, every blob
base64, the source records under ``provenance``) and a stdlib-only
``prepare.py`` that verifies every blob hash and builds
``~/.cursor/chats/<md5(resolved cwd)>/<id>/store.db`` (docs/design.md §6).

Two ways to fill the readout:

* a Snapshot read from Cursor carries every referenced blob in its artifacts;
  they are written back unchanged (byte-identical root, ids and messages);
* any other Snapshot is lowered (``codecs/cursor/README.md`` section 7):
  one JSON message blob per system / user / observation / tool result and one
  per run of assistant, reasoning and tool-call records, a field-8 turn per
  human prompt (UserMessage + thinking / assistant steps) so Cursor's turn view
  and ``@cursor/sdk`` see the conversation, and a root encoded with the
  ``protobuf`` package that is decoded again to check its ids.

Cursor messages have no per-message time, so record times are
``untranslated-time``; a tool's exit status is ``untranslated-exit-code``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import orjson

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    check_continuable,
    dropped_code,
    name_joined_models,
    safe_component,
)
from trajconv.codecs.common import iso_ms as _ms
from trajconv.codecs.common import name_unheld, uuid_session_id
from trajconv.codecs.cursor import layout, native, proto, reader
from trajconv.errors import RefusedError, VerifyError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.jsonstream import Members
from trajconv.snapshot.models import Snapshot
from trajconv.snapshot.spool import Spool, artifact_lookup, records_value

Blobs = Callable[[], Iterator[tuple[str, bytes]]]
"""The readout's blobs, root first, read one at a time when the export is written."""

#: Root state kinds a reader reports that Cursor cannot be handed back truthfully
#: without the original blobs (compaction archives, subagents, branches).
STATE_CODES = ("compaction-state",)

#: What each root field of a Cursor chat (``reader.root_state_items``) is to the model,
#: for a refusal a user can act on.
ROOT_STATE = {
    "summary": "the compaction summary the model reads in place of earlier messages",
    "summary_archive": "an archived compaction summary",
    "summary_archives": "archived compaction summaries",
    "self_summary_count": "how often the chat summarised itself",
    "message_count_at_last_compaction": "where the last compaction cut the conversation",
    "subagent_states": "subagent conversations",
    "subagent_state_refs": "subagent conversations (by reference)",
    "active_branch_name": "the branch the chat is on",
    "goal_state": "the chat's goal",
}


def _check_root_state(snapshot: Snapshot, allow_lossy: bool, notes: list[str]) -> None:
    """Refuse a Cursor chat whose root state the records cannot rebuild, naming each field.

    Only a Cursor source has such state: another harness's compaction or checkpoint rows
    (``compaction-state`` too) are its own bookkeeping, kept in the Snapshot's artifacts,
    and the records hold the conversation, so those are written and named, not refused.
    """
    named = [
        s
        for d in snapshot.diagnostics
        if d.code in STATE_CODES
        for s in d.samples
        if s.startswith("root.")
    ]
    if snapshot.source.harness != "cursor" or not named:
        return
    what = "; ".join(f"{s} ({ROOT_STATE.get(s[5:], 'state Cursor keeps')})" for s in named)
    if not allow_lossy:
        raise RefusedError(
            "refusing to write cursor: this Cursor chat's blobs are not all in the "
            f"Snapshot, and its root state cannot be rebuilt from the records: {what}. "
            "Continued without it, the model would not see what it saw before; pass "
            "--allow-lossy to write the messages without it"
        )
    notes.append(f"--allow-lossy: left out the Cursor root state {what}")


def prepare_script() -> str:
    return resources.files("trajconv.codecs.cursor").joinpath("prepare_store.py").read_text("utf-8")


def agent_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The store's ``agentId``: the session id when it is a UUID, else uuid5 of the Snapshot."""
    return uuid_session_id(snapshot, diags, "cursor-agent", sample="agentId")


# --------------------------------------------------------------------------- lossless


_SPACE = re.compile(r"[ \t\n\r]*")


def _blob_entries(index: bytes) -> Iterator[tuple[str, str]]:
    """``(blob id, artifact name)`` of each ``blobs`` entry of a store index, decoded one
    entry at a time: the index lists every blob of the session, so it is never held as
    objects (``ValueError`` when it is not a JSON object)."""
    text = index.decode("utf-8")
    decode = json.JSONDecoder().raw_decode

    def skip(pos: int) -> int:
        space = _SPACE.match(text, pos)
        assert space is not None  # the pattern matches the empty string
        return space.end()

    def after(pos: int, char: str) -> int:
        pos = skip(pos)
        if not text.startswith(char, pos):
            raise ValueError(f"store index: expected {char!r} at {pos}")
        return skip(pos + 1)

    pos = after(0, "{")
    while not text.startswith("}", pos):
        key, pos = decode(text, pos)
        pos = after(pos, ":")
        if key != "blobs":
            _, pos = decode(text, pos)
        else:
            pos = after(pos, "[")
            while not text.startswith("]", pos):
                entry, pos = decode(text, pos)
                yield entry["id"], entry["artifact"]
                pos = skip(pos)
                if not text.startswith("]", pos):
                    pos = after(pos, ",")
            pos += 1
        pos = skip(pos)
        if not text.startswith("}", pos):
            pos = after(pos, ",")


def _from_cursor(snapshot: Snapshot) -> tuple[dict[str, Any], dict[str, str], Blobs] | None:
    """Meta, other meta rows and blobs of a Snapshot read from Cursor, or None.

    Every blob artifact must be there with the blob's own hash (an artifact whose JSON
    lost a credential-looking member has another), which reads no blob bytes; the bytes
    are read, and hashed again, one blob at a time as the readout is written.
    """
    if snapshot.source.harness != "cursor":
        return None
    artifact = artifact_lookup(snapshot.artifacts)
    index_art, meta_art = artifact(reader.INDEX), artifact(reader.META_ARTIFACT)
    if index_art is None or meta_art is None:
        return None
    index, meta_bytes = index_art.read(), meta_art.read()
    if index is None or meta_bytes is None:
        return None
    for bid, name in _blob_entries(index):
        art = artifact(name)
        if art is None or art.sha256 != bid:
            return None

    def read() -> Iterator[tuple[str, bytes]]:
        for bid, name in _blob_entries(index_art.read() or b""):
            art = artifact(name)
            data = art.read() if art is not None else None
            if data is None or native.blob_id(data) != bid:
                raise VerifyError(f"artifact {name}: bytes missing or not blob {bid}")
            yield bid, data

    meta_doc = orjson.loads(meta_bytes)
    meta, _ = native.strip_secrets(meta_doc.get("meta", {}))
    return meta, dict(meta_doc.get("other_rows", {})), read


# --------------------------------------------------------------------------- lowering


class _Lowering:
    """Records -> Vercel-AI-shaped message dicts and field-8 turns (spec sections 5, 6)."""

    def __init__(self, snapshot: Snapshot, diags: Diagnostics, drop: set[str]) -> None:
        self.snapshot = snapshot
        self.diags = diags
        self.drop = drop
        # Blob bytes wait in a spool file until the export is written, so a long session
        # is never held; only ids and places are kept.
        self.spool = Spool()
        self.path = self.spool.new_file("cursor-blobs")
        self.out = self.path.open("wb")
        self.blobs: dict[str, tuple[int, int]] = {}
        """Blob id -> (offset, size) in the spool file, in first-put order."""
        self.end = 0
        self.first_time: str | None = None
        self.messages: list[str] = []
        self.turns: list[str] = []
        self.assistant: dict[str, Any] | None = None
        self.models: list[tuple[str, str | None]] = []  # its records that take its model
        self.turn: dict[str, Any] | None = None
        self.call_names: dict[str, str] = {}

    def put(self, data: bytes) -> str:
        bid = native.blob_id(data)
        if bid not in self.blobs:
            self.blobs[bid] = (self.end, len(data))
            self.out.write(data)
            self.end += len(data)
        return bid

    def emit(self, message: dict[str, Any]) -> None:
        self.messages.append(self.put(native.json_bytes(message)))

    def close_assistant(self) -> None:
        if self.assistant is not None:
            model = self.assistant.get("providerOptions", {}).get("cursor", {}).get("modelName")
            name_joined_models(self.diags, model, self.models)
            self.emit(self.assistant)
            self.assistant = None
            self.models = []

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
        if self.first_time is None and rec.time:
            self.first_time = rec.time  # the created time when the session has none
        if rec.id in self.drop:
            self.diags.add(dropped_code(rec.kind), rec.id)
            return
        if rec.time is not None:
            self.diags.add("untranslated-time", rec.id)
        kind = rec.kind
        if kind in ("assistant", "reasoning", "tool-call"):
            msg = self._assistant_msg(getattr(rec, "model", None))
            if kind == "assistant" or (kind == "reasoning" and not rec.model):
                self.models.append((rec.id, rec.model))  # the reader gives them the message's
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

    def finish(self, cwd: str | None) -> tuple[str, Blobs]:
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
        self.out.close()

        def read() -> Iterator[tuple[str, bytes]]:
            with self.path.open("rb") as fh:
                for bid in (root_id, *(b for b in self.blobs if b != root_id)):
                    offset, size = self.blobs[bid]
                    fh.seek(offset)
                    yield bid, fh.read(size)

        return root_id, read


def _meta(
    snapshot: Snapshot, agent: str, root_id: str, first_time: str | None, diags: Diagnostics
) -> dict[str, Any]:
    session = snapshot.session
    meta: dict[str, Any] = {"agentId": agent, "latestRootBlobId": root_id}
    if session.title:
        meta["name"] = session.title
    else:  # what Cursor itself writes for an untitled chat; its parser requires the field
        meta["name"] = native.UNTITLED
        diags.add("title-missing", "meta.name")
    created = _ms(session.created_at or first_time)
    if created is not None:
        meta["createdAt"] = created
        if session.created_at is None:
            diags.add("timestamps-synthesized", "meta.createdAt (the first record's time)")
    # A store keeps no update time and no git branch the reader takes back, and a subagent
    # store's ``subagentInfo`` needs the spawning tool call, which a Snapshot does not name.
    if session.updated_at:
        diags.add("untranslated-time", "session updated_at")
    name_unheld(
        diags,
        session,
        {
            "untranslated-branch": "session branch",
            "untranslated-parent-session": "meta.subagentInfo",
        },
    )
    meta["mode"] = "default"
    meta["isRunEverything"] = False
    if session.model:
        meta["lastUsedModel"] = session.model
    return meta


def _provenance(snapshot: Snapshot) -> Members:
    """The source records, copied from the spool (the readout's ``provenance`` member, so
    its ``records`` are two levels deep)."""
    return Members(
        snapshot_id=snapshot.id,
        source=snapshot.source.model_dump(mode="json"),
        session=snapshot.session.model_dump(mode="json"),
        records=records_value(snapshot.records, depth=2),
    )


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    diags = Diagnostics()
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
        notes = ["store built from the Snapshot records (field-1 messages, field-8 turns)"]
        _check_root_state(snapshot, allow_lossy, notes)
        agent = safe_component(agent_id(snapshot, diags), "agent id")
        low = _Lowering(snapshot, diags, drop)
        for rec in snapshot.records:
            low.record(rec)
        root_id, blobs = low.finish(workdir)
        meta = _meta(snapshot, agent, root_id, low.first_time, diags)
        other_meta = {}

    def readout() -> Iterator[bytes]:
        return native.readout_chunks(
            agent_id=agent,
            cwd=workdir,
            meta=meta,
            other_meta=other_meta,
            blobs=blobs(),
            provenance=_provenance(snapshot),
        )

    path = f"{layout.READOUT_DIR}/{agent}{layout.READOUT_SUFFIX}"
    session_paths = [layout.store_rel(workdir, agent).rsplit("/", 1)[0]] if workdir else []
    if workdir:
        notes.append(f"run the resume command in {workdir} (Cursor groups chats by cwd)")
    return ExportPlan(
        session_id=agent,
        files=[ExportFile(path, readout)],
        session_paths=session_paths,
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(),
        try_home=None,  # the session exists once prepare.py wrote it into a home
        notes=notes,
    )
