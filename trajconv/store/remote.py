"""The store on object storage: the local layout, an index of immutable objects.

Same objects as a local store (``trajconv-store.json``, ``snapshots/<hex>.json``,
``artifacts/<sha256>``), on any :class:`~trajconv.store.backend.Backend`. The SQLite
index cannot live on object storage (many writers, no locks, no appends), so each
archived Snapshot of a session gets one small immutable index object, written last::

    index/<sha256(harness NUL session_id)>/<seq:08d>.json   {"format": "trajconv.index/1",
                                                             "seq": N, ...IndexRow}

``seq`` counts the session's rows from 1. A writer creates row ``N+1`` with a
conditional "create only if absent": of two members archiving one session at once,
exactly one wins ``N+1``; the other re-reads the index, relates its Snapshot to the
winner's and takes ``N+2``. Snapshots and artifacts are content-addressed, so racing
writers of one of them write the same bytes.

Reading goes through a local cache that is itself a local store folder
(``$TRAJCONV_CACHE`` or ``~/.cache/trajconv/stores/<hash of the URL>/``): the index
objects already seen are kept in ``objects.sqlite``; ``index.sqlite`` (the local store's
schema) is rebuilt from them whenever new ones appear, and documents and artifacts are
fetched into it when needed. The cache is never the truth: deleting it costs requests,
not data. See ``docs/store.md`` for the failure cases.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from trajconv.errors import FormatError, RefusedError, UsageError, VerifyError
from trajconv.snapshot import io as snapio
from trajconv.snapshot.models import Snapshot
from trajconv.store import MARKER, local
from trajconv.store.backend import Backend, open_backend
from trajconv.store.local import (
    _COLUMNS,
    _HEX,
    _SCHEMA,
    ARTIFACTS,
    INDEX,
    SNAPSHOTS,
    STORE_FORMAT,
    TMP,
    Added,
    IndexRow,
    Moved,
    Store,
    StoreReport,
    _artifact_copy,
    _checked_doc,
    check_label,
    checked_of,
    id_hex,
    relation_of,
    row_of,
    verify_store,
)

INDEX_FORMAT = "trajconv.index/1"
INDEX_PREFIX = "index"
OBJECTS = "objects.sqlite"
_ROW_FIELDS = tuple(IndexRow.__dataclass_fields__)
_RACES = 20


def session_key(harness: str, session_id: str) -> str:
    return hashlib.sha256(f"{harness}\0{session_id}".encode()).hexdigest()


def index_key(harness: str, session_id: str, seq: int) -> str:
    return f"{INDEX_PREFIX}/{session_key(harness, session_id)}/{seq:08d}.json"


def cache_root(url: str) -> Path:
    base = os.environ.get("TRAJCONV_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trajconv"
    )
    return Path(base) / "stores" / hashlib.sha256(url.encode()).hexdigest()[:24]


def parse_index_object(key: str, data: bytes) -> tuple[int, IndexRow]:
    """An index object's seq and row; a damaged one is a FormatError naming its key."""
    parts = key.split("/")
    if len(parts) != 3 or not _HEX.match(parts[1]) or not parts[2].endswith(".json"):
        raise FormatError(key, "not an index/<session key>/<seq>.json object")
    try:
        doc = orjson.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
            raise ValueError(f"format is not {INDEX_FORMAT!r}")
        seq = doc["seq"]
        row = IndexRow(**{f: doc[f] for f in _ROW_FIELDS})
        checks = (
            type(seq) is int and parts[2] == f"{seq:08d}.json",
            session_key(row.harness, row.session_id) == parts[1],
            all(isinstance(getattr(row, f), str) for f in ("harness", "session_id", "snapshot_id")),
            type(row.records) is int and isinstance(row.facts_changed, bool),
        )
        if not all(checks):
            raise ValueError("seq, session or field types do not match its key")
        id_hex(row.snapshot_id)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, UsageError) as exc:
        raise FormatError(key, f"damaged index object: {exc}") from None
    return seq, row


def _ordered(entries: list[tuple[str, int, IndexRow]]) -> list[tuple[str, int, IndexRow]]:
    """Rows by time archived, each session's in its ``seq`` order (clocks of two
    machines may disagree; the chain of a session may not)."""
    by_time = sorted(entries, key=lambda e: (e[2].archived_at, e[0]))
    per_session: dict[str, list[tuple[str, int, IndexRow]]] = {}
    for e in sorted(entries, key=lambda e: e[0]):
        per_session.setdefault(e[0].rsplit("/", 1)[0], []).append(e)
    taken = {k: iter(v) for k, v in per_session.items()}
    return [next(taken[e[0].rsplit("/", 1)[0]]) for e in by_time]


