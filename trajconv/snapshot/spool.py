"""Where a Snapshot keeps what is too big to hold: its records and its artifact bytes.

A Snapshot built from a native session keeps its records as JSON texts in a
private temporary folder (a :class:`Spool`) and reads them back one at a time, and
each artifact's bytes as a :class:`Blob`: a range of a spool file, a file of an
archive store, or (for a Snapshot loaded from a document) bytes in memory. So a
reader, a writer and the Snapshot file writer each hold one record and one chunk
at a time, whatever the size of the session (issue 10).
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import tempfile
import time
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeVar, overload

import orjson

from trajconv.snapshot.blob import CHUNK as CHUNK
from trajconv.snapshot.blob import Blob as Blob
from trajconv.snapshot.jsonstream import Items, Raw

try:
    import fcntl
except ImportError:  # Windows: no owner locks, so no sweep
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from trajconv.snapshot.models import Artifact, Record


PREFIX = "trajconv-spool-"
OWNER = ".owner"
#: a folder whose entries changed this recently is never swept: it may be between two
#: owners (a Snapshot pickled by a worker process, not yet unpickled by its parent)
SWEEP_AFTER = 600.0
#: a folder without an owner file was made by a trajconv from before owner files, which
#: may still be running: swept only once it is a day old
SWEEP_UNOWNED_AFTER = 86_400.0


def _own(folder: Path) -> int | None:
    """Hold a shared lock on ``folder``'s owner file while this process uses it (POSIX
    ``flock``; a process holding it is alive). ``None`` where there is no ``fcntl`` or
    the file system takes no locks (some NFS): a sweep cannot lock it either, so it
    leaves the folder alone."""
    if fcntl is None:
        return None
    fd = os.open(folder / OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def _release(folder: str, fd: int | None) -> None:
    shutil.rmtree(folder, True)
    if fd is not None:
        os.close(fd)


def sweep(tmp: Path) -> list[Path]:
    """Remove the spool folders in ``tmp`` that no living process owns, older than
    :data:`SWEEP_AFTER` (a run that was killed could not remove its own); returns them.

    Only this user's folders are touched, never through a symbolic link, and a folder
    is removed while holding its owner file's exclusive lock, which no owner can then
    take (:data:`SWEEP_UNOWNED_AFTER` for a folder without one).
    """
    if fcntl is None:
        return []
    removed: list[Path] = []
    now = time.time()
    for folder in tmp.glob(PREFIX + "*"):
        try:
            st = folder.lstat()
            if (
                not stat.S_ISDIR(st.st_mode)
                or st.st_uid != os.getuid()
                or now - st.st_mtime < SWEEP_AFTER
            ):
                continue
            try:
                fd = os.open(folder / OWNER, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                if now - st.st_mtime < SWEEP_UNOWNED_AFTER:
                    continue
                fd = None
            try:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: its owner lives
                    # Its owner may have handed it over (renewing its time) and let go
                    # since the first look: only a folder still old goes.
                    if now - folder.lstat().st_mtime < SWEEP_AFTER:
                        continue
                shutil.rmtree(folder)
                removed.append(folder)
            finally:
                if fd is not None:
                    os.close(fd)
        except OSError:
            continue  # locked, gone meanwhile, or not ours to remove
    return removed


_swept = False


class Spool:
    """A private temporary folder, removed when nothing refers to it any more.

    The first Spool of a process also sweeps the folders killed runs left (:func:`sweep`).
    """

    def __init__(self) -> None:
        global _swept
        if not _swept:
            _swept = True
            sweep(Path(tempfile.gettempdir()))
        self.dir = Path(tempfile.mkdtemp(prefix=PREFIX))
        self._fd = _own(self.dir)
        self._cleanup = weakref.finalize(self, _release, str(self.dir), self._fd)
        self._count = 0

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling hands the folder over (a worker process sends a Snapshot to its
        # parent): this side stops owning it, the unpickled Spool removes it later. The
        # folder's time is renewed, so no sweep takes it before the parent holds it.
        self._cleanup.detach()
        os.utime(self.dir)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return (_adopt, (str(self.dir), self._count))

    def new_file(self, stem: str) -> Path:
        self._count += 1
        return self.dir / f"{self._count:06d}-{stem}"


def _adopt(folder: str, count: int) -> Spool:
    spool = Spool.__new__(Spool)
    spool.dir = Path(folder)
    spool._fd = _own(spool.dir)
    spool._cleanup = weakref.finalize(spool, _release, folder, spool._fd)
    spool._count = count
    return spool


def _sequence_eq(self: Sequence[Any], other: object) -> bool:
    """Equal to any sequence of equal items (a spooled log equals the same items in memory)."""
    if not isinstance(other, Sequence) or isinstance(other, str | bytes):
        return False
    return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))


def _record_adapter() -> Any:
    global _ADAPTER
    if _ADAPTER is None:  # imported on first use: once per record was 2 us each
        from pydantic import TypeAdapter

        from trajconv.snapshot.models import Record

        _ADAPTER = TypeAdapter(Record)
    return _ADAPTER


_ADAPTER: Any = None


_KINDS: dict[str, tuple[type[Any], frozenset[str]]] = {}
"""Each record kind's model and its members (filled on first use)."""
_PARTS: dict[str, tuple[type[Any], frozenset[str]]] = {}
"""The models of a record's ``evidence``, ``call`` and ``result``, and their members."""
_NESTED = {"tool-call": "call", "tool-result": "result"}
_new = object.__new__
_set = object.__setattr__


