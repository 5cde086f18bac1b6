"""Mistral Vibe writer: Snapshot -> ``home/.vibe/logs/session/unified/<uuid>/``.

The store written is the one ``mistral-vibe`` 3.0.3 itself writes when it imports a
conversation from elsewhere (``UnifiedHarnessSessionBackendHost.import_committed_history``
-> ``_write_initial_store``; the codec's README.md, "Writer"), which ``vibe --resume <uuid>``
opens like any other:

* generation ``0000000000000000`` (snapshot sequence 0): ``checkpoint.json`` (an idle core,
  ``context.messages`` pooled out), ``runtime-state.json`` (an empty runtime, version 3, the
  cwd in ``session_metadata``), ``projection-state.json`` (the public view: one entry per
  user and assistant text message, ids ``imported-<n>``), ``manifest.json`` naming each with
  the sha256 of its body and the chunks holding the transcripts; ``CURRENT`` naming the
  manifest's sha256; an empty recovery journal ``journal/0000000000000001.jsonl`` (no record,
  so no hash chain to extend);
* every document is canonical JSON (RFC 8785, as ``canonical_json``) ended by a newline, and
  digests are of the bytes without that newline; a chunk ``chunks/<sha256>.json`` is the
  canonical array of its items;
* transcript items ``{"message", "source": "history", "turn_index"}``: user and system
  records -> ``user`` / ``system`` messages; the assistant records between two others ->
  one ``assistant`` message (``text``, ``reasoning`` and ``tool_call`` parts in record
  order); a tool result -> a ``tool`` message (``outcome`` success/failure, ``name`` of its
  call);
* the session id is the source's when it is a UUID, else uuid5 of the Snapshot id; times
  (``createdAt``) are the session's creation time (``timestamps-synthesized`` when it has
  none).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    folder_plan,
    name_status_not_sent,
)
from trajconv.codecs.common import iso_ms, name_unheld, open_write
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Snapshot

GENERATION = "0000000000000000"
STORE_FORMAT_MINOR = 10
UNIFIED = ".vibe/logs/session/unified"
_SAFE_INT = 2**53 - 1

JsonObj = dict[str, Any]


def _standard(value: Any) -> bool:
    """Whether ``json.dumps`` gives RFC 8785's bytes for ``value`` (vibe's
    ``_standard_encoder_form``, without its integral-float rewrite: writers give ints)."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is dict:
            if not all(type(k) is str and k.isascii() for k in item):
                return False
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is int:
            if abs(item) > _SAFE_INT:
                return False
        elif kind is float:
            if item.is_integer() or not 1e-4 <= abs(item) < float("inf"):
                return False
        else:
            return False
    return True


