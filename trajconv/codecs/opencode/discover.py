"""List OpenCode sessions cheaply: the ``session`` table (and legacy ``storage/session``
files), as ``opencode session list`` does, children included (they name their parent)."""

from __future__ import annotations

from pathlib import Path

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.opencode import layout
from trajconv.codecs.opencode_lineage import store as native
from trajconv.codecs.opencode_lineage.store import nonblank as _text
from trajconv.codecs.opencode_lineage.store import time_of as _ms

MAX_SESSION_FILE = 16 * 1024**2
HARNESS = "opencode"


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
        return native.session_refs(home, HARNESS) if native.is_sqlite(home) else []
    data = layout.data_folder(home)
    if data is None:
        return []
    refs = native.session_refs(data / layout.DB, HARNESS) if (data / layout.DB).is_file() else []
    if (data / native.STORAGE).is_dir():
        refs += _json_refs(data / native.STORAGE, {r.session_id for r in refs})
    return refs
