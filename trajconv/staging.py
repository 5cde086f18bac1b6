"""Write a folder whole or not at all: into a hidden staging folder beside it, then rename.

Every folder trajconv produces (an export, an imported store, a Parquet dataset) is written
this way, so a failure at any step, a full disk or Ctrl-C leaves no half-written output and
never touches an existing one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from trajconv.errors import RefusedError


def require_empty(dest: Path, refusing: str = "refusing to replace it") -> None:
    """RefusedError unless ``dest`` is missing or an empty folder (not a link to one)."""
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise RefusedError(f"{dest} exists and is not an empty folder; {refusing}")


@contextlib.contextmanager
def staged_folder(dest: Path, refusing: str = "refusing to replace it") -> Iterator[Path]:
    """A new empty folder beside ``dest`` to write ``dest``'s content into; renamed to
    ``dest`` when the block ends, removed when it raises. ``dest`` must be missing or an
    empty folder, when the block starts and again before the rename (``refusing`` says what
    the RefusedError refuses)."""
    require_empty(dest, refusing)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.trajconv-{secrets.token_hex(6)}"
    try:
        staging.mkdir(mode=0o700)
        yield staging
        require_empty(dest, refusing)
        if dest.exists():
            dest.rmdir()
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
