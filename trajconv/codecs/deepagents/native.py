"""Deep Agents (``deepagents-code`` 0.1.57) native vocabulary: SQLite rows and their decoding.

Facts: ``codecs/deepagents/README.md`` (schema), the codec README (``JsonPlusSerializer``
tags), the codec README (``messages`` is a ``DeltaChannel``), and ``langgraph-checkpoint``
4.3.2 ``checkpoint/base/__init__.py`` (``writes_sort_key``: within one
checkpoint, writes apply in ``(task_path, task_id, idx)`` order; writes stored
on the target checkpoint itself are pending and not part of its state).

Values are decoded with LangGraph's own serializer in strict mode (only
LangGraph's safe types are rebuilt, never pickle), as the issue asks, not by a
hand-written msgpack reader. ``langgraph-checkpoint`` is imported lazily so
``trajconv codecs`` works without it.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajconv.errors import FormatError, UsageError
from trajconv.snapshot.hashing import MAX_SAFE_INTEGER

MESSAGES = "messages"
ROOT_NS = ""
INSTALL_HINT = (
    "reading Deep Agents stores needs LangGraph's serializer: "
    "pip install 'langgraph-checkpoint==4.3.2' 'langchain-core==1.8.3'"
)
#: Human messages marked with these ``additional_kwargs.lc_source`` values are
#: synthetic (``deepagents_code/_constants.py``, ``goal_state_notice.py``).
HIDDEN_SOURCES = frozenset(
    {"goal_control", "goal_state", "rubric_grader", "summarization", "local_context"}
)
SYSTEM_PREFIX = "[SYSTEM]"
CHECKPOINT_COLUMNS = frozenset(
    {"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint"}
)
WRITES_COLUMNS = frozenset(
    {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"}
)


@dataclass(slots=True)
class DeepagentsCheckpointRow:
    """One ``checkpoints`` row (blob undecoded)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str | None
    blob: bytes
    metadata: bytes


@dataclass(slots=True)
class DeepagentsWriteRow:
    """One ``writes`` row (value undecoded)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str | None
    value: bytes


def _serde() -> Any:
    try:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError(INSTALL_HINT) from exc
    # Strict: only LangGraph's safe types (messages, Send, datetime, ...), no pickle.
    return JsonPlusSerializer(
        pickle_fallback=False, allowed_json_modules=None, allowed_msgpack_modules=None
    )


@contextlib.contextmanager
def _quiet_serde(loggers: list[logging.Logger]) -> Iterator[None]:
    """Silence the serializer's warnings (types it does not rebuild) while we decode."""
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was


class Decoder:
    """``loads_typed`` with LangGraph's serializer, errors turned into FormatError."""

    def __init__(self, file: str) -> None:
        self.file = file
        self._serde = _serde()
        self._known = -1
        self._loggers: list[logging.Logger] = []
        with _quiet_serde(self._serde_loggers()):
            from langgraph.checkpoint.serde.types import _DeltaSnapshot

        self._snapshot_type: type[Any] = _DeltaSnapshot

    def _serde_loggers(self) -> list[logging.Logger]:
        """LangGraph's checkpoint loggers, looked up again only when a logger was added
        (scanning every logger at every row was most of the decoding time)."""
        names = logging.root.manager.loggerDict
        if len(names) != self._known:
            self._known = len(names)
            self._loggers = [
                logging.getLogger(n) for n in list(names) if n.startswith("langgraph.checkpoint")
            ]
        return self._loggers

    def loads(self, type_tag: str | None, data: bytes, where: str) -> Any:
        if type_tag == "pickle":
            raise FormatError(self.file, "pickle-encoded value refused", row=where)
        if type_tag is None:
            raise FormatError(self.file, "value without a serializer type", row=where)
        try:
            with _quiet_serde(self._serde_loggers()):
                return self._serde.loads_typed((type_tag, data))
        except Exception as exc:  # the serializer raises many kinds on bad bytes
            raise FormatError(self.file, f"undecodable {type_tag} value: {exc}", row=where) from exc

    def stored_messages(self, value: Any) -> list[Any] | None:
        """A stored ``messages`` channel value: ext-7 snapshot or plain list."""
        if isinstance(value, self._snapshot_type):
            inner = value.value
            return list(inner) if isinstance(inner, list) else None
        if isinstance(value, list):
            return value
        return None


def sort_key(w: DeepagentsWriteRow) -> tuple[str, str, int]:
    """LangGraph's ``writes_sort_key`` order for writes of one checkpoint."""
    return (w.task_path, w.task_id, w.idx)


