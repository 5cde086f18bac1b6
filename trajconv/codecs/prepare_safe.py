"""Writes into a target home that treat the home's own files as hostile (stdlib only).

Every export's ``prepare.py`` holds this module's body (``export.inline_safe`` puts it
where the script imports it), so the generic prepare and each codec's own one write the
same way:

* a folder is opened (or made) relative to the one before, never through a symbolic
  link (``dir_fd``, ``O_NOFOLLOW``): one put there after the checks, even while the
  script runs, cannot send a write outside the home (:func:`open_folder`);
* a file goes to ``.<name>.prepare-tmp`` beside it, then is renamed; a temporary name of
  our own left by a killed run is removed first, so it never blocks a rerun, and one
  that cannot be written (a full disk) is removed at once (:func:`write_file`);
* what a run made is undone when it fails (:class:`Undo`): a rerun starts from the home
  as it was, instead of being refused because half a session is there.

It also says why a script stops (:func:`fail`) and digests the export's files (:func:`digest`).
"""

from __future__ import annotations

# -- prepare: body --
import contextlib as _contextlib
import errno as _errno
import hashlib as _hashlib
import os as _os
import sys as _sys
from collections.abc import Iterable as _Iterable
from collections.abc import Iterator as _Iterator
from pathlib import Path as _Path
from typing import Any as _Any
from typing import NoReturn as _NoReturn

NOFOLLOW = getattr(_os, "O_NOFOLLOW", 0)
NOFOLLOW_DIR = _os.O_RDONLY | getattr(_os, "O_DIRECTORY", 0) | NOFOLLOW
TMP_SUFFIX = ".prepare-tmp"


def fail(code: int, message: str) -> _NoReturn:
    """Say why on stderr (``prepare: <message>``) and exit with ``code``."""
    print(f"prepare: {message}", file=_sys.stderr)
    raise SystemExit(code)


def digest(path: _Path) -> tuple[str, int]:
    """The sha256 (hex) and size of a file, read a MiB at a time."""
    h = _hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def check_file(here: _Path, entry: dict[str, _Any]) -> _Path:
    """The export's file that the manifest row ``entry`` names (under ``here``); the script
    stops when it is missing or its sha256 or size is not the manifest's."""
    src: _Path = here / entry["path"]
    if not src.is_file():
        fail(1, f"missing file {entry['path']}")
    sha, size = digest(src)
    if sha != entry["sha256"] or size != entry["size"]:
        fail(1, f"{entry['path']}: sha256/size do not match the manifest")
    return src


class UnsafeHome(Exception):
    """A folder of the install path is a symlink or not a folder (refused: exit 1)."""


class Undo:
    """The files and folders this run made under ``home``, removed again on failure
    (files first, newest first; a folder only when it is empty)."""

    def __init__(self, home: _Path) -> None:
        self.home = home
        self.files: list[tuple[str, ...]] = []
        self.dirs: list[tuple[str, ...]] = []
        self.where: object = home
        """What is being written now, for the message of :meth:`guard`."""

    def rollback(self) -> None:
        made = [(p, _os.unlink) for p in reversed(self.files)]
        for parts, remove in [*made, *((p, _os.rmdir) for p in reversed(self.dirs))]:
            with _contextlib.suppress(OSError, UnsafeHome):
                fd = open_folder(self.home, parts[:-1], create=False)
                try:
                    remove(parts[-1], dir_fd=fd)
                finally:
                    _os.close(fd)
        self.files.clear()
        self.dirs.clear()

    @_contextlib.contextmanager
    def guard(self, *, refuse_existing: bool = False) -> _Iterator[None]:
        """Undo what the writes in the ``with`` block made if any of them fails; an unsafe
        home or a write that fails ends the script, naming :attr:`where` (with
        ``refuse_existing``, a file that exists already ends it with code 3)."""
        try:
            yield
        except UnsafeHome as exc:
            self.rollback()
            fail(1, f"refusing to write under {self.where}: {exc}; nothing was installed")
        except OSError as exc:
            self.rollback()
            if refuse_existing and isinstance(exc, FileExistsError):
                fail(3, f"refusing to replace existing file {self.where}")
            fail(1, f"cannot write {self.where}: {exc.strerror or exc}; nothing was installed")
        except BaseException:
            self.rollback()
            raise


