"""List Mistral Vibe sessions cheaply: each folder's ``CURRENT`` and ``meta.json``."""

from __future__ import annotations

import json
from pathlib import Path

from trajconv.codecs.base import SessionRef
from trajconv.codecs.vibe import layout
from trajconv.snapshot.builder import time_from_iso


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for folder in layout.session_folders(home):
        current = layout.current_of(folder)
        assert current is not None
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        cwd = (meta.get("environment") or {}).get("working_directory")
        created = meta.get("start_time")
        title = meta.get("title")
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        refs.append(
            SessionRef(
                harness="vibe",
                session_id=str(current["session_id"]),
                path=folder,
                title=title if isinstance(title, str) and title else None,
                cwd=cwd if isinstance(cwd, str) and cwd else None,
                created_at=time_from_iso(created) if isinstance(created, str) else None,
                size=size,
            )
        )
    return refs