def canonical(value: Any) -> bytes:
    """Canonical JSON as vibe's ``canonical_json`` writes it."""
    if _standard(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return bytes(rfc8785.dumps(value))


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class _Transcript:
    def __init__(self, diags: Diagnostics, own: bool) -> None:
        self.diags = diags
        self.own = own
        self.items: list[JsonObj] = []
        self.turn = 0
        self.users = 0
        self.parts: list[JsonObj] = []
        self.names: dict[str, str] = {}

    def flush(self) -> None:
        if self.parts:
            self.add({"role": "assistant", "content": self.parts})
            self.parts = []

    def add(self, message: JsonObj) -> None:
        self.items.append({"message": message, "source": "history", "turn_index": self.turn})

    def text(self, role: str, text: str) -> None:
        self.flush()
        if role == "user":
            self.turn = self.users
            self.users += 1
        self.add({"role": role, "content": [{"type": "text", "text": text}]})


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "vibe", allow_lossy=allow_lossy, cwd=cwd)
    session = snapshot.session
    own = snapshot.source.harness == "vibe"
    created = iso_ms(session.created_at) or iso_ms(
        next((r.time for r in snapshot.records if r.time), None)
    )
    if created is None:
        created = 0
        diags.add("timestamps-synthesized", "createdAt (the epoch)")
    elif session.created_at is None:
        diags.add("timestamps-synthesized", "createdAt (the first record's time)")

    tr = _Transcript(diags, own)
    timed = 0
    for rec in snapshot.records:
        if rec.id in drop:
            diags.add(dropped_code(rec.kind), rec.id)
            continue
        if rec.time is not None:
            timed += 1
        if rec.kind in ("user", "system"):
            if rec.kind == "system" and not own:
                # kept in the transcript, but a resumed vibe 3.0.3 sends the model its own
                # system prompt only (a Codex session's context was not in its request)
                diags.add("system-not-sent", rec.id)
            tr.text(rec.kind, rec.text)
        elif rec.kind == "assistant":
            if tr.parts and tr.parts[-1]["type"] == "text":
                # two texts of one assistant message reach the model as one text
                diags.add("untranslated-message-boundary", rec.id)
            tr.parts.append({"type": "text", "text": rec.text})
        elif rec.kind == "reasoning":
            tr.parts.append({"type": "reasoning", "content": [{"type": "text", "text": rec.text}]})
        elif rec.kind == "tool-call":
            call = rec.call
            args = call.arguments
            if not isinstance(args, dict):
                diags.add("untranslated-tool-arguments", rec.id)
                args = {}
            tr.names[call.id] = call.name
            raw = json.dumps(args, ensure_ascii=False)
            tr.parts.append({
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": {"type": "json", "raw": raw, "value": args},
            })  # fmt: skip
        elif rec.kind == "tool-result":
            res = rec.result
            tr.flush()
            if res.ok is None:
                diags.add("tool-status-assumed", rec.id)
            name_status_not_sent(diags, rec.id, res, own=own)
            content = [{"type": "text", "text": res.output}] if res.output else []
            tr.add({
                "role": "tool",
                "tool_call_id": res.call_id,
                "name": tr.names.get(res.call_id, ""),
                "outcome": "failure" if res.ok is False else "success",
                "content": content,
            })  # fmt: skip
        else:
            diags.add(f"untranslated-{rec.kind}", rec.id)
    tr.flush()
    if timed:
        diags.add("untranslated-time", "record times (vibe keeps none per message)", count=timed)
    name_unheld(
        diags,
        session,
        {
            "untranslated-model": "session model (vibe's config names the model)",
            "untranslated-parent-session": "parent session",
            "untranslated-branch": None,
        },
    )
    for rec in snapshot.records:
        if rec.kind in ("assistant", "reasoning") and rec.model and rec.id not in drop:
            diags.add("untranslated-model", rec.id)
    if session.title is None:
        diags.add("title-missing", "session title")

    updated = iso_ms(session.updated_at)
    if updated is None:
        updated = created
        diags.add("timestamps-synthesized", "updatedAt (the creation time)")
    files = _store(sid, workdir, created, updated, session.title, tr.items)
    base = f"{UNIFIED}/{sid}"
    return folder_plan(
        base,
        [ExportFile(f"home/{base}/{rel}", data, 0o600) for rel, data in files],
        diags=diags,
        notes=[f"run the resume command in {workdir}: the session's cwd"],
        shared=UNIFIED,
        below=[f"{base}/chunks", f"{base}/generations/{GENERATION}", f"{base}/journal"],
    )


def _entries(sid: str, created: int, items: list[JsonObj]) -> list[JsonObj]:
    """The public history entries vibe's import makes (``_public_state``): user and
    assistant messages with their text parts, ids ``imported-<place + 1>``."""
    out = []
    for i, item in enumerate(items):
        msg = item["message"]
        if msg["role"] not in ("user", "assistant", "system"):
            continue
        content = [p for p in msg["content"] if p["type"] == "text"]
        if not content:
            continue
        entry: JsonObj = {
            "type": "message",
            "id": f"imported-{i + 1}",
            "sessionId": sid,
            "turnId": None,
            "createdAt": created,
            "updatedAt": created,
            "generationStatus": "completed",
            "relatedEntryId": None,
            "inputEntryId": None,
            "role": msg["role"],
            "content": content,
            "source": "harness",
        }
        if msg["role"] == "assistant":
            entry["outcome"] = {"type": "committed"}
        out.append(entry)
    return out


