"""A folder's file digests: what the loaders compare before and after a real CLI opened a
copy of a session, to prove that loading it changed nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path


def hash_tree(root: Path | None) -> dict[str, str]:
    """sha256 of every regular file under ``root`` (symlinks left out), by path relative to
    it (``/``-separated), sorted; empty when ``root`` is None or not a folder."""
    out: dict[str, str] = {}
    if root is None or not root.is_dir():
        return out
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
