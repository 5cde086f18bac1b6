"""Aider sessions below a folder: every ``.aider.chat.history.md`` (see ``layout``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from trajconv.codecs.aider import layout
from trajconv.codecs.base import SessionRef
from trajconv.snapshot.builder import iso_ms


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for path in layout.histories(home):
        found = layout.session_id(path)
        if found is None:
            continue  # an empty file
        sid = found[0]
        st = os.stat(path)
        refs.append(
            SessionRef(
                harness="aider",
                session_id=sid,
                path=path,
                cwd=str(path.parent),
                # the file's own time: Aider's header times have no zone
                updated_at=iso_ms(datetime.fromtimestamp(st.st_mtime, UTC)),
                size=st.st_size,
            )
        )
    return refs
