"""Where OpenCode keeps sessions and how a path names one.

Facts (``codecs/opencode/README.md``, observed with 1.18.33): the data folder is
``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``); the database is
``opencode.db`` there (WAL mode); before 1.2.0 sessions were flat JSON files under
``storage/`` (``session/<project>/<id>.json``, ``message/<session>/<id>.json``,
``part/<message>/<id>.json``); ``opencode export`` prints one ``{"info", "messages"}``
document.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from trajconv.codecs.base import CERTAIN, LIKELY, Claim, safe_component
from trajconv.codecs.opencode import native
from trajconv.codecs.opencode.native import CHILDREN as CHILDREN
from trajconv.errors import FormatError

DB = "opencode.db"
STORAGE = "storage"
DATA_REL = Path(".local") / "share" / "opencode"
DOCUMENT = "opencode-export.json"
SQLITE_MAGIC = b"SQLite format 3\x00"


def default_home() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / "opencode" if xdg else Path.home() / DATA_REL


def data_folder(path: Path) -> Path | None:
    """The OpenCode data folder ``path`` is or holds (a user home), or None."""
    for cand in (path, path / DATA_REL):
        if (cand / DB).is_file() or (cand / STORAGE / "session").is_dir():
            return cand
    return None


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class Located:
    """One session: in a database, in the legacy JSON storage, or an export document."""

    kind: Literal["db", "json", "export"]
    path: Path
    """the database file, the ``storage`` folder, or the document"""
    session: str | None


def json_session_file(storage: Path, session: str) -> Path | None:
    for found in sorted((storage / "session").glob(f"*/{session}.json")):
        if found.is_file():
            return found
    return None


def resolve(path: Path, session: str | None) -> Located:
    """A session from a database or export file, or a data folder / home plus ``--session``."""
    if session is not None:
        safe_component(session, "session id", path)
    if path.is_file():
        if is_sqlite(path):
            return Located("db", path, session)
        if path.suffix == ".json":
            return Located("export", path, session)
        raise FormatError(path, "not an OpenCode database (no SQLite header) or export document")
    if (path / DOCUMENT).is_file():  # a trajconv export folder (the writer's readout)
        return Located("export", path / DOCUMENT, session)
    data = data_folder(path)
    if data is None:
        raise FormatError(
            path, f"not an OpenCode data folder or home (no {DB}, no {STORAGE}/session/)"
        )
    storage = data / STORAGE
    if session is None:
        raise FormatError(
            path, "this is an OpenCode data folder with many sessions; pick one with --session ID"
        )
    if (data / DB).is_file():
        import sqlite3

        try:
            found = native.db_has_session(data / DB, session)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise FormatError(data / DB, f"cannot read the database: {exc}") from None
        if found:
            return Located("db", data / DB, session)
    if storage.is_dir() and json_session_file(storage, session) is not None:
        return Located("json", storage, session)
    raise FormatError(path, f"no session {session!r} in {data}")


def claims(path: Path) -> Claim | None:
    """``opencode.db`` (or another database beside a ``storage/`` folder), an export document
    (``opencode-export.json``) or the folder holding one, a data folder (``opencode.db``,
    ``storage/session/``) or a user home holding ``.local/share/opencode``."""
    if path.is_file():
        if path.name == DB:
            return Claim(CERTAIN, "store")
        if path.name == DOCUMENT:
            return Claim(CERTAIN, "session")
        if is_sqlite(path) and (path.parent / STORAGE / "session").is_dir():
            return Claim(LIKELY, "store")
        return None
    if (path / DOCUMENT).is_file():
        return Claim(CERTAIN, "session")
    return Claim(CERTAIN, "home") if data_folder(path) is not None else None
