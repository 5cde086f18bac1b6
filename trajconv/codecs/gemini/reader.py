"""Gemini CLI reader: ``chats/session-*.jsonl`` (and legacy ``.json`` documents) -> Snapshot.

The file is not append-only in meaning (README "Record kinds"): a line is a rewind
(``$rewindTo``), a message (``id``; a later line with the same id replaces it in place), a
metadata update (``$set``; ``$set.messages`` replaces the whole list) or the metadata line.
The reader applies them in order in a first pass that keeps only where each live message is
defined, then reads the definitions again and projects them in conversation order (holding
only messages defined before their turn comes). A session resumed in a later minute has more
than one file; they are applied in name (= time) order as one stream.

One native unit is one line. A line's unit goes to the first record made from a message it
defines; otherwise it is counted: ``compaction-state`` (``$set.messages`` history rewrites,
whose records carry ``units=0``), ``duplicate-message`` (replaced by a later line),
``rewound``, ``lifecycle-dropped`` (metadata, ``$set`` of other fields, ``$rewindTo``, slash
commands), ``repeated-terminal-result`` (the CLI's second copy of tool results as a user
message) or ``empty-content``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.gemini import layout
from trajconv.codecs.genai import (
    SNAPSHOT,
    add_function_call,
    answer_function_response,
    parts_of,
)
from trajconv.codecs.jsonl import Utf8Tally, iter_file_objects
from trajconv.codecs.tool_calls import CallProjector
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "gemini/1"
PREFIX = "gemini"
#: a defining place: (file index, line, index in ``$set.messages`` or -1)
Place = tuple[int, int, int]
#: user-role text the CLI itself writes: its context, and the summary a compression keeps
_CONTEXT = ("<session_context>", "<hook_context>", SNAPSHOT)
_COMMAND = ("/", "?")


def kind_of(obj: dict[str, Any]) -> str:
    """The record kind of a line, in the CLI's order of recognition."""
    if isinstance(obj.get("$rewindTo"), str):
        return "rewind"
    if isinstance(obj.get("id"), str):
        return "message"
    if isinstance(obj.get("$set"), dict):
        return "set"
    if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
        return "metadata"
    return "unknown"


def thought_text(thought: dict[str, Any]) -> str:
    """A recorded thought as the CLI replays it: ``**subject** description``."""
    subject = thought.get("subject")
    desc = str(thought.get("description") or "")
    return f"**{subject}** {desc}" if isinstance(subject, str) and subject else desc


