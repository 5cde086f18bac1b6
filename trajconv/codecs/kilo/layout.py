"""Where Kilo keeps sessions and how a path names one.

Facts (``README.md`` "Where sessions live", checked with 7.7.7): the data folder is
``$XDG_DATA_HOME/kilo`` (default ``~/.local/share/kilo``); the database is ``kilo.db`` there
(WAL mode) unless ``$KILO_DB`` names another file (absolute, or relative to the data folder;
non-release channels use ``kilo-<channel>.db``); ``kilo export`` prints one
``{"info", "messages"}`` document. Kilo has no legacy JSON session storage
(``storage/session_diff/`` holds diffs only).
"""

from __future__ import annotations

import sqlite3
from functools import partial
from pathlib import Path

from trajconv.codecs.base import Claim
from trajconv.codecs.opencode_lineage import Flavour
from trajconv.codecs.opencode_lineage import layout as lineage
from trajconv.codecs.opencode_lineage import store as native
from trajconv.errors import FormatError

#: the names Kilo gives the lineage's shared format
FLAVOUR = Flavour(
    harness="kilo",
    label="Kilo",
    format_version="7.7.7",
    agent="code",
    package="@kilocode/cli",
    user_context="environment_details",
)
DB = FLAVOUR.db
DATA_REL = lineage.data_rel(FLAVOUR)
DOCUMENT = FLAVOUR.document
#: beside the document: one ``kilo export`` document per child session (sub-agent)
CHILDREN = FLAVOUR.children
#: tables Kilo adds to OpenCode's schema (7.7.7): a database with them is Kilo's
OWN_TABLES = ("kilo_board", "kilo_board_message")


#: where Kilo keeps its data, a data folder or home it is handed, the session a path names:
#: the lineage's, with Kilo's names
default_home = partial(lineage.default_home, FLAVOUR)
data_folder = partial(lineage.data_folder, flavour=FLAVOUR)
resolve = partial(lineage.resolve, flavour=FLAVOUR)


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
    return lineage.claims(path, FLAVOUR, _likely_store)


def _likely_store(path: Path) -> bool:
    return path.suffix == ".db" and native.is_sqlite(path) and _has_own_tables(path)
