"""The archive store: Snapshots by id, artifacts once by sha256, an SQLite index.

A store is a folder (format ``trajconv.store/1``)::

    STORE/trajconv-store.json    marker: {"format": "trajconv.store/1"}
    STORE/snapshots/<hex>.json   a Snapshot whose artifacts leave ``data`` out; its id is
                                 the same either way (docs/design.md §2, §3)
    STORE/artifacts/<sha256>     the bytes of every artifact, once per digest
    STORE/index.sqlite           one row per archived Snapshot of a session
    STORE/tmp/                   files being written; anything left there is an unfinished write

Writes are crash-safe: a file is written under ``tmp/``, fsynced and renamed into
place; the index row that points at a Snapshot is inserted last, in one
transaction, after the Snapshot and all its artifacts are in place. So the index
only ever points at complete Snapshots. A Snapshot file without an index row
(left by an interrupted run) is complete and harmless, and is indexed when its
session is archived again. Nothing here deletes a Snapshot, an artifact or a row.

The store knows no codec: it imports only ``trajconv.snapshot`` and
``trajconv.errors``. Discovering and reading sessions is ``trajconv.harvest``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io as _io
import os
import re
import secrets
import sqlite3
import sys
import tarfile
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Annotated, Any, BinaryIO, Literal, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trajconv.errors import (
    FormatError,
    NoSpaceError,
    RefusedError,
    UsageError,
    VerifyError,
    writing,
)
from trajconv.snapshot import hashing
from trajconv.snapshot import io as snapio
from trajconv.snapshot.builder import iso_ms
from trajconv.snapshot.fileload import Checked, StoredCheck, load_streamed, verify_streamed
from trajconv.snapshot.models import Artifact, Snapshot
from trajconv.snapshot.spool import Blob
from trajconv.staging import staged_folder
from trajconv.store import MARKER, in_store, is_store
from trajconv.store import SNAPSHOTS as SNAPSHOTS

if sys.platform != "win32":
    import fcntl

STORE_FORMAT = "trajconv.store/1"
EXPORT_FORMAT = "trajconv.store-export/1"
ARTIFACTS = "artifacts"
INDEX = "index.sqlite"
TMP = "tmp"
LOCK = ".lock"
EXPORT_ROOT = "trajconv-store"
EXPORT_MANIFEST = "MANIFEST.json"

Relation = Literal["first", "extends", "diverged", "unchanged"]
RELATIONS: tuple[str, ...] = ("first", "extends", "diverged", "unchanged")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1024 * 1024
_MEMBER = re.compile(rf"({SNAPSHOTS}/[0-9a-f]{{64}}\.json|{ARTIFACTS}/[0-9a-f]{{64}})")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS archived (
    row           INTEGER PRIMARY KEY,
    harness       TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    snapshot_id   TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    archived_at   TEXT NOT NULL,
    relation      TEXT NOT NULL
                  CHECK (relation IN ('first', 'extends', 'diverged', 'unchanged')),
    previous_id   TEXT,
    records       INTEGER NOT NULL,
    last_hash     TEXT,
    facts_changed INTEGER NOT NULL DEFAULT 0,
    locator       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS archived_session ON archived (harness, session_id, row);
"""
_COLUMNS = (
    "harness, session_id, snapshot_id, fingerprint, archived_at, relation, previous_id, "
    "records, last_hash, facts_changed, locator"
)


@dataclass(frozen=True)
class IndexRow:
    """One archived Snapshot of one session, as the index records it."""

    harness: str
    session_id: str
    snapshot_id: str
    fingerprint: str
    """The native fingerprint the session had when it was read (cheap: stat, no content)."""
    archived_at: str
    relation: str
    """``first``, ``extends`` (the previous chain is a prefix), ``diverged`` or ``unchanged``."""
    previous_id: str | None
    records: int
    last_hash: str | None
    facts_changed: bool
    """Session facts or source differ from the previous Snapshot (title, updated_at, ...)."""
    locator: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Added:
    """What ``Store.add`` did."""

    row: IndexRow
    snapshot_written: bool
    artifacts_written: int
    bytes_written: int


@dataclass
class StoreReport:
    """``Store.verify``: problems make the store fail; notes are harmless findings."""

    path: str
    snapshots: int = 0
    artifacts: int = 0
    index_rows: int = 0
    sessions: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, **asdict(self)}


@dataclass(frozen=True)
class Moved:
    """What ``export_store`` / ``import_store`` moved."""

    file: str
    store: str
    files: int
    bytes: int
    snapshots: int
    index_rows: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def now_iso() -> str:
    return iso_ms(datetime.now(UTC))


def id_hex(snapshot_id: str) -> str:
    hexpart = snapshot_id.removeprefix(hashing.PREFIX)
    if not _HEX.match(hexpart):
        raise UsageError(f"{snapshot_id!r} is not a Snapshot id (sha256:<64 hex>)")
    return hexpart


