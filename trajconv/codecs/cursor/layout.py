"""Where Cursor CLI keeps AgentKv stores, and how a reader path resolves to one.

Facts (``codecs/cursor/README.md`` section 1): the CLI keeps
``~/.cursor/chats/<md5 hex of the absolute cwd>/<agentId>/store.db`` (WAL mode,
``-wal``/``-shm`` beside it); ``$CURSOR_CONFIG_DIR`` relocates ``~/.cursor``;
``~/.cursor/acp-sessions/<id>/store.db`` is **unconfirmed** (no public source).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.errors import FormatError, UsageError

STORE = "store.db"
CONFIG_DIR = ".cursor"
CHATS = "chats"
ACP = "acp-sessions"  # unconfirmed layout, read but never written
READOUT_DIR = "cursor"
READOUT_SUFFIX = ".readout.json"


def workspace_hash(cwd: str) -> str:
    """``<workspace-hash>``: lowercase hex MD5 of the absolute workspace path."""
    return hashlib.md5(cwd.encode("utf-8"), usedforsecurity=False).hexdigest()


def config_dir(home: Path) -> Path:
    """The ``.cursor`` folder for ``home`` (a home, or a ``.cursor``/config dir itself)."""
    if (home / CHATS).is_dir() or (home / ACP).is_dir() or home.name == CONFIG_DIR:
        return home
    return home / CONFIG_DIR


def store_rel(cwd: str, agent_id: str) -> str:
    """Home-relative path of the CLI store for ``agent_id`` in workspace ``cwd``."""
    return f"{CONFIG_DIR}/{CHATS}/{workspace_hash(cwd)}/{agent_id}/{STORE}"


def iter_stores(home: Path) -> Iterator[Path]:
    """Every ``store.db`` under ``chats/*/*/`` and (unconfirmed) ``acp-sessions/*/``."""
    base = config_dir(home)
    chats = base / CHATS
    if chats.is_dir():
        for group in sorted(p for p in chats.iterdir() if p.is_dir()):
            for agent in sorted(p for p in group.iterdir() if p.is_dir()):
                if (agent / STORE).is_file():
                    yield agent / STORE
    acp = base / ACP
    if acp.is_dir():
        for agent in sorted(p for p in acp.iterdir() if p.is_dir()):
            if (agent / STORE).is_file():
                yield agent / STORE


def locator(store: Path) -> str:
    """Home-relative locator of a store (never an absolute path of this machine)."""
    agent = store.parent
    group = agent.parent
    if group.parent.name == CHATS:
        return f"{CONFIG_DIR}/{CHATS}/{group.name}/{agent.name}/{store.name}"
    if group.name == ACP:
        return f"{CONFIG_DIR}/{ACP}/{agent.name}/{store.name}"
    if store.name.endswith(READOUT_SUFFIX) and agent.name == READOUT_DIR:
        return f"{READOUT_DIR}/{store.name}"  # an export's readout
    return store.name


def find_readout(folder: Path) -> Path | None:
    found = sorted((folder / READOUT_DIR).glob(f"*{READOUT_SUFFIX}"))
    return found[0] if len(found) == 1 else None


def resolve(path: Path, session: str | None) -> Path:
    """A ``store.db`` or readout file for a path the user gave.

    Accepts a store file, a readout file, an ``<agentId>`` folder, an export folder
    (``cursor/<id>.readout.json``), or a home / ``.cursor`` folder with ``session``.
    """
    if path.is_file():
        return path
    if not path.is_dir():
        raise FormatError(path, "no such file or folder")
    if (path / STORE).is_file():
        return path / STORE
    readout = find_readout(path)
    if readout is not None:
        return readout
    stores = list(iter_stores(path))
    if session is not None:
        matches = [s for s in stores if s.parent.name == session]
        if not matches:
            raise UsageError(f"no Cursor store for session {session!r} under {path}")
        return matches[0]
    if len(stores) == 1:
        return stores[0]
    if not stores:
        raise FormatError(path, "no Cursor store.db or readout found")
    raise UsageError(f"{len(stores)} Cursor stores under {path}; pick one with --session")


def claims(path: Path) -> Claim | None:
    """A ``store.db`` (certain where the CLI puts it, ``chats/<hash>/<agentId>/``), a
    readout (an export's), the agent folder holding either, or a home holding ``chats/``."""
    store = path if path.is_file() else path / STORE
    if store.name == STORE and store.is_file():
        agent = store.parent
        placed = agent.parent.parent.name == CHATS or agent.parent.name == ACP
        return Claim(CERTAIN if placed else LIKELY, "store", (agent.name,) if placed else ())
    if path.name.endswith(READOUT_SUFFIX) or (path.is_dir() and find_readout(path) is not None):
        return Claim(CERTAIN, "session")
    if path.is_dir() and ((config_dir(path) / CHATS).is_dir() or (config_dir(path) / ACP).is_dir()):
        return Claim(CERTAIN, "home")
    return None