def check_schema(conn: sqlite3.Connection, db: Path) -> None:
    """Refuse a database that is not a LangGraph SqliteSaver store."""
    for table, need in (("checkpoints", CHECKPOINT_COLUMNS), ("writes", WRITES_COLUMNS)):
        cols = {row[1] for row in conn.execute(f"pragma table_info({table})")}
        if not cols:
            raise FormatError(db, f"not a Deep Agents sessions.db: no {table} table")
        missing = need - cols
        if missing:
            raise FormatError(db, f"{table} table lacks columns {sorted(missing)}")


def has_task_path(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "task_path" for row in conn.execute("pragma table_info(writes)"))


def thread_ids(conn: sqlite3.Connection) -> list[str]:
    """Threads with a root-namespace checkpoint, oldest first (by first checkpoint id)."""
    rows = conn.execute(
        "select thread_id, min(checkpoint_id) from checkpoints where checkpoint_ns = ? "
        "group by thread_id order by 2, 1",
        (ROOT_NS,),
    ).fetchall()
    return [str(r[0]) for r in rows]


_CHECKPOINT_SELECT = (
    "select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata from checkpoints where thread_id = ?"
)


def _checkpoint_row(r: Any) -> DeepagentsCheckpointRow:
    return DeepagentsCheckpointRow(
        thread_id=str(r[0]),
        ns=str(r[1]),
        checkpoint_id=str(r[2]),
        parent_id=None if r[3] is None else str(r[3]),
        type=None if r[4] is None else str(r[4]),
        blob=_bytes(r[5]),
        metadata=_bytes(r[6]),
    )


def checkpoint_rows(conn: sqlite3.Connection, thread_id: str) -> Iterator[DeepagentsCheckpointRow]:
    """The thread's checkpoint rows in readout order, one at a time from the cursor."""
    rows = conn.execute(f"{_CHECKPOINT_SELECT} order by checkpoint_ns, checkpoint_id", (thread_id,))
    for r in rows:
        yield _checkpoint_row(r)


def checkpoint_row(
    conn: sqlite3.Connection, thread_id: str, checkpoint_id: str
) -> DeepagentsCheckpointRow:
    """One root-namespace checkpoint row of the thread, by its primary key."""
    r = conn.execute(
        f"{_CHECKPOINT_SELECT} and checkpoint_ns = ? and checkpoint_id = ?",
        (thread_id, ROOT_NS, checkpoint_id),
    ).fetchone()
    return _checkpoint_row(r)


def line_rows(
    conn: sqlite3.Connection, thread_id: str, ids: list[str]
) -> Iterator[DeepagentsCheckpointRow]:
    """The root-namespace checkpoint rows ``ids`` names, from its last id back to its first.

    One scan newest first while the rows come in that order (LangGraph's ids grow with
    time, so the main line is in id order); a row out of that order, or the end of the
    scan, leaves the rest to a lookup by key each."""
    want = set(ids)
    p = len(ids) - 1
    rows = conn.execute(
        f"{_CHECKPOINT_SELECT} and checkpoint_ns = ? order by checkpoint_id desc",
        (thread_id, ROOT_NS),
    )
    for r in rows:
        if p < 0:
            break
        cid = r[2]
        if type(cid) is not str:
            break
        if cid == ids[p]:
            yield _checkpoint_row(r)
            p -= 1
        elif cid in want:
            break
    rows.close()
    for q in range(p, -1, -1):
        yield checkpoint_row(conn, thread_id, ids[q])


def write_rows(
    conn: sqlite3.Connection, thread_id: str, db: str | Path = "sessions.db"
) -> Iterator[DeepagentsWriteRow]:
    """The thread's write rows in readout order, one at a time from the cursor; a row
    whose ``idx`` is no integer a Snapshot holds (LangGraph writes small ones) is a
    FormatError naming ``db``."""
    path_col = "task_path" if has_task_path(conn) else "''"
    rows = conn.execute(
        f"select thread_id, checkpoint_ns, checkpoint_id, task_id, {path_col}, idx, channel, "
        "type, value from writes where thread_id = ? "
        "order by checkpoint_ns, checkpoint_id, task_id, idx",
        (thread_id,),
    )
    for r in rows:
        if type(r[5]) is not int or not -MAX_SAFE_INTEGER <= r[5] <= MAX_SAFE_INTEGER:
            raise FormatError(
                db, f"writes row of checkpoint {str(r[2])[:80]!r}: idx is {str(r[5])[:40]!r}"
            )
        yield DeepagentsWriteRow(
            thread_id=str(r[0]),
            ns=str(r[1]),
            checkpoint_id=str(r[2]),
            task_id=str(r[3]),
            task_path=str(r[4] or ""),
            idx=r[5],
            channel=str(r[6]),
            type=None if r[7] is None else str(r[7]),
            value=_bytes(r[8]),
        )


def _bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return str(value).encode("utf-8")
