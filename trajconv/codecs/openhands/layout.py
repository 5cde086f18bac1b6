"""Where the OpenHands CLI keeps conversations.

Facts from ``openhands`` 1.16.0 and its ``openhands-sdk`` (README "Layout"):

* conversations live in ``~/.openhands/conversations/<conversation id as 32 hex digits>/``;
* a conversation folder holds ``base_state.json`` (the state without its events) and
  ``events/event-<index, 5 or more digits>-<event id>.json``, one SDK event a file
  (``persistence_const.EVENT_NAME_RE``), in index order;
* a ``task`` sub-agent's conversation is ``subagents/<hex id>/`` inside its parent's folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import pick_session
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError, UsageError

DIR = ".openhands"
CONVERSATIONS = "conversations"
EVENTS = "events"
BASE_STATE = "base_state.json"
SUBAGENTS = "subagents"
#: ``persistence_const.EVENT_NAME_RE``
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")


def store_of(home: Path) -> Path | None:
    """The ``conversations/`` folder of a home: ``home`` itself, its child, or
    ``.openhands/conversations``."""
    for cand in (home, home / CONVERSATIONS, home / DIR / CONVERSATIONS):
        if cand.name == CONVERSATIONS and cand.is_dir():
            return cand
    return None


def event_files(conv: Path) -> list[Path]:
    """The event files of a conversation folder, by index."""
    found = []
    for p in listing(conv / EVENTS):
        m = EVENT_NAME.match(p.name)
        if m and p.is_file() and not p.is_symlink():
            found.append((int(m["idx"]), p))
    return [p for _, p in sorted(found)]


def is_conversation(path: Path) -> bool:
    return path.is_dir() and ((path / EVENTS).is_dir() or (path / BASE_STATE).is_file())


def conversations(home: Path) -> list[Path]:
    store = store_of(home)
    if store is None:
        return []
    return [p for p in listing(store) if is_conversation(p) and not p.is_symlink()]


def subagents(conv: Path) -> list[Path]:
    return [p for p in listing(conv / SUBAGENTS) if is_conversation(p) and not p.is_symlink()]


def claims(path: Path) -> Claim | None:
    """A conversation folder (or its ``events/``), a ``conversations/`` store, or a home."""
    if path.is_file():
        if EVENT_NAME.match(path.name) and path.parent.name == EVENTS:
            return Claim(LIKELY, "session", (path.parent.parent.name,))
        return None
    if path.name == EVENTS and event_files(path.parent):
        return Claim(CERTAIN, "session", (path.parent.name,))
    if is_conversation(path) and event_files(path):
        sure = path.parent.name in (CONVERSATIONS, SUBAGENTS)
        return Claim(CERTAIN if sure else LIKELY, "session", (path.name,))
    found = conversations(path)
    if found:
        return Claim(CERTAIN, "home", tuple(p.name for p in found))
    return None


def resolve(path: Path, session: str | None) -> Path:
    """A conversation folder from itself, its ``events/``, or a home plus ``--session``."""
    if path.is_file() and path.parent.name == EVENTS:
        path = path.parent.parent
    if path.name == EVENTS and path.is_dir():
        path = path.parent
    if is_conversation(path) and store_of(path) is None:
        return path
    store = store_of(path)
    if store is None:
        raise FormatError(path, "not an OpenHands conversation folder or home")
    found = conversations(path)
    if session is not None:  # a sub-agent's conversation is a session too
        found += [sub for conv in found for sub in subagents(conv)]
    picked = pick_session(path, found, session, "OpenHands home", lambda conv: conv.name)
    if picked is None:
        raise UsageError(f"no session {session!r} under {path}")
    return picked