def relation_of(
    previous: Checked | None, current: Checked, hash_at: Callable[[int], str | None]
) -> tuple[Relation, bool]:
    """How ``current`` relates to the ``previous`` stored Snapshot of its session;
    ``hash_at(i)``: ``current``'s record hash at position ``i``.

    ``extends`` when the previous record chain is a prefix of the new one: the old
    last record hash equals the new record hash at the same position (docs/design.md §3).
    Session facts (title, ``updated_at``) are not in the chain head, so a harness that
    updates them as the session grows still extends it. The second value says whether
    source or session facts changed.
    """
    if previous is None:
        return "first", False
    facts_changed = previous.source != current.source or previous.session != current.session
    if previous.id == current.id:
        return "unchanged", False
    n = previous.records
    if n > current.records:
        return "diverged", facts_changed
    if n == 0:
        return "extends", facts_changed
    if hash_at(n - 1) == previous.last_hash:
        return "extends", facts_changed
    return "diverged", facts_changed


def row_of(
    snapshot: Snapshot,
    harness: str,
    session_id: str,
    fingerprint: str,
    latest: IndexRow | None,
    relation: Relation,
    facts_changed: bool,
) -> IndexRow:
    """The index row that records ``snapshot`` after ``latest``, archived now."""
    return IndexRow(
        harness=harness,
        session_id=session_id,
        snapshot_id=snapshot.id,
        fingerprint=fingerprint,
        archived_at=now_iso(),
        relation=relation,
        previous_id=latest.snapshot_id if latest is not None else None,
        records=len(snapshot.records),
        last_hash=snapshot.records[-1].hash if snapshot.records else None,
        facts_changed=facts_changed,
        locator=snapshot.source.locator,
    )


def checked_of(snapshot: Snapshot) -> Checked:
    """What :func:`relation_of` needs of a Snapshot in memory (no artifact digests)."""
    n = len(snapshot.records)
    return Checked(
        snapshot.id,
        n,
        len(snapshot.artifacts),
        snapshot.source.model_dump(mode="json"),
        snapshot.session.model_dump(mode="json"),
        {n - 1: snapshot.records[-1].hash} if n else {},
    )


def _checked_doc(doc: Mapping[str, Any], hashes_at: Collection[int] = ()) -> Checked:
    """What :func:`relation_of` needs of a document parsed whole."""
    records = doc["records"]
    n = len(records)
    picked = {i: records[i]["hash"] for i in hashes_at if 0 <= i < n}
    if n:
        picked[n - 1] = records[-1]["hash"]
    arts = doc["artifacts"]
    digests = tuple(a["sha256"] for a in arts)
    return Checked(doc["id"], n, len(arts), doc["source"], doc["session"], picked, digests)


def _ok() -> None:
    """A check that passes (files whose bytes need no digest check)."""


def _fsync_dir(path: Path) -> None:
    if sys.platform == "win32":  # pragma: no cover - directories cannot be opened there
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _artifact_copy(
    snapshot: Snapshot, art: Artifact
) -> tuple[Callable[[BinaryIO], object], Callable[[], None]]:
    """Copy an artifact's Blob in chunks, and a check that the bytes match its digest."""
    sha = hashlib.sha256()
    size = 0

    def write(handle: BinaryIO) -> None:
        nonlocal size
        for chunk in art.chunks():
            handle.write(chunk)
            sha.update(chunk)
            size += len(chunk)

    def check() -> None:
        if size != art.size or sha.hexdigest() != art.sha256:
            raise VerifyError(
                f"artifact {art.name} of {snapshot.id}: bytes do not match sha256/size"
            )

    return write, check


def store_blob(root: Path, sha256: str) -> Blob | None:
    """The stored bytes of an artifact, read when used (``None`` when absent)."""
    if not _HEX.match(sha256):
        return None
    path = root / ARTIFACTS / sha256
    try:
        return Blob(path=path, size=path.stat().st_size)
    except FileNotFoundError:
        return None


def _with_stored_artifacts(doc: dict[str, Any], root: Path, name: str) -> Snapshot:
    """A stored document as a Snapshot whose artifacts read their bytes from ``root``."""
    snap = snapio.validate_document(
        doc, name, lambda sha256, _size: store_blob(root, sha256), check=False
    )
    for art in snap.artifacts:
        if art.blob is None:
            raise FormatError(name, f"artifact {art.name!r} is not in the store")
    snapio.check_hashes(snap, name)
    return snap


def resolve_prefix(store: Any, ref: str, snapshots: list[str], where: str) -> str:
    """The Snapshot named by ``ref`` when it is no whole session id: a unique prefix of an
    archived session id (its latest Snapshot), as a native home takes one, or of a Snapshot
    id (``snapshots``, the ids it prefixes). Nothing found, or more than one, is a usage
    error that lists what matched."""
    key = ref.strip()
    sessions = sorted({r.session_id for r in store.rows() if key and r.session_id.startswith(key)})
    named = [f"session {s}" for s in sessions] + [f"Snapshot {i}" for i in snapshots]
    if len(named) == 1:
        return str(store.resolve(sessions[0])) if sessions else snapshots[0]
    if named:
        shown = "\n  ".join(named[:20])
        raise UsageError(f"{ref!r} names {len(named)} in {where}; give more of the id:\n  {shown}")
    raise UsageError(f"no session or Snapshot {ref!r} in {where}")


