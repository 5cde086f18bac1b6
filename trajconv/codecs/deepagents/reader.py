"""Deep Agents reader: one thread of ``sessions.db`` (or a portable seed) -> Snapshot.

Format facts: ``codecs/deepagents/README.md`` (deepagents-code 0.1.57,
deepagents 0.7.6, langgraph 1.2.24, langgraph-checkpoint 4.3.2). Rules
implemented here, checked against ``create_deep_agent(...).get_state()`` on
every fixture:

* the thread's main line is the parent chain of its newest root-namespace
  checkpoint; checkpoints off that line (forks) are ``rewound``, rows of other
  namespaces (subgraphs, subagents) ``nested-namespace``;
* ``messages`` is a ``DeltaChannel``: its value is the newest stored value on
  the line (an ext-7 snapshot or a plain list) plus every ``messages`` write
  from that checkpoint on, in ``writes_sort_key`` order, folded with
  ``add_messages`` rules (same id replaces, ``RemoveMessage`` deletes); writes on
  the newest checkpoint itself are pending and not part of the state;
* every message occurrence is a unit: the one that survives the fold becomes
  records, repeats of a surviving id are ``duplicate-message`` (an approval
  interrupt writes the same AI message twice), removed ones ``compaction-state``;
* each checkpoint row is a unit (``compaction-state``: state kept in
  artifacts), each other-channel write row is ``lifecycle-dropped``.

Times: a message's time is the ``ts`` of the checkpoint its first write was
folded into (for threads written by an import, that is the import time).
"""

from __future__ import annotations

import base64
import functools
import marshal
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.deepagents import layout, native
from trajconv.codecs.jsonl import read_bounded
from trajconv.codecs.sqlite import ReadOnly
from trajconv.codecs.tool_calls import CallProjector
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "deepagents/1"
HARNESS = "deepagents"
CHECKPOINTS_ART = "checkpoints.jsonl"
WRITES_ART = "writes.jsonl"
# deepagents' execute tool ends its output with the exit status, e.g.
# "[Command failed with exit code 2]" (spec "Observed" section) or
# "[Command succeeded with exit code 0]" (fixtures/deepagents/tool-calls).
EXIT_RE = re.compile(r"\[Command (?:succeeded|failed) with exit code (-?\d+)\]\s*\Z")
_NDJSON = "application/x-ndjson"
#: A checkpoint's ``ts`` and its metadata ``updated_at`` are often the same text.
_time = functools.lru_cache(maxsize=64)(time_from_iso)
#: JSON path of a message in each artifact that holds messages, by its index.
_PATHS = {
    CHECKPOINTS_ART: "$.checkpoint.channel_values.messages",
    WRITES_ART: "$.value",
    layout.SEED: "$.messages",
}


@dataclass(slots=True)
class _Occ:
    """One occurrence of a message in the store: where it is and what the fold needs.

    The message itself is not kept: only the occurrences that may end up in the
    final state are lowered (:func:`lower`) into the message spool, at ``ref``.
    """

    artifact: str
    line: int
    index: int
    mid: Any
    native: str
    time: str | None
    ref: int | None = None
    final: bool = False  # survives the fold

    @property
    def json_path(self) -> str:
        return f"{_PATHS[self.artifact]}[{self.index}]"


