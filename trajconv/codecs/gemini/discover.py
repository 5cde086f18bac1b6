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
                updated_at=time_from_iso(start) if isinstance(start, str) else ref.updated_at,
                size=(ref.size or 0) + size,
            )
            continue
        title = meta.get("summary") if meta else None
        refs[sid] = SessionRef(
            harness="gemini",
            session_id=sid,
            path=path,
            title=title if isinstance(title, str) else None,
            cwd=layout.project_cwd(path.parent.parent, reg),
            created_at=time_from_iso(start) if isinstance(start, str) else None,
            updated_at=None,
            size=size,
        )
    return list(refs.values())