def _load_models() -> None:
    from trajconv.snapshot import models

    for kind, cls in models.RECORD_MODELS.items():
        _KINDS[kind] = (cls, frozenset(cls.model_fields))
    parts: tuple[tuple[str, type[Any]], ...] = (
        ("evidence", models.Evidence),
        ("call", models.ToolCall),
        ("result", models.ToolResult),
    )
    for key, part in parts:
        _PARTS[key] = (part, frozenset(part.model_fields))


def _built(cls: type[Any], values: dict[str, Any]) -> Any:
    """A model of ``values`` (every member given) as validating them makes it, unchecked:
    what ``model_construct`` does, without its defaults, aliases and extras."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def _part(value: dict[str, Any], key: str) -> bool:
    """Whether ``value[key]`` has exactly its model's members; if so, it is made its model."""
    cls, members = _PARTS[key]
    inner = value[key]
    if type(inner) is not dict or inner.keys() != members:
        return False
    value[key] = _built(cls, inner)
    return True


def _record_model(text: bytes | memoryview) -> Record:
    """A spooled record's model.

    Every record in a spool was checked against the models before it was spooled
    (:meth:`RecordSpool.append`, also from a Snapshot file), so its text is made into
    models without validating it again (validating was two thirds of the time, parsing
    the rest); one without exactly its model's members (no spool holds one) is validated.
    """
    value = orjson.loads(text)
    if not _KINDS:
        _load_models()
    kind = value.get("kind") if type(value) is dict else None
    found = _KINDS.get(kind) if type(kind) is str else None
    if found is not None and value.keys() == found[1]:
        nested = _NESTED.get(value["kind"])
        evidence = value["evidence"]
        if (nested is None or _part(value, nested)) and _part(value, "evidence"):
            record: Record = _built(found[0], value)
            return record
        value["evidence"] = evidence  # as it was, for the models to say what is wrong
    checked: Record = _record_adapter().validate_python(value)
    return checked


#: what comes before each record's text in the spool: the separator and indentation of
#: an item of the records array (a member of the document's top-level object)
_ITEM = b",\n    "
_ITEM_PAD = b"\n    "


_T = TypeVar("_T")


