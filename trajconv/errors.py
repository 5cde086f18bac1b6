"""Errors and exit codes shared by the library and the CLI.

The exit-code table lives here, once; the README's table and the CLI read it.
Library code raises these and never prints or exits.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_BAD_INPUT: "bad input: a native file or Snapshot could not be read, "
    "or failed verification",
    EXIT_USAGE: "usage error: unknown command, codec, option or session",
    EXIT_REFUSED: "refused: the session cannot be continued truthfully in the target "
    "(use --allow-lossy), or writing would replace an existing file or session",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); nothing half-written is left behind",
}


class TrajconvError(Exception):
    """Base of every error trajconv raises on purpose."""

    exit_code = EXIT_BAD_INPUT


class FormatError(TrajconvError):
    """Input that cannot be read: names the file, the place in it and the reason."""

    def __init__(
        self,
        file: str | Path,
        reason: str,
        *,
        line: int | None = None,
        row: str | None = None,
        blob: str | None = None,
    ) -> None:
        self.file = str(file)
        self.reason = reason
        self.line = line
        self.row = row
        self.blob = blob
        where = self.file
        if line is not None:
            where += f":{line}"
        if row is not None:
            where += f" row {row}"
        if blob is not None:
            where += f" blob {blob}"
        super().__init__(f"{where}: {reason}")


class LimitError(FormatError):
    """Input over a configured reader limit; says which limit and how to raise it."""

    def __init__(self, file: str | Path, limit: str, value: int, *, line: int | None = None):
        self.limit = limit
        self.value = value
        flag = "--" + limit.replace("_", "-")
        super().__init__(
            file,
            f"over the {limit} limit ({value}); raise it with {flag} or TRAJCONV_{limit.upper()}",
            line=line,
        )


class UnsafePathError(FormatError):
    """An id or name that would escape its folder when used as a path."""


class UsageError(TrajconvError):
    """A request that does not make sense: unknown codec, session or option."""

    exit_code = EXIT_USAGE


class RefusedError(TrajconvError):
    """A write that would lose meaning or replace existing data."""

    exit_code = EXIT_REFUSED


class VerifyError(TrajconvError):
    """A Snapshot whose hashes do not match its content."""


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A write that failed for want of room: a full file system, a quota, a file-size limit."""


class NoSpaceError(TrajconvError):
    """A write that failed because the file system holding ``path`` is full."""

    def __init__(self, path: str | Path, exc: OSError) -> None:
        self.path = str(path)
        super().__init__(
            f"{path}: cannot write: {exc.strerror or exc}; nothing was left half-written "
            "(free space there, or write elsewhere: -o, the store, or TMPDIR)"
        )


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn a write that ran out of room inside the block into a NoSpaceError naming
    ``path`` (the output, the store or the spool folder that filled up)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise NoSpaceError(path, exc) from None
        raise