@dataclass
class _State:
    """Pass 1: the live message list, as places; plus what each line became."""

    order: list[str] = field(default_factory=list)
    final: dict[str, Place] = field(default_factory=dict)
    #: message lines removed by ``$rewindTo``: (file, line) -> code
    fate: dict[tuple[int, int], str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    started: str | None = None
    #: whether each message, as last defined, is one the CLI counts as conversation
    resumable: dict[str, bool] = field(default_factory=dict)
    #: whether :attr:`resumable` is kept: only a session of several files is ranked by it
    rank: bool = True

    def define(self, mid: str, place: Place, msg: dict[str, Any]) -> None:
        if mid not in self.final:
            self.order.append(mid)
        self.final[mid] = place
        if self.rank:
            self.resumable[mid] = resumable(msg)

    @property
    def has_conversation(self) -> bool:
        """``hasResumableContent``: a live message the CLI would resume (README "Sessions
        resumed in a later minute")."""
        return any(self.resumable.get(mid, False) for mid in self.order)

    @property
    def last_updated(self) -> str:
        """``lastUpdated || startTime`` as the CLI takes it to rank a session's files, as a
        comparable time ("" when neither is there)."""
        for key in ("lastUpdated", "startTime"):
            value = self.meta.get(key)
            if isinstance(value, str) and (stamp := time_from_iso(value)):
                return stamp
        return ""

    def drop_from(self, index: int, rewind: bool = False) -> None:
        for mid in self.order[index:]:
            place = self.final.pop(mid)
            if rewind and place[2] < 0:
                self.fate[place[:2]] = "rewound"
        del self.order[index:]


def _as_text(content: Any) -> str:
    """``partListUnionToString(content)`` as far as :func:`resumable` needs it: text parts
    as they are, any other part as a non-empty placeholder (the CLI's verbose form, e.g.
    ``[Function Response: name]``)."""
    return "".join(
        str(p["text"]) if isinstance(p, dict) and isinstance(p.get("text"), str) else "[part]"
        for p in parts_of(content)
    )


def resumable(msg: dict[str, Any]) -> bool:
    """``isResumableMessageRecord``: a user message that is not empty, a command or the
    CLI's own context, or a model message with text, tool calls or thoughts."""
    text = _as_text(msg.get("content")).strip()
    if msg.get("type") == "user":
        return bool(text) and not text.startswith((*_COMMAND, *_CONTEXT[:2]))
    if msg.get("type") == "gemini":
        return bool(text) or bool(msg.get("toolCalls")) or bool(msg.get("thoughts"))
    return False


def resumed_file(states: list[_State]) -> int:
    """Which of a session's files the CLI resumes: ``getSessionFiles`` keeps, of the files
    with conversation (``hasResumableContent``), the one with the latest ``lastUpdated``
    (the first in name order on a tie) and ``loadConversationRecord`` reads it alone."""
    candidates = [i for i, st in enumerate(states) if st.has_conversation] or list(
        range(len(states))
    )
    best = candidates[0]
    for i in candidates[1:]:
        if states[i].last_updated > states[best].last_updated:
            best = i
    return best


def _pass1(files: list[Path], names: list[str], limits: Limits, rank: bool = True) -> _State:
    """The live message list of ``files``; ``rank``: whether to learn, for
    :func:`resumed_file`, which of them the CLI counts as conversation."""
    st = _State(rank=rank)
    quiet = Diagnostics()
    for fi, path in enumerate(files):
        for number, obj in _objects(path, names[fi], quiet, limits):
            kind = kind_of(obj)
            if kind == "rewind":
                target = obj["$rewindTo"]
                idx = st.order.index(target) if target in st.final else 0
                st.drop_from(idx, rewind=True)
            elif kind == "message":
                st.define(obj["id"], (fi, number, -1), obj)
            elif kind == "set":
                values = obj["$set"]
                st.meta.update({k: v for k, v in values.items() if k != "messages"})
                if isinstance(values.get("messages"), list):
                    st.drop_from(0)
                    for i, msg in enumerate(values["messages"]):
                        if isinstance(msg, dict) and isinstance(msg.get("id"), str):
                            st.define(msg["id"], (fi, number, i), msg)
            elif kind == "metadata":
                st.meta.update({k: v for k, v in obj.items() if k != "messages"})
                if st.started is None and isinstance(obj.get("startTime"), str):
                    st.started = obj["startTime"]
                if isinstance(obj.get("messages"), list):  # a legacy whole document
                    st.drop_from(0)
                    for i, msg in enumerate(obj["messages"]):
                        if isinstance(msg, dict) and isinstance(msg.get("id"), str):
                            st.define(msg["id"], (fi, number, i), msg)
    return st


def _objects(
    path: Path, name: str, diags: Diagnostics, limits: Limits, utf8: Utf8Tally | None = None
) -> list[tuple[int, dict[str, Any]]] | Any:
    if name.endswith(".json"):
        # A legacy document is one JSON value over many lines: read as line 1.
        from trajconv.codecs.jsonl import read_bounded

        try:
            obj = orjson.loads(read_bounded(path, limits.max_session_bytes))
        except orjson.JSONDecodeError as exc:
            raise FormatError(path, f"not a JSON document: {exc}") from None
        if not isinstance(obj, dict):
            raise FormatError(path, "not a JSON object")
        return [(1, obj)]
    return iter_file_objects(path, name, diags, limits, utf8)


class _Projector(CallProjector):
    def __init__(self, b: SnapshotBuilder) -> None:
        super().__init__(b)
        self.model: str | None = None
        self.emitted = 0

    def _ev(self, art: str, line: int, si: int, native: str, nid: str | None) -> EvidenceFields:
        units = 1 if self.emitted == 0 and si < 0 else 0
        self.emitted += 1
        return evidence(
            art,
            line=line,
            json_path=f"$set.messages[{si}]" if si >= 0 else None,
            native=native,
            native_id=nid,
            units=units,
        )

    def message(self, msg: dict[str, Any], art: str, line: int, si: int) -> str | None:
        """Project one live message; return the code counting its line when no record
        took the line's unit (``None`` when one did)."""
        self.emitted = 0
        repeated = False
        mid = str(msg["id"])
        mtype = msg.get("type")
        time = time_from_iso(msg["timestamp"]) if isinstance(msg.get("timestamp"), str) else None
        rid = f"{PREFIX}:{mid}"
        if mtype == "user":
            texts = 0
            for i, part in enumerate(parts_of(msg.get("content"))):
                if not isinstance(part, dict):
                    continue
                if isinstance(part.get("text"), str):
                    text = part["text"]
                    stripped = text.strip()
                    if stripped.startswith(_COMMAND):
                        continue
                    if stripped.startswith(_CONTEXT):
                        kind = "system"
                    else:
                        kind = "user"
                        if texts == 0:
                            self.turn = 0 if self.turn is None else self.turn + 1
                        texts += 1
                    pid = rid if i == 0 else f"{rid}:part:{i}"
                    ev = self._ev(art, line, si, f"user/{kind}", mid)
                    self.b.add_text(kind, pid, text, time=time, turn=self.turn, evidence=ev)
                elif isinstance(part.get("functionResponse"), dict) and not self.response(
                    part["functionResponse"], None, mid, art, line, si, time
                ):
                    repeated = True
                    # the CLI replays this copy too: a resumed model sees the result twice
                    self.d.add("repeated-result-replayed", f"{art}:{line}")
        elif mtype == "gemini":
            model = msg.get("model") if isinstance(msg.get("model"), str) else None
            self.model = model or self.model
            thoughts = msg.get("thoughts")
            for i, th in enumerate(thoughts if isinstance(thoughts, list) else []):
                if isinstance(th, dict):
                    ev = self._ev(art, line, si, "gemini/thought", mid)
                    t_time = (
                        time_from_iso(th["timestamp"])
                        if isinstance(th.get("timestamp"), str)
                        else time
                    )
                    self.b.add_text(
                        "reasoning",
                        f"{rid}:thought:{i}",
                        thought_text(th),
                        time=t_time,
                        turn=self.turn,
                        evidence=ev,
                        model=model,
                    )
            for i, part in enumerate(parts_of(msg.get("content"))):
                if not isinstance(part, dict):
                    continue
                if isinstance(part.get("functionCall"), dict):
                    self.call(part["functionCall"], rid, art, line, si, time)
                elif isinstance(part.get("text"), str):
                    if part["text"] == "" and not part.get("thought"):
                        continue
                    kind = "reasoning" if part.get("thought") is True else "assistant"
                    ev = self._ev(art, line, si, f"gemini/{kind}", mid)
                    self.b.add_text(
                        kind,
                        rid if i == 0 else f"{rid}:part:{i}",
                        part["text"],
                        time=time,
                        turn=self.turn,
                        evidence=ev,
                        model=model,
                    )
                elif isinstance(part.get("functionResponse"), dict):
                    self.response(part["functionResponse"], None, mid, art, line, si, time)
            calls = msg.get("toolCalls")
            records = [
                tc
                for tc in (calls if isinstance(calls, list) else [])
                if isinstance(tc, dict) and isinstance(tc.get("id"), str)
            ]
            # The model sent the calls together; their results follow as one user turn.
            for tc in records:
                if tc["id"] not in self.calls:
                    self.call(tc, rid, art, line, si, time)
            for tc in records:
                for rpart in parts_of(tc.get("result")):
                    if isinstance(rpart, dict) and isinstance(rpart.get("functionResponse"), dict):
                        fr = {**rpart["functionResponse"], "id": tc["id"]}
                        stamp = tc.get("timestamp")
                        tc_time = time_from_iso(stamp) if isinstance(stamp, str) else time
                        self.response(fr, tc.get("status"), mid, art, line, si, tc_time)
                        break
        elif mtype in ("info", "error", "warning"):
            text = "".join(
                str(p.get("text", "")) for p in parts_of(msg.get("content")) if isinstance(p, dict)
            )
            ev = self._ev(art, line, si, mtype, mid)
            self.b.add_text("system", rid, text, time=time, turn=self.turn, evidence=ev)
        else:
            return "unknown-kind"
        if self.emitted:
            return None
        if repeated:
            return "repeated-terminal-result"
        if mtype == "user" and msg.get("content"):
            return "lifecycle-dropped"
        return "empty-content"

    def call(
        self, fc: dict[str, Any], rid: str, art: str, line: int, si: int, time: str | None
    ) -> None:
        call_id = fc.get("id") if isinstance(fc.get("id"), str) else None
        if call_id is None or call_id in self.calls:
            call_id = f"{rid}:call:{len(self.calls)}"
            self.d.add("ids-not-unique", f"{art}:{line}")
        ev = self._ev(art, line, si, "gemini/functionCall", call_id)
        self.calls[call_id] = add_function_call(
            self.b, fc, rid, call_id, time=time, turn=self.turn, evidence=ev
        )

    def response(
        self,
        fr: dict[str, Any],
        status: Any,
        mid: str,
        art: str,
        line: int,
        si: int,
        time: str | None,
    ) -> bool:
        """A tool result; False when it repeats one already read (the CLI's second copy)."""
        call_id = fr.get("id") if isinstance(fr.get("id"), str) else None
        if call_id is None or call_id not in self.calls:
            self.d.add("chain-break", f"{art}:{line}")
            call_id = call_id or f"{PREFIX}:{mid}:result"
        if call_id in self.done:
            return False
        ev = self._ev(art, line, si, f"functionResponse/{status or 'replayed'}", call_id)
        answer_function_response(
            self, f"{PREFIX}:{mid}", call_id, fr, status, time=time, evidence=ev, code_decides=True
        )
        return True


def _stamp(value: str) -> str:
    return time_from_iso(value) or value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    files = layout.resolve(path, session)
    project = files[0].parent.parent
    parent: str | None = None
    if files[0].parent.name != layout.CHATS and project.name == layout.CHATS:
        # a subagent's session: chats/<parent session id>/<id>.jsonl
        parent, project = files[0].parent.name, project.parent
    sid = layout.header_id(files[0]) or files[0].stem
    b = SnapshotBuilder(
        Source(
            harness="gemini",
            harness_version=None,
            session_id=sid,
            locator=files[0].relative_to(project.parent.parent).as_posix(),
        ),
        READER,
    )
    names = [f"{layout.CHATS}/{f.name}" for f in files]
    copies: list[Path] = []
    #: whether each journal is UTF-8, learnt from its one full parse below (the builder then
    #: need not decode it again); a legacy document is checked as it is copied
    tallies = [None if f.suffix == ".json" else Utf8Tally() for f in files]
    total = 0
    for name, f, utf8 in zip(names, files, tallies, strict=True):
        media = "application/json" if f.suffix == ".json" else "application/x-ndjson"
        blob = b.add_artifact_file(
            name,
            media,
            f,
            limits.max_session_bytes,
            "max_session_bytes",
            utf8=None if utf8 is None else utf8.verdict,
        )
        total += blob.size
        limits.check("max_session_bytes", total, f)
        assert blob.whole_file is not None
        copies.append(blob.whole_file)
    # One file per resume minute; the CLI resumes one of them, whole (README "Sessions
    # resumed in a later minute"): the others' lines are kept in artifacts and counted.
    # a session of one file has nothing to rank: resumed_file takes it without looking
    rank = len(copies) > 1
    states = [_pass1([c], [n], limits, rank) for c, n in zip(copies, names, strict=True)]
    chosen = resumed_file(states)
    st = states[chosen]
    for fi, copy in enumerate(copies):
        if fi != chosen:
            for number, _obj in _objects(copy, names[fi], b.diagnostics, limits, tallies[fi]):
                b.diagnostics.add("not-resumed-file", f"{names[fi]}:{number}")
    meta = st.meta
    started = min((s.started for s in states if s.started), default=None, key=_stamp)
    b.session = Session(
        id=sid,
        parent_session_id=parent,
        title=_str(meta.get("summary")),
        cwd=layout.project_cwd(project),
        created_at=time_from_iso(started) if started else None,
        updated_at=time_from_iso(meta["lastUpdated"])
        if isinstance(meta.get("lastUpdated"), str)
        else None,
    )
    proj = _Projector(b)
    position = {mid: i for i, mid in enumerate(st.order)}
    waiting: dict[int, tuple[dict[str, Any], str, int, int]] = {}
    next_pos = 0
    max_records = limits.max_records

    def flush() -> None:
        nonlocal next_pos
        while next_pos in waiting:
            msg, art, line, si = waiting.pop(next_pos)
            code = proj.message(msg, art, line, si)
            if si < 0 and code is not None:
                name = "message" if code in ("lifecycle-dropped", "unknown-kind") else None
                b.diagnostics.add(code, f"{art}:{line}", name=name)
            next_pos += 1
            if b.record_count > max_records:
                raise LimitError(files[0], "max_records", max_records, line=line)

    for copy, art in ((copies[chosen], names[chosen]),):
        fi = 0  # the places of the chosen file's own pass
        for number, obj in _objects(copy, art, b.diagnostics, limits, tallies[chosen]):
            kind = kind_of(obj)
            place = f"{art}:{number}"
            msgs: list[tuple[int, dict[str, Any]]] = []
            if kind == "message":
                msgs = [(-1, obj)]
            elif kind in ("set", "metadata"):
                listed = obj["$set"].get("messages") if kind == "set" else obj.get("messages")
                if isinstance(listed, list):
                    msgs = [(i, m) for i, m in enumerate(listed) if isinstance(m, dict)]
                    if kind == "set":
                        b.diagnostics.add("compaction-state", place, name="$set.messages")
                    else:  # a legacy whole document: its messages' records carry units 0
                        b.diagnostics.add("lifecycle-dropped", place, name="legacy-document")
                else:
                    b.diagnostics.add("lifecycle-dropped", place, name=kind)
            elif kind == "rewind":
                b.diagnostics.add("lifecycle-dropped", place, name="$rewindTo")
            else:
                b.diagnostics.add("unknown-kind", place, name="line")
            live = False
            for si, msg in msgs:
                mid = msg.get("id")
                if isinstance(mid, str) and st.final.get(mid) == (fi, number, si):
                    waiting[position[mid]] = (msg, art, number, si)
                    live = True
            if kind == "message" and not live:
                # replaced by a later line or a rewritten history, compacted away, or rewound
                gone = "duplicate-message" if obj["id"] in st.final else "compaction-state"
                b.diagnostics.add(st.fate.get((fi, number), gone), place)
            flush()
    flush()
    proj.finish()
    if next_pos != len(st.order):
        raise FormatError(files[0], "the session's messages could not be put in order")
    b.session = b.session.model_copy(update={"model": proj.model})
    return b.build()
