"""Where the Codex CLI keeps sessions (``$CODEX_HOME``, else ``~/.codex``).

The codec README's "Layout" (observed with 0.171.0): rollouts live in
``<home>/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl`` (the session's start,
UTC), archived ones flat in ``<home>/archived_sessions/``; the id in the file name is
``session_meta.payload.id``. ``state_5.sqlite`` is the CLI's thread index (derived).
"""

from __future__ import annotations

import re
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim, safe_component
from trajconv.codecs.common import first_json
from trajconv.codecs.common import is_uuid as is_uuid
from trajconv.errors import FormatError

SESSIONS = "sessions"
ARCHIVED = "archived_sessions"
STATE_DB = "state_5.sqlite"
HOME_DIR = ".codex"
_NAME = re.compile(
    r"^rollout-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-"
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$"
)


def codex_home(path: Path) -> Path | None:
    """The Codex home ``path`` stands for: the home itself or a user home holding ``.codex``."""
    if (path / SESSIONS).is_dir() or (path / ARCHIVED).is_dir():
        return path
    if (path / HOME_DIR).is_dir():
        return path / HOME_DIR
    return None


def parse_name(name: str) -> tuple[str, str] | None:
    """``(start time as in the name, session id)`` of a rollout file name, else None."""
    m = _NAME.match(name)
    return (m.group(1), m.group(2).lower()) if m else None


def rollouts(home: Path) -> list[Path]:
    """Every rollout file of a Codex home: ``sessions/YYYY/MM/DD/`` and ``archived_sessions/``."""
    found: list[Path] = []
    root = home / SESSIONS
    if root.is_dir():
        found += [p for p in root.glob("*/*/*/rollout-*.jsonl") if p.is_file()]
    archived = home / ARCHIVED
    if archived.is_dir():
        found += [p for p in archived.glob("rollout-*.jsonl") if p.is_file()]
    return sorted(p for p in found if not p.is_symlink() and parse_name(p.name))


def home_of(rollout: Path) -> Path | None:
    """The Codex home a rollout file sits in, when it sits where the CLI puts them."""
    if rollout.parent.name == ARCHIVED:
        return rollout.parent.parent
    if len(rollout.parents) > 4 and rollout.parents[3].name == SESSIONS:
        return rollout.parents[4]
    return None


def locator(rollout: Path) -> str:
    home = home_of(rollout)
    return rollout.relative_to(home).as_posix() if home is not None else rollout.name


def resolve(path: Path, session: str | None) -> Path:
    """A rollout file from the file itself, a home (Codex's or the user's) or a folder of
    rollouts (``sessions/YYYY/MM/DD``), plus a session id where it holds more than one."""
    if path.is_file():
        if path.suffix == ".jsonl":
            return path
        raise FormatError(path, "not a Codex rollout: expected rollout-<time>-<id>.jsonl")
    home = codex_home(path)
    if home is None:
        here = sorted(p for p in path.glob("rollout-*.jsonl") if p.is_file() and parse_name(p.name))
        if not here:
            raise FormatError(
                path,
                f"not a Codex home (no {SESSIONS}/ or {ARCHIVED}/, no {HOME_DIR}/) "
                "or a folder of rollouts",
            )
        return _pick(path, here, session)
    return _pick(path, rollouts(home), session)


def _pick(path: Path, found: list[Path], session: str | None) -> Path:
    """The rollout of ``session`` among ``found``, or the only one when no session is given."""
    if session is None:
        if len(found) == 1:
            return found[0]
        raise FormatError(
            path, f"this is a Codex home with {len(found)} sessions; pick one with --session ID"
        )
    safe_component(session, "session id", path)
    wanted = session.lower()
    for rollout in found:
        parsed = parse_name(rollout.name)
        if parsed and parsed[1] == wanted:
            return rollout
    raise FormatError(path, f"no rollout for session {session!r} under {path}")


def claims(path: Path) -> Claim | None:
    """A rollout (``rollout-<time>-<id>.jsonl``, or a JSONL opening with ``session_meta``), a
    folder of rollouts, a Codex home (``sessions/YYYY/MM/DD/``, ``archived_sessions/``) or
    a user home holding ``.codex``."""
    if path.is_file():
        named = parse_name(path.name)
        if named is not None:
            return Claim(CERTAIN, "session", (named[1],))
        first = first_json(path) if path.suffix == ".jsonl" else None
        if first is not None and first.get("type") == "session_meta":
            return Claim(LIKELY, "session")
        return None
    if path.name == HOME_DIR or (path / HOME_DIR).is_dir() or (path / ARCHIVED).is_dir():
        return Claim(CERTAIN, "home")
    if next((path / SESSIONS).glob("*/*/*/rollout-*.jsonl"), None) is not None:
        return Claim(CERTAIN, "home")
    here = [p for p in path.glob("rollout-*.jsonl") if parse_name(p.name)]
    return Claim(CERTAIN, "home") if here else None