def _last_seqs(
    entries: list[tuple[str, int, IndexRow]], problems: list[str]
) -> dict[tuple[str, str], int]:
    """Each session's last row number; a row missing before it is a problem named by
    its key (an index object deleted or never written whole)."""
    last: dict[tuple[str, str], int] = {}
    for key, seq, row in sorted(entries, key=lambda e: e[0]):
        who = (row.harness, row.session_id)
        want = last.get(who, 0) + 1
        if seq != want:
            problems.append(
                f"{key.rsplit('/', 1)[0]}/{want:08d}.json: index object missing "
                f"({row.harness} {row.session_id} has row {seq})"
            )
        last[who] = seq
    return last


def _write_index(path: Path, rows: list[IndexRow]) -> None:
    """A local-store ``index.sqlite`` holding ``rows``, put in place whole."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(6)}.new")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO archived ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (*(getattr(r, f) for f in _ROW_FIELDS[:-2]), int(r.facts_changed), r.locator)
                for r in rows
            ],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    os.replace(tmp, path)


def _layout(root: Path) -> None:
    for sub in (SNAPSHOTS, ARTIFACTS, TMP):
        (root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
    marker = root / MARKER
    if not marker.is_file():
        marker.write_bytes(orjson.dumps({"format": STORE_FORMAT}) + b"\n")


class ObjectStore:
    """A store on a :class:`Backend`; the same reading methods as :class:`Store`."""

    def __init__(self, backend: Backend, cache: Path, *, writable: bool) -> None:
        self.backend = backend
        self.url = backend.url
        self.cache = cache
        self.writable = writable
        self.problems: list[str] = []
        self._seq: dict[tuple[str, str], int] = {}
        self._built: set[str] = set()
        _layout(cache)
        self._objects = sqlite3.connect(cache / OBJECTS, isolation_level=None)
        self._objects.execute("CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, body BLOB)")
        self._local: Store | None = None
        self.sync()

    @property
    def root(self) -> str:
        return self.url

    @classmethod
    def open(
        cls, location: str | Path, *, create: bool = False, write: bool = False
    ) -> ObjectStore:
        backend = open_backend(location)
        marker = backend.get(MARKER)
        if marker is None:
            if not create:
                raise FormatError(backend.url, f"not a trajconv store (no {MARKER})")
            # another member may be creating this store right now: its marker comes
            # first, so objects without a marker after a second look are not a store
            if next(iter(backend.list("")), None) is not None and backend.get(MARKER) is None:
                raise RefusedError(
                    f"{backend.url} holds objects but no {MARKER}; "
                    "refusing to write a store into it"
                )
            body = orjson.dumps({"format": STORE_FORMAT}) + b"\n"
            backend.put_if_absent(MARKER, lambda handle: handle.write(body))
            marker = backend.get(MARKER) or b""
            write = True
        try:
            fmt = orjson.loads(marker).get("format")
        except (orjson.JSONDecodeError, AttributeError):
            fmt = None
        if fmt != STORE_FORMAT:
            raise FormatError(
                f"{backend.url}/{MARKER}", f"format is {fmt!r}, expected {STORE_FORMAT!r}"
            )
        return cls(backend, cache_root(backend.url), writable=write)

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None
        self._objects.close()

    def __enter__(self) -> ObjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the index ------------------------------------------------------------------
    def sync(self) -> int:
        """Bring the cache's index up to the index objects: one listing, and a GET only
        for objects not seen before (they never change). Returns how many were new."""
        keys = list(self.backend.list(INDEX_PREFIX))
        seen = {k for (k,) in self._objects.execute("SELECT key FROM seen")}
        new = [k for k in keys if k not in seen]
        for key in new:
            data = self.backend.get(key)
            if data is not None:
                self._objects.execute("INSERT OR REPLACE INTO seen VALUES (?, ?)", (key, data))
        if self._local is None or set(keys) != self._built:
            self._rebuild(set(keys))
        return len(new)

    def _rebuild(self, present: set[str]) -> None:
        entries: list[tuple[str, int, IndexRow]] = []
        self.problems = []
        for key, body in self._objects.execute("SELECT key, body FROM seen ORDER BY key"):
            if key not in present:
                continue  # deleted on the backend since: the cache is not the truth
            try:
                seq, row = parse_index_object(key, bytes(body))
            except FormatError as exc:
                self.problems.append(str(exc))
                continue
            entries.append((key, seq, row))
        self._seq = _last_seqs(entries, self.problems)
        if self._local is not None:
            self._local.close()
            self._local = None
        _write_index(self.cache / INDEX, [e[2] for e in _ordered(entries)])
        self._local = Store.open(self.cache)
        self._built = present

    @property
    def _index(self) -> Store:
        assert self._local is not None
        return self._local

    def rows(self, session: str | None = None, harness: str | None = None) -> list[IndexRow]:
        return self._index.rows(session=session, harness=harness)

    def latest(self, harness: str, session_id: str) -> IndexRow | None:
        return self._index.latest(harness, session_id)

    def fingerprints(self) -> dict[tuple[str, str], str]:
        return self._index.fingerprints()

    def sessions(self) -> list[dict[str, Any]]:
        return self._index.sessions()

    def resolve(self, ref: str) -> str:
        key = ref.strip()
        if self.rows(session=key):
            return self._index.resolve(key)
        hexpart = key.removeprefix("sha256:").lower()
        ids = {r.snapshot_id for r in self.rows()}
        found = sorted(i for i in ids if len(hexpart) >= 8 and i[7:].startswith(hexpart))
        return local.resolve_prefix(self, ref, found, self.url)

    # -- objects --------------------------------------------------------------------
    def _fetch(self, key: str) -> Path:
        """The object in the cache (fetched once; content-addressed keys never change)."""
        dest = self.cache / key
        if dest.is_file():
            return dest
        data = self.backend.get(key)
        if data is None:
            raise FormatError(f"{self.url}/{key}", "missing from the store")
        tmp = self.cache / TMP / f"{dest.name}.{os.getpid()}.{secrets.token_hex(6)}"
        tmp.write_bytes(data)
        os.replace(tmp, dest)
        return dest

    def document(self, snapshot_id: str) -> dict[str, Any]:
        return snapio.read_document(self._fetch(f"{SNAPSHOTS}/{id_hex(snapshot_id)}.json"))

    def load(self, snapshot_id: str) -> Snapshot:
        """The Snapshot with its artifacts from the store, checked like a local one."""
        doc = self.document(snapshot_id)
        for art in doc.get("artifacts", []):
            sha = art.get("sha256") if isinstance(art, dict) else None
            if isinstance(sha, str) and _HEX.match(sha):
                with contextlib.suppress(FormatError):  # the check below names it
                    self._fetch(f"{ARTIFACTS}/{sha}")
        try:
            return self._index.load(snapshot_id)
        except (FormatError, VerifyError):
            # what was fetched may be a damaged object: fetched again next time
            for art in doc.get("artifacts", []):
                sha = art.get("sha256") if isinstance(art, dict) else None
                if isinstance(sha, str) and _HEX.match(sha):
                    (self.cache / ARTIFACTS / sha).unlink(missing_ok=True)
            (self.cache / SNAPSHOTS / f"{id_hex(snapshot_id)}.json").unlink(missing_ok=True)
            raise

    # -- writing --------------------------------------------------------------------
    def _put_addressed(self, key: str, size: int, write: Any) -> int:
        """Put a content-addressed object unless it is there with its size; one there
        with another size is a damaged upload and is written again. Returns the bytes
        uploaded (0: nothing sent)."""
        there = self.backend.stat(key)
        if there == size:
            return 0
        if there is None:
            return size if self.backend.put_if_absent(key, write) else 0
        self.backend.replace(key, write)
        return size

    def add(self, snapshot: Snapshot, *, harness: str, session_id: str, fingerprint: str) -> Added:
        """Upload the artifacts and the document if absent, then the index object last."""
        if not self.writable:
            raise UsageError(f"{self.url} was opened read-only")
        check_label(snapshot, harness, session_id, self.url)
        hexid = id_hex(snapshot.id)
        written = nbytes = 0
        for art in snapshot.artifacts:
            write, check = _artifact_copy(snapshot, art)

            def checked(handle: BinaryIO, write: Any = write, check: Any = check) -> None:
                write(handle)
                check()  # raised before close: the upload is abandoned, never completed

            sent = self._put_addressed(f"{ARTIFACTS}/{art.sha256}", art.size, checked)
            written += bool(sent)
            nbytes += sent
        doc = self.cache / SNAPSHOTS / f"{hexid}.json"
        if not doc.is_file():
            tmp = self.cache / TMP / f"{hexid}.{os.getpid()}.{secrets.token_hex(6)}"
            with tmp.open("wb") as handle:
                snapio.write(snapshot, handle, inline_artifacts=False)
            os.replace(tmp, doc)
        size = doc.stat().st_size
        sent = self._put_addressed(
            f"{SNAPSHOTS}/{hexid}.json", size, lambda h: shutil.copyfileobj(doc.open("rb"), h)
        )
        nbytes += sent
        for _ in range(_RACES):
            latest = self.latest(harness, session_id)
            previous = (
                _checked_doc(self.document(latest.snapshot_id)) if latest is not None else None
            )
            relation, facts_changed = relation_of(
                previous, checked_of(snapshot), lambda i: snapshot.records[i].hash
            )
            row = row_of(
                snapshot, harness, session_id, fingerprint, latest, relation, facts_changed
            )
            seq = self._seq.get((harness, session_id), 0) + 1
            body = orjson.dumps({"format": INDEX_FORMAT, "seq": seq, **row.to_json()})
            if self.backend.put_if_absent(index_key(harness, session_id, seq), _writer(body)):
                self.sync()
                return Added(row, bool(sent), written, nbytes)
            self.sync()  # another writer took this row: relate to theirs, take the next
        raise RefusedError(f"{self.url}: lost {_RACES} races for {harness} {session_id}")

    # -- whole-store operations -----------------------------------------------------
    def download(self, dest: Path) -> list[str]:
        """Every object into a new local store folder ``dest`` (fresh bytes, not the
        cache), with ``index.sqlite`` built from the index objects; returns what was
        wrong with the index objects themselves."""
        _layout(dest)
        entries: list[tuple[str, int, IndexRow]] = []
        problems: list[str] = []
        for key in self.backend.list(""):
            top = key.split("/", 1)[0]
            data = self.backend.get(key)
            if data is None:
                continue
            if top == INDEX_PREFIX:
                try:
                    seq, row = parse_index_object(key, data)
                except FormatError as exc:
                    problems.append(str(exc))
                    continue
                entries.append((key, seq, row))
            elif top in (SNAPSHOTS, ARTIFACTS) and key.count("/") == 1:
                (dest / key).write_bytes(data)
            elif key != MARKER:
                problems.append(f"{key}: not an object of a trajconv store")
        _last_seqs(entries, problems)
        _write_index(dest / INDEX, [e[2] for e in _ordered(entries)])
        return problems

    def verify(self) -> StoreReport:
        with tempfile.TemporaryDirectory(prefix="trajconv-verify-") as tmp:
            staging = Path(tmp) / "store"
            index_problems = self.download(staging)
            report = verify_store(staging)
        report.path = self.url
        report.problems[:0] = index_problems
        return report


def verify_remote(location: str) -> StoreReport:
    with ObjectStore.open(location) as store:
        return store.verify()


def export_remote(location: str, file: Path) -> Moved:
    """A remote store as one ``.tar.gz``: every object fetched into a local staging
    store, which must verify, then exported as a local store is."""
    file = Path(file)
    if file.exists():
        raise RefusedError(f"{file} exists; refusing to replace it")
    with tempfile.TemporaryDirectory(prefix="trajconv-export-") as tmp:
        staging = Path(tmp) / "store"
        with ObjectStore.open(location) as store:
            problems = store.download(staging)
        if problems:
            raise VerifyError(f"{location} does not verify: {problems[0]}")
        moved = local.export_store(staging, file)
    return Moved(moved.file, location, moved.files, moved.bytes, moved.snapshots, moved.index_rows)


def import_remote(file: Path, location: str) -> Moved:
    """Unpack an export (checked as a local import is) and upload it into an empty
    remote store: objects first, index objects last."""
    with tempfile.TemporaryDirectory(prefix="trajconv-import-") as tmp:
        staging = Path(tmp) / "store"
        moved = local.import_store(Path(file), staging)
        backend = open_backend(location)
        if next(iter(backend.list("")), None) is not None:
            raise RefusedError(f"{location} is not empty; refusing to import into it")
        for sub in (ARTIFACTS, SNAPSHOTS):
            for path in sorted((staging / sub).iterdir()):
                backend.put_if_absent(f"{sub}/{path.name}", _copier(path))
        seqs: dict[tuple[str, str], int] = {}
        with Store.open(staging) as st:
            for row in st.rows():
                who = (row.harness, row.session_id)
                n = seqs[who] = seqs.get(who, 0) + 1
                body = orjson.dumps({"format": INDEX_FORMAT, "seq": n, **row.to_json()})
                backend.put_if_absent(index_key(*who, n), _writer(body))
        backend.put_if_absent(MARKER, _copier(staging / MARKER))
    return Moved(moved.file, location, moved.files, moved.bytes, moved.snapshots, moved.index_rows)


def _writer(data: bytes) -> Any:
    def write(handle: BinaryIO) -> None:
        handle.write(data)

    return write


def _copier(path: Path) -> Any:
    def copy(handle: BinaryIO) -> None:
        with path.open("rb") as src:
            shutil.copyfileobj(src, handle)

    return copy
