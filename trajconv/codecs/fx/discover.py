"""List fx sessions cheaply: each folder's ``session.json`` top level (and ``display.json``).

Mirrors fx's listing (``codecs/fx/README.md``): folders under ``sessions/`` with valid ids
only, the reserved ``v2`` store and caches skipped, unreadable sessions left out, subagent
children hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.fx import layout
from trajconv.snapshot.builder import time_from_ms

MAX_META = 256 * 1024**2


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _time(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return time_from_ms(value) if ok else None


def _load(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > MAX_META:
            return None
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def discover(home: Path) -> list[SessionRef]:
    root = layout.sessions_root(Path(home))
    if root is None:
        return []
    refs = []
    for sdir in layout.session_dirs(root):
        meta = _load(sdir / layout.SESSION_JSON)
        if meta is None or meta.get("id") != sdir.name or meta.get("subagent_child") is True:
            continue
        title = _text(meta.get("title"))
        if title is None and (sdir / layout.DISPLAY).is_file():
            display = _load(sdir / layout.DISPLAY)
            title = _text(display.get("title")) if display else None
        log = sdir / layout.EVENTS
        meta_size = (sdir / layout.SESSION_JSON).stat().st_size
        refs.append(
            SessionRef(
                harness="fx",
                session_id=sdir.name,
                path=sdir,
                title=title,
                cwd=_text(meta.get("workspace_root")),
                created_at=_time(meta.get("created_at_ms")),
                updated_at=_time(meta.get("updated_at_ms")),
                size=meta_size + (log.stat().st_size if log.is_file() else 0),
            )
        )
    return refs
