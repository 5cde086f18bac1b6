"""An archive store as a Parquet dataset: ``trajconv archive export STORE OUT --format parquet``.

Two tables, each a folder of Parquet files partitioned Hive-style by harness and month
(``OUT/records/harness=grok/month=2026-09/part-0.parquet``), so DuckDB, Spark, Polars or
any Arrow engine reads them with their own SQL and prunes partitions::

    SELECT harness, month, count(*) FROM read_parquet('OUT/records/**/*.parquet',
        hive_partitioning = true) WHERE kind = 'tool-result' AND NOT ok GROUP BY ALL

* ``sessions``: one row per archived session, from its latest Snapshot (harness, id,
  title, cwd, model, branch, times, parent, Snapshot id, when it was archived, how many
  Snapshots the store holds for it, record counts by kind, failed tool results).
* ``records``: every record of those Snapshots (session, seq, record id, kind, time,
  turn, text, model, tool name, arguments as JSON text, call id, ok, exit code,
  truncated). A tool result's ``tool_name`` is its call's; its ``text`` is the output.

The month is the session's ``created_at`` month, else its ``updated_at`` month, else the
month it was archived, so a session's records stay in one partition. Records stream from
each Snapshot into row groups of at most :data:`ROW_GROUP` rows or :data:`GROUP_BYTES`
bytes of text per partition, so memory does not grow with the archive. The dataset is
written beside OUT and renamed into place: a failure leaves no OUT. ``pyarrow`` is an
optional dependency (``pip install 'trajconv[parquet]'``).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from trajconv.errors import UsageError
from trajconv.snapshot.models import RECORD_KINDS
from trajconv.snapshot.spool import record_dicts
from trajconv.staging import staged_folder

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trajconv.snapshot.models import Snapshot
    from trajconv.store.local import IndexRow


class Readable(Protocol):
    """What the export reads of a store, local (SQLite index) or on object storage."""

    def rows(self) -> list[IndexRow]: ...

    def load(self, snapshot_id: str) -> Snapshot: ...


ROW_GROUP = 20_000
"""Rows a partition buffers before it writes a row group."""
GROUP_BYTES = 4 * 1024**2
"""Text bytes a partition buffers before it writes a row group."""
HELD_BYTES = 32 * 1024**2
"""Text bytes all partitions of a table may hold together before every one is written."""

KINDS = RECORD_KINDS

SESSION_FACTS = ("title", "cwd", "model", "branch", "created_at", "updated_at", "parent_session_id")
"""The Snapshot's session facts a ``sessions`` row holds, by their names in it (a ``*_at``
fact is a timestamp)."""

Column = tuple[str, Any]
"""A column: its name and its type, the name of the pyarrow function that makes the type
(``string``, ``int64``, ``bool_``...), ``timestamp`` (milliseconds, UTC) or a pyarrow type."""

SESSION_COLUMNS: tuple[Column, ...] = (
    ("session_id", "string"),
    *((f, "timestamp" if f.endswith("_at") else "string") for f in SESSION_FACTS),
    ("snapshot_id", "string"),
    ("archived_at", "timestamp"),
    ("snapshots", "int32"),
    ("records", "int64"),
    *((f"n_{k.replace('-', '_')}", "int64") for k in KINDS),
    ("failed_tool_results", "int64"),
)
RECORD_COLUMNS: tuple[Column, ...] = (
    ("session_id", "string"),
    ("snapshot_id", "string"),
    ("seq", "int64"),
    ("record_id", "string"),
    ("kind", "string"),
    ("time", "timestamp"),
    ("turn", "int64"),
    ("text", "large_string"),
    ("model", "string"),
    ("tool_name", "string"),
    ("arguments", "large_string"),
    ("call_id", "string"),
    ("ok", "bool_"),
    ("exit_code", "int64"),
    ("truncated", "bool_"),
)


def arrow(needs: str) -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``; without them a usage error: ``needs`` needs it."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(f"{needs} needs pyarrow: pip install 'trajconv[parquet]'") from None
    return pa, pq


def arrow_fields(pa: Any, columns: Iterable[Column]) -> list[tuple[str, Any]]:
    """``columns`` as pyarrow fields, for ``pa.schema`` or ``pa.struct``."""

    def arrow_type(kind: Any) -> Any:
        if not isinstance(kind, str):
            return kind
        return pa.timestamp("ms", tz="UTC") if kind == "timestamp" else getattr(pa, kind)()

    return [(name, arrow_type(kind)) for name, kind in columns]


def _time(value: str | None) -> Any:
    if value is None:
        return None
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class _Partitioned:
    """One Parquet writer per (harness, month) partition of a table, fed row by row."""

    def __init__(self, root: Path, schema: pa.Schema, pq_mod: Any, pa_mod: Any) -> None:
        self.root = root
        self.schema = schema
        self.pq = pq_mod
        self.pa = pa_mod
        self.writers: dict[tuple[str, str], pq.ParquetWriter] = {}
        self.buffers: dict[tuple[str, str], dict[str, list[Any]]] = {}
        self.sizes: Counter[tuple[str, str]] = Counter()
        self.held = 0
        self.rows = 0

    def add(self, key: tuple[str, str], row: dict[str, Any], text_bytes: int = 0) -> None:
        buf = self.buffers.get(key)
        if buf is None:
            buf = self.buffers[key] = {name: [] for name in self.schema.names}
        for name, column in buf.items():
            column.append(row.get(name))
        self.sizes[key] += text_bytes
        self.held += text_bytes
        self.rows += 1
        if len(buf["session_id"]) >= ROW_GROUP or self.sizes[key] >= GROUP_BYTES:
            self._flush(key)
        if self.held >= HELD_BYTES:
            for each in list(self.buffers):
                self._flush(each)

    def _flush(self, key: tuple[str, str]) -> None:
        buf = self.buffers.get(key)
        if not buf or not buf["session_id"]:
            return
        writer = self.writers.get(key)
        if writer is None:
            harness, month = key
            folder = self.root / f"harness={harness}" / f"month={month}"
            folder.mkdir(parents=True, exist_ok=True)
            writer = self.pq.ParquetWriter(
                folder / "part-0.parquet", self.schema, compression="zstd"
            )
            self.writers[key] = writer
        writer.write_table(self.pa.Table.from_pydict(buf, schema=self.schema))
        for column in buf.values():
            column.clear()
        self.held -= self.sizes[key]
        self.sizes[key] = 0

    def close(self) -> None:
        for key in list(self.buffers):
            self._flush(key)
        for writer in self.writers.values():
            writer.close()


def _partition_value(text: str) -> str:
    """A harness name as a Hive partition value (``/`` and ``=`` would break the path)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text) or "_"


