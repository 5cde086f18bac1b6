"""Where an ATIF trajectory lives and which versions exist.

A trajectory is one JSON document, conventionally ``trajectory.json`` in an agent's log
folder (Harbor's ``logs/agent/trajectory.json``); images sit beside it under ``images/``;
a run split by context management continues in the file ``continued_trajectory_ref``
names. Versions ``ATIF-v1.0`` to ``ATIF-v1.8`` exist (Harbor 0.26.0's models list them
as a closed set; RFC 0001, v1.7 edition, gives the history).
"""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import head
from trajconv.errors import FormatError

DOCUMENT = "trajectory.json"

VERSIONS: tuple[str, ...] = tuple(f"ATIF-v1.{minor}" for minor in range(9))
"""Every published version, oldest first."""

DEFAULT_VERSION = "ATIF-v1.7"
"""What the writer emits: the RFC's current version; 1.8 adds only audio parts."""


def minor(version: str) -> int:
    """``"ATIF-v1.7"`` -> 7; the caller has checked ``version in VERSIONS``."""
    return int(version.rsplit(".", 1)[1])


def resolve(path: Path) -> Path:
    """The trajectory document: ``path`` itself, or ``trajectory.json`` in the folder."""
    if path.is_file():
        return path
    if path.is_dir():
        doc = path / DOCUMENT
        if doc.is_file():
            return doc
        raise FormatError(path, f"not an ATIF trajectory folder (no {DOCUMENT})")
    raise FormatError(path, "no such file or folder")


def claims(path: Path) -> Claim | None:
    """A trajectory document (certain when its opening names an ``ATIF-v1.N`` schema) or the
    folder holding ``trajectory.json``. ATIF has no home: trajectories are files wherever an
    evaluation run left them, so no folder is claimed as one."""
    doc = path / DOCUMENT if path.is_dir() else path
    if not doc.is_file() or doc.suffix != ".json":
        return None
    if b'"ATIF-v1.' in head(doc):
        return Claim(CERTAIN, "session")
    return Claim(LIKELY, "session") if doc.name == DOCUMENT else None