class _MadeWhenUsed(Sequence[_T]):
    """A sequence whose items are made when they are used, by :meth:`_items`."""

    def _items(self, positions: range) -> list[_T]:
        """The items at ``positions`` (each in range)."""
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...
    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        if isinstance(index, slice):
            return self._items(range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._items(range(index, index + 1))[0]


class RecordLog(_MadeWhenUsed["Record"]):
    """A Snapshot's records as JSON texts in a spool file, parsed when used.

    The spool file holds the records array of a Snapshot file, items only, byte for
    byte: each record as ``orjson`` ``OPT_INDENT_2`` writes it there, after its
    separator (``,`` then the indentation, :data:`_ITEM`). So a Snapshot file gets
    its records by copying the file in large slices (:meth:`array_pieces`), and a
    record is parsed from its text with the comma left out. Iterating reads the file
    front to back; indexing and ``reversed`` seek. Each pass parses again, so writers
    make one pass where they can.
    """

    def __init__(self, path: Path, offsets: array[int], keep: object) -> None:
        self._path = path
        self._offsets = offsets  # start of each record's text, then the end of the last
        self._keep = keep

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def _texts(self) -> Iterator[memoryview]:
        """Each record's JSON text (indentation before it, which is JSON whitespace)."""
        offsets = self._offsets
        with self._path.open("rb", buffering=CHUNK) as fh:
            read = fh.read
            for i in range(len(offsets) - 1):
                yield memoryview(read(offsets[i + 1] - offsets[i]))[1:]  # the comma aside

    def array_pieces(self, depth: int = 1) -> Iterator[bytes]:
        """The records array as ``OPT_INDENT_2`` writes it ``depth`` levels deep (1: a
        member of the top-level object, as in a Snapshot file), in slices of the spool
        file; deeper, each line moves right (a raw newline is always layout in JSON)."""
        size = self._offsets[-1]
        if not size:
            yield b"[]"
            return
        pad = b"\n" + b"  " * (depth - 1)
        yield b"["
        with self._path.open("rb", buffering=0) as fh:
            fh.seek(1)  # the first item's separator is the bracket
            left = size - 1
            while left > 0:
                chunk = fh.read(min(CHUNK, left))
                if not chunk:
                    raise OSError(f"{self._path}: ends {left} bytes short of the records")
                left -= len(chunk)
                yield chunk if depth == 1 else chunk.replace(b"\n", pad)
        yield pad + b"  ]"

    def dicts(self) -> Iterator[dict[str, Any]]:
        """Each record as the JSON object the Snapshot file holds (no model)."""
        loads = orjson.loads
        for text in self._texts():
            value: dict[str, Any] = loads(text)
            yield value

    def __iter__(self) -> Iterator[Record]:
        for text in self._texts():
            yield _record_model(text)

    def _text_at(self, fh: BinaryIO, index: int) -> bytes:
        fh.seek(self._offsets[index] + 1)  # the comma aside
        return fh.read(self._offsets[index + 1] - self._offsets[index] - 1)

    def _items(self, positions: range) -> list[Record]:
        with self._path.open("rb") as fh:
            return [_record_model(self._text_at(fh, i)) for i in positions]

    def __reversed__(self) -> Iterator[Record]:
        with self._path.open("rb") as fh:
            for i in range(len(self) - 1, -1, -1):
                yield _record_model(self._text_at(fh, i))

    __eq__ = _sequence_eq
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RecordLog({len(self)} records in {self._path})"


ArtifactEntry = tuple[str, str, str, int, Literal["utf8", "base64"], int, int]
"""An artifact as the builder keeps it: name, media type, sha256, size, encoding, the
index of its spool file and its offset there."""


class ArtifactTable:
    """Artifact entries by name, kept in columns.

    A Cursor session has one artifact per blob (80,000 at 100 MB). As models they were
    the largest thing left in memory, and as tuples of strings still about 400 bytes
    each; in columns an entry is its name plus about 140 bytes (the digest as 32 bytes,
    the name's place in the index 60; tracemalloc at 1 GB). Putting a name again
    replaces its entry.
    """

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._media: list[str] = []  # the readers' few media type strings, shared
        self._sha = bytearray()
        self._base64 = bytearray()  # 1 where the encoding is base64
        self._numbers = array("q")  # size, file, offset of each entry

    def put(self, entry: ArtifactEntry) -> None:
        name, media_type, sha256, size, encoding, file, offset = entry
        i = self._index.get(name)
        if i is None:
            self._index[name] = len(self._names)
            self._names.append(name)
            self._media.append(media_type)
            self._sha += bytes.fromhex(sha256)
            self._base64.append(encoding == "base64")
            self._numbers.extend((size, file, offset))
            return
        self._media[i] = media_type
        self._sha[32 * i : 32 * i + 32] = bytes.fromhex(sha256)
        self._base64[i] = encoding == "base64"
        self._numbers[3 * i : 3 * i + 3] = array("q", (size, file, offset))

    def find(self, name: str) -> int | None:
        return self._index.get(name)

    def entry(self, i: int) -> ArtifactEntry:
        size, file, offset = self._numbers[3 * i : 3 * i + 3]
        encoding: Literal["utf8", "base64"] = "base64" if self._base64[i] else "utf8"
        sha256 = self._sha[32 * i : 32 * i + 32].hex()
        return (self._names[i], self._media[i], sha256, size, encoding, file, offset)

    def by_name(self) -> array[int]:
        """Entry positions in name order (the Snapshot's artifact order)."""
        return array("q", sorted(range(len(self._names)), key=self._names.__getitem__))


_READ_AHEAD = 1 << 14
"""The first read-ahead of small artifacts that follow each other (ArtifactLog.dicts)."""


class ArtifactLog(_MadeWhenUsed["Artifact"]):
    """A built Snapshot's artifacts, sorted by name, made into models when used."""

    def __init__(self, table: ArtifactTable, paths: list[Path], keep: object) -> None:
        self._table = table
        self._order = table.by_name()
        self._paths = paths
        self._keep = keep

    def _model(self, i: int) -> Artifact:
        from trajconv.snapshot.models import Artifact

        name, media_type, sha256, size, encoding, file, offset = self._table.entry(i)
        art = Artifact.model_construct(
            name=name, media_type=media_type, sha256=sha256, size=size, encoding=encoding
        )
        art._blob = Blob(path=self._paths[file], offset=offset, size=size, keep=self._keep)
        return art

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Artifact]:
        return map(self._model, self._order)

    def _items(self, positions: range) -> list[Artifact]:
        return [self._model(self._order[i]) for i in positions]

    def get(self, name: str) -> Artifact | None:
        i = self._table.find(name)
        return None if i is None else self._model(i)

    def dicts(self, read_below: int = 0) -> Iterator[tuple[dict[str, Any], Blob]]:
        """Each artifact's members (``data`` aside) and its bytes, in name order, no model.

        An artifact smaller than ``read_below`` comes as bytes read here, through one open
        file per spool file (a Cursor chat has 80,000 small artifacts in one pack); where
        they follow each other in their file as in name order (an OpenHands session's event
        files), they are read ahead in growing spans (:meth:`_read_small`), not one by one.
        """
        files: dict[int, int] = {}
        spans: dict[int, list[Any]] = {}
        table = self._table  # its columns read here: ArtifactTable.entry for each was a third
        names, media, base64s, numbers = table._names, table._media, table._base64, table._numbers
        digests = table._sha
        try:
            for i in self._order:
                name, size, file, offset = names[i], numbers[3 * i], *numbers[3 * i + 1 : 3 * i + 3]
                meta = {
                    "name": name,
                    "media_type": media[i],
                    "sha256": digests[32 * i : 32 * i + 32].hex(),
                    "size": size,
                    "encoding": "base64" if base64s[i] else "utf8",
                }
                if size < read_below:
                    span = spans.get(file)
                    if span is None:
                        fd = files[file] = os.open(self._paths[file], os.O_RDONLY)
                        span = spans[file] = [fd, -1, b"", 0]
                    at = offset - span[1]
                    if at >= 0 and at + size <= len(span[2]):
                        data = span[2][at : at + size]
                    else:
                        data = self._read_small(span, offset, size, name, file)
                    yield meta, Blob.from_bytes(data)
                else:
                    path = self._paths[file]
                    yield meta, Blob(path=path, offset=offset, size=size, keep=self._keep)
        finally:
            for fd in files.values():
                os.close(fd)

    def _read_small(self, span: list[Any], offset: int, size: int, name: str, file: int) -> bytes:
        """The bytes of a small artifact not in ``span`` (file descriptor, start and bytes
        of the last read of its file, how far it read ahead): read alone, or, when it
        starts in the last read or where it ended, with the bytes after it (twice as many
        each time, up to CHUNK; a read out of order reads no more than the artifact)."""
        fd, start, held, ahead = span
        follows = start <= offset <= start + len(held)
        ahead = min(max(2 * ahead, _READ_AHEAD), CHUNK) if follows else 0
        data = os.pread(fd, max(size, ahead), offset)
        if len(data) < size:
            raise OSError(f"{self._paths[file]}: ends short of artifact {name}")
        span[1:] = [offset, data, ahead]
        return data if len(data) == size else data[:size]

    def metadata(self) -> Iterator[dict[str, Any]]:
        """name, sha256 and size of each artifact (what the Snapshot id hashes) and its
        media type (what ``meta_hash`` hashes), no model."""
        for i in self._order:
            name, media, sha256, size, *_rest = self._table.entry(i)
            yield {"name": name, "media_type": media, "sha256": sha256, "size": size}

    __eq__ = _sequence_eq
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ArtifactLog({len(self)} artifacts)"


