"""The central Snapshot: models, canonical hashing, diagnostics, schema. Imports no codec.

The names below load on first use, so importing one submodule (``trajconv.snapshot.models``
for a type) does not import the builder, hashing and I/O as well.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajconv.snapshot.builder import SnapshotBuilder
    from trajconv.snapshot.diagnostics import REGISTRY, Diagnostics
    from trajconv.snapshot.io import dump, dumps, load, loads, verify, verify_document
    from trajconv.snapshot.models import FORMAT, Artifact, Evidence, Session, Snapshot, Source

_WHERE = {
    "FORMAT": "models",
    "REGISTRY": "diagnostics",
    "Artifact": "models",
    "Diagnostics": "diagnostics",
    "Evidence": "models",
    "Session": "models",
    "Snapshot": "models",
    "SnapshotBuilder": "builder",
    "Source": "models",
    "dump": "io",
    "dumps": "io",
    "load": "io",
    "loads": "io",
    "verify": "io",
    "verify_document": "io",
}

__all__ = [
    "FORMAT",
    "REGISTRY",
    "Artifact",
    "Diagnostics",
    "Evidence",
    "Session",
    "Snapshot",
    "SnapshotBuilder",
    "Source",
    "dump",
    "dumps",
    "load",
    "loads",
    "verify",
    "verify_document",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'trajconv.snapshot' has no attribute {name!r}")
    return getattr(importlib.import_module(f"trajconv.snapshot.{module}"), name)
