"""List Deep Agents threads cheaply, as ``dcode threads list`` does: metadata only.

Per thread (root namespace): cwd, agent name and branch from the newest
checkpoint's metadata JSON, created/updated as MIN/MAX of ``updated_at``
. No blob is decoded, so discovery needs no LangGraph.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from trajconv.codecs.base import SessionRef
from trajconv.codecs.deepagents import layout, native
from trajconv.codecs.sqlite import ReadOnly
from trajconv.errors import FormatError
from trajconv.snapshot.builder import time_from_iso

_SQL = (
    "select thread_id, checkpoint_id, metadata from checkpoints "
    "where checkpoint_ns = '' order by thread_id, checkpoint_id"
)


def _meta(raw: Any) -> dict[str, Any]:
    import orjson

    try:
        value = orjson.loads(raw) if raw else {}
    except (orjson.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def discover(home: Path) -> list[SessionRef]:
    db = layout.find_db(home)
    if db is None:
        return []
    threads: dict[str, dict[str, Any]] = {}
    try:
        with ReadOnly(db) as conn:
            native.check_schema(conn, db)
            for tid, _cid, raw in conn.execute(_SQL):
                meta = _meta(raw)
                t = threads.setdefault(str(tid), {"stamps": []})
                for key in ("cwd", "agent_name", "git_branch"):
                    if isinstance(meta.get(key), str) and meta[key]:
                        t[key] = meta[key]
                if isinstance(meta.get("updated_at"), str):
                    stamp = time_from_iso(meta["updated_at"])
                    if stamp:
                        t["stamps"].append(stamp)
    except (FormatError, sqlite3.Error):
        return []
    refs = []
    for tid, t in threads.items():
        stamps = t["stamps"]
        refs.append(
            SessionRef(
                harness="deepagents",
                session_id=tid,
                path=db,
                title=None,
                cwd=t.get("cwd"),
                created_at=min(stamps) if stamps else None,
                updated_at=max(stamps) if stamps else None,
                size=None,
            )
        )
    refs.sort(key=lambda r: (r.updated_at or "", r.session_id), reverse=True)
    return refs
