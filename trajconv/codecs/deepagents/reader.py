"""Deep Agents reader: one thread of ``sessions.db`` (or a portable seed) -> Snapshot.

Format facts: ``shared/formats/deepagents.md`` (deepagents-code 0.1.57,
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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.deepagents import layout, native
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot.builder import SnapshotBuilder, time_from_iso
from trajconv.snapshot.models import Evidence, Session, Snapshot, Source

READER = "deepagents/1"
HARNESS = "deepagents"
CHECKPOINTS_ART = "checkpoints.jsonl"
WRITES_ART = "writes.jsonl"
# deepagents' execute tool ends its output with the exit status, e.g.
# "[Command failed with exit code 2]" (spec "Observed" section) or
# "[Command succeeded with exit code 0]" (fixtures/deepagents/tool-calls).
EXIT_RE = re.compile(r"\[Command (?:succeeded|failed) with exit code (-?\d+)\]\s*\Z")


@dataclass
class _Occ:
    """One occurrence of a message in the store."""

    msg: Any
    artifact: str
    line: int
    json_path: str
    time: str | None


# -- parse: rows -> occurrences ----------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _readout(
    cps: list[native.DeepagentsCheckpointRow], writes: list[native.DeepagentsWriteRow]
) -> tuple[bytes, bytes]:
    """The thread's rows as JSON lines: the logical readout kept in artifacts."""
    cp_lines = []
    for c in cps:
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
        cp_lines.append(orjson.dumps(row))
    w_lines = [
        orjson.dumps(
            {
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
        )
        for w in writes
    ]
    return b"".join(x + b"\n" for x in cp_lines), b"".join(x + b"\n" for x in w_lines)


def _metadata(row: native.DeepagentsCheckpointRow) -> dict[str, Any] | None:
    try:
        value = orjson.loads(row.metadata) if row.metadata else {}
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _main_line(root: dict[str, native.DeepagentsCheckpointRow], b: SnapshotBuilder) -> list[str]:
    """Checkpoint ids from the first to the newest along parent links."""
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
        cur = root[cur].parent_id
    line.reverse()
    return line


def _family(channel: str) -> str:
    return "branch:to:*" if channel.startswith("branch:to:") else channel


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


def is_hidden_human(msg: Any) -> bool:
    source = (getattr(msg, "additional_kwargs", None) or {}).get("lc_source")
    if isinstance(source, str) and source in native.HIDDEN_SOURCES:
        return True
    return _text(msg.content).startswith(native.SYSTEM_PREFIX)


class _Lifter:
    def __init__(self, b: SnapshotBuilder) -> None:
        self.b = b
        self.d = b.diagnostics
        self.calls: dict[str, str] = {}
        self.results: set[str] = set()
        self.last_model: str | None = None

    def message(self, occ: _Occ, position: int) -> None:
        msg = occ.msg
        mid = getattr(msg, "id", None)
        base = f"{HARNESS}:{mid}" if isinstance(mid, str) and mid else f"{HARNESS}:pos{position}"
        kind = getattr(msg, "type", None)
        native_name = type(msg).__name__
        place = f"{occ.artifact}:{occ.line}"
        made = 0

        def ev() -> Evidence:
            return Evidence(
                artifact=occ.artifact,
                line=occ.line,
                json_path=occ.json_path,
                native=native_name,
                native_id=mid if isinstance(mid, str) else None,
                units=1 if made == 0 else 0,
            )

        def rid() -> str:
            return base if made == 0 else f"{base}:{made}"

        if kind == "human" or kind == "system":
            text = _text(msg.content)
            if not text:
                self.d.add("non-text-content" if msg.content else "empty-content", place)
                return
            role = "system" if kind == "system" or is_hidden_human(msg) else "user"
            self.b.add_text(role, rid(), text, time=occ.time, turn=None, evidence=ev())
        elif kind == "ai":
            model = _model_of(msg)
            if model:
                self.last_model = model
            for part_kind, text in ai_parts(msg.content):
                self.b.add_text(
                    part_kind, rid(), text, time=occ.time, turn=None, evidence=ev(), model=model
                )
                made += 1
            for call in list(msg.tool_calls) + list(msg.invalid_tool_calls):
                call_id = call.get("id")
                if not isinstance(call_id, str) or not call_id:
                    self.d.add("invalid-line", place)
                    continue
                args = call.get("args")
                arguments = args if isinstance(args, dict) else {"_raw": str(args)}
                r = rid()
                self.b.add_call(
                    r,
                    call_id,
                    str(call.get("name") or ""),
                    arguments,
                    time=occ.time,
                    turn=None,
                    evidence=ev(),
                )
                self.calls[call_id] = r
                made += 1
            if made == 0:
                self.d.add("empty-content", place, name=native_name)
        elif kind == "tool":
            call_id = str(getattr(msg, "tool_call_id", "") or "")
            output = _text(msg.content)
            status = getattr(msg, "status", None)
            ok = True if status == "success" else False if status == "error" else None
            exit_code = None
            match = EXIT_RE.search(output)
            if match and getattr(msg, "name", None) == "execute":
                exit_code = int(match.group(1))
            if call_id not in self.calls:
                # Counted, not projected, as every reader does with a result without its call.
                self.d.add("orphan-tool-result", place)
                return
            self.b.add_result(
                rid(),
                call_id,
                ok,
                output,
                time=occ.time,
                turn=None,
                evidence=ev(),
                exit_code=exit_code,
            )
            self.results.add(call_id)
        else:
            self.d.add("unknown-kind", place, name=native_name)

    def finish(self) -> None:
        for call_id, record in self.calls.items():
            if call_id not in self.results:
                self.d.add("pending-tool-call", record)


class _Folder:
    """``add_messages`` semantics (deepagents ``_messages_delta_reducer``), applied batch
    by batch with one id index kept across batches, so a thread of n messages folds in
    O(n) rather than rebuilding the index at every checkpoint."""

    def __init__(self, state: list[_Occ]) -> None:
        self.out: list[_Occ | None] = list(state)
        self.index = {getattr(o.msg, "id", None): i for i, o in enumerate(state)}
        self.index.pop(None, None)

    def apply(self, values: list[_Occ]) -> None:
        for occ in values:
            mid = getattr(occ.msg, "id", None)
            if type(occ.msg).__name__ == "RemoveMessage":
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


def _messages(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def lift_thread(
    b: SnapshotBuilder,
    dec: native.Decoder,
    cps: list[native.DeepagentsCheckpointRow],
    writes: list[native.DeepagentsWriteRow],
) -> tuple[list[_Occ], dict[str, Any]]:
    """Fold the thread's main line; count every row and message. Returns (final, facts)."""
    d = b.diagnostics
    cp_line = {c.checkpoint_id: i + 1 for i, c in enumerate(cps) if c.ns == native.ROOT_NS}
    root = {c.checkpoint_id: c for c in cps if c.ns == native.ROOT_NS}

    def checkpoint_units(row: native.DeepagentsCheckpointRow, where: str) -> int:
        """A checkpoint row left out of the records: itself and every message it stores."""
        value = dec.loads(row.type, row.blob, where)
        values = value.get("channel_values") if isinstance(value, dict) else None
        msgs = (
            dec.stored_messages(values.get(native.MESSAGES))
            if isinstance(values, dict) and native.MESSAGES in values
            else None
        )
        return 1 + len(msgs or [])

    def write_units(w: native.DeepagentsWriteRow, where: str) -> int:
        """A write row left out of the records: one unit, or one per message it carries."""
        if w.channel != native.MESSAGES:
            return 1
        return len(_messages(dec.loads(w.type, w.value, where)))

    for number, c in enumerate(cps, start=1):
        if c.ns != native.ROOT_NS:
            where = f"{CHECKPOINTS_ART}:{number}"
            d.add("nested-namespace", where, count=checkpoint_units(c, where), name=c.ns)
    if not root:
        raise FormatError(dec.file, "the thread has no checkpoint in the root namespace")
    line = _main_line(root, b)
    on_line = set(line)
    latest = line[-1]
    for cid in root:
        if cid not in on_line:
            where = f"{CHECKPOINTS_ART}:{cp_line[cid]}"
            d.add("rewound", where, count=checkpoint_units(root[cid], where))

    decoded: dict[str, dict[str, Any]] = {}
    metas: dict[str, dict[str, Any]] = {}
    stored: dict[str, list[_Occ]] = {}
    for cid in line:
        row = root[cid]
        where = f"{CHECKPOINTS_ART}:{cp_line[cid]}"
        value = dec.loads(row.type, row.blob, where)
        if not isinstance(value, dict):
            raise FormatError(dec.file, "checkpoint is not a map", row=where)
        decoded[cid] = value
        meta = _metadata(row)
        if meta is None:
            d.add("metadata-invalid", where)
        else:
            metas[cid] = meta
        d.add("compaction-state", where, name="checkpoint")
        channel_values = value.get("channel_values")
        if isinstance(channel_values, dict) and native.MESSAGES in channel_values:
            msgs = dec.stored_messages(channel_values[native.MESSAGES])
            if msgs is None:
                raise FormatError(dec.file, "messages channel holds no message list", row=where)
            stored[cid] = [
                _Occ(
                    m,
                    CHECKPOINTS_ART,
                    cp_line[cid],
                    f"$.checkpoint.channel_values.messages[{i}]",
                    None,
                )
                for i, m in enumerate(msgs)
            ]

    def ts(cid: str) -> str | None:
        raw = decoded.get(cid, {}).get("ts")
        return time_from_iso(raw) if isinstance(raw, str) else None

    child = {line[i]: line[i + 1] for i in range(len(line) - 1)}
    by_cp: dict[str, list[tuple[int, native.DeepagentsWriteRow]]] = {}
    for number, w in enumerate(writes, start=1):
        where = f"{WRITES_ART}:{number}"
        if w.ns != native.ROOT_NS:
            d.add("nested-namespace", where, count=write_units(w, where), name=w.ns)
        elif w.checkpoint_id not in on_line:
            d.add("rewound", where, count=write_units(w, where))
        elif w.checkpoint_id == latest:
            d.add("pending-writes", where, count=write_units(w, where), name=w.channel)
        elif w.channel != native.MESSAGES:
            d.add("lifecycle-dropped", where, name=_family(w.channel))
        else:
            by_cp.setdefault(w.checkpoint_id, []).append((number, w))

    seed_at = next((i for i in range(len(line) - 1, -1, -1) if line[i] in stored), None)
    folder = _Folder(list(stored[line[seed_at]]) if seed_at is not None else [])
    every: list[_Occ] = [o for cid in line for o in stored.get(cid, [])]
    for pos, cid in enumerate(line[:-1]):
        rows = sorted(by_cp.get(cid, []), key=lambda nw: native.sort_key(nw[1]))
        batch: list[_Occ] = []
        for number, w in rows:
            value = dec.loads(w.type, w.value, f"{WRITES_ART}:{number}")
            for i, m in enumerate(_messages(value)):
                batch.append(_Occ(m, WRITES_ART, number, f"$.value[{i}]", ts(child[cid])))
        every.extend(batch)
        if seed_at is None or pos >= seed_at:
            folder.apply(batch)
    state = folder.result()

    first_time: dict[Any, str | None] = {}
    for occ in every:
        mid = getattr(occ.msg, "id", None)
        if mid is not None and occ.time is not None and mid not in first_time:
            first_time[mid] = occ.time
    final_ids = {id(o) for o in state}
    live_ids = {getattr(o.msg, "id", None) for o in state}
    for occ in every:
        if id(occ) in final_ids:
            continue
        place = f"{occ.artifact}:{occ.line}"
        mid = getattr(occ.msg, "id", None)
        if mid is not None and mid in live_ids and type(occ.msg).__name__ != "RemoveMessage":
            d.add("duplicate-message", place)
        else:
            d.add("compaction-state", place, name=type(occ.msg).__name__)
    for occ in state:
        mid = getattr(occ.msg, "id", None)
        if mid in first_time:
            occ.time = first_time[mid]

    facts = _facts(line, metas, decoded, ts)
    return state, facts


def _facts(
    line: list[str],
    metas: dict[str, dict[str, Any]],
    decoded: dict[str, dict[str, Any]],
    ts: Any,
) -> dict[str, Any]:
    def newest(key: str) -> str | None:
        for cid in reversed(line):
            value = metas.get(cid, {}).get(key)
            if isinstance(value, str) and value:
                return value
        return None

    # dcode's listing: created = MIN(updated_at), updated = MAX(updated_at) (spec §6).
    stamps = [
        t
        for cid in line
        if isinstance(metas.get(cid, {}).get("updated_at"), str)
        and (t := time_from_iso(metas[cid]["updated_at"])) is not None
    ]
    latest_values = decoded[line[-1]].get("channel_values") or {}
    spec = latest_values.get("_model_spec") if isinstance(latest_values, dict) else None
    return {
        "cwd": newest("cwd"),
        "branch": newest("git_branch"),
        "agent": newest("agent_name") or newest("lc_agent_name"),
        "acp_model": newest("acp_model"),
        "model_spec": spec if isinstance(spec, str) and spec else None,
        "created_at": min(stamps) if stamps else ts(line[0]),
        "updated_at": max(stamps) if stamps else ts(line[-1]),
    }


def _pick(threads: list[str], session: str | None, db: Path) -> str:
    if session is not None:
        if session in threads:
            return session
        close = [t for t in threads if t.startswith(session)]
        hint = f"; did you mean {close[0]}?" if len(close) == 1 else ""
        raise FormatError(db, f"no thread {session!r} in this store{hint}")
    if len(threads) == 1:
        return threads[0]
    if not threads:
        raise FormatError(db, "the store holds no thread")
    raise FormatError(db, f"the store holds {len(threads)} threads; pick one with --session ID")


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    loc = layout.resolve(path)
    if loc.is_seed:
        from trajconv.codecs.deepagents.seed import read_seed

        return read_seed(loc.path, limits)
    db = loc.path
    with native.open_store(db) as conn:
        native.check_schema(conn, db)
        tid = _pick(native.thread_ids(conn), session, db)
        cps = native.checkpoint_rows(conn, tid)
        writes = native.write_rows(conn, tid)
    total = 0
    for blob in [c.blob for c in cps] + [w.value for w in writes]:
        limits.check("max_line_bytes", len(blob), db)
        total += len(blob)
    limits.check("max_session_bytes", total, db)

    b = SnapshotBuilder(
        Source(harness=HARNESS, harness_version=None, session_id=tid, locator=loc.locator), READER
    )
    cp_data, w_data = _readout(cps, writes)
    b.add_artifact(CHECKPOINTS_ART, "application/x-ndjson", cp_data)
    b.add_artifact(WRITES_ART, "application/x-ndjson", w_data)
    try:
        dec = native.Decoder(str(db))
    except UsageError:
        raise
    final, facts = lift_thread(b, dec, cps, writes)
    lifter = _Lifter(b)
    for position, occ in enumerate(final):
        lifter.message(occ, position)
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


def lift_messages(b: SnapshotBuilder, occs: list[_Occ]) -> _Lifter:
    """Records for a message list that needs no fold (the portable seed)."""
    lifter = _Lifter(b)
    for position, occ in enumerate(occs):
        lifter.message(occ, position)
    lifter.finish()
    return lifter


Occurrence = _Occ
