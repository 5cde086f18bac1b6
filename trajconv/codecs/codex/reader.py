"""Codex CLI reader: one rollout ``*.jsonl`` (+ the thread index, when present) -> Snapshot.

Format facts: ``codecs/codex/README.md`` (observed with 0.171.0 in both shapes, legacy and
paginated). Rules implemented here:

* **which family is the conversation**: the ``response_item`` lines are what the CLI replays
  to the model on resume, so when a rollout has any, they are the records and every
  ``event_msg`` that repeats a prompt, reply or reasoning (``user_message``,
  ``agent_message``, ``item_completed`` UserMessage/AgentMessage/Reasoning) is counted as
  ``duplicate-message``; a rollout with no ``response_item`` at all (event-only) takes its
  prompts and replies from those events instead. Every record's ``evidence.native`` is
  ``<family>:<type>`` (``response_item:message``, ``event_msg:user_message``), so each says
  where it came from; a prompt is never counted twice;
* a user-role message is the person's prompt only when 0.171's ``content_item_kinds`` says
  ``user.text`` (or, in older files, when it does not start with a harness tag such as
  ``<environment_context>``); developer messages and injected context become ``system``;
* reasoning: the readable ``summary``/``content`` text becomes a reasoning record;
  ``encrypted_content`` is never decoded or copied into a record (the rollout artifact keeps
  it; the record's ``evidence.native`` says it was there); reasoning with only an encrypted
  blob is ``redacted-content``;
* tool calls pair by ``call_id``; ``custom_tool_call`` (freeform ``apply_patch``) arguments
  are ``{"input": <raw text>}``; the result's status and exit code come from the
  ``item_completed`` CommandExecution/FileChange (paginated) or ``exec_command_end`` /
  ``patch_apply_end`` (legacy) event of the same call, else from the exit line the tool
  printed at the head of its output; when neither says, ``ok`` is null. A call with no
  output is a named ``pending-tool-call``;
* record ids are ``codex:L<line>`` (lines are only appended).

The thread index ``state_5.sqlite`` (titles, sub-agent edges) is read only when present,
read-only (a private copy when a WAL is beside it), and never required.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.codex import layout, native
from trajconv.codecs.jsonl import Utf8Tally, copy_jsonl, iter_file_objects, project_jsonl
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import (
    EvidenceFields,
    SnapshotBuilder,
    evidence,
    time_from_iso,
)
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "codex/1"
INDEX_ARTIFACT = "state_5.sqlite#threads"
#: the thread-index columns kept (as an artifact) and used: title and the parent edge
INDEX_COLUMNS = (
    "id",
    "title",
    "first_user_message",
    "cwd",
    "source",
    "model_provider",
    "created_at",
    "updated_at",
)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _head(path: Path, limits: Limits) -> dict[str, Any]:
    """``session_meta.payload`` of the first line (it always comes first), or ``{}``."""
    try:
        with path.open("rb") as fh:
            line = fh.readline(limits.max_line_bytes + 1)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}
    if isinstance(obj, dict) and obj.get("type") == native.SESSION_META:
        payload = obj.get("payload")
        return payload if isinstance(payload, dict) else {}
    return {}


def _has_response_items(copy: Path, limits: Limits) -> bool:
    """Whether any line is a ``response_item`` (they start with the first prompt)."""
    quiet = Diagnostics()
    try:
        for _, obj in iter_file_objects(copy, "rollout", quiet, limits):
            if obj.get("type") == native.RESPONSE_ITEM:
                return True
    except LimitError:
        return True  # the projection stops at the same line and says so
    return False


class _Projector:
    def __init__(
        self, b: SnapshotBuilder, artifact: str, responses: bool, prefix: str = "codex:"
    ) -> None:
        self.b = b
        #: record ids are ``<prefix>L<line>``; a sub-agent's carry its thread id too
        self.prefix = prefix
        #: thread id of each sub-agent this rollout spawned -> the spawning call's id
        self.spawned: dict[str, str] = {}
        self.d = b.diagnostics
        self.art = artifact
        self.responses = responses  # True: the response_item family is the conversation
        self.turn: int | None = None
        self.model: str | None = None
        self.last_time: str | None = None
        #: call_id -> [record id, tool name, done]
        self.calls: dict[str, list[Any]] = {}
        #: call_id -> (exit code, status) from the events that report a tool's end
        self.ends: dict[str, tuple[int | None, str | None]] = {}

    def place(self, number: int) -> str:
        return f"{self.art}:{number}"

    def ev(self, number: int, kind: str, native_id: Any = None) -> EvidenceFields:
        nid = native_id if isinstance(native_id, str) else None
        return evidence(artifact=self.art, line=number, native=kind, native_id=nid)

    # -- lines
    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            self.d.add("invalid-line", self.place(number))
            return
        ts = obj.get("timestamp")
        time = time_from_iso(ts) if isinstance(ts, str) else None
        if time is not None:
            self.last_time = time
        if kind == native.RESPONSE_ITEM:  # present at all only when it is the conversation
            self.item(number, payload, time)
        elif kind == native.EVENT_MSG:
            self.event(number, payload, time)
        elif kind == native.TURN_CONTEXT:
            self.model = _str(payload.get("model")) or self.model
            self.d.add("lifecycle-dropped", self.place(number), name=kind)
        elif kind == native.COMPACTED:
            self.d.add("compaction-state", self.place(number), name=kind)
        elif kind == native.SESSION_META or kind in native.STATE_LINES:
            self.d.add("lifecycle-dropped", self.place(number), name=kind)
        else:
            self.d.add("unknown-kind", self.place(number), name=kind)

    def text(self, kind: str, number: int, text: str, time: str | None, nk: str, nid: Any) -> None:
        if kind == "user":
            self.turn = 0 if self.turn is None else self.turn + 1
        model = self.model if kind in ("assistant", "reasoning") else None
        self.b.add_text(
            kind,
            f"{self.prefix}L{number}",
            text,
            time=time,
            turn=self.turn,
            evidence=self.ev(number, nk, nid),
            model=model,
        )

    def item(self, number: int, p: dict[str, Any], time: str | None) -> None:
        ptype, nk = _kind(native.RESPONSE_ITEM, p)
        place = self.place(number)
        if ptype == "message":
            role = p.get("role")
            text, other = native.content_text(
                p.get("content"), ("input_text", "output_text", "text")
            )
            if text is None:
                self.d.add("non-text-content" if other else "empty-content", place, name=nk)
                return
            if role == "assistant":
                self.text("assistant", number, text, time, nk, p.get("id"))
            elif role == "user" and native.is_person_prompt(p, text):
                self.text("user", number, text, time, nk, p.get("id"))
            else:
                self.text("system", number, text, time, f"{nk}:{role}", p.get("id"))
        elif ptype == "reasoning":
            parts = [
                s["text"]
                for key in ("summary", "content")
                for s in _list(p.get(key))
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            ]
            encrypted = isinstance(p.get("encrypted_content"), str) and p["encrypted_content"]
            if not parts:
                self.d.add("redacted-content" if encrypted else "empty-content", place, name=nk)
                return
            label = nk + ("+encrypted_content" if encrypted else "")
            self.text("reasoning", number, "\n\n".join(parts), time, label, p.get("id"))
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            self.call(number, p, ptype, nk, time)
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            self.result(number, p, ptype, nk, time)
        elif ptype == "web_search_call":
            action = p.get("action")
            body = json.dumps(action, ensure_ascii=False, sort_keys=True) if action else ""
            self.b.add_text(
                "observation",
                f"{self.prefix}L{number}",
                f"web_search_call {body}".strip(),
                time=time,
                turn=self.turn,
                evidence=self.ev(number, nk, p.get("id")),
            )
        elif ptype in native.STATE_ITEMS:
            self.d.add("compaction-state", place, name=nk)
        else:
            self.d.add("unknown-kind", place, name=nk)

    def call(self, number: int, p: dict[str, Any], ptype: str, nk: str, time: str | None) -> None:
        call_id = _str(p.get("call_id")) or (
            _str(p.get("id")) if ptype == "local_shell_call" else None
        )
        if call_id is None:
            self.d.add("invalid-line", self.place(number))
            return
        arguments: Any
        if ptype == "function_call":
            name = str(p.get("name") or "")
            arguments = native.parse_arguments(p.get("arguments"))
            if _str(p.get("namespace")):
                nk = f"{nk}:{p['namespace']}"
        elif ptype == "custom_tool_call":
            name = str(p.get("name") or "")
            arguments = {"input": p.get("input") if isinstance(p.get("input"), str) else ""}
        else:
            name = "local_shell"
            arguments = p.get("action") if isinstance(p.get("action"), dict) else {}
        rid = f"{self.prefix}L{number}"
        self.b.add_call(
            rid, call_id, name, arguments, time=time, turn=self.turn,
            evidence=self.ev(number, nk, p.get("id")),
        )  # fmt: skip
        self.calls[call_id] = [rid, name, False]

    def result(self, number: int, p: dict[str, Any], ptype: str, nk: str, time: str | None) -> None:
        place = self.place(number)
        call_id = p.get("call_id")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            self.d.add("orphan-tool-result", place, name=nk)
            return
        if call[2]:
            self.d.add("repeated-terminal-result", place, name=nk)
            return
        raw = p.get("output")
        text = native.output_text(raw)
        if text is None:
            text = json.dumps(raw, ensure_ascii=False, sort_keys=True)
        if call[1] == native.SPAWN_TOOL:
            spawned = native.spawned_thread(text)
            if spawned is not None:
                self.spawned.setdefault(spawned, str(call_id))
        exit_code, status = self.ends.get(str(call_id), (None, None))
        if exit_code is None:
            exit_code = native.exit_code_from_output(ptype, text)
        ok: bool | None
        if status in ("completed", "failed", "declined"):
            ok = status == "completed" and (exit_code in (None, 0))
        elif exit_code is not None:
            ok = exit_code == 0
        else:
            failed = native.output_failed(ptype, text)
            ok = None if failed is None else not failed
        self.b.add_result(
            f"{self.prefix}L{number}", str(call_id), ok, text, time=time, turn=self.turn,
            evidence=self.ev(number, nk, p.get("id")), exit_code=exit_code,
        )  # fmt: skip
        call[2] = True

    def event(self, number: int, p: dict[str, Any], time: str | None) -> None:
        ptype, nk = _kind(native.EVENT_MSG, p)
        place = self.place(number)
        if ptype == "item_completed":
            item = p.get("item") if isinstance(p.get("item"), dict) else {}
            assert isinstance(item, dict)
            itype = item.get("type")
            if not isinstance(itype, str):
                itype = repr(itype)[:40]
            if itype in native.ITEM_STATUS and isinstance(item.get("id"), str):
                code = item.get("exit_code")
                status = item.get("status")
                self.ends[item["id"]] = (
                    code if isinstance(code, int) and not isinstance(code, bool) else None,
                    status if isinstance(status, str) else None,
                )
                self.d.add("lifecycle-dropped", place, name=f"{nk}:{itype}")
            elif itype == "CollabAgentToolCall" and isinstance(item.get("id"), str):
                for thread in _list(item.get("receiver_thread_ids")):
                    if isinstance(thread, str):
                        self.spawned.setdefault(thread, item["id"])
                self.d.add("lifecycle-dropped", place, name=f"{nk}:{itype}")
            elif itype in native.ITEM_DUPLICATES:
                self.d.add("duplicate-message", place, name=f"{nk}:{itype}")
            else:
                self.d.add("lifecycle-dropped", place, name=f"{nk}:{itype}")
        elif ptype in ("exec_command_end", "patch_apply_end") and isinstance(p.get("call_id"), str):
            code = p.get("exit_code")
            success = p.get("success")
            status = None if not isinstance(success, bool) else "completed" if success else "failed"
            self.ends[p["call_id"]] = (
                code if isinstance(code, int) and not isinstance(code, bool) else None,
                status,
            )
            self.d.add("lifecycle-dropped", place, name=nk)
        elif ptype in native.EVENT_DUPLICATES:
            if self.responses:
                self.d.add("duplicate-message", place, name=nk)
                return
            text = p.get("message") if ptype in ("user_message", "agent_message") else p.get("text")
            if not isinstance(text, str):
                self.d.add("empty-content", place, name=nk)
                return
            kind = {"user_message": "user", "agent_message": "assistant"}.get(ptype, "reasoning")
            self.text(kind, number, text, time, nk, None)
        else:
            self.d.add("lifecycle-dropped", place, name=nk)

    def finish(self) -> None:
        for rid, name, done in self.calls.values():
            if not done:
                self.d.add("pending-tool-call", rid, name=name)


def _index(
    rollout: Path, sid: str, b: SnapshotBuilder, name: str = INDEX_ARTIFACT
) -> dict[str, Any]:
    """The thread's row of ``state_5.sqlite`` (title, parent edge), when the home has one."""
    from trajconv.codecs.sqlite import ReadOnly

    home = layout.home_of(rollout)
    db = home / layout.STATE_DB if home is not None else None
    if db is None or not db.is_file():
        return {}
    try:
        with ReadOnly(db) as con:
            con.row_factory = sqlite3.Row
            # SELECT *: the columns differ between schema generations; the ones used are picked
            row = con.execute("SELECT * FROM threads WHERE id = ?", (sid,)).fetchone()
            parent = None
            has_edges = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='thread_spawn_edges'"
            ).fetchone()
            if has_edges:
                edge = con.execute(
                    "SELECT parent_thread_id FROM thread_spawn_edges WHERE child_thread_id = ?",
                    (sid,),
                ).fetchone()
                parent = edge[0] if edge else None
    except (FormatError, sqlite3.DatabaseError):
        b.diagnostics.add("metadata-invalid", layout.STATE_DB)
        return {}
    if row is None and parent is None:
        return {}
    columns = set(row.keys()) if row is not None else set()  # `in` on a Row tests values
    found = {k: row[k] for k in INDEX_COLUMNS if k in columns}
    if parent is not None:
        found["parent_thread_id"] = parent
    b.add_artifact(
        name,
        "application/json",
        json.dumps(found, ensure_ascii=False, sort_keys=True).encode(),
    )
    return found


