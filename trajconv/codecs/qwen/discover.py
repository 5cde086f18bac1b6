"""List Qwen Code sessions cheaply: the first and last lines of each session file.

Sub-agent transcripts (``subagents/<parent id>/agent-<agent id>.jsonl``) are not listed: they
are read as children of their parent's Snapshot (``--session <agent id>`` reads one alone).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.qwen import layout
from trajconv.snapshot.builder import time_from_iso

#: how much of a file's end is read for its last record's time
TAIL = 64 * 1024


def _last_time(path: Path, size: int) -> str | None:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, size - TAIL))
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("timestamp"), str):
            return time_from_iso(obj["timestamp"])
    return None


def _ref(path: Path) -> SessionRef | None:
    first = layout.first_record(path)
    if first is None or not isinstance(first.get("sessionId"), str):
        return None
    size = path.stat().st_size
    stamp = first.get("timestamp")
    cwd = first.get("cwd")
    return SessionRef(
        harness="qwen",
        session_id=layout.session_id_of(path),
        path=path,
        title=None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        created_at=time_from_iso(stamp) if isinstance(stamp, str) else None,
        updated_at=_last_time(path, size),
        size=size,
    )


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for path in layout.session_files(home):
        ref = _ref(path)
        if ref is not None:
            refs.append(ref)
    return refs
