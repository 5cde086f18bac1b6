"""Shared pieces of the Deep Agents tests: fixture threads, unit counting, a hand Snapshot."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.helpers import FIXTURES
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source

DA = FIXTURES / "deepagents"
CASES = ("tool-calls", "failed-tool", "snapshot-mix", "multi-thread")


def threads() -> list[tuple[str, str]]:
    """(case, thread id) for every thread of every recorded fixture, from listing.json."""
    out = []
    for case in CASES:
        for row in json.loads((DA / case / "listing.json").read_text("utf-8")):
            out.append((case, str(row["thread_id"])))
    return out


THREADS = threads()
THREAD_IDS = [f"{case}/{tid[:8]}" for case, tid in THREADS]


def listing_row(case: str, tid: str) -> dict[str, Any]:
    rows = json.loads((DA / case / "listing.json").read_text("utf-8"))
    return next(r for r in rows if r["thread_id"] == tid)


def count_units(db: Path, tid: str) -> int:
    """Units in a thread without branches or pending writes, counted without the reader.

    Each checkpoint row, each non-``messages`` write row, each message in a
    ``messages`` write and each message in a stored ``messages`` channel value.
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    serde = JsonPlusSerializer(allowed_msgpack_modules=None)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        units = 0
        for ty, blob in conn.execute(
            "select type, checkpoint from checkpoints where thread_id = ?", (tid,)
        ):
            units += 1
            stored = serde.loads_typed((ty, blob))["channel_values"].get("messages")
            if isinstance(stored, _DeltaSnapshot):
                stored = stored.value
            units += len(stored or [])
        for channel, ty, value in conn.execute(
            "select channel, type, value from writes where thread_id = ?", (tid,)
        ):
            if channel == "messages":
                got = serde.loads_typed((ty, value))
                units += len(got) if isinstance(got, list) else 1
            else:
                units += 1
        return units
    finally:
        conn.close()


def hand_snapshot(*, cwd: str | None = "/work/shop", finished: bool = True) -> Snapshot:
    """Every record kind, as another harness's reader would produce them."""
    b = SnapshotBuilder(
        Source(harness="handmade", harness_version=None, session_id="s-1", locator="s-1"), "test"
    )
    ev = evidence(artifact="session.jsonl", line=1, native="x")
    b.add_text("system", "h:0", "You are terse.", time=None, turn=0, evidence=ev)
    b.add_text(
        "user",
        "h:1",
        "Rename the cart module",
        time="2025-01-02T03:04:05.000Z",
        turn=0,
        evidence=ev,
    )
    b.add_text("reasoning", "h:2", "Look first.", time=None, turn=0, evidence=ev, model="m-1")
    b.add_text("assistant", "h:3", "Let me look.", time=None, turn=0, evidence=ev, model="m-1")
    b.add_call("h:4", "call_7", "ls", {"path": "/src"}, time=None, turn=0, evidence=ev)
    b.add_call("h:5", "call_8", "execute", {"command": "make"}, time=None, turn=0, evidence=ev)
    b.add_result("h:6", "call_7", None, "cart.py", time=None, turn=0, evidence=ev)
    b.add_result("h:7", "call_8", False, "boom", time=None, turn=0, evidence=ev, exit_code=2)
    b.add_text("observation", "h:8", "build failed", time=None, turn=0, evidence=ev)
    if finished:
        b.add_text(
            "assistant", "h:9", "Renamed to basket.py.", time=None, turn=0, evidence=ev, model="m-1"
        )
    b.session = Session(
        id="s-1",
        cwd=cwd,
        model="m-1",
        branch="main",
        created_at="2025-01-02T03:04:05.000Z",
        updated_at="2025-01-02T03:09:00.000Z",
    )
    return b.build()
