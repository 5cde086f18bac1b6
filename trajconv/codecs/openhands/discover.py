"""List OpenHands conversations cheaply: a folder's name, its first and last event files' times.

Sub-agent conversations (``subagents/<id>/``) are not listed: they are read as children of
their parent's Snapshot (``--session <id>`` reads one alone).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.openhands import layout
from trajconv.snapshot.builder import time_from_iso


def _time(path: Path) -> str | None:
    try:
        obj = orjson.loads(path.read_bytes()[: 1 << 20])
    except (OSError, orjson.JSONDecodeError):
        return None
    stamp = obj.get("timestamp") if isinstance(obj, dict) else None
    return time_from_iso(stamp) if isinstance(stamp, str) else None


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for conv in layout.conversations(home):
        files = layout.event_files(conv)
        if not files:
            continue
        refs.append(
            SessionRef(
                harness="openhands",
                session_id=conv.name,
                path=conv,
                created_at=_time(files[0]),
                updated_at=_time(files[-1]),
                size=sum(p.stat().st_size for p in files),
            )
        )
    return refs