class _MessageSpool:
    """Lowered messages waiting to be lifted: the first ``HELD`` bytes of them (counted as
    the stored bytes they came from) in memory, the rest on disk, so the fold holds a
    bounded amount of message text.

    ``marshal``: the file lives only as long as this read, in this process, and marshal
    keeps plain values exactly and is the fastest way in and out for them."""

    HELD = 8 * 1024 * 1024

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._size = 0
        self._held: list[dict[str, Any] | None] = []
        self._room = self.HELD

    def put(self, msg: Any, cost: int) -> int:
        """Keep ``msg`` lowered; ``cost``: the stored bytes it came from. Returns its ref."""
        value = lower(msg)
        if cost <= self._room:
            self._room -= cost
            self._held.append(value)
            return -len(self._held)
        data = marshal.dumps(value)
        at = self._size
        self._fh.write(len(data).to_bytes(8, "little"))
        self._fh.write(data)
        self._size = at + 8 + len(data)
        return at

    def get(self, ref: int) -> dict[str, Any]:
        """The lowered message at ``ref``, once (a held one is let go)."""
        if ref < 0:
            held = self._held[-ref - 1]
            self._held[-ref - 1] = None
            assert held is not None
            return held
        self._fh.seek(ref)
        size = int.from_bytes(self._fh.read(8), "little")
        value: dict[str, Any] = marshal.loads(self._fh.read(size))
        return value


# -- parse: rows -> occurrences ----------------------------------------------------------


def _utf8() -> bool:
    """The readout artifacts are UTF-8: every line is ``orjson.dumps`` output."""
    return True


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _checkpoint_line(c: native.DeepagentsCheckpointRow) -> bytes:
    """One checkpoint row as a JSON line of the logical readout kept in artifacts."""
    row: dict[str, Any] = {
        "thread_id": c.thread_id,
        "checkpoint_ns": c.ns,
        "checkpoint_id": c.checkpoint_id,
        "parent_checkpoint_id": c.parent_id,
        "type": c.type,
        "checkpoint": _b64(c.blob),
    }
    try:
        row["metadata"] = c.metadata.decode("utf-8")
    except UnicodeDecodeError:
        row["metadata_b64"] = _b64(c.metadata)
    return orjson.dumps(row) + b"\n"


def _write_line(w: native.DeepagentsWriteRow) -> bytes:
    """One write row as a JSON line of the logical readout kept in artifacts."""
    row = {
        "thread_id": w.thread_id,
        "checkpoint_ns": w.ns,
        "checkpoint_id": w.checkpoint_id,
        "task_id": w.task_id,
        "task_path": w.task_path,
        "idx": w.idx,
        "channel": w.channel,
        "type": w.type,
        "value": _b64(w.value),
    }
    return orjson.dumps(row) + b"\n"


def _metadata(row: native.DeepagentsCheckpointRow) -> dict[str, Any] | None:
    try:
        value = orjson.loads(row.metadata) if row.metadata else {}
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _main_line(root: dict[str, tuple[str | None, int]], b: SnapshotBuilder) -> list[str]:
    """Checkpoint ids from the first to the newest along parent links (``root``: id ->
    (parent id, readout line))."""
    latest = max(root)
    line: list[str] = []
    seen: set[str] = set()
    cur: str | None = latest
    while cur is not None and cur not in seen:
        if cur not in root:
            b.diagnostics.add("chain-break", f"{CHECKPOINTS_ART}: parent {cur}")
            break
        seen.add(cur)
        line.append(cur)
        cur = root[cur][0]
    line.reverse()
    return line


def _family(channel: str) -> str:
    return "branch:to:*" if channel.startswith("branch:to:") else channel


