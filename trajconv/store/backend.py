"""Where a store's objects live: one small interface, a local folder or any fsspec URL.

A backend holds immutable objects under keys such as ``snapshots/<hex>.json``. The
store only needs four things of it (see ``docs/store.md``):

- ``put_if_absent(key, write)``: create the object unless it exists, atomically (a
  reader sees it whole or not at all); ``False`` when it was already there. On a
  backend with conditional writes (S3 ``If-None-Match: *``, a local ``link``) two
  writers racing for one key get exactly one winner; ``conditional`` says so.
- ``get(key)`` (``None`` when absent), ``list(prefix)`` (every key below, recursively)
  and ``stat(key)`` (the size, ``None`` when absent).

``replace`` exists for one case only: a content-addressed object whose stored size
is wrong (a damaged upload) is written again with the bytes its digest names.

Credentials are never handled here: fsspec finds them the usual way for each backend
(environment, profile files, instance metadata); an endpoint or other option comes
from fsspec's own configuration (``FSSPEC_S3_ENDPOINT_URL=...`` and the like).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from trajconv.errors import FormatError, TrajconvError, UsageError
from trajconv.store import is_url

Writer = Callable[[BinaryIO], object]

TMP = "tmp"


class Backend(Protocol):
    url: str
    conditional: bool
    """``put_if_absent`` is atomic on the server (no check-then-write race)."""

    def put_if_absent(self, key: str, write: Writer) -> bool: ...

    def replace(self, key: str, write: Writer) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def list(self, prefix: str) -> Iterator[str]: ...

    def stat(self, key: str) -> int | None: ...


def _key(key: str) -> str:
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") or "\\" in p for p in parts):
        raise UsageError(f"{key!r} is not a store object key")
    return key


class LocalBackend:
    """A folder: objects are files, written under ``tmp/`` and linked into place, so a
    key is created at most once even by two processes at the same instant."""

    conditional = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.url = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / _key(key)

    def _staged(self, write: Writer) -> Path:
        tmpdir = self.root / TMP
        tmpdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = tmpdir / f"obj.{os.getpid()}.{secrets.token_hex(6)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return tmp

    def put_if_absent(self, key: str, write: Writer) -> bool:
        dest = self._path(key)
        if dest.exists():
            return False
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self._staged(write)
        try:
            os.link(tmp, dest)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return True

    def replace(self, key: str, write: Writer) -> None:
        dest = self._path(key)
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.replace(self._staged(write), dest)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def list(self, prefix: str) -> Iterator[str]:
        base = self.root / prefix if prefix else self.root
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            rel = Path(dirpath).relative_to(self.root).as_posix()
            if rel == TMP or rel.startswith(TMP + "/"):
                continue
            for name in sorted(filenames):
                yield name if rel == "." else f"{rel}/{name}"

    def stat(self, key: str) -> int | None:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return None


#: URL schemes and the extra of trajconv that installs their fsspec package (pyproject.toml)
EXTRAS = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}


class FsspecBackend:
    """Any fsspec URL (``s3://bucket/prefix``, ``gs://``, ``az://``, ``memory://``...)."""

    def __init__(self, url: str, **options: Any) -> None:
        import fsspec

        self.url = url.rstrip("/")
        try:
            # listings are never cached: another writer may have added objects meanwhile
            self.fs, root = fsspec.url_to_fs(
                self.url, use_listings_cache=False, skip_instance_cache=True, **options
            )
        except ImportError as exc:  # fsspec's "Install s3fs to access S3"
            scheme = self.url.split("://", 1)[0]
            extra = EXTRAS.get(scheme)
            how = f"pip install 'trajconv[{extra}]'" if extra else "install the fsspec package"
            raise UsageError(f"{self.url}: {scheme}:// stores need {how} ({exc})") from None
        self.root = root.rstrip("/")
        self.conditional = True  # until the backend refuses mode "xb"

    def _path(self, key: str) -> str:
        return f"{self.root}/{_key(key)}"

    @contextmanager
    def _reaching(self, key: str, *expected: type[BaseException]) -> Iterator[None]:
        """A backend failure (no such bucket, no credentials, refused, unreachable) as
        an error naming the URL and key; ``expected`` ones pass as they are."""
        try:
            yield
        except Exception as exc:
            if isinstance(exc, (TrajconvError, *expected)):
                raise
            raise FormatError(
                f"{self.url}/{key}", f"cannot reach the store: {type(exc).__name__}: {exc}"
            ) from None

    def put_if_absent(self, key: str, write: Writer) -> bool:
        with self._reaching(key, FileExistsError, NotImplementedError, ValueError):
            return self._put_if_absent(key, write)

    def _put_if_absent(self, key: str, write: Writer) -> bool:
        path = self._path(key)
        if self.conditional:
            try:
                # s3fs sends If-None-Match: * (on the single PUT or the multipart
                # completion), so the object appears whole, once
                self._upload(path, "xb", write)
                return True
            except FileExistsError:
                return False
            except (NotImplementedError, ValueError):
                self.conditional = False  # documented race: check, then write
        if self.fs.exists(path):
            return False
        self._upload(path, "wb", write)
        return True

    def replace(self, key: str, write: Writer) -> None:
        with self._reaching(key):
            self._upload(self._path(key), "wb", write)

    def _upload(self, path: str, mode: str, write: Writer) -> None:
        """Write and commit; a writer that raises abandons the upload (a ``with`` block
        would commit what was written so far on the way out)."""
        handle = self.fs.open(path, mode)
        try:
            write(handle)
            handle.close()
        except BaseException:
            discard = getattr(handle, "discard", None)
            if discard is not None:
                with contextlib.suppress(Exception):
                    discard()
            handle.closed = True
            raise

    def _unless_missing(self, key: str, read: Callable[[str], Any]) -> Any:
        """``read`` of the key's path; ``None`` when there is nothing there."""
        try:
            with self._reaching(key, FileNotFoundError):
                return read(self._path(key))
        except FileNotFoundError:
            return None

    def get(self, key: str) -> bytes | None:
        data = self._unless_missing(key, lambda path: self.fs.cat_file(path))
        return None if data is None else bytes(data)

    def list(self, prefix: str) -> Iterator[str]:
        base = self._path(prefix) if prefix else self.root
        try:
            with self._reaching(prefix or ".", FileNotFoundError):
                found = self.fs.find(base)
        except FileNotFoundError:
            return
        cut = len(self.root) + 1
        for path in sorted(found):
            yield str(path)[cut:]

    def stat(self, key: str) -> int | None:
        info = self._unless_missing(key, lambda path: self.fs.info(path))
        if info is None:
            return None
        return int(info["size"]) if info.get("type") != "directory" else None


def open_backend(location: str | Path) -> Backend:
    """A folder path or ``file://`` URL as a :class:`LocalBackend`, any other URL through fsspec."""
    if isinstance(location, Path) or not is_url(location):
        return LocalBackend(Path(location))
    if location.startswith("file://"):
        return LocalBackend(Path(location.removeprefix("file://")))
    return FsspecBackend(location)
