"""List Cursor CLI stores cheaply: one ``meta`` row per store, no blob is read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from trajconv.codecs.base import SessionRef
from trajconv.codecs.cursor import layout, native
from trajconv.errors import FormatError
from trajconv.snapshot.builder import time_from_ms


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for store in layout.iter_stores(home):
        try:
            opened = native.open_store(store)
        except FormatError:
            continue
        try:
            row = opened.con.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
            meta, _ = native.strip_secrets(
                native.decode_meta_value(row[0], str(store))
                if row and isinstance(row[0], str)
                else {}
            )
        except (sqlite3.DatabaseError, FormatError):
            continue  # not an AgentKv store, or unreadable metadata
        finally:
            opened.close()
        if not meta.get("latestRootBlobId"):
            continue  # Cursor deletes empty stores on close; nothing to read
        created = meta.get("createdAt")
        agent = meta.get("agentId")
        refs.append(
            SessionRef(
                harness="cursor",
                session_id=agent if isinstance(agent, str) and agent else store.parent.name,
                path=store,
                title=native.title_of(meta),
                cwd=None,  # only the md5 of the cwd is in the path; the root blob holds it
                created_at=time_from_ms(created)
                if isinstance(created, int | float) and not isinstance(created, bool)
                else None,
                size=store.stat().st_size,
            )
        )
    return refs
