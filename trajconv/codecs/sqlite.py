"""Reading a harness's SQLite store without changing anything on disk (every codec that
reads a database uses this one opener).

A database with nothing beside it is opened ``mode=ro&immutable=1``, so SQLite creates and
touches no file next to it. One with a ``-wal`` or ``-shm`` beside it is in use (or was left
so): even a ``mode=ro`` reader writes to ``-shm``, and the latest commits are in the WAL, so
it is read through a private copy of db + ``-wal`` + ``-shm`` (SQLite replays the WAL into
the copy). A store that is locked in place is read through a copy too. See SQLite's
"Write-Ahead Logging" and "URI filenames" pages (https://sqlite.org/wal.html,
https://sqlite.org/uri.html) for ``mode=ro`` and ``immutable``.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from trajconv.errors import FormatError

SIDECARS = ("-wal", "-shm")


def in_use(db: Path) -> bool:
    """Whether a ``-wal`` or ``-shm`` file stands beside ``db``."""
    return any(db.with_name(db.name + s).exists() for s in SIDECARS)


class ReadOnly:
    """``db`` opened read-only (``.con``); a context manager that closes it and removes any
    private copy. A damaged database, found when opening or in any query inside the ``with``
    block, is a FormatError naming ``db``."""

    def __init__(self, db: Path, *, timeout: float = 5.0) -> None:
        self.db = db
        self._tmp: str | None = None
        try:
            if not in_use(db):
                try:
                    self.con = _connect(db, immutable=True, timeout=timeout)
                    return
                except sqlite3.OperationalError:
                    pass  # locked or not openable in place: read a private copy
            self._tmp = tempfile.mkdtemp(prefix="trajconv-sqlite-")
            copy = Path(self._tmp) / db.name
            for suffix in ("", *SIDECARS):
                part = db.with_name(db.name + suffix)
                if part.is_file():
                    shutil.copyfile(part, copy.with_name(copy.name + suffix))
            # not immutable: the copy's WAL must be replayed to see the latest commits
            self.con = _connect(copy, immutable=False, timeout=timeout)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            self._cleanup()
            raise FormatError(db, f"not a readable SQLite database: {exc}") from None

    def close(self) -> None:
        self.con.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> sqlite3.Connection:
        return self.con

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        if isinstance(exc, sqlite3.DatabaseError | UnicodeDecodeError):
            # a damaged page can surface in any query; it is bad input, not a crash
            raise FormatError(self.db, f"not a readable SQLite database: {exc}") from exc


def _connect(db: Path, *, immutable: bool, timeout: float) -> sqlite3.Connection:
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    con = sqlite3.connect(f"file:{quote(str(db.absolute()))}?{flags}", uri=True, timeout=timeout)
    try:
        con.execute("PRAGMA query_only = 1")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        con.close()
        raise
    return con
