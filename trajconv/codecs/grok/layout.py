"""Where Grok Build keeps sessions (``$GROK_HOME`` or ``~/.grok``).

Facts from the Grok Build source ``xai-grok-config/src/paths.rs`` as summarised
in ``codecs/grok/README.md``: group folder = the cwd percent-encoded
byte by byte keeping RFC 3986 unreserved characters, or, when that is longer
than 255 bytes, ``<slug>-<16 hex of blake3(cwd)>`` with the cwd in ``.cwd``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import is_uuid as is_uuid
from trajconv.codecs.common import pick_session
from trajconv.errors import FormatError, UsageError

SESSIONS = "sessions"
UPDATES = "updates.jsonl"
SUMMARY = "summary.json"
CHAT_HISTORY = "chat_history.jsonl"
CWD_FILE = ".cwd"
MAX_NAME = 255
HOME_DIRNAME = ".grok"


def grok_home_of(path: Path) -> Path | None:
    """``path`` itself when it is a Grok home (holds ``sessions/``), its ``.grok`` child
    when it is a user home, else ``None``: ``--home`` takes either."""
    if (path / SESSIONS).is_dir():
        return path
    if (path / HOME_DIRNAME / SESSIONS).is_dir():
        return path / HOME_DIRNAME
    return None


def encode_cwd(cwd: str) -> str:
    encoded = quote(cwd, safe="")  # keeps A-Za-z0-9 and -._~, upper-case %XX otherwise
    if len(encoded.encode()) <= MAX_NAME:
        return encoded
    import blake3

    slug = re.sub(r"[^a-z0-9]+", "-", Path(cwd).name.lower()).strip("-")[:40] or "workspace"
    return f"{slug}-{blake3.blake3(cwd.encode()).hexdigest()[:16]}"


def needs_cwd_file(group: str) -> bool:
    return not unquote(group).startswith("/")


def decode_group(group_dir: Path) -> str | None:
    """The cwd a group folder stands for, or ``None`` when it cannot be told."""
    decoded = unquote(group_dir.name)
    if decoded.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", decoded):
        return decoded
    marker = group_dir / CWD_FILE
    try:
        text = marker.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def session_dirs(home: Path) -> list[Path]:
    """Session folders two levels below ``<home>/sessions``, as Grok walks them (``home``
    may also be the user home holding ``.grok``)."""
    grok_home = grok_home_of(home)
    if grok_home is None:
        return []
    root = grok_home / SESSIONS
    found = []
    for group in sorted(root.iterdir()):
        if not group.is_dir() or group.is_symlink():
            continue
        for sdir in sorted(group.iterdir()):
            if sdir.is_dir() and not sdir.is_symlink() and (sdir / SUMMARY).is_file():
                found.append(sdir)
    return found


def resolve(path: Path, session: str | None) -> Path:
    """A session folder from a session folder, its journal, or a home plus ``--session``."""
    if path.is_file():
        if path.name == UPDATES:
            return path.parent
        raise FormatError(path, f"not a Grok session: expected a folder or {UPDATES}")
    if (path / UPDATES).is_file() or (path / SUMMARY).is_file():
        return path
    home = grok_home_of(path) or (path.parent if path.name == SESSIONS else None)
    if home is None:
        raise FormatError(path, f"not a Grok session folder or home (no {UPDATES}, no {SESSIONS}/)")
    picked = pick_session(path, session_dirs(home), session, "Grok home", lambda d: d.name)
    if picked is not None:
        return picked
    raise UsageError(f"no session {session!r} under {home / SESSIONS}")


def claims(path: Path) -> Claim | None:
    """A session folder or its journal, a Grok home (``sessions/<group>/<id>/``) or a user
    home holding ``.grok``."""
    if path.is_file():
        if path.name == UPDATES and (path.parent / SUMMARY).is_file():
            return Claim(CERTAIN, "session", (path.parent.name,))
        return Claim(LIKELY, "session") if path.name == UPDATES else None
    if (path / UPDATES).is_file() and (path / SUMMARY).is_file():
        return Claim(CERTAIN, "session", (path.name,))
    home = grok_home_of(path) or (path.parent if path.name == SESSIONS else None)
    if home is None:
        return None
    root = home / SESSIONS
    if home.name == HOME_DIRNAME or next(root.glob(f"*/*/{SUMMARY}"), None) is not None:
        return Claim(CERTAIN, "home")
    return None
