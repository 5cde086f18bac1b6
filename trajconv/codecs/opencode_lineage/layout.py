"""Where a CLI of the lineage keeps sessions and how a path names one: the data folder
``$XDG_DATA_HOME/<harness>`` (default ``~/.local/share/<harness>``) holding ``<harness>.db``
(and, for OpenCode before 1.2.0, ``storage/``), and the export document the writer writes.
Each codec's ``layout`` calls these with its :class:`Flavour`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.opencode_lineage import Flavour, project
from trajconv.codecs.opencode_lineage.project import Located
from trajconv.codecs.opencode_lineage.store import STORAGE, json_session_file
from trajconv.errors import FormatError


def data_rel(flavour: Flavour) -> Path:
    """The data folder relative to a user home (``.local/share/opencode``)."""
    return Path(".local") / "share" / flavour.data


def default_home(flavour: Flavour) -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / flavour.data if xdg else Path.home() / data_rel(flavour)


def data_folder(path: Path, flavour: Flavour) -> Path | None:
    """The data folder ``path`` is or holds (a user home), or None: a folder holding the
    database (or, for a flavour with legacy storage, ``storage/session/``)."""
    for cand in (path, path / data_rel(flavour)):
        if (cand / flavour.db).is_file():
            return cand
        if flavour.legacy_storage and (cand / STORAGE / "session").is_dir():
            return cand
    return None


def resolve(path: Path, session: str | None, flavour: Flavour) -> Located:
    """A session from a database or export file, or a data folder / home plus ``--session``."""
    found = project.locate_file(path, session, flavour)
    if found is not None:
        return found
    data = data_folder(path, flavour)
    if data is None:
        article = "an" if flavour.label[0] in "AEIOU" else "a"
        legacy = f", no {STORAGE}/session/" if flavour.legacy_storage else ""
        raise FormatError(
            path, f"not {article} {flavour.label} data folder or home (no {flavour.db}{legacy})"
        )
    if session is None:
        raise project.many_sessions(path, flavour)
    found = project.in_database(data, session, flavour)
    if found is not None:
        return found
    storage = data / STORAGE
    if flavour.legacy_storage and storage.is_dir() and json_session_file(storage, session):
        return Located("json", storage, session)
    raise FormatError(path, f"no session {session!r} in {data}")


def claims(path: Path, flavour: Flavour, likely_store: Callable[[Path], bool]) -> Claim | None:
    """The database, an export document or the folder holding one, a data folder or a user
    home holding one; another file for which ``likely_store`` is true is likely a store."""
    if path.is_file():
        if path.name == flavour.db:
            return Claim(CERTAIN, "store")
        if path.name == flavour.document:
            return Claim(CERTAIN, "session")
        if likely_store(path):
            return Claim(LIKELY, "store")
        return None
    if (path / flavour.document).is_file():
        return Claim(CERTAIN, "session")
    return Claim(CERTAIN, "home") if data_folder(path, flavour) is not None else None