@dataclass
class Exported:
    """What an export wrote."""

    out: Path
    sessions: int = 0
    records: int = 0
    partitions: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "out": str(self.out)}


def _latest(rows: list[IndexRow]) -> Iterator[tuple[IndexRow, int]]:
    """Each session's latest index row and how many Snapshots the store holds for it."""
    latest: dict[tuple[str, str], IndexRow] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for r in rows:
        key = (r.harness, r.session_id)
        latest[key] = r
        if r.relation != "unchanged":
            counts[key] += 1
    for key in sorted(latest):
        yield latest[key], counts[key]


def export_parquet(
    store: Readable, out: Path, progress: Callable[[int, int], None] | None = None
) -> Exported:
    """Write ``store`` as the ``sessions`` and ``records`` Parquet tables under ``out``."""
    pa, pq = arrow("the Parquet export")
    session_schema = pa.schema(arrow_fields(pa, SESSION_COLUMNS))
    record_schema = pa.schema(arrow_fields(pa, RECORD_COLUMNS))
    done = Exported(out)
    with staged_folder(out) as staging:
        sessions = _Partitioned(staging / "sessions", session_schema, pq, pa)
        records = _Partitioned(staging / "records", record_schema, pq, pa)
        latest = list(_latest(store.rows()))
        for i, (row, snapshots) in enumerate(latest):
            snap = store.load(row.snapshot_id)
            s = snap.session
            month = (s.created_at or s.updated_at or row.archived_at)[:7]
            key = (_partition_value(row.harness), month)
            kinds: Counter[str] = Counter()
            failed = 0
            names: dict[str, str] = {}
            for rec in record_dicts(snap.records):
                kind = rec["kind"]
                kinds[kind] += 1
                out_row: dict[str, Any] = {
                    "session_id": row.session_id,
                    "snapshot_id": row.snapshot_id,
                    "seq": rec["seq"],
                    "record_id": rec["id"],
                    "kind": kind,
                    "time": _time(rec["time"]),
                    "turn": rec["turn"],
                    "model": rec.get("model"),
                }
                if kind == "tool-call":
                    call = rec["call"]
                    names[call["id"]] = call["name"]
                    out_row |= {
                        "tool_name": call["name"],
                        "call_id": call["id"],
                        "arguments": json.dumps(call["arguments"], ensure_ascii=False),
                    }
                    size = len(out_row["arguments"])
                elif kind == "tool-result":
                    res = rec["result"]
                    failed += res["ok"] is False
                    out_row |= {
                        "tool_name": names.get(res["call_id"]),
                        "call_id": res["call_id"],
                        "text": res["output"],
                        "ok": res["ok"],
                        "exit_code": res["exit_code"],
                        "truncated": res["truncated"],
                    }
                    size = len(res["output"])
                else:
                    out_row["text"] = rec["text"]
                    size = len(rec["text"])
                records.add(key, out_row, size)
            sessions.add(
                key,
                {
                    "session_id": row.session_id,
                    **{
                        f: _time(getattr(s, f)) if f.endswith("_at") else getattr(s, f)
                        for f in SESSION_FACTS
                    },
                    "snapshot_id": row.snapshot_id,
                    "archived_at": _time(row.archived_at),
                    "snapshots": snapshots,
                    "records": sum(kinds.values()),
                    **{f"n_{k.replace('-', '_')}": kinds[k] for k in KINDS},
                    "failed_tool_results": failed,
                },
            )
            done.sessions += 1
            done.records += sum(kinds.values())
            if progress is not None:
                progress(i + 1, len(latest))
        sessions.close()
        records.close()
        done.partitions = sorted(f"harness={h}/month={m}" for h, m in sessions.writers)
    return done
