"""The central Snapshot: models, canonical hashing, diagnostics, schema. Imports no codec."""

from trajconv.snapshot.builder import SnapshotBuilder
from trajconv.snapshot.diagnostics import REGISTRY, Diagnostics
from trajconv.snapshot.io import dump, dumps, load, loads, verify, verify_document
from trajconv.snapshot.models import FORMAT, Artifact, Evidence, Session, Snapshot, Source

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