def _kind(line_type: str, p: dict[str, Any]) -> tuple[str, str]:
    """The payload's type and its native kind (``<line type>:<payload type>``)."""
    ptype = p.get("type")
    if not isinstance(ptype, str):  # a type that is no name is an unknown kind
        ptype = repr(ptype)[:40]
    return ptype, f"{line_type}:{ptype}"


def _project(
    b: SnapshotBuilder, rollout: Path, meta: dict[str, Any], sid: str, limits: Limits, prefix: str
) -> _Projector:
    """Keep the rollout as an artifact and make its records in ``b``; the session facts."""
    artifact = rollout.name
    utf8 = Utf8Tally()
    _blob, copy = copy_jsonl(b, artifact, rollout, limits, utf8)
    if not meta:
        b.diagnostics.add("metadata-missing", f"{artifact}:1")
    # a sub-agent's row is kept beside its parent's, under its thread id
    index = _index(
        rollout, sid, b, INDEX_ARTIFACT if prefix == "codex:" else f"{INDEX_ARTIFACT}:{sid}"
    )
    proj = _Projector(b, artifact, _has_response_items(copy, limits), prefix)
    source = meta.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    assert isinstance(git, dict)
    created = _str(meta.get("timestamp"))
    # Session facts known before the records; the model and last time come after them.
    facts = {
        "id": sid,
        "title": _str(index.get("title")),
        "cwd": _str(meta.get("cwd")) or _str(index.get("cwd")),
        "branch": _str(git.get("branch")),
        "created_at": time_from_iso(created) if created else None,
        "parent_session_id": _str(meta.get("parent_thread_id"))
        or (_str(spawn.get("parent_thread_id")) if isinstance(spawn, dict) else None)
        or _str(index.get("parent_thread_id")),
    }
    project_jsonl(proj.line, copy, artifact, b, limits, utf8, rollout)
    proj.finish()
    b.session = Session(**facts, model=proj.model, updated_at=proj.last_time)
    return proj


