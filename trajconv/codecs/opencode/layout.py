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
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.opencode_lineage import Flavour, project
from trajconv.codecs.opencode_lineage.project import Located
from trajconv.codecs.opencode_lineage.store import STORAGE, is_sqlite, json_session_file
from trajconv.errors import FormatError

DB = "opencode.db"
DATA_REL = Path(".local") / "share" / "opencode"
DOCUMENT = "opencode-export.json"
#: beside the document: one ``opencode export`` document per child session (sub-agent)
CHILDREN = "opencode-export-children"

#: the names OpenCode gives the lineage's shared format (``trajconv.codecs.opencode_lineage``)
FLAVOUR = Flavour(
    harness="opencode",
    label="OpenCode",
    cli="opencode",
    data="opencode",
    db=DB,
    db_env="OPENCODE_DB",
    document=DOCUMENT,
    children=CHILDREN,
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
    found = project.locate_file(path, session, FLAVOUR)
    if found is not None:
        return found
    data = data_folder(path)
    if data is None:
        raise FormatError(
            path, f"not an OpenCode data folder or home (no {DB}, no {STORAGE}/session/)"
        )
    if session is None:
        raise project.many_sessions(path, FLAVOUR)
    found = project.in_database(data, session, FLAVOUR)
    if found is not None:
        return found
    storage = data / STORAGE
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
