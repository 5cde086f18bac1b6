"""Where GitHub Copilot CLI keeps sessions (``$COPILOT_HOME`` or ``~/.copilot``).

Facts from ``codecs/copilot/README.md``:

* current layout: ``<home>/session-state/<sessionId>/events.jsonl`` + ``workspace.yaml``
  (files 0600, folder 0700), sidecars ``plan.md`` and ``checkpoints/*.md``;
* retired flat layout (CLI ~0.0.35x): ``<home>/session-state/<sessionId>.jsonl`` holding the
  same event lines;
* retired history layout (CLI <= ~0.0.34x):
  ``<home>/history-session-state/session_<sessionId>_<startEpochMs>.json`` (one JSON object with
  OpenAI chat messages), which this codec recognises and refuses by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trajconv.codecs.base import CERTAIN, Claim, safe_component
from trajconv.codecs.common import is_uuid as is_uuid
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError, UsageError

SESSION_STATE = "session-state"
HISTORY_STATE = "history-session-state"
EVENTS = "events.jsonl"
WORKSPACE = "workspace.yaml"
PLAN = "plan.md"
CHECKPOINTS = "checkpoints"
HOME_DIRNAME = ".copilot"

#: text sidecars the reader keeps as artifacts; binary state (session.db,
#: rewind-snapshots) and locks are not read.
TEXT_SIDECARS: tuple[str, ...] = (PLAN,)

_HISTORY_NAME = re.compile(r"^session_(?P<id>.+)_(?P<ms>\d+)\.json$")


class LegacyHistoryError(FormatError):
    """A ``history-session-state`` file of Copilot CLI <= 0.0.34x (not supported)."""


@dataclass(frozen=True)
class SessionPaths:
    """One session on disk: the journal and, for the current layout, its folder."""

    session_id: str
    events: Path
    folder: Path | None
    """``session-state/<id>/``; ``None`` for the flat ``<id>.jsonl`` layout."""
    home: Path | None
    """The COPILOT_HOME it sits in, when it can be told."""

    @property
    def flat(self) -> bool:
        return self.folder is None

    @property
    def locator(self) -> str:
        """Path of the journal relative to the native home."""
        if self.folder is None:
            return f"{SESSION_STATE}/{self.session_id}.jsonl"
        return f"{SESSION_STATE}/{self.session_id}/{EVENTS}"


def copilot_home_of(path: Path) -> Path | None:
    """``path`` itself when it holds ``session-state/``, or its ``.copilot`` child (a HOME)."""
    if (path / SESSION_STATE).is_dir() or (path / HISTORY_STATE).is_dir():
        return path
    if (path / HOME_DIRNAME / SESSION_STATE).is_dir():
        return path / HOME_DIRNAME
    return None


def sessions(home: Path) -> list[SessionPaths]:
    """Sessions under a COPILOT_HOME: folders holding ``events.jsonl``, then flat files."""
    found: list[SessionPaths] = []
    for entry in listing(home / SESSION_STATE):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and (entry / EVENTS).is_file():
            found.append(SessionPaths(entry.name, entry / EVENTS, entry, home))
        elif entry.is_file() and entry.suffix == ".jsonl":
            found.append(SessionPaths(entry.stem, entry, None, home))
    return found


def _legacy(path: Path) -> LegacyHistoryError:
    return LegacyHistoryError(
        path,
        "legacy Copilot CLI history file (history-session-state, CLI <= 0.0.34x) is not "
        "supported; open it once with a current Copilot CLI or convert it by hand",
    )


def resolve(path: Path, session: str | None) -> SessionPaths:
    """A session from its folder, its ``events.jsonl``, a flat ``<id>.jsonl``, or a home."""
    if path.is_file():
        if path.name == EVENTS:
            folder = path.parent
            home = folder.parent.parent if folder.parent.name == SESSION_STATE else None
            return SessionPaths(folder.name, path, folder, home)
        if path.suffix == ".jsonl":
            home = path.parent.parent if path.parent.name == SESSION_STATE else None
            return SessionPaths(path.stem, path, None, home)
        if path.suffix == ".json" and _HISTORY_NAME.match(path.name):
            raise _legacy(path)
        raise FormatError(path, f"not a Copilot session: expected a folder, {EVENTS} or <id>.jsonl")
    if (path / EVENTS).is_file():
        home = path.parent.parent if path.parent.name == SESSION_STATE else None
        return SessionPaths(path.name, path / EVENTS, path, home)
    if (path / WORKSPACE).is_file():
        raise FormatError(path / EVENTS, "session folder has workspace.yaml but no events.jsonl")
    home = copilot_home_of(path)
    if home is None and path.name == SESSION_STATE:
        home = path.parent
    if home is None:
        raise FormatError(
            path, f"not a Copilot session folder or home (no {EVENTS}, no {SESSION_STATE}/)"
        )
    if session is None:
        found = sessions(home)
        if len(found) == 1:
            return found[0]
        if not found and (home / HISTORY_STATE).is_dir():
            raise _legacy(home / HISTORY_STATE)
        raise UsageError(
            f"{path}: this is a Copilot home with many sessions; pick one with --session ID"
        )
    safe_component(session, "session id", path)
    for ref in sessions(home):
        if ref.session_id == session:
            return ref
    history = home / HISTORY_STATE
    if history.is_dir():
        for entry in history.iterdir():
            match = _HISTORY_NAME.match(entry.name)
            if match and match.group("id") == session:
                raise _legacy(entry)
    raise UsageError(f"no session {session!r} under {home / SESSION_STATE}")


def claims(path: Path) -> Claim | None:
    """A session folder (``workspace.yaml``), its ``events.jsonl``, a flat or legacy journal in
    ``session-state/`` or ``history-session-state/``, a Copilot home or a user home holding
    ``.copilot``."""
    if path.is_file():
        beside = path.parent
        if path.name == EVENTS and (beside / WORKSPACE).is_file():
            return Claim(CERTAIN, "session", (beside.name,))
        if beside.name == SESSION_STATE and path.suffix == ".jsonl":
            return Claim(CERTAIN, "session", (path.stem,))
        if beside.name == HISTORY_STATE and _HISTORY_NAME.match(path.name):
            return Claim(CERTAIN, "session")
        return None
    if (path / WORKSPACE).is_file():
        return Claim(CERTAIN, "session", (path.name,))
    if (path.name == SESSION_STATE and path.is_dir()) or copilot_home_of(path) is not None:
        return Claim(CERTAIN, "home")
    return None
