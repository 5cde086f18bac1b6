"""Where Kilo keeps sessions and how a path names one.

Facts (``README.md`` "Where sessions live", checked with 7.7.7): the data folder is
``$XDG_DATA_HOME/kilo`` (default ``~/.local/share/kilo``); the database is ``kilo.db`` there
(WAL mode) unless ``$KILO_DB`` names another file (absolute, or relative to the data folder;
non-release channels use ``kilo-<channel>.db``); ``kilo export`` prints one
``{"info", "messages"}`` document. Kilo has no legacy JSON session storage
(``storage/session_diff/`` holds diffs only).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.opencode_lineage import Flavour, project
from trajconv.codecs.opencode_lineage import store as native
from trajconv.codecs.opencode_lineage.project import Located
from trajconv.errors import FormatError

DB = "kilo.db"
DATA_REL = Path(".local") / "share" / "kilo"
DOCUMENT = "kilo-export.json"
#: beside the document: one ``kilo export`` document per child session (sub-agent)
CHILDREN = "kilo-export-children"
#: tables Kilo adds to OpenCode's schema (7.7.7): a database with them is Kilo's
OWN_TABLES = ("kilo_board", "kilo_board_message")

#: the names Kilo gives the lineage's shared format
FLAVOUR = Flavour(
    harness="kilo",
    label="Kilo",
    cli="kilo",
    data="kilo",
    db=DB,
    db_env="KILO_DB",
    document=DOCUMENT,
    children=CHILDREN,
    reader="kilo/1",
    format_version="7.7.7",
    agent="code",
    package="@kilocode/cli",
    user_context="environment_details",
)


def default_home() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / "kilo" if xdg else Path.home() / DATA_REL


def data_folder(path: Path) -> Path | None:
    """The Kilo data folder ``path`` is or holds (a user home), or None."""
    for cand in (path, path / DATA_REL):
        if (cand / DB).is_file():
            return cand
    return None


def resolve(path: Path, session: str | None) -> Located:
    """A session from a database or export file, or a data folder / home plus ``--session``."""
    found = project.locate_file(path, session, FLAVOUR)
    if found is not None:
        return found
    data = data_folder(path)
    if data is None:
        raise FormatError(path, f"not a Kilo data folder or home (no {DB})")
    if session is None:
        raise project.many_sessions(path, FLAVOUR)
    found = project.in_database(data, session, FLAVOUR)
    if found is None:
        raise FormatError(path, f"no session {session!r} in {data}")
    return found


def _has_own_tables(path: Path) -> bool:
    """Whether the SQLite file ``path`` has Kilo's own tables (a cheap schema look-up)."""
    try:
        with native.connect(path, FLAVOUR.label) as con:
            names = {
                native.text(r[0])
                for r in con.execute("select name from sqlite_master where type = 'table'")
            }
    except (FormatError, sqlite3.Error, UnicodeDecodeError):
        return False
    return all(t in names for t in OWN_TABLES)


def claims(path: Path) -> Claim | None:
    """``kilo.db``, an export document (``kilo-export.json``) or the folder holding one, a data
    folder holding ``kilo.db`` or a user home holding ``.local/share/kilo``; another SQLite
    file with Kilo's own tables is likely Kilo's."""
    if path.is_file():
        if path.name == DB:
            return Claim(CERTAIN, "store")
        if path.name == DOCUMENT:
            return Claim(CERTAIN, "session")
        if path.suffix == ".db" and native.is_sqlite(path) and _has_own_tables(path):
            return Claim(LIKELY, "store")
        return None
    if (path / DOCUMENT).is_file():
        return Claim(CERTAIN, "session")
    return Claim(CERTAIN, "home") if data_folder(path) is not None else None
