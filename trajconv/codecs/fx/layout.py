"""Where fx (vercel-labs/fx) keeps sessions: ``$HOME/.fx/sessions/<session-id>/``.

Facts from ``codecs/fx/README.md`` (upstream ``session_layout.zig`` /
``session_store_paths.zig``, the Rust port's ``fx_sessions.rs``): a session id is 1-255 bytes of
``[A-Za-z0-9._-]``, not ``.`` or ``..``, and equals the folder name; fx mints
``<unix-ms>-<unix-ns>-<16 lowercase hex>``. ``sessions/`` also holds caches and pointers
(``.resume-catalog``, ``list.json``, ``latest/``, ``*.lock``) and, in newer builds, a reserved
``v2`` folder (any letter case) that a reader skips.
"""

from __future__ import annotations

import re
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim, safe_component
from trajconv.errors import FormatError, UnsafePathError, UsageError

FX_DIR = ".fx"
SESSIONS = "sessions"
SESSION_JSON = "session.json"
EVENTS = "events.jsonl"
TOOL_RESULTS = "tool-results"
DISPLAY = "display.json"
AUTHORITY = "authority.json"
RECOVERY = "recovery.json"

_ID = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
#: the shape fx itself mints
NATIVE_ID = re.compile(r"^[0-9]{1,20}-[0-9]{1,30}-[0-9a-f]{16}$")
#: a tool-result or diff handle: 1-160 bytes of [A-Za-z0-9._-], no ".."
_HANDLE = re.compile(r"^[A-Za-z0-9._-]{1,160}$")
#: entries of ``sessions/`` that are never sessions
NOT_SESSIONS = frozenset({"latest", "list.json", "summary.json", ".resume-catalog"})


def is_session_id(value: str) -> bool:
    return bool(_ID.match(value)) and value not in (".", "..")


def check_session_id(value: str, file: str | Path = "<snapshot>") -> str:
    """Accept a session id that is safe as a folder name and valid for fx, or raise."""
    safe_component(value, "session id", file)
    if not is_session_id(value):
        raise UnsafePathError(file, f"session id {value!r} is not a valid fx session id")
    return value


def is_handle(value: str) -> bool:
    return bool(_HANDLE.match(value)) and ".." not in value


def is_reserved(name: str) -> bool:
    """Names in ``sessions/`` that are not session folders (v2 store, caches, locks)."""
    return name.lower() == "v2" or name in NOT_SESSIONS or name.startswith(".")


def sessions_root(path: Path) -> Path | None:
    """``<path>/sessions`` for an fx root, ``<path>/.fx/sessions`` for a HOME, else None."""
    for cand in (path / SESSIONS, path / FX_DIR / SESSIONS):
        if cand.is_dir():
            return cand
    if path.name == SESSIONS and path.is_dir():
        return path
    return None


def session_dirs(root: Path) -> list[Path]:
    """Session folders under a ``sessions/`` folder, as fx's listing walks them."""
    found = []
    for sdir in sorted(root.iterdir()):
        if (
            sdir.is_dir()
            and not sdir.is_symlink()
            and not is_reserved(sdir.name)
            and is_session_id(sdir.name)
            and (sdir / SESSION_JSON).is_file()
        ):
            found.append(sdir)
    return found


def resolve(path: Path, session: str | None) -> Path:
    """A session folder from a folder, its ``session.json``, or a home/root plus ``--session``."""
    if path.is_file():
        if path.name in (SESSION_JSON, EVENTS):
            return path.parent
        raise FormatError(path, f"not an fx session: expected a folder or {SESSION_JSON}")
    if (path / SESSION_JSON).is_file():
        return path
    root = sessions_root(path)
    if root is None:
        raise FormatError(path, f"not an fx session folder, ~/.fx or HOME (no {SESSION_JSON})")
    if session is None:
        dirs = session_dirs(root)
        if len(dirs) == 1:
            return dirs[0]
        raise UsageError(f"{path}: this fx home holds several sessions; pick one with --session ID")
    check_session_id(session, path)
    sdir = root / session
    if sdir.is_dir() and not sdir.is_symlink() and (sdir / SESSION_JSON).is_file():
        return sdir
    raise UsageError(f"no session {session!r} under {root}")


def claims(path: Path) -> Claim | None:
    """A session folder (``session.json``) or one of its files, an fx root (``sessions/``
    holding session folders) or a user home holding ``.fx``."""
    if path.is_file():
        folder = path.parent
        if path.name == EVENTS and not (folder / SESSION_JSON).is_file():
            return None
        if path.name not in (SESSION_JSON, EVENTS):
            return None
    else:
        folder = path
    if (folder / SESSION_JSON).is_file():
        sure = folder.parent.name == SESSIONS and is_session_id(folder.name)
        return Claim(CERTAIN if sure else LIKELY, "session", (folder.name,))
    if path.name == FX_DIR or (path / FX_DIR).is_dir():
        return Claim(CERTAIN, "home")
    root = sessions_root(path)
    if root is not None and session_dirs(root):
        return Claim(CERTAIN, "home")
    return None
