"""Where Mistral Vibe keeps sessions, and how a session folder is recognised.

Facts from the installed ``mistral-vibe`` 3.0.3 (``mistralai_vibe_local_harness/vibe/
_storage.py``, ``UnifiedSessionStore``) and the recorded fixtures (README "Layout"):

* the home is ``$VIBE_HOME`` or ``~/.vibe``; sessions live in ``logs/session/unified/``;
* one folder per session, named by its uuid, holding ``CURRENT``: one canonical JSON line
  ``{"generation", "manifest_sha256", "session_id", "snapshot_sequence", "store_format":
  "mistral.vibe.unified-session-store/v1", "store_format_minor"}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import pick_session
from trajconv.errors import FormatError, UsageError

HOME = Path(".vibe")
UNIFIED = Path("logs") / "session" / "unified"
ENV_HOME = "VIBE_HOME"
STORE_FORMAT = "mistral.vibe.unified-session-store/v1"
MAX_CURRENT = 4096


def default_home() -> Path:
    """``$VIBE_HOME`` or ``~/.vibe``."""
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else Path.home() / HOME


def current_of(folder: Path) -> dict[str, Any] | None:
    """A session folder's ``CURRENT`` pointer when it names this store format, else None."""
    try:
        with (folder / "CURRENT").open("rb") as fh:
            data = fh.read(MAX_CURRENT)
        value = json.loads(data)
    except (OSError, ValueError):
        return None
    if (
        isinstance(value, dict)
        and value.get("store_format") == STORE_FORMAT
        and isinstance(value.get("session_id"), str)
    ):
        return value
    return None


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and current_of(p) is not None)
    except OSError:
        return []


def session_folders(path: Path) -> list[Path]:
    """Session folders under a home, a ``unified/`` folder, or one level deeper (a folder
    holding such a folder, as a fixture case holds ``store/``)."""
    if current_of(path) is not None:
        return [path]
    for root in (path / HOME / UNIFIED, path / UNIFIED, path):
        found = _children(root)
        if found:
            return found
    if path.is_dir():
        return [f for d in sorted(path.iterdir()) if d.is_dir() for f in _children(d)]
    return []


def folder_of_file(path: Path) -> Path | None:
    """The session folder a file of it lies in (``CURRENT``, ``meta.json``, a journal
    segment, a chunk, a generation document), else None."""
    for parent in list(path.parents)[:3]:
        if current_of(parent) is not None:
            return parent
    return None


def claims(path: Path) -> Claim | None:
    """A session folder (its ``CURRENT``), a file inside one, the ``unified/`` folder, a home
    or a user home."""
    if path.is_file():
        folder = folder_of_file(path)
        if folder is None:
            return None
        current = current_of(folder)
        assert current is not None
        return Claim(LIKELY, "session", (str(current["session_id"]),))
    if not path.is_dir():
        return None
    current = current_of(path)
    if current is not None:
        sid = str(current["session_id"])
        return Claim(CERTAIN if sid == path.name else LIKELY, "session", (sid,))
    if (path / UNIFIED).is_dir() or (path / HOME / UNIFIED).is_dir():
        return Claim(CERTAIN, "home")
    found = _children(path)
    if found:
        ids = tuple(p.name for p in found)
        return Claim(CERTAIN if path.name == UNIFIED.name else LIKELY, "store", ids)
    if any(_children(d) for d in sorted(path.iterdir()) if d.is_dir()):
        return Claim(LIKELY, "home")  # a folder holding a store folder (a fixture case)
    return None


def resolve(path: Path, session: str | None) -> Path:
    """The session folder of ``path`` (with ``--session`` when it holds more than one)."""
    if not path.exists():
        raise FormatError(path, "no such file or folder")
    folders = session_folders(path)
    if not folders:
        inside = folder_of_file(path)  # a file or folder inside a session folder
        folders = [inside] if inside is not None else []
    if not folders:
        raise FormatError(path, "not a Mistral Vibe session: no CURRENT naming " + STORE_FORMAT)
    picked = pick_session(path, folders, session, "Vibe folder", lambda f: f.name)
    if picked is not None:
        return picked
    raise UsageError(f"no session {session!r} under {path}")
