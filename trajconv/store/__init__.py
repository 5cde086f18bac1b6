"""The archive store: Snapshots by id, artifacts once by sha256, an index of what was archived.

``trajconv.store.local`` is the store in a local folder. The store knows no codec; walking
the native homes and reading their sessions into a store is ``trajconv.harvest``.
"""

from __future__ import annotations

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
    export_store,
    find_store,
    import_store,
    is_store,
    load_input,
    verify_store,
)

__all__ = [
    "EXPORT_FORMAT",
    "STORE_FORMAT",
    "Added",
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
    "load_input",
    "verify_store",
]
