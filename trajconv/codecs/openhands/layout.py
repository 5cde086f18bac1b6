"""Where the OpenHands CLI keeps conversations.

Facts from ``openhands`` 1.16.0 and its ``openhands-sdk`` (README "Layout"):

* conversations live in ``~/.openhands/conversations/<conversation id as 32 hex digits>/``;
* a conversation folder holds ``base_state.json`` (the state without its events) and
  ``events/event-<index, 5 or more digits>-<event id>.json``, one SDK event a file
  (``persistence_const.EVENT_NAME_RE``), in index order;
* a ``task`` sub-agent's conversation is ``subagents/<hex id>/`` inside its parent's folder.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
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


def _events(conv: Path) -> Iterator[tuple[int, str]]:
    """``(index, name)`` of each event file (a regular file, not a link) in ``events/``.

    One ``scandir``: the entry's type comes with its name, so a conversation of thousands
    of events costs no ``stat`` per file (nor sorting ``Path`` objects)."""
    try:
        with os.scandir(conv / EVENTS) as entries:
            for entry in entries:
                m = EVENT_NAME.match(entry.name)
                if m and entry.is_file(follow_symlinks=False):
                    yield int(m["idx"]), entry.name
    except OSError as exc:
        if exc.errno not in _NO_FOLDER:
            raise
        # no events/ folder (a home, or a conversation not started): none, as ``listing``


#: what ``Path.is_dir`` takes for "not a folder" (``listing`` then lists nothing)
_NO_FOLDER = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def event_files(conv: Path) -> list[Path]:
    """The event files of a conversation folder, by index."""
    folder = conv / EVENTS
    return [folder / name for _, name in sorted(_events(conv))]


def has_events(conv: Path) -> bool:
    """Whether a conversation folder holds an event file (stops at the first)."""
    return next(_events(conv), None) is not None


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
    if path.name == EVENTS and has_events(path.parent):
        return Claim(CERTAIN, "session", (path.parent.name,))
    if is_conversation(path) and has_events(path):
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
