"""List Pi sessions cheaply: the header line of each file (as pi's own listing starts) and
the file's size."""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import SessionRef
from trajconv.codecs.pi import layout
from trajconv.snapshot.builder import time_from_iso


def discover(home: Path) -> list[SessionRef]:
    agent = layout.agent_dir_of(home)
    files = layout.session_files(agent) if agent is not None else []
    if agent is None and home.is_dir():
        files = sorted(p for p in home.glob("*.jsonl") if p.is_file())
    refs = []
    for path in files:
        header = layout.header_of(path)
        if header is None:
            continue  # pi skips a file whose first line is not a session header
        created = header.get("timestamp")
        cwd = header.get("cwd")
        refs.append(
            SessionRef(
                harness="pi",
                session_id=str(header["id"]),
                path=path,
                title=None,
                cwd=cwd if isinstance(cwd, str) and cwd else None,
                created_at=time_from_iso(created) if isinstance(created, str) else None,
                size=path.stat().st_size,
            )
        )
    return refs
