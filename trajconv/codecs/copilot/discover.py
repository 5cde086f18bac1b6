"""List Copilot sessions cheaply: ``workspace.yaml`` and file sizes, never the whole journal."""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import SessionRef
from trajconv.codecs.copilot import layout, native
from trajconv.snapshot.builder import time_from_iso

MAX_WORKSPACE = 1024**2


def _workspace(folder: Path | None) -> native.Workspace | None:
    if folder is None:
        return None
    path = folder / layout.WORKSPACE
    try:
        if not path.is_file() or path.stat().st_size > MAX_WORKSPACE:
            return None
        return native.parse_workspace(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, native.WorkspaceError):
        return None


def _time(value: str | None) -> str | None:
    return time_from_iso(value) if value else None


def discover(home: Path) -> list[SessionRef]:
    """Sessions under a COPILOT_HOME (or a HOME holding ``.copilot``)."""
    copilot_home = layout.copilot_home_of(home)
    if copilot_home is None:
        return []
    refs = []
    for ref in layout.sessions(copilot_home):
        ws = _workspace(ref.folder)
        values = ws.values if ws is not None else {}
        try:
            size: int | None = ref.events.stat().st_size
        except OSError:
            size = None
        refs.append(
            SessionRef(
                harness="copilot",
                session_id=ref.session_id,
                path=ref.folder if ref.folder is not None else ref.events,
                title=ws.title if ws is not None else None,
                cwd=values.get("cwd"),
                created_at=_time(values.get("created_at")),
                updated_at=_time(values.get("updated_at")),
                size=size,
            )
        )
    return refs