#: how many generations of spawned rollouts are read as children
MAX_DEPTH = 8


#: how much of a rollout's first line is searched for the parent it names
_HEAD_PREFIX = 4096


def _names_parent(path: Path, sid: str) -> bool:
    """Whether the start of ``path``'s ``session_meta`` names thread ``sid`` as its parent
    (0.171.0 writes ``parent_thread_id`` before the long instructions)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_PREFIX)
    except OSError:
        return False
    return f'"parent_thread_id":"{sid}"'.encode() in head.split(b"\n", 1)[0]


def _spawned_rollouts(
    rollout: Path, sid: str, spawned: dict[str, str]
) -> list[tuple[Path, str | None]]:
    """The rollouts in the same home of the threads this one spawned: those ``spawned``
    names (thread -> call), found by the id in their file names, and those started since
    whose ``session_meta`` names it as their parent (a spawning call the rollout does not
    record, as in a converted session); each with its spawning call id when known."""
    home = layout.home_of(rollout)
    named = layout.parse_name(rollout.name)
    if home is None or named is None:
        return []
    found: list[tuple[Path, str | None]] = []
    for path in layout.rollouts(home):
        other = layout.parse_name(path.name)
        if other is None or path == rollout:
            continue
        if other[1] in spawned:
            found.append((path, spawned[other[1]]))
        elif other[0] >= named[0] and _names_parent(path, sid):
            found.append((path, None))
    found.sort(key=lambda item: item[0].name)
    return found


def _children(
    b: SnapshotBuilder,
    rollout: Path,
    sid: str,
    proj: _Projector,
    limits: Limits,
    seen: set[str],
    depth: int,
) -> None:
    """Each rollout the session spawned (``parent_thread_id`` is its id) as a child of the
    Snapshot, linked to the ``spawn_agent`` call, and theirs in turn."""
    if depth >= MAX_DEPTH:
        return
    for path, call_id in _spawned_rollouts(rollout, sid, proj.spawned):
        meta = _head(path, limits)
        named = layout.parse_name(path.name)
        kid_id = _str(meta.get("id")) or (named[1] if named else path.stem)
        if kid_id in seen or _str(meta.get("parent_thread_id")) != sid:
            continue  # not its child by its own account (or met already)
        seen.add(kid_id)
        kid = b.child(_source(meta, kid_id, path), call_id)
        kid_proj = _project(kid, path, meta, kid_id, limits, f"codex:{kid_id}:")
        _children(b, path, kid_id, kid_proj, limits, seen, depth + 1)


def _source(meta: dict[str, Any], sid: str, rollout: Path) -> Source:
    return Source(
        harness="codex",
        harness_version=_str(meta.get("cli_version")),
        session_id=sid,
        locator=layout.locator(rollout),
    )


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    rollout = layout.resolve(path, session)
    meta = _head(rollout, limits)
    named = layout.parse_name(rollout.name)
    sid = _str(meta.get("id")) or (named[1] if named else rollout.stem)
    b = SnapshotBuilder(_source(meta, sid, rollout), READER)
    proj = _project(b, rollout, meta, sid, limits, "codex:")
    _children(b, rollout, sid, proj, limits, {sid}, 0)
    return b.build()