def artifact_lookup(artifacts: Sequence[Artifact]) -> Callable[[str], Artifact | None]:
    """Find artifacts by name: a built Snapshot's index, or a dict of loaded ones."""
    if isinstance(artifacts, ArtifactLog):
        return artifacts.get
    return {a.name: a for a in artifacts}.get


def artifact_dicts(
    artifacts: Iterable[Any], read_below: int = 0
) -> Iterator[tuple[dict[str, Any], Blob | None]]:
    """Artifacts as the Snapshot file holds them (``data`` aside) with their bytes, if
    present; a built Snapshot's log gives them without models (see ArtifactLog.dicts)."""
    if isinstance(artifacts, ArtifactLog):
        yield from artifacts.dicts(read_below)
    else:
        for art in artifacts:
            blob, data = art.blob, art.data
            if blob is None and data is not None:  # a model made with its data inline
                raw = base64.b64decode(data) if art.encoding == "base64" else data.encode()
                blob = Blob.from_bytes(raw)
            yield art.model_dump(mode="json", exclude={"data"}), blob


def record_dicts(records: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Records as the Snapshot file holds them; a spooled log gives them without models."""
    if isinstance(records, RecordLog):
        yield from records.dicts()
    else:
        for record in records:
            yield record.model_dump(mode="json")


def records_value(records: Iterable[Any], depth: int = 1) -> Raw | Items:
    """The records array to write ``depth`` levels deep in a JSON document (1: a member
    of its top-level object): a spooled log's texts as they are, other records encoded."""
    if isinstance(records, RecordLog):
        return Raw(records.array_pieces(depth))
    return Items(record_dicts(records))


def _item_text(text: bytes) -> bytes:
    """A record's top-level ``OPT_INDENT_2`` text as an item of the spooled array."""
    return _ITEM + text.replace(b"\n", _ITEM_PAD)


def _record_text(model: Any) -> bytes:
    """A record model's text as :meth:`RecordSpool.append` writes it; an integer beyond
    64 bits becomes the float ``orjson`` reads it as, as the Snapshot file always had it."""
    value = orjson.loads(_record_adapter().dump_json(model))
    return _item_text(orjson.dumps(value, option=orjson.OPT_INDENT_2))


class RecordSpool:
    """Appends validated records to a spool file; ``close`` gives the RecordLog."""

    def __init__(self, spool: Spool) -> None:
        self._spool = spool
        self._path = spool.new_file("records")
        self._fh = self._path.open("wb", buffering=CHUNK)  # one write call per MiB
        self._offsets = array("q", [0])

    def append(self, record: dict[str, Any], hash_tag: str, *, checked: bool = False) -> None:
        """Spool ``record`` (members in model order, without hash) with its chain hash.

        ``record`` is checked against the models first, with ``hash`` added (the values
        as they are: no text is copied) unless the caller ``checked`` that they accept it
        (:func:`trajconv.snapshot.builder.plain_record`), so every spooled record is
        valid and readers of the spool need not validate again. Its text is the record's
        own ``OPT_INDENT_2`` JSON with the hash put in after ``evidence``, where the models
        have it (the builder makes ``kind`` follow ``evidence``), moved right to its place
        in the array, where only a top-level member is indented by exactly six spaces.
        """
        try:
            text = orjson.dumps(record, option=orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits
            text = None
        record["hash"] = hash_tag
        if text is None or not checked:
            # what is stored is what was checked (the adapter is built only for such a
            # record: building it was a tenth of a 10 MB conversion)
            model = _record_adapter().validate_python(record, strict=True)
            if text is None:
                self._write(_record_text(model))
                return
        text = text.replace(b"\n", _ITEM_PAD)  # as an item: see _item_text
        cut = text.index(b',\n      "kind": ')
        tag = hash_tag.encode()
        self._write(b"".join((_ITEM, text[:cut], b',\n      "hash": "', tag, b'"', text[cut:])))

    def append_item(self, item: bytes) -> None:
        """Spool a checked record's text exactly as the spool holds it: its separator,
        then its text as an item of a Snapshot file's records array (the file loader has
        a record's text in that form already)."""
        self._write(item)

    def _write(self, line: bytes) -> None:
        """One record's text, with the separator before it."""
        self._fh.write(line)
        self._offsets.append(self._offsets[-1] + len(line))

    def rechain(self, head: bytes) -> bytes:
        """Hash every spooled record again from a new chain head; returns the last digest.

        For a source completed after records were spooled (a harness version read late);
        one more pass over the spool, record by record.
        """
        from trajconv.snapshot import hashing

        self._fh.close()
        old = RecordLog(self._path, self._offsets, None)
        self._path = self._spool.new_file("records")
        self._offsets = array("q", [0])
        self._fh = self._path.open("wb", buffering=CHUNK)
        adapter = _record_adapter()
        digest = head
        for model in old:
            digest = hashing.record_digest(digest, adapter.dump_python(model, mode="json"))
            self._write(_record_text(model.model_copy(update={"hash": hashing.tag(digest)})))
        old._path.unlink()
        return digest

    def close(self) -> RecordLog:
        self._fh.close()
        return RecordLog(self._path, self._offsets, self._spool)