def _messages(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _checkpoint_units(dec: native.Decoder, row: native.DeepagentsCheckpointRow, where: str) -> int:
    """A checkpoint row left out of the records: itself and every message it stores."""
    value = dec.loads(row.type, row.blob, where)
    values = value.get("channel_values") if isinstance(value, dict) else None
    msgs = (
        dec.stored_messages(values.get(native.MESSAGES))
        if isinstance(values, dict) and native.MESSAGES in values
        else None
    )
    return 1 + len(msgs or [])


def _write_units(dec: native.Decoder, w: native.DeepagentsWriteRow, where: str) -> int:
    """A write row left out of the records: one unit, or one per message it carries."""
    if w.channel != native.MESSAGES:
        return 1
    return len(_messages(dec.loads(w.type, w.value, where)))


class _Budget:
    """The size limits, checked row by row as the rows stream past."""

    def __init__(self, limits: Limits, db: Path) -> None:
        self.limits = limits
        self.db = db
        self.total = 0

    def take(self, size: int) -> None:
        self.limits.check("max_line_bytes", size, self.db)
        self.total += size
        self.limits.check("max_session_bytes", self.total, self.db)


class _Facts:
    """Session facts from the metadata of the main line, seen newest first."""

    KEYS = ("cwd", "git_branch", "acp_model")

    def __init__(self) -> None:
        self.newest: dict[str, str] = {}
        self.first: str | None = None  # MIN and MAX of updated_at
        self.last: str | None = None

    def see(self, meta: dict[str, Any]) -> None:
        for key in self.KEYS:
            value = meta.get(key)
            if key not in self.newest and isinstance(value, str) and value:
                self.newest[key] = value
        stamp = meta.get("updated_at")
        if isinstance(stamp, str) and (t := _time(stamp)) is not None:
            self.first = t if self.first is None else min(self.first, t)
            self.last = t if self.last is None else max(self.last, t)


@dataclass
class _Line:
    """The thread's main line, as the checkpoint rows give it."""

    pos: dict[str, int]
    """Position of each checkpoint id on the line."""
    times: list[str | None]
    """``ts`` of each checkpoint on the line."""
    stored: list[list[_Occ]]
    """Messages of the stored ``messages`` values on the line, oldest value first."""
    seed_at: int | None
    """Position of the newest stored value: the fold starts from it."""
    facts: dict[str, Any]


@dataclass(frozen=True)
class _Thread:
    """One thread being read: its store and id, the builder, the decoder, the byte budget
    and the spool the message contents wait in."""

    conn: sqlite3.Connection
    tid: str
    b: SnapshotBuilder
    dec: native.Decoder
    budget: _Budget
    spool: _MessageSpool


def _read_checkpoints(t: _Thread) -> _Line:
    """Checkpoint rows into the artifact as they stream; then the main line, decoded."""
    d = t.b.diagnostics
    root: dict[str, tuple[str | None, int]] = {}
    with t.b.artifact_writer(CHECKPOINTS_ART, _NDJSON, utf8=_utf8) as out:
        for number, c in enumerate(native.checkpoint_rows(t.conn, t.tid), start=1):
            t.budget.take(len(c.blob))
            out.write(_checkpoint_line(c))
            if c.ns == native.ROOT_NS:
                root[c.checkpoint_id] = (c.parent_id, number)
            else:
                where = f"{CHECKPOINTS_ART}:{number}"
                d.add(
                    "nested-namespace", where, count=_checkpoint_units(t.dec, c, where), name=c.ns
                )
    if not root:
        raise FormatError(t.dec.file, "the thread has no checkpoint in the root namespace")
    ids = _main_line(root, t.b)
    pos = {cid: i for i, cid in enumerate(ids)}
    for cid, (_, number) in root.items():
        if cid not in pos:
            where = f"{CHECKPOINTS_ART}:{number}"
            row = native.checkpoint_row(t.conn, t.tid, cid)
            d.add("rewound", where, count=_checkpoint_units(t.dec, row, where))

    # Newest first, so the newest stored messages value (where the fold starts) is
    # known when it is decoded: only its messages go to the spool.
    times: list[str | None] = [None] * len(ids)
    stored: list[list[_Occ]] = []
    seed_at: int | None = None
    facts = _Facts()
    invalid: list[str] = []
    model_spec = None
    for p, row in zip(
        range(len(ids) - 1, -1, -1), native.line_rows(t.conn, t.tid, ids), strict=True
    ):
        number = root[ids[p]][1]
        where = f"{CHECKPOINTS_ART}:{number}"
        value = t.dec.loads(row.type, row.blob, where)
        if not isinstance(value, dict):
            raise FormatError(t.dec.file, "checkpoint is not a map", row=where)
        meta = _metadata(row)
        if meta is None:
            invalid.append(where)
        else:
            facts.see(meta)
        d.add("compaction-state", where, name="checkpoint")
        raw_ts = value.get("ts")
        times[p] = _time(raw_ts) if isinstance(raw_ts, str) else None
        channel_values = value.get("channel_values")
        if p == len(ids) - 1 and isinstance(channel_values, dict):
            spec = channel_values.get("_model_spec")
            model_spec = spec if isinstance(spec, str) and spec else None
        if isinstance(channel_values, dict) and native.MESSAGES in channel_values:
            msgs = t.dec.stored_messages(channel_values[native.MESSAGES])
            if msgs is None:
                raise FormatError(t.dec.file, "messages channel holds no message list", row=where)
            seed = seed_at is None
            seed_at = p if seed else seed_at
            cost = len(row.blob) // max(1, len(msgs))
            stored.append(
                [
                    _Occ(
                        CHECKPOINTS_ART,
                        number,
                        i,
                        getattr(m, "id", None),
                        type(m).__name__,
                        None,
                        t.spool.put(m, cost) if seed else None,
                    )
                    for i, m in enumerate(msgs)
                ]
            )
    for where in reversed(invalid):
        d.add("metadata-invalid", where)
    stored.reverse()
    return _Line(
        pos=pos,
        times=times,
        stored=stored,
        seed_at=seed_at,
        facts={
            "cwd": facts.newest.get("cwd"),
            "branch": facts.newest.get("git_branch"),
            "acp_model": facts.newest.get("acp_model"),
            "model_spec": model_spec,
            # dcode's listing: created = MIN(updated_at), updated = MAX(updated_at).
            "created_at": facts.first if facts.first is not None else times[0],
            "updated_at": facts.last if facts.last is not None else times[-1],
        },
    )


def _read_writes(t: _Thread, line: _Line) -> dict[int, list[_Occ]]:
    """Write rows into the artifact as they stream; the line's ``messages`` writes as
    occurrences, by line position, each checkpoint's in ``writes_sort_key`` order."""
    d = t.b.diagnostics
    latest = len(line.times) - 1
    batches: dict[int, list[_Occ]] = {}
    # The query orders rows by checkpoint, so one checkpoint's rows come together:
    # they are put in writes_sort_key order (task_path first) when the next one starts.
    group: list[tuple[tuple[str, str, int], list[_Occ]]] = []
    group_at = -1
    with t.b.artifact_writer(WRITES_ART, _NDJSON, utf8=_utf8) as out:
        for number, w in enumerate(native.write_rows(t.conn, t.tid, t.budget.db), start=1):
            t.budget.take(len(w.value))
            out.write(_write_line(w))
            where = f"{WRITES_ART}:{number}"
            p = line.pos.get(w.checkpoint_id)
            if w.ns != native.ROOT_NS:
                d.add("nested-namespace", where, count=_write_units(t.dec, w, where), name=w.ns)
            elif p is None:
                d.add("rewound", where, count=_write_units(t.dec, w, where))
            elif p == latest:
                d.add("pending-writes", where, count=_write_units(t.dec, w, where), name=w.channel)
            elif w.channel != native.MESSAGES:
                d.add("lifecycle-dropped", where, name=_family(w.channel))
            else:
                if p != group_at:
                    _close_group(batches, group_at, group)
                    group, group_at = [], p
                # Writes before the stored value the fold starts from never reach the state.
                lift = line.seed_at is None or p >= line.seed_at
                msgs = _messages(t.dec.loads(w.type, w.value, where))
                cost = len(w.value) // max(1, len(msgs))
                occs = [
                    _Occ(
                        WRITES_ART,
                        number,
                        i,
                        getattr(m, "id", None),
                        type(m).__name__,
                        line.times[p + 1],
                        t.spool.put(m, cost) if lift else None,
                    )
                    for i, m in enumerate(msgs)
                ]
                group.append((native.sort_key(w), occs))
    _close_group(batches, group_at, group)
    return batches


def _close_group(
    batches: dict[int, list[_Occ]],
    at: int,
    group: list[tuple[tuple[str, str, int], list[_Occ]]],
) -> None:
    if group:
        group.sort(key=lambda row: row[0])
        batches[at] = [o for _, occs in group for o in occs]


# -- lift: occurrences -> records --------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return "".join(parts)


def _reasoning(block: dict[str, Any]) -> str | None:
    """Plain reasoning text of a content block: LangChain standard, Responses or Anthropic."""
    kind = block.get("type")
    if kind == "reasoning":
        if isinstance(block.get("reasoning"), str):
            return str(block["reasoning"]) or None
        summary = block.get("summary")
        if isinstance(summary, list):
            texts = [
                str(s["text"])
                for s in summary
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            ]
            return "\n\n".join(texts) or None
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return str(block["thinking"]) or None
    return None


def ai_parts(content: Any) -> list[tuple[str, str]]:
    """(kind, text) for the text and reasoning blocks of an AI message, in order."""
    if isinstance(content, str):
        return [("assistant", content)] if content else []
    parts: list[tuple[str, str]] = []
    if not isinstance(content, list):
        return parts
    for block in content:
        if isinstance(block, str):
            if block:
                parts.append(("assistant", block))
        elif isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                if block["text"]:
                    parts.append(("assistant", str(block["text"])))
            elif (thought := _reasoning(block)) is not None:
                parts.append(("reasoning", thought))
    return parts


def _model_of(msg: Any) -> str | None:
    meta = getattr(msg, "response_metadata", None) or {}
    for key in ("model_name", "model"):
        if isinstance(meta.get(key), str) and meta[key]:
            return str(meta[key])
    return None


def _hidden(msg: Any, text: str) -> bool:
    """A synthetic human message (``text``: its :func:`_text`)."""
    source = (getattr(msg, "additional_kwargs", None) or {}).get("lc_source")
    if isinstance(source, str) and source in native.HIDDEN_SOURCES:
        return True
    return text.startswith(native.SYSTEM_PREFIX)


class _Lifter(CallProjector):
    """Its records have no turn (``turn`` stays None): a LangGraph thread keeps none."""

    def __init__(self, b: SnapshotBuilder) -> None:
        super().__init__(b)
        self.last_model: str | None = None

    def message(self, occ: _Occ, m: dict[str, Any], position: int) -> None:
        """Records for one message of the final state, ``m`` its :func:`lower` form."""
        mid = occ.mid
        base = f"{HARNESS}:{mid}" if isinstance(mid, str) and mid else f"{HARNESS}:pos{position}"
        place = f"{occ.artifact}:{occ.line}"
        made = 0

        def ev() -> EvidenceFields:
            return evidence(
                artifact=occ.artifact,
                line=occ.line,
                json_path=occ.json_path,
                native=occ.native,
                native_id=mid if isinstance(mid, str) else None,
                units=1 if made == 0 else 0,
            )

        def rid() -> str:
            return base if made == 0 else f"{base}:{made}"

        kind = m["kind"]
        if kind == "text":
            if not m["text"]:
                self.d.add("empty-content" if m["blank"] else "non-text-content", place)
                return
            self.b.add_text(m["role"], rid(), m["text"], time=occ.time, turn=None, evidence=ev())
        elif kind == "ai":
            if m.get("provider"):
                self.d.add("provider-ids-not-projected", place, count=m["provider"])
            model = m["model"]
            if model:
                self.last_model = model
            for part_kind, text in m["parts"]:
                self.b.add_text(
                    part_kind, rid(), text, time=occ.time, turn=None, evidence=ev(), model=model
                )
                made += 1
            for call_id, name, arguments in m["calls"]:
                if call_id is None:
                    self.d.add("invalid-line", place)
                    continue
                self.add_call(rid(), call_id, name, arguments, time=occ.time, evidence=ev())
                made += 1
            if made == 0:
                self.d.add("empty-content", place, name=occ.native)
        elif kind == "tool":
            call_id = m["call_id"]
            if call_id not in self.calls:
                # Counted, not projected, as every reader does with a result without its call.
                self.d.add("orphan-tool-result", place)
                return
            self.answer(
                rid(),
                call_id,
                m["ok"],
                m["output"],
                time=occ.time,
                evidence=ev(),
                exit_code=m["exit_code"],
            )
        else:
            self.d.add("unknown-kind", place, name=occ.native)


def lower(msg: Any) -> dict[str, Any]:
    """What the lifter needs of a LangChain message, as plain values (for the spool)."""
    kind = getattr(msg, "type", None)
    if kind == "human" or kind == "system":
        text = _text(msg.content)
        return {
            "kind": "text",
            "text": text,
            "blank": not msg.content,
            "role": "system" if kind == "system" or _hidden(msg, text) else "user",
        }
    if kind == "ai":
        calls = []
        for call in list(msg.tool_calls) + list(msg.invalid_tool_calls):
            call_id = call.get("id")
            args = call.get("args")
            calls.append(
                [
                    call_id if isinstance(call_id, str) and call_id else None,
                    str(call.get("name") or ""),
                    args if isinstance(args, dict) else {"_raw": str(args)},
                ]
            )
        # ids a provider gave the message's parts (Responses-API items) and the message's
        # name: ChatOpenAI sends them back, the Snapshot has no place for them (issue 23)
        blocks = msg.content if isinstance(msg.content, list) else []
        provider = sum(1 for b in blocks if isinstance(b, dict) and b.get("id"))
        provider += 1 if getattr(msg, "name", None) else 0
        return {
            "kind": "ai",
            "provider": provider,
            "model": _model_of(msg),
            "parts": ai_parts(msg.content),
            "calls": calls,
        }
    if kind == "tool":
        output = _text(msg.content)
        status = getattr(msg, "status", None)
        # only execute's output ends with its exit status; searching the rest (tool outputs
        # are often long) would find nothing to use
        match = EXIT_RE.search(output) if getattr(msg, "name", None) == "execute" else None
        return {
            "kind": "tool",
            "call_id": str(getattr(msg, "tool_call_id", "") or ""),
            "output": output,
            "ok": True if status == "success" else False if status == "error" else None,
            "exit_code": int(match.group(1)) if match else None,
        }
    return {"kind": "other"}


class _Folder:
    """``add_messages`` semantics (deepagents ``_messages_delta_reducer``), applied batch
    by batch with one id index kept across batches, so a thread of n messages folds in
    O(n) rather than rebuilding the index at every checkpoint."""

    def __init__(self, state: list[_Occ]) -> None:
        self.out: list[_Occ | None] = list(state)
        self.index = {o.mid: i for i, o in enumerate(state)}
        self.index.pop(None, None)

    def apply(self, values: list[_Occ]) -> None:
        for occ in values:
            mid = occ.mid
            if occ.native == "RemoveMessage":
                if mid == "__remove_all__":
                    self.out, self.index = [], {}
                elif mid in self.index:
                    self.out[self.index.pop(mid)] = None
                continue
            if mid is not None and mid in self.index:
                self.out[self.index[mid]] = occ
            else:
                if mid is not None:
                    self.index[mid] = len(self.out)
                self.out.append(occ)

    def result(self) -> list[_Occ]:
        return [o for o in self.out if o is not None]


def lift_thread(t: _Thread) -> tuple[list[_Occ], dict[str, Any]]:
    """Fold the thread's main line; count every row and message. Returns (final, facts).

    Memory grows with the number of messages, not their bytes: one small :class:`_Occ`
    per message occurrence (the fold, and telling a repeat from a removed message, need
    every id; the final list is the records' order) and one id and ``ts`` per checkpoint
    of the line (known only once the newest checkpoint's parent chain is). The message
    contents wait in the thread's spool.
    """
    d = t.b.diagnostics
    line = _read_checkpoints(t)
    batches = _read_writes(t, line)
    line.pos.clear()  # only the writes needed it
    seed_at = line.seed_at
    folder = _Folder(line.stored[-1] if seed_at is not None else [])
    for pos in range(len(line.times) - 1):
        if seed_at is None or pos >= seed_at:
            folder.apply(batches.get(pos, []))
    state = folder.result()
    for occ in state:
        occ.final = True

    def every() -> Iterator[_Occ]:
        for occs in line.stored:
            yield from occs
        for pos in range(len(line.times) - 1):
            yield from batches.get(pos, [])

    first_time: dict[Any, str | None] = {}
    for occ in every():
        if occ.mid is not None and occ.time is not None and occ.mid not in first_time:
            first_time[occ.mid] = occ.time
    for occ in every():
        if occ.final:
            continue
        place = f"{occ.artifact}:{occ.line}"
        # the index holds exactly the ids of the final state
        if occ.mid is not None and occ.mid in folder.index and occ.native != "RemoveMessage":
            d.add("duplicate-message", place)
        else:
            d.add("compaction-state", place, name=occ.native)
    for occ in state:
        if occ.mid in first_time:
            occ.time = first_time[occ.mid]
    return state, line.facts


def _pick(threads: list[str], session: str | None, db: Path) -> str:
    if session is not None:
        if session in threads:
            return session
        close = [t for t in threads if t.startswith(session)]
        hint = f"; did you mean {close[0]}?" if len(close) == 1 else ""
        raise UsageError(f"{db}: no thread {session!r} in this store{hint}")
    if len(threads) == 1:
        return threads[0]
    if not threads:
        raise FormatError(db, "the store holds no thread")
    raise UsageError(f"{db}: the store holds {len(threads)} threads; pick one with --session ID")


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    loc = layout.resolve(path)
    if loc.is_seed:
        return read_seed(loc.path, limits)
    db = loc.path
    with tempfile.TemporaryFile() as fh:
        spool = _MessageSpool(fh)
        with ReadOnly(db) as conn:
            native.check_schema(conn, db)
            tid = _pick(native.thread_ids(conn), session, db)
            b = SnapshotBuilder(
                Source(harness=HARNESS, harness_version=None, session_id=tid, locator=loc.locator),
                READER,
            )
            dec = native.Decoder(str(db))
            final, facts = lift_thread(_Thread(conn, tid, b, dec, _Budget(limits, db), spool))
        lifter = _Lifter(b)
        for position, occ in enumerate(final):
            assert occ.ref is not None  # every occurrence the fold can keep was spooled
            lifter.message(occ, spool.get(occ.ref), position)
            limits.check("max_records", b.record_count, db)
        lifter.finish()
    b.session = Session(
        id=tid,
        title=None,
        cwd=facts["cwd"],
        model=lifter.last_model or facts["acp_model"] or facts["model_spec"],
        branch=facts["branch"],
        created_at=facts["created_at"],
        updated_at=facts["updated_at"],
    )
    return b.build()


def lift_messages(b: SnapshotBuilder, occs: Iterable[tuple[_Occ, Any]]) -> _Lifter:
    """Records for (occurrence, message) pairs that need no fold (the portable seed)."""
    lifter = _Lifter(b)
    for position, (occ, msg) in enumerate(occs):
        lifter.message(occ, lower(msg), position)
    lifter.finish()
    return lifter


Occurrence = _Occ


# -- the portable seed --------------------------------------------------------------------
# The portable Deep Agents seed, ``checkpoint.json`` (format ``trajconv.deepagents-seed/1``).
#
# The writer emits it instead of a ``home/`` tree because the native store is a
# shared SQLite database (docs/design.md §6); ``prepare.py`` turns it into rows with the
# real ``langgraph`` / ``deepagents`` packages. Fields:
#
# ``format``, ``snapshot_id``, ``thread_id``, ``checkpoint_ns`` (always ``""``),
# ``cwd``, ``agent_name``, ``git_branch``, ``created_at`` / ``updated_at`` (dcode's
# own ``isoformat`` shape, or null), ``acp_session`` (true), ``messages`` (LangChain
# message dicts, each with a unique ``id``), ``times`` (message id -> Snapshot time,
# only where the Snapshot had one; not written to the database, which cannot hold
# per-message times).

MESSAGE_TYPES = ("human", "ai", "tool", "system")
REQUIRED = ("format", "thread_id", "checkpoint_ns", "cwd", "messages")


def validate(doc: Any) -> list[str]:
    """Problems with a seed document; empty when it is valid."""
    if not isinstance(doc, dict):
        return ["the seed is not a JSON object"]
    problems = [f"missing {key}" for key in REQUIRED if key not in doc]
    if doc.get("format") != layout.SEED_FORMAT:
        problems.append(f"format is not {layout.SEED_FORMAT}")
    if not isinstance(doc.get("thread_id"), str) or not doc.get("thread_id"):
        problems.append("thread_id must be a non-empty string")
    if doc.get("checkpoint_ns") != "":
        problems.append("checkpoint_ns must be '' (only the root namespace is portable)")
    if not isinstance(doc.get("cwd"), str) or not doc.get("cwd"):
        problems.append("cwd must be a non-empty string")
    msgs = doc.get("messages")
    if not isinstance(msgs, list):
        return [*problems, "messages must be a list"]
    seen: set[str] = set()
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("type") not in MESSAGE_TYPES:
            problems.append(f"messages[{i}] has no known type")
            continue
        mid = m.get("id")
        if not isinstance(mid, str) or not mid:
            problems.append(f"messages[{i}] has no id")
        elif mid in seen:
            problems.append(f"messages[{i}] repeats id {mid!r}")
        else:
            seen.add(mid)
        if m["type"] == "tool" and not isinstance(m.get("tool_call_id"), str):
            problems.append(f"messages[{i}] (tool) has no tool_call_id")
    return problems


def to_message(d: dict[str, Any]) -> Any:
    """A LangChain message object from a seed message dict."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError("reading a Deep Agents seed needs langchain-core") from exc
    classes: dict[str, Any] = {
        "human": HumanMessage,
        "ai": AIMessage,
        "tool": ToolMessage,
        "system": SystemMessage,
    }
    fields = {k: v for k, v in d.items() if k != "type"}
    return classes[d["type"]](**fields)


def read_seed(path: Path, limits: Limits) -> Snapshot:
    data = read_bounded(path, limits.max_session_bytes)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(path, f"not JSON: {exc}") from exc
    problems = validate(doc)
    if problems:
        raise FormatError(path, "; ".join(problems))
    tid = str(doc["thread_id"])
    b = SnapshotBuilder(
        Source(harness=HARNESS, harness_version=None, session_id=tid, locator=layout.SEED), READER
    )
    b.add_artifact(layout.SEED, "application/json", data)
    times = doc.get("times") if isinstance(doc.get("times"), dict) else {}

    def occurrences() -> Iterator[tuple[Occurrence, Any]]:
        # one LangChain message at a time, lifted before the next is built
        for i, m in enumerate(doc["messages"]):
            try:
                msg = to_message(m)
            except Exception as exc:  # pydantic validation of a hand-edited seed
                raise FormatError(path, f"messages[{i}]: {exc}") from exc
            when = times.get(m["id"])
            occ = Occurrence(
                layout.SEED,
                1,
                i,
                msg.id,
                type(msg).__name__,
                time_from_iso(when) if isinstance(when, str) else None,
            )
            yield occ, msg

    lifter = lift_messages(b, occurrences())

    def _time(key: str) -> str | None:
        value = doc.get(key)
        return time_from_iso(value) if isinstance(value, str) else None

    model = doc.get("model")
    branch = doc.get("git_branch")
    b.session = Session(
        id=tid,
        cwd=str(doc["cwd"]),
        model=model if isinstance(model, str) else lifter.last_model,
        branch=branch if isinstance(branch, str) else None,
        created_at=_time("created_at"),
        updated_at=_time("updated_at"),
    )
    return b.build()
