"""The archive store: Snapshots by id, artifacts once by sha256, an index of what was archived.

``trajconv.store.local`` is the store in a local folder with an SQLite index;
``trajconv.store.remote`` the same objects on any backend (``trajconv.store.backend``: a
folder or an fsspec URL) with one immutable index object per archived Snapshot. The
store knows no codec; walking the native homes into a store is ``trajconv.harvest``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, Union

from trajconv.errors import UsageError

if TYPE_CHECKING:
    from trajconv.snapshot.fileload import StoredCheck
    from trajconv.snapshot.io import ArtifactResolver
    from trajconv.snapshot.models import Snapshot
    from trajconv.store.backend import Backend, open_backend
    from trajconv.store.local import (
        EXPORT_FORMAT,
        STORE_FORMAT,
        Added,
        IndexRow,
        Moved,
        Store,
        StoreReport,
        find_store,
    )
    from trajconv.store.remote import ObjectStore

    AnyStore: TypeAlias = Store | ObjectStore

MARKER = "trajconv-store.json"
"""The file that makes a folder a local store (``trajconv.store.local`` writes it)."""
SNAPSHOTS = "snapshots"
"""The folder of a local store that holds its Snapshot files."""


def __getattr__(name: str) -> Any:
    """The names of :mod:`trajconv.store.local` and ``.backend``, imported on first use:
    telling whether a path is a store (``convert`` asks) must not import the store, its
    pydantic models and all."""
    if name == "AnyStore":  # what it was before the names below became lazy
        from trajconv.store.local import Store

        return Union[Store, "ObjectStore"]
    if name in ("Backend", "open_backend"):
        from trajconv.store import backend

        return getattr(backend, name)
    if name in __all__:  # the rest of __all__ not defined here: those of the local store
        from trajconv.store import local

        return getattr(local, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_url(location: str | Path) -> bool:
    """A store location given as ``scheme://...`` (not a plain folder path)."""
    return isinstance(location, str) and "://" in location


def is_store(path: Path) -> bool:
    return (path / MARKER).is_file()


def in_store(path: Path) -> bool:
    """Whether ``path`` is a Snapshot file of a local store (``STORE/snapshots/FILE``,
    what ``find_store`` finds), told without importing the store: ``verify FILE`` and
    ``write FILE`` of any other file need none of it (a tenth of their start-up)."""
    parent = Path(path).resolve().parent
    return parent.name == SNAPSHOTS and is_store(parent.parent)


def artifact_check(path: Path) -> StoredCheck | None:
    """For a stored Snapshot file: its artifacts are checked in its store."""
    if not in_store(path):
        return None
    from trajconv.store import local

    return local.artifact_check(path)


def artifact_resolver(path: Path) -> ArtifactResolver | None:
    """For ``verify FILE``: artifacts of a stored Snapshot come from its store."""
    if not in_store(path):
        return None
    from trajconv.store import local

    return local.artifact_resolver(path)


def open_store(location: str | Path, *, create: bool = False, write: bool = False) -> AnyStore:
    """A local store folder (SQLite index) for a path; the object store for a URL
    (``s3://bucket/prefix``, ``file:///srv/store``, any fsspec URL)."""
    if is_url(location):
        from trajconv.store.remote import ObjectStore

        return ObjectStore.open(location, create=create, write=write)
    from trajconv.store.local import Store

    return Store.open(Path(location), create=create, write=write)


def load_input(location: str | Path, session: str | None = None) -> Snapshot:
    """A Snapshot from a Snapshot file, a store folder or a store URL (+ ``session``)."""
    if not is_url(location) and not Path(location).is_dir() and not in_store(Path(location)):
        # a Snapshot file outside a store: what local.load_input does with it, without
        # importing the store
        from trajconv.snapshot import io as snapio
        from trajconv.snapshot.fileload import load_streamed

        streamed = load_streamed(Path(location))
        if streamed is not None:
            return streamed
        return snapio.validate_document(snapio.read_document(Path(location)), str(location))
    from trajconv.store import local

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
    from trajconv.store import local

    if is_url(location):
        from trajconv.store.remote import verify_remote

        return verify_remote(str(location))
    return local.verify_store(Path(location))


def export_store(location: str | Path, file: Path) -> Moved:
    """A store (folder or URL) as one ``.tar.gz`` with a checksum manifest."""
    from trajconv.store import local

    if is_url(location):
        from trajconv.store.remote import export_remote

        return export_remote(str(location), file)
    return local.export_store(Path(location), file)


def import_store(file: Path, location: str | Path) -> Moved:
    """Unpack an export into a new store folder or an empty store URL."""
    from trajconv.store import local

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
    "in_store",
    "is_store",
    "is_url",
    "load_input",
    "open_backend",
    "open_store",
    "verify_store",
]
