"""List OpenCode sessions cheaply: the ``session`` table (and legacy ``storage/session``
files), as ``opencode session list`` does, children included (they name their parent)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.opencode import layout, native
from trajconv.codecs.opencode.native import nonblank as _text
from trajconv.codecs.opencode.native import time_of as _ms
from trajconv.errors import FormatError

MAX_SESSION_FILE = 16 * 1024**2


def _db_refs(db: Path) -> list[SessionRef]:
    refs = []
    try:
        with native.connect(db) as con:
            rows = con.execute(
                "select s.id, s.title, s.directory, s.time_created, s.time_updated, "
                "(select coalesce(sum(length(p.data)), 0) from part p where p.session_id = s.id)"
                " from session s order by s.time_updated desc, s.id"
            ).fetchall()
    except (FormatError, sqlite3.Error):
        return []  # not a database OpenCode could open either
    for sid, title, directory, created, updated, size in rows:
        refs.append(
            SessionRef(
                harness="opencode",
                session_id=native.text(sid),
                path=db,
                title=_text(native.text(title)) if title is not None else None,
                cwd=_text(native.text(directory)) if directory is not None else None,
                created_at=_ms(created),
                updated_at=_ms(updated),
                size=int(size) if isinstance(size, int) else None,
            )
        )
    return refs


def _json_refs(storage: Path, seen: set[str]) -> list[SessionRef]:
    refs = []
    for path in sorted((storage / "session").glob("*/*.json")):
        try:
            if path.stat().st_size > MAX_SESSION_FILE:
                continue
            info = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if not isinstance(info, dict):
            continue
        sid = _text(info.get("id")) or path.stem
        if sid in seen:
            continue
        t = info.get("time") if isinstance(info.get("time"), dict) else {}
        assert isinstance(t, dict)
        refs.append(
            SessionRef(
                harness="opencode",
                session_id=sid,
                path=storage.parent,
                title=_text(info.get("title")),
                cwd=_text(info.get("directory")),
                created_at=_ms(t.get("created")),
                updated_at=_ms(t.get("updated")),
            )
        )
    return refs


def discover(home: Path) -> list[SessionRef]:
    """Sessions under ``home``: a user home, the OpenCode data folder, or a database file."""
    if home.is_file():
        return _db_refs(home) if layout.is_sqlite(home) else []
    data = layout.data_folder(home)
    if data is None:
        return []
    refs = _db_refs(data / layout.DB) if (data / layout.DB).is_file() else []
    if (data / layout.STORAGE).is_dir():
        refs += _json_refs(data / layout.STORAGE, {r.session_id for r in refs})
    return refs
