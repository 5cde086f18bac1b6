"""List Gemini CLI sessions cheaply: the first line of each session file (its metadata) and
the project folder's cwd; a session resumed in a later minute is listed once."""

from __future__ import annotations

from pathlib import Path

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.gemini import layout
from trajconv.snapshot.builder import time_from_iso


def _first_line(path: Path) -> dict[str, object] | None:
    try:
        with path.open("rb") as fh:
            line = fh.readline(1 << 20)
        obj = orjson.loads(line)
    except (OSError, orjson.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


TAIL = 64 * 1024


def _tail_set(path: Path) -> dict[str, object]:
    """``$set`` values of the whole lines in the file's last 64 KiB, later ones winning (the
    CLI sets ``lastUpdated`` after each message, and ``summary`` when it names a session)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - TAIL))
            tail = fh.read()
    except OSError:
        return {}
    lines = tail.split(b"\n")[0 if size <= TAIL else 1 :]
    found: dict[str, object] = {}
    for line in lines:
        if line.startswith(b'{"$set"'):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj.get("$set"), dict):
                found.update({k: v for k, v in obj["$set"].items() if k != "messages"})
    return found


def _iso(value: object) -> str | None:
    return time_from_iso(value) if isinstance(value, str) else None


def discover(home: Path) -> list[SessionRef]:
    gdir = layout.gemini_dir(home)
    reg = layout.registry(gdir)
    refs: dict[str, SessionRef] = {}
    for path in layout.session_files(gdir):
        meta = _first_line(path) if path.suffix == ".jsonl" else None
        sid = meta.get("sessionId") if meta else layout.header_id(path)
        if not isinstance(sid, str) or (meta and meta.get("kind") == "subagent"):
            continue
        start = meta.get("startTime") if meta else None
        ref = refs.get(sid)
        size = path.stat().st_size
        if ref is not None:  # a later file of the same session (resume in a later minute)
            refs[sid] = SessionRef(
                harness=ref.harness,
                session_id=sid,
                path=ref.path,
                title=ref.title,
                cwd=ref.cwd,
                created_at=ref.created_at,
                # the CLI goes on writing to the file it resumed, often the older one
                updated_at=max(
                    (t for t in (_iso(_tail_set(path).get("lastUpdated")), ref.updated_at) if t),
                    default=None,
                ),
                size=(ref.size or 0) + size,
            )
            continue
        tail = _tail_set(path)
        title = tail.get("summary") or (meta.get("summary") if meta else None)
        refs[sid] = SessionRef(
            harness="gemini",
            session_id=sid,
            path=path,
            title=title if isinstance(title, str) else None,
            cwd=layout.project_cwd(path.parent.parent, reg),
            created_at=time_from_iso(start) if isinstance(start, str) else None,
            updated_at=_iso(tail.get("lastUpdated")),
            size=size,
        )
    return list(refs.values())
