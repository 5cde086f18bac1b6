"""The archive store: Snapshots by id, artifacts once by sha256, an index of what was archived.

``trajconv.store.local`` is the store in a local folder with an SQLite index;
``trajconv.store.remote`` the same objects on any backend (``trajconv.store.backend``: a
folder or an fsspec URL) with one immutable index object per archived Snapshot. The
store knows no codec; walking the native homes into a store is ``trajconv.harvest``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, Union

from trajconv.errors import UsageError
from trajconv.snapshot.models import Snapshot
from trajconv.store import local
from trajconv.store.backend import Backend, is_url, open_backend
from trajconv.store.local import (
    EXPORT_FORMAT,
    STORE_FORMAT,
    Added,
    IndexRow,
    Moved,
    Store,
    StoreReport,
    artifact_check,
    artifact_resolver,
    find_store,
    is_store,
)

if TYPE_CHECKING:
    from trajconv.store.remote import ObjectStore

AnyStore: TypeAlias = Union[Store, "ObjectStore"]


def open_store(location: str | Path, *, create: bool = False, write: bool = False) -> AnyStore:
    """A local store folder (SQLite index) for a path; the object store for a URL
    (``s3://bucket/prefix``, ``file:///srv/store``, any fsspec URL)."""
    if is_url(location):
        from trajconv.store.remote import ObjectStore

        return ObjectStore.open(location, create=create, write=write)
    return Store.open(Path(location), create=create, write=write)


def load_input(location: str | Path, session: str | None = None) -> Snapshot:
    """A Snapshot from a Snapshot file, a store folder or a store URL (+ ``session``)."""
    if is_url(location):
        if session is None:
            raise UsageError(
                f"{location} is a store; pick a session or Snapshot with --session ID "
                "(trajconv archive log STORE lists them)"
            )
        with open_store(location) as store:
            return local.load_ref(store, session, location)
    return local.load_input(Path(location), session)


def verify_store(location: str | Path) -> StoreReport:
    """Check every Snapshot, artifact and index entry of a store folder or URL."""
    if is_url(location):
        from trajconv.store.remote import verify_remote

        return verify_remote(str(location))
    return local.verify_store(Path(location))


def export_store(location: str | Path, file: Path) -> Moved:
    """A store (folder or URL) as one ``.tar.gz`` with a checksum manifest."""
    if is_url(location):
        from trajconv.store.remote import export_remote

        return export_remote(str(location), file)
    return local.export_store(Path(location), file)


def import_store(file: Path, location: str | Path) -> Moved:
    """Unpack an export into a new store folder or an empty store URL."""
    if is_url(location):
        from trajconv.store.remote import import_remote

        return import_remote(file, str(location))
    return local.import_store(file, Path(location))


__all__ = [
    "EXPORT_FORMAT",
    "STORE_FORMAT",
    "Added",
    "AnyStore",
    "Backend",
    "IndexRow",
    "Moved",
    "Store",
    "StoreReport",
    "artifact_check",
    "artifact_resolver",
    "export_store",
    "find_store",
    "import_store",
    "is_store",
    "is_url",
    "load_input",
    "open_backend",
    "open_store",
    "verify_store",
]
