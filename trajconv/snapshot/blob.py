"""The bytes of one artifact (:class:`Blob`): in memory, or a span of a spooled file read in
chunks. Its own module so that the models and the spool both use it without importing each
other."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

CHUNK = 1 << 20


class Blob:
    """The bytes of one artifact, read in chunks; equal to another Blob with equal bytes."""

    __slots__ = ("_data", "_keep", "offset", "path", "size")

    def __init__(
        self,
        *,
        path: Path | None = None,
        offset: int = 0,
        size: int,
        data: bytes | None = None,
        keep: object = None,
    ) -> None:
        self.path = path
        self.offset = offset
        self.size = size
        self._data = data
        self._keep = keep  # the Spool the file lives in, kept alive with the Blob

    @classmethod
    def from_bytes(cls, data: bytes) -> Blob:
        return cls(size=len(data), data=data)

    @property
    def whole_file(self) -> Path | None:
        """The file when the Blob is all of it (so a reader can parse it line by line)."""
        if self.path is not None and self.offset == 0 and self.path.stat().st_size == self.size:
            return self.path
        return None

    def chunks(self, size: int = CHUNK) -> Iterator[bytes]:
        if self._data is not None:
            for start in range(0, len(self._data), size):
                yield self._data[start : start + size]
            return
        assert self.path is not None
        left = self.size
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            while left > 0:
                chunk = fh.read(min(size, left))
                if not chunk:
                    raise OSError(f"{self.path}: ends {left} bytes short of the artifact")
                left -= len(chunk)
                yield chunk

    def read(self) -> bytes:
        """All the bytes; for small artifacts (metadata, sidecars)."""
        if self._data is not None:
            return self._data
        return b"".join(self.chunks())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Blob):
            return NotImplemented
        if self.size != other.size:
            return False
        return all(a == b for a, b in zip(_rechunk(self), _rechunk(other), strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "memory" if self._data is not None else f"{self.path}@{self.offset}"
        return f"Blob({self.size} bytes in {where})"


def _rechunk(blob: Blob, size: int = 1 << 16) -> Iterator[bytes]:
    """``blob`` in pieces of exactly ``size`` bytes (the last shorter), to compare two."""
    pending = b""
    for chunk in blob.chunks():
        pending += chunk
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]
    if pending:
        yield pending