def open_folder(
    home: _Path,
    parts: tuple[str, ...],
    mode: int | None = None,
    undo: Undo | None = None,
    *,
    create: bool = True,
) -> int:
    """An fd of ``home/parts``, each folder opened (or made, noted in ``undo``) relative
    to the one before and never through a symlink. ``mode``: that of the last folder
    when it is made. A symlink or a file in the way is :class:`UnsafeHome`."""
    fd = _os.open(home, _os.O_RDONLY | getattr(_os, "O_DIRECTORY", 0))
    where = home
    for i, part in enumerate(parts):
        where = where / part
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            _os.close(fd)
            raise UnsafeHome(f"{where}: {part!r} is not a folder name")
        try:
            try:
                next_fd = _os.open(part, NOFOLLOW_DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                made = True
                try:
                    last = i == len(parts) - 1
                    _os.mkdir(part, 0o777 if mode is None or not last else mode, dir_fd=fd)
                except FileExistsError:  # made meanwhile: opened below, if it is a folder
                    made = False
                if made and undo is not None:
                    undo.dirs.append(parts[: i + 1])
                next_fd = _os.open(part, NOFOLLOW_DIR, dir_fd=fd)
                if made and mode is not None and last:
                    _os.fchmod(next_fd, mode)
        except OSError as exc:
            _os.close(fd)
            if _is_link_refusal(exc):
                raise UnsafeHome(f"{where}: a symlink or not a folder") from None
            raise
        _os.close(fd)
        fd = next_fd
    return fd


def _is_link_refusal(exc: OSError) -> bool:
    """``open(O_NOFOLLOW | O_DIRECTORY)`` of a symlink or a file: ELOOP / ENOTDIR
    (EMLINK on FreeBSD)."""
    return exc.errno in (_errno.ELOOP, _errno.ENOTDIR, getattr(_errno, "EMLINK", -1))


def exists_in(fd: int, name: str) -> bool:
    """Whether ``name`` is in the folder ``fd`` (a symlink counts; it is not followed)."""
    try:
        _os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def write_file(
    fd: int,
    name: str,
    chunks: _Iterable[bytes],
    mode: int,
    undo: Undo | None = None,
    parts: tuple[str, ...] = (),
    *,
    replace: bool = True,
) -> None:
    """Write ``chunks`` to ``name`` in the folder ``fd`` through a temporary name, no
    symlink followed; ``replace=False`` refuses (``FileExistsError``) a name that is
    there. ``parts`` (the path under the home) is noted in ``undo``."""
    tmp = f".{name}{TMP_SUFFIX}"
    with _contextlib.suppress(FileNotFoundError):
        _os.unlink(tmp, dir_fd=fd)  # a temporary of ours a killed run left: never in the way
    out = _os.open(tmp, _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL | NOFOLLOW, 0o600, dir_fd=fd)
    try:
        with _os.fdopen(out, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            _os.fchmod(fh.fileno(), mode)
        if not replace and exists_in(fd, name):
            raise FileExistsError(f"{name} appeared while preparing")
        _os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with _contextlib.suppress(OSError):
            _os.unlink(tmp, dir_fd=fd)
        raise
    if undo is not None:
        undo.files.append(parts)


def file_chunks(path: _Path, *, tail: bytes = b"") -> _Iterable[bytes]:
    """The bytes of ``path`` a MiB at a time, then ``tail``."""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            yield chunk
    if tail:
        yield tail


def clear_stale(path: _Path) -> bool:
    """Whether ``path`` is gone or held only temporary files of ours (a killed run's,
    removed now): such a folder is no existing session and never blocks a rerun."""
    if not _os.path.lexists(path):
        return True
    if _os.path.islink(path) or not _os.path.isdir(path):
        return False
    temps: list[str] = []
    dirs: list[str] = []
    for top, subdirs, names in _os.walk(path, topdown=False, followlinks=False):
        for sub in subdirs:
            if _os.path.islink(_os.path.join(top, sub)):
                return False
        if any(not n.endswith(TMP_SUFFIX) for n in names):
            return False
        temps += [_os.path.join(top, n) for n in names]
        dirs.append(top)
    for temp in temps:
        _os.unlink(temp)
    for folder in dirs:
        _os.rmdir(folder)
    return True
