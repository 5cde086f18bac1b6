"""Where OpenCode keeps sessions and how a path names one.

Facts (``codecs/opencode/README.md`` §1, §7, §8, observed with 1.18.33): the data folder is
``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``); the database is
``opencode.db`` there (WAL mode); before 1.2.0 sessions were flat JSON files under
``storage/`` (``session/<project>/<id>.json``, ``message/<session>/<id>.json``,
``part/<message>/<id>.json``); ``opencode export`` prints one ``{"info", "messages"}``
document.
"""

from __future__ import annotations

import os
from pathlib import Path

from trajconv.codecs.base import safe_component
from trajconv.codecs.opencode_lineage import Flavour
from trajconv.codecs.opencode_lineage.project import Located
from trajconv.codecs.opencode_lineage.store import STORAGE, is_sqlite, json_session_file
from trajconv.errors import FormatError

DB = "opencode.db"
DATA_REL = Path(".local") / "share" / "opencode"
DOCUMENT = "opencode-export.json"

#: the names OpenCode gives the lineage's shared format (``trajconv.codecs.opencode_lineage``)
FLAVOUR = Flavour(
    harness="opencode",
    label="OpenCode",
    cli="opencode",
    data="opencode",
    db=DB,
    db_env="OPENCODE_DB",
    document=DOCUMENT,
    reader="opencode/1",
    format_version="1.18.33",
    agent="build",
    package="opencode-ai",
)


def default_home() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / "opencode" if xdg else Path.home() / DATA_REL


def data_folder(path: Path) -> Path | None:
    """The OpenCode data folder ``path`` is or holds (a user home), or None."""
    for cand in (path, path / DATA_REL):
        if (cand / DB).is_file() or (cand / STORAGE / "session").is_dir():
            return cand
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

        from trajconv.codecs.opencode_lineage import store as native

        try:
            found = native.db_has_session(data / DB, session)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise FormatError(data / DB, f"cannot read the database: {exc}") from None
        if found:
            return Located("db", data / DB, session)
    if storage.is_dir() and json_session_file(storage, session) is not None:
        return Located("json", storage, session)
    raise FormatError(path, f"no session {session!r} in {data}")