class Store:
    """An archive store folder. Open with ``Store.open``; use as a context manager."""

    def __init__(self, root: Path, conn: sqlite3.Connection, *, writable: bool) -> None:
        self.root = root
        self.conn = conn
        self.writable = writable
        self._lock_fd: int | None = None

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, *, create: bool = False, write: bool = False) -> Store:
        """Open ``root``; ``create`` makes a new store in a missing or empty folder.

        A writable store holds an exclusive lock, so two archive runs never interleave.
        """
        root = Path(root)
        if not is_store(root):
            if not create:
                raise FormatError(root, f"not a trajconv store (no {MARKER})")
            if root.exists() and (not root.is_dir() or any(root.iterdir())):
                raise RefusedError(
                    f"{root} exists and is neither a trajconv store nor an empty folder; "
                    "refusing to write a store into it"
                )
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            for sub in (SNAPSHOTS, ARTIFACTS, TMP):
                (root / sub).mkdir(mode=0o700, exist_ok=True)
            marker = orjson.dumps({"format": STORE_FORMAT}) + b"\n"
            cls._atomic_write(root, root / MARKER, lambda handle: handle.write(marker), _ok)
            write = True
        try:
            fmt = orjson.loads(_read_capped(root / MARKER, _MARKER_MAX) or b"null").get("format")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            fmt = None
        if fmt != STORE_FORMAT:
            raise FormatError(root / MARKER, f"format is {fmt!r}, expected {STORE_FORMAT!r}")
        if write:
            for sub in (SNAPSHOTS, ARTIFACTS, TMP):
                (root / sub).mkdir(mode=0o700, exist_ok=True)
            conn = sqlite3.connect(root / INDEX, isolation_level=None)
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
        else:
            index = root / INDEX
            if not index.is_file():
                raise FormatError(index, "missing: the store has no index")
            # A plain connection (only SELECTs follow) so SQLite can roll back the hot
            # journal of a run that was killed mid-transaction; mode=ro could not.
            conn = sqlite3.connect(index)
        try:
            problem = schema_problem(conn)
        except sqlite3.Error as exc:
            problem = str(exc)
        if problem is not None:
            conn.close()
            raise FormatError(root / INDEX, f"{problem}; refusing to use this index")
        store = cls(root, conn, writable=write)
        if write:
            store._lock()
            if store._lock_fd is not None:  # only while no other run can be writing
                store._clean_tmp()
        return store

    def _clean_tmp(self) -> None:
        """Remove what a killed run left in ``tmp/`` (a write is whole or absent, so
        nothing there is part of the store); safe under the lock, which no other run
        holds now."""
        tmpdir = self.root / TMP
        for path in tmpdir.iterdir() if tmpdir.is_dir() else ():
            if not path.is_dir() or path.is_symlink():  # a folder there is none of ours
                with contextlib.suppress(OSError):
                    path.unlink()

    def _lock(self) -> None:
        if sys.platform == "win32":  # pragma: no cover
            return
        fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self.conn.close()
            raise RefusedError(f"{self.root} is in use by another trajconv run") from None
        self._lock_fd = fd

    def close(self) -> None:
        self.conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------
    @staticmethod
    def _atomic_write(
        root: Path, dest: Path, write: Callable[[BinaryIO], object], check: Callable[[], None]
    ) -> int:
        """Write ``dest`` via ``tmp/`` + fsync + rename: it is whole or absent.

        ``write`` streams the bytes into the handle; ``check`` runs before the rename
        and raises to abandon the file. Returns the size written.
        """
        tmpdir = root / TMP
        tmpdir.mkdir(mode=0o700, exist_ok=True)
        tmp = tmpdir / f"{dest.name}.{os.getpid()}.{secrets.token_hex(6)}"
        try:
            # a full disk names the store, and the temporary file goes (below)
            with writing(root):
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    write(handle)
                    handle.flush()
                    os.fsync(handle.fileno())
                    size = handle.tell()
            check()
            os.replace(tmp, dest)
            return size
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def add(self, snapshot: Snapshot, *, harness: str, session_id: str, fingerprint: str) -> Added:
        """Archive ``snapshot`` as the latest Snapshot of (harness, session_id).

        Artifacts and the document are put in place first; the index row last.
        """
        if not self.writable:
            raise UsageError(f"{self.root} was opened read-only")
        check_label(snapshot, harness, session_id, self.root)
        hexid = id_hex(snapshot.id)
        latest = self.latest(harness, session_id)
        previous = self._checked(latest.snapshot_id) if latest is not None else None
        relation, facts_changed = relation_of(
            previous, checked_of(snapshot), lambda i: snapshot.records[i].hash
        )
        written = 0
        nbytes = 0
        for art in snapshot.artifacts:
            dest = self.root / ARTIFACTS / art.sha256
            try:
                if dest.stat().st_size == art.size:
                    continue  # content-addressed: the same digest holds the same bytes
            except FileNotFoundError:
                pass
            nbytes += self._atomic_write(self.root, dest, *_artifact_copy(snapshot, art))
            written += 1
        doc_path = self.root / SNAPSHOTS / f"{hexid}.json"
        snapshot_written = not doc_path.is_file()
        if snapshot_written:
            nbytes += self._atomic_write(
                self.root,
                doc_path,
                lambda handle: snapio.write(snapshot, handle, inline_artifacts=False),
                _ok,
            )
        if written or snapshot_written:
            _fsync_dir(self.root / ARTIFACTS)
            _fsync_dir(self.root / SNAPSHOTS)
        row = row_of(snapshot, harness, session_id, fingerprint, latest, relation, facts_changed)
        self._insert(row)
        return Added(row, snapshot_written, written, nbytes)

    def _insert(self, row: IndexRow) -> None:
        """The one index write: a single row in a single transaction, after the files."""
        values = (
            row.harness,
            row.session_id,
            row.snapshot_id,
            row.fingerprint,
            row.archived_at,
            row.relation,
            row.previous_id,
            row.records,
            row.last_hash,
            int(row.facts_changed),
            row.locator,
        )
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute(
                    f"INSERT INTO archived ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", values
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_FULL:
                raise
            raise NoSpaceError(self.root / INDEX, OSError(errno.ENOSPC, str(exc))) from None

    # -- reading ---------------------------------------------------------------------
    @staticmethod
    def _row(values: tuple[Any, ...]) -> IndexRow:
        return IndexRow(
            harness=values[0],
            session_id=values[1],
            snapshot_id=values[2],
            fingerprint=values[3],
            archived_at=values[4],
            relation=values[5],
            previous_id=values[6],
            records=values[7],
            last_hash=values[8],
            facts_changed=bool(values[9]),
            locator=values[10],
        )

    def rows(self, session: str | None = None, harness: str | None = None) -> list[IndexRow]:
        """Index rows in the order they were archived, optionally for one session."""
        sql = f"SELECT {_COLUMNS} FROM archived"
        where: list[str] = []
        args: list[str] = []
        if session is not None:
            where.append("session_id = ?")
            args.append(session)
        if harness is not None:
            where.append("harness = ?")
            args.append(harness)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._row(v) for v in self.conn.execute(sql + " ORDER BY row", args)]

    def latest(self, harness: str, session_id: str) -> IndexRow | None:
        found = self.conn.execute(
            f"SELECT {_COLUMNS} FROM archived WHERE harness = ? AND session_id = ? "
            "ORDER BY row DESC LIMIT 1",
            (harness, session_id),
        ).fetchone()
        return self._row(found) if found else None

    def fingerprints(self) -> dict[tuple[str, str], str]:
        """The fingerprint of the latest row of every session: what a run may skip."""
        found: dict[tuple[str, str], str] = {}
        for harness, sid, fp in self.conn.execute(
            "SELECT harness, session_id, fingerprint FROM archived ORDER BY row"
        ):
            found[(harness, sid)] = fp
        return found

    def document_path(self, snapshot_id: str) -> Path:
        return self.root / SNAPSHOTS / f"{id_hex(snapshot_id)}.json"

    def document(self, snapshot_id: str) -> dict[str, Any]:
        """The stored document as JSON (artifacts without ``data``)."""
        return snapio.read_document(self.document_path(snapshot_id))

    def _checked(self, snapshot_id: str) -> Checked:
        """A stored Snapshot's id, facts and last hash, read a record at a time (its
        artifacts need only be there); one that does not verify is read whole."""
        path = self.document_path(snapshot_id)
        art_dir = self.root / ARTIFACTS

        def there(sha256: str, size: int) -> Path | None:
            file = art_dir / sha256
            try:
                return file if _HEX.match(sha256) and file.stat().st_size == size else None
            except OSError:
                return None

        found = verify_streamed(path, stored=there)
        return found if found is not None else _checked_doc(self.document(snapshot_id))

    def load(self, snapshot_id: str) -> Snapshot:
        """The Snapshot with its artifacts' bytes put back from the store, its hashes
        checked (an archive may have been tampered with): a record and a chunk at a
        time when it verifies so, else parsed whole, which names what is wrong."""
        path = self.document_path(snapshot_id)
        streamed = load_streamed(path, stored=_checked_in(self.root))
        if streamed is not None and streamed.id == snapshot_id:
            return streamed
        name = str(path)
        snap = _with_stored_artifacts(self.document(snapshot_id), self.root, name)
        if snap.id != snapshot_id:
            raise VerifyError(f"{name}: holds {snap.id}, not {snapshot_id}")
        return snap

    def resolve(self, ref: str) -> str:
        """A Snapshot id from a session id (its latest Snapshot), a Snapshot id or a hex prefix."""
        key = ref.strip()
        rows = self.rows(session=key)
        if rows:
            harnesses = sorted({r.harness for r in rows})
            if len(harnesses) > 1:
                raise UsageError(
                    f"session {key!r} is archived for {', '.join(harnesses)}; "
                    "pick one by its Snapshot id (trajconv archive log STORE SESSION)"
                )
            return rows[-1].snapshot_id
        hexpart = key.removeprefix(hashing.PREFIX).lower()
        found: list[str] = []
        if len(hexpart) >= 8 and re.fullmatch(r"[0-9a-f]+", hexpart):
            found = sorted(p.stem for p in (self.root / SNAPSHOTS).glob(f"{hexpart}*.json"))
            found = [hashing.PREFIX + stem for stem in found]
        return resolve_prefix(self, ref, found, str(self.root))

    def sessions(self) -> list[dict[str, Any]]:
        """One line per archived session: how many Snapshots, the latest and when."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.rows():
            entry = out.setdefault(
                (r.harness, r.session_id),
                {"harness": r.harness, "session_id": r.session_id, "snapshots": 0},
            )
            if r.relation != "unchanged":
                entry["snapshots"] += 1
            entry.update(
                latest_id=r.snapshot_id,
                latest_relation=r.relation,
                records=r.records,
                archived_at=r.archived_at,
            )
        return sorted(out.values(), key=lambda e: (e["harness"], e["session_id"]))

    # -- verifying -------------------------------------------------------------------
    def verify(self) -> StoreReport:
        return verify_store(self.root)


def unbound_row(row: IndexRow, source: Mapping[str, Any]) -> str | None:
    """Why an index row does not belong to its Snapshot, or ``None``: a row names the
    harness and session its Snapshot was read from (issue 34: a row relabelled with
    another session id served that Snapshot as the victim's)."""
    harness, session_id = source.get("harness"), source.get("session_id")
    if (row.harness, row.session_id) == (harness, session_id):
        return None
    return (
        f"names {row.harness} session {row.session_id!r}, but its Snapshot {row.snapshot_id} "
        f"is of {harness} session {session_id!r}: the index was changed"
    )


def check_label(snapshot: Snapshot, harness: str, session_id: str, where: object) -> None:
    """Refuse to index ``snapshot`` under a harness or session that is not its own: a row
    is bound to its Snapshot (:func:`unbound_row`), whoever writes it."""
    src = snapshot.source
    if (src.harness, src.session_id) != (harness, session_id):
        raise UsageError(
            f"{where}: Snapshot {snapshot.id} is of {src.harness} session {src.session_id!r}, "
            f"not {harness} session {session_id!r}; refusing to index it so"
        )


class _Indexed(Protocol):
    def resolve(self, ref: str) -> str: ...
    def rows(self, session: str | None = None, harness: str | None = None) -> list[IndexRow]: ...
    def load(self, snapshot_id: str) -> Snapshot: ...


def load_ref(store: _Indexed, ref: str, where: object) -> Snapshot:
    """The Snapshot a session id, Snapshot id or prefix names in a store, refused when an
    index row that points at it names another harness or session than its own."""
    snapshot_id = store.resolve(ref)
    snap = store.load(snapshot_id)
    source = snap.source.model_dump(mode="json")
    for row in store.rows():
        problem = unbound_row(row, source) if row.snapshot_id == snapshot_id else None
        if problem is not None:
            raise VerifyError(f"{where}: {INDEX} row {problem}")
    return snap


def find_store(path: Path) -> Path | None:
    """The store holding ``path`` (a file under ``STORE/snapshots/``), if any."""
    return Path(path).resolve().parent.parent if in_store(path) else None


def load_input(path: Path, session: str | None = None) -> Snapshot:
    """A Snapshot from a Snapshot file (a stored one gets its artifacts from its store)
    or from a store folder plus ``session`` (a session id, a Snapshot id or a prefix)."""
    path = Path(path)
    if path.is_dir():
        if not is_store(path):
            raise FormatError(path, "not a Snapshot file or a trajconv store")
        with Store.open(path) as store:
            if session is None:
                raise UsageError(
                    f"{path} is a store; pick a session or Snapshot with --session ID "
                    "(trajconv archive log STORE lists them)"
                )
            return load_ref(store, session, path)
    # a file trajconv wrote, one record at a time (a stored one's artifacts are beside
    # it, in its store)
    streamed = load_streamed(path, stored=artifact_check(path))
    if streamed is not None:
        return streamed
    root = find_store(path)
    doc = snapio.read_document(path)
    stored = (isinstance(a, dict) and a.get("data") is None for a in doc.get("artifacts", []))
    if root is not None and any(stored):
        return _with_stored_artifacts(doc, root, str(path))
    return snapio.validate_document(doc, str(path))


def artifact_resolver(path: Path) -> snapio.ArtifactResolver | None:
    """For ``verify FILE``: artifacts of a stored Snapshot come from its store."""
    root = find_store(path)
    if root is None:
        return None

    def resolve(sha256: str) -> bytes | None:
        if not _HEX.match(sha256):
            return None
        try:
            return (root / ARTIFACTS / sha256).read_bytes()
        except OSError:
            return None

    return resolve


def artifact_check(path: Path) -> StoredCheck | None:
    """For a stored Snapshot file: its artifacts are checked in its store."""
    root = find_store(path)
    return None if root is None else _checked_in(root)


def _checked_in(root: Path) -> StoredCheck:
    """The store file of an artifact whose bytes have its sha256 and size."""

    def check(sha256: str, size: int) -> Path | None:
        file = root / ARTIFACTS / sha256
        try:
            # a FIFO or a link to a device would be read for ever: looked at first
            if not (_HEX.match(sha256) and file.is_file() and file.stat().st_size == size):
                return None
            return file if _sha256_file(file) == (sha256, size) else None
        except OSError:
            return None

    return check


_MARKER_MAX = 4096
_WHOLE_DOCUMENT = 256 << 20
"""A stored Snapshot that does not verify as it streams is parsed whole to name its
problem, only up to this size (what a store writes streams; issue 25)."""


def _read_capped(path: Path, cap: int) -> bytes | None:
    """The file's bytes when it holds at most ``cap`` of them, else ``None``: a file
    read whole is never read past its cap."""
    with path.open("rb") as handle:
        data = handle.read(cap + 1)
    return data if len(data) <= cap else None


def _sha256_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


@functools.cache
def _expected_schema() -> frozenset[tuple[str, str, str, str]]:
    """``sqlite_master`` of an index made by :data:`_SCHEMA`: what SQLite records of it."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        return frozenset(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """What in the index's ``sqlite_master`` differs from :data:`_SCHEMA`, or ``None``.

    An extra object (a trigger that deletes every row, a view, a changed column) would
    change what the store does without any file of it failing a check (issue 25)."""
    found = frozenset(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    expected = _expected_schema()
    extra = sorted(found - expected)
    if extra:
        kind, name, _table, _sql = extra[0]
        if any(e[:2] == (kind, name) for e in expected):
            return f"{kind} {name!r} differs from the schema trajconv makes"
        return f"unexpected {kind} {name!r} in the schema"
    missing = sorted(expected - found)
    if missing:
        return f"{missing[0][0]} {missing[0][1]!r} is missing"
    return None


def _check_index(root: Path, report: StoreReport) -> list[IndexRow]:
    index = root / INDEX
    if not index.is_file():
        report.problems.append(f"{INDEX}: missing")
        return []
    try:
        conn = sqlite3.connect(index)  # plain, not mode=ro: see Store.open
    except sqlite3.Error as exc:
        report.problems.append(f"{INDEX}: cannot open: {exc}")
        return []
    try:
        check = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if check != ["ok"]:
            report.problems.append(f"{INDEX}: integrity check: {'; '.join(check[:3])}")
            return []
        problem = schema_problem(conn)
        if problem is not None:
            report.problems.append(f"{INDEX}: {problem}")
            return []
        rows = [
            Store._row(v) for v in conn.execute(f"SELECT {_COLUMNS} FROM archived ORDER BY row")
        ]
    except sqlite3.Error as exc:
        report.problems.append(f"{INDEX}: {exc}")
        return []
    finally:
        conn.close()
    return rows


def verify_store(root: Path) -> StoreReport:
    """Check every Snapshot (chain, artifacts, id), every artifact digest and the index.

    Problems: a document or artifact whose bytes do not match its name, an index row
    pointing at a missing or different Snapshot, a history that does not chain, a
    relation the documents contradict. Notes: complete files nothing points at yet.
    """
    root = Path(root)
    report = StoreReport(path=str(root))
    try:
        fmt = orjson.loads(_read_capped(root / MARKER, _MARKER_MAX) or b"null").get("format")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        fmt = None
    if fmt != STORE_FORMAT:
        report.problems.append(f"{MARKER}: missing or not {STORE_FORMAT!r}; not a trajconv store")
        return report

    good_artifacts: dict[str, int] = {}  # sha256: size
    art_dir = root / ARTIFACTS
    for path in sorted(art_dir.iterdir()) if art_dir.is_dir() else []:
        report.artifacts += 1
        if not _HEX.match(path.name) or not path.is_file():
            report.problems.append(f"{ARTIFACTS}/{path.name}: not a sha256-named file")
            continue
        digest, size = _sha256_file(path)
        if digest != path.name:
            report.problems.append(f"{ARTIFACTS}/{path.name}: bytes do not match its sha256")
        else:
            good_artifacts[path.name] = size

    def resolve(sha256: str) -> bytes | None:
        if sha256 not in good_artifacts:
            return None
        return (art_dir / sha256).read_bytes()

    def there(sha256: str, size: int) -> Path | None:
        return art_dir / sha256 if good_artifacts.get(sha256) == size else None

    # The index first, for the chain hash each Snapshot's check picks out: where the
    # previous Snapshot of its session ended. Its problems are reported after the
    # documents', as the rows are checked against them.
    index = StoreReport(path=report.path)
    rows = _check_index(root, index)
    claimed = {row.snapshot_id: row.records for row in rows}
    wanted: dict[str, set[int]] = {}
    for row in rows:
        ended = claimed.get(row.previous_id) if row.previous_id else None
        if type(ended) is int and ended > 0:  # a hand-edited index may hold anything
            wanted.setdefault(row.snapshot_id, set()).add(ended - 1)

    # Only what the checks of the index need is kept of each document, so memory does
    # not grow with the Snapshots' size.
    docs: dict[str, tuple[Checked, Path]] = {}
    referenced: set[str] = set()

    def check(path: Path, hashes_at: Collection[int], *, again: bool = False) -> Checked | None:
        """The document a record at a time; one that does not verify so is parsed
        whole, which names its problems (``again``: named already)."""
        rel = f"{SNAPSHOTS}/{path.name}"
        named = hashing.PREFIX + path.name[:-5]
        found = verify_streamed(path, stored=there, hashes_at=hashes_at)
        if found is not None:
            doc_id, digests = found.id, found.digests
        else:
            try:
                data = _read_capped(path, _WHOLE_DOCUMENT)
                if data is None:
                    raise FormatError(
                        rel,
                        f"not laid out as trajconv writes a Snapshot, and over {_WHOLE_DOCUMENT} "
                        "bytes to parse whole",
                    )
                doc = snapio.parse_document(data, rel)
                snapio.validate_document(doc, rel, check=False)
            except (FormatError, OSError) as exc:
                report.problems.append(str(exc))
                return None
            result = snapio.verify_document(doc, resolve)
            if not again:
                report.problems.extend(f"{rel}: {p}" for p in result.problems)
            doc_id, digests = doc["id"], tuple(a["sha256"] for a in doc["artifacts"])
            found = _checked_doc(doc, hashes_at) if result.ok else None
        if doc_id != named and not again:
            report.problems.append(f"{rel}: holds {doc_id}")
        referenced.update(digests)
        return found

    snap_dir = root / SNAPSHOTS
    for path in sorted(snap_dir.iterdir()) if snap_dir.is_dir() else []:
        report.snapshots += 1
        rel = f"{SNAPSHOTS}/{path.name}"
        if not (path.name.endswith(".json") and _HEX.match(path.name[:-5])):
            report.problems.append(f"{rel}: not a <sha256>.json Snapshot file")
            continue
        found = check(path, wanted.get(hashing.PREFIX + path.name[:-5], ()))
        if found is not None:
            docs[found.id] = (found, path)

    report.problems.extend(index.problems)
    report.index_rows = len(rows)
    latest: dict[tuple[str, str], IndexRow] = {}
    for i, row in enumerate(rows, 1):
        where = f"{INDEX} row {i} ({row.harness} {row.session_id})"
        key = (row.harness, row.session_id)
        before = latest.get(key)
        expected_prev = before.snapshot_id if before is not None else None
        if row.previous_id != expected_prev:
            report.problems.append(
                f"{where}: previous is {row.previous_id}, the history gives {expected_prev}"
            )
        latest[key] = row
        stored = docs.get(row.snapshot_id)
        if stored is None:
            report.problems.append(f"{where}: Snapshot {row.snapshot_id} is missing or broken")
            continue
        if row.relation not in RELATIONS:
            report.problems.append(f"{where}: unknown relation {row.relation!r}")
            continue
        current, path = stored
        bound = unbound_row(row, current.source)
        if bound is not None:
            report.problems.append(f"{where}: {bound}")
            continue
        if row.records != current.records or row.last_hash != current.last_hash:
            report.problems.append(f"{where}: records/last hash differ from the Snapshot")
        prev = docs.get(row.previous_id) if row.previous_id else None
        if row.previous_id is not None and prev is None:
            continue  # reported when that row was checked

        def hash_at(i: int, current: Checked = current, path: Path = path) -> str | None:
            if i not in current.hashes:  # the index gave another count: read it again
                reread = check(path, (i,), again=True)
                return reread.hashes.get(i) if reread is not None else None
            return current.hashes[i]

        relation, _facts = relation_of(prev[0] if prev else None, current, hash_at)
        if relation != row.relation:
            report.problems.append(
                f"{where}: recorded as {row.relation}, the Snapshots say {relation}"
            )
    report.sessions = len(latest)
    indexed = {r.snapshot_id for r in rows}
    loose = sorted(set(docs) - indexed)
    if loose:
        report.notes.append(
            f"{len(loose)} complete Snapshot(s) not in the index yet (an interrupted run; "
            "the next archive run indexes them)"
        )
    unused = good_artifacts.keys() - referenced
    if unused:
        report.notes.append(f"{len(unused)} artifact(s) no Snapshot references (harmless)")
    tmp = root / TMP
    leftovers = list(tmp.iterdir()) if tmp.is_dir() else []
    if leftovers:
        report.notes.append(f"{len(leftovers)} unfinished write(s) in {TMP}/ (safe to delete)")
    return report


# -- moving a store as one file ------------------------------------------------------------


class _HashingReader:
    """A file object that hashes what tarfile reads from it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self.handle.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data


def _store_files(root: Path) -> Iterator[str]:
    yield MARKER
    for sub in (SNAPSHOTS, ARTIFACTS):
        for path in sorted((root / sub).iterdir()):
            if path.is_file() and not path.is_symlink():
                yield f"{sub}/{path.name}"


def export_store(root: Path, file: Path) -> Moved:
    """Write the store as one ``.tar.gz`` with a checksum manifest (last member).

    Refuses a store that does not verify; the index goes in as a consistent copy
    (SQLite backup), so a run that is archiving meanwhile cannot tear it.
    """
    root, file = Path(root), Path(file)
    if file.exists():
        raise RefusedError(f"{file} exists; refusing to replace it")
    with Store.open(root, write=True) as store:
        report = store.verify()
        if not report.ok:
            raise VerifyError(
                f"{root} does not verify ({len(report.problems)} problem(s), first: "
                f"{report.problems[0]}); run trajconv verify {root}"
            )
        tmpdir = root / TMP
        index_copy = tmpdir / f"{INDEX}.export.{secrets.token_hex(6)}"
        partial = file.with_name(f".{file.name}.{secrets.token_hex(6)}.partial")
        try:
            dst = sqlite3.connect(index_copy)
            with dst:
                store.conn.backup(dst)
            dst.close()
            entries: list[dict[str, Any]] = []
            total = 0
            with tarfile.open(partial, "w:gz", format=tarfile.PAX_FORMAT) as tar:
                names = [*_store_files(root), INDEX]
                for rel in names:
                    src = index_copy if rel == INDEX else root / rel
                    size = src.stat().st_size
                    info = tarfile.TarInfo(f"{EXPORT_ROOT}/{rel}")
                    info.size = size
                    info.mode = 0o600
                    with src.open("rb") as handle:
                        reader = _HashingReader(handle)
                        tar.addfile(info, reader)
                    if reader.size != size:
                        raise VerifyError(f"{src} changed while it was exported")
                    entries.append({"path": rel, "sha256": reader.digest.hexdigest(), "size": size})
                    total += size
                manifest = orjson.dumps(
                    {"format": EXPORT_FORMAT, "store": STORE_FORMAT, "files": entries},
                    option=orjson.OPT_INDENT_2,
                )
                info = tarfile.TarInfo(f"{EXPORT_ROOT}/{EXPORT_MANIFEST}")
                info.size = len(manifest)
                info.mode = 0o600
                tar.addfile(info, _io.BytesIO(manifest))
            with partial.open("rb") as handle:
                os.fsync(handle.fileno())
            os.replace(partial, file)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise
        finally:
            with contextlib.suppress(OSError):
                index_copy.unlink()
    return Moved(
        file=str(file),
        store=str(root),
        files=len(entries),
        bytes=total,
        snapshots=report.snapshots,
        index_rows=report.index_rows,
    )


def _member_path(name: str, file: Path) -> str:
    pure = PurePosixPath(name)
    parts = pure.parts
    if (
        pure.is_absolute()
        or len(parts) < 2
        or parts[0] != EXPORT_ROOT
        or any(p in ("", ".", "..") or "\\" in p for p in parts)
    ):
        raise FormatError(file, f"damaged export: unexpected member {name!r}")
    return "/".join(parts[1:])


def import_store(file: Path, root: Path) -> Moved:
    """Unpack an export into a new store at ``root``, refusing a damaged file.

    Every member must be a plain file named in the manifest with the same sha256 and
    size, every manifest entry must be present, and the unpacked store must verify;
    only then is it renamed into place. A missing or empty ``root`` is required.
    """
    file, root = Path(file), Path(root)
    seen: dict[str, tuple[str, int]] = {}
    manifest: Any = None
    with staged_folder(root, "refusing to import into it") as staging:
        for sub in (SNAPSHOTS, ARTIFACTS, TMP):
            (staging / sub).mkdir(mode=0o700)
        try:
            with tarfile.open(file, "r:gz") as tar:
                for member in tar:
                    rel = _member_path(member.name, file)
                    if not member.isfile():
                        raise FormatError(file, f"damaged export: {member.name} is not a file")
                    if rel in seen or (rel == EXPORT_MANIFEST and manifest is not None):
                        raise FormatError(file, f"damaged export: {member.name} appears twice")
                    handle = tar.extractfile(member)
                    assert handle is not None
                    if rel == EXPORT_MANIFEST:
                        manifest = orjson.loads(_manifest_bytes(handle, len(seen), file))
                        continue
                    if rel not in (MARKER, INDEX) and not _MEMBER.fullmatch(rel):
                        raise FormatError(file, f"damaged export: unexpected member {member.name}")
                    digest = hashlib.sha256()
                    size = 0
                    fd = os.open(staging / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as out:
                        while chunk := handle.read(_CHUNK):
                            digest.update(chunk)
                            size += len(chunk)
                            out.write(chunk)
                        out.flush()
                        os.fsync(out.fileno())
                    seen[rel] = (digest.hexdigest(), size)
        except (tarfile.TarError, EOFError, zlib.error, OSError, orjson.JSONDecodeError) as exc:
            raise FormatError(file, f"damaged export: {exc}") from None
        _check_manifest(file, manifest, seen)
        report = verify_store(staging)
        if not report.ok:
            raise FormatError(
                file, f"damaged export: the unpacked store does not verify: {report.problems[0]}"
            )
    return Moved(
        file=str(file),
        store=str(root),
        files=len(seen),
        bytes=sum(size for _d, size in seen.values()),
        snapshots=report.snapshots,
        index_rows=report.index_rows,
    )


_MANIFEST_BASE = 4096
_MANIFEST_PER_FILE = 512  # an entry takes about 170 bytes as export_store writes it


def _manifest_bytes(handle: IO[bytes], files: int, file: Path) -> bytes:
    """The manifest member, read whole only up to a size in proportion to the files
    before it (it is the last member): a 1.5 MB export whose manifest was 1.5 GB of
    whitespace took 3 GB of memory (issue 25)."""
    cap = _MANIFEST_BASE + _MANIFEST_PER_FILE * (files + 1)
    data = handle.read(cap + 1)
    if len(data) > cap:
        raise FormatError(
            file, f"damaged export: {EXPORT_MANIFEST} is over {cap} bytes for {files} files"
        )
    return data


class _ManifestEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    size: int = Field(ge=0)


class _Manifest(BaseModel):
    """``MANIFEST.json`` of a store export, checked by the models like everything else
    (a ``"size": "abc"`` used to end in a ValueError traceback)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    format: Literal["trajconv.store-export/1"]
    store: Literal["trajconv.store/1"]
    files: list[_ManifestEntry]


def _check_manifest(file: Path, manifest: Any, seen: Mapping[str, tuple[str, int]]) -> None:
    if manifest is None:
        raise FormatError(file, f"damaged export: no {EXPORT_FORMAT} manifest")
    try:
        checked = _Manifest.model_validate(manifest)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise FormatError(
            file, f"damaged export: {EXPORT_MANIFEST} at {where}: {first['msg']}"
        ) from None
    listed: dict[str, tuple[str, int]] = {}
    for entry in checked.files:
        if entry.path in listed:
            raise FormatError(file, f"damaged export: {entry.path} is listed twice")
        listed[entry.path] = (entry.sha256, entry.size)
    missing = sorted(set(listed) - set(seen))
    extra = sorted(set(seen) - set(listed))
    if missing or extra:
        what = f"missing {missing[0]}" if missing else f"not in the manifest: {extra[0]}"
        raise FormatError(file, f"damaged export: {what}")
    for rel, (digest, size) in sorted(seen.items()):
        if listed[rel] != (digest, size):
            raise FormatError(file, f"damaged export: {rel} does not match its sha256/size")