def _store(
    sid: str, cwd: str, created: int, updated: int, title: str | None, items: list[JsonObj]
) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []

    def document(rel: str, value: Any) -> str:
        body = canonical(value)
        files.append((rel, body + b"\n"))
        return _sha(body)

    def chunk(values: list[JsonObj]) -> list[str]:
        if not values:
            return []
        body = b"[" + b",".join(canonical(v) for v in values) + b"]"
        digest = _sha(body)
        files.append((f"chunks/{digest}.json", body + b"\n"))
        return [digest]

    gen = f"generations/{GENERATION}"
    checkpoint = {
        "checkpoint_version": 1,
        "compaction_count": 0,
        "context": {"messages": []},
        "notifications": [],
        "turn": {"type": "idle"},
    }
    runtime: JsonObj = {
        "actions": [], "callbacks": [], "children": [], "command_receipts": [],
        "core_capabilities": None, "core_last_input_id": 0, "core_plugins": None,
        "core_settings": None, "core_system_instructions": None, "core_task_id": None,
        "identity": {"depth": 0, "kind": "root", "parent_session_id": None,
                     "root_session_id": sid, "session_id": sid},
        "import_provenance": None, "lifecycle": {"type": "active"},
        "parent_command_receipts": {}, "pending_transition": None,
        "plugin_lock": {"lock_version": 1, "plugins": [], "snapshot_digest": None},
        "processes": [], "provider_operations": [], "runtime_state_version": 3,
        "session_id": sid,
        "session_metadata": {
            "active_model": None, "agent_name": None, "completion_catalogue": None,
            "cwd": cwd, "external_import": None, "hook_bindings": [], "origin_cwd": None,
            "parent_session_id": None, "reasoning_effort": None, "root_session_id": sid,
            "subagent_policy_ceiling_digest": None, "subagent_spawn_key": None,
            "subagent_template_digest": None,
        },
        "snapshot_sequence": 0, "storage_lifetime": "persistent", "subagents": None,
        "submitted_process_notifications": [],
    }  # fmt: skip
    entries = _entries(sid, created, items)
    projection: JsonObj = {
        "projection_state_version": 1,
        "session_id": sid,
        "snapshot": {
            "activeCallbacks": [],
            "format": "harness.public-session-state/v1",
            "history": {"cursor": {"after": None, "before": None}, "entries": [],
                        "range": "latest"},
            "latestTurn": None,
            "session": {
                "contextUsage": None, "createdAt": created, "id": sid, "parentSessionId": None,
                "preview": "", "rootSessionId": sid, "status": {"type": "idle"},
                "title": title, "titleSource": "manual" if title else "auto",
                "tokenUsage": None, "updatedAt": updated,
            },
            "turnQueue": {"items": [], "maxItems": 32, "paused": False},
        },
        "snapshot_sequence": 0,
        "watermark": 0,
    }  # fmt: skip
    checkpoint_chunks = chunk(items)
    projection_chunks = chunk(entries)
    manifest = {
        "checkpoint": {
            "checkpoint_version": 1,
            "chunks": checkpoint_chunks,
            "path": "checkpoint.json",
            "sha256": document(f"{gen}/checkpoint.json", checkpoint),
        },
        "created_at": _iso(created),
        "execution_state": "quiescent",
        "generation": GENERATION,
        "interop_export": None,
        "manifest_version": 1,
        "projection_state": {
            "chunks": projection_chunks,
            "path": "projection-state.json",
            "sha256": document(f"{gen}/projection-state.json", projection),
        },
        "recovery_journal_segment": {"first_sequence": 1, "path": "journal/0000000000000001.jsonl"},
        "runtime_state": {
            "chunks": None,
            "path": "runtime-state.json",
            "sha256": document(f"{gen}/runtime-state.json", runtime),
        },
        "session_id": sid,
        "snapshot_sequence": 0,
    }
    current = {
        "generation": GENERATION,
        "manifest_sha256": document(f"{gen}/manifest.json", manifest),
        "session_id": sid,
        "snapshot_sequence": 0,
        "store_format": "mistral.vibe.unified-session-store/v1",
        "store_format_minor": STORE_FORMAT_MINOR,
    }
    document("CURRENT", current)
    files.append(("journal/0000000000000001.jsonl", b""))
    return files


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
