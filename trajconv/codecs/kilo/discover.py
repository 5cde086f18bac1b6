"""List Kilo sessions cheaply: the ``session`` table of ``kilo.db``, as ``kilo session list``
does, children included (they name their parent)."""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import SessionRef
from trajconv.codecs.kilo import layout
from trajconv.codecs.opencode_lineage import store


def discover(home: Path) -> list[SessionRef]:
    """Sessions under ``home``: a user home, the Kilo data folder, or a database file."""
    if home.is_file():
        return store.session_refs(home, "kilo") if store.is_sqlite(home) else []
    data = layout.data_folder(home)
    if data is None:
        return []
    return store.session_refs(data / layout.DB, "kilo")
