"""Archive whole native homes into a store: discover, fingerprint, read what changed.

For every registered codec (or one, ``harness``) and its default home (or ``home``):
``discover`` lists the sessions, each gets a native fingerprint from ``stat`` alone
(size, mtime_ns and inode of every file of the session, nothing opened), and a
session whose fingerprint equals the one the store recorded last is skipped without
being read. Every other session is read through the Codec protocol and handed to
:class:`trajconv.store.local.Store`, which records it as ``first``, ``extends``,
``diverged`` or ``unchanged``. Only the store is written; native homes are only read.

This module names no harness: it works through ``discover`` and ``read`` of whatever
the ``trajconv.codecs`` entry-point group registers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
import stat
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from trajconv.codecs import registry
from trajconv.codecs.base import Codec, Limits, SessionRef
from trajconv.errors import NoSpaceError, RefusedError, UsageError
from trajconv.snapshot.models import Snapshot
from trajconv.store import is_url, open_store

FINGERPRINT_VERSION = "stat1"
# SQLite keeps committed pages in ``-wal`` until a checkpoint; ``-shm`` is an index a
# reader may touch, so it is left out (it would change on every read).
_DB_SIDECARS = ("-wal", "-journal")
STATUSES = ("first", "extends", "diverged", "unchanged", "skipped", "failed")


def fingerprint(path: Path) -> str:
    """A cheap native fingerprint: ``stat`` of every file of the session, no content read.

    A folder contributes every regular file below it (relative path, size, mtime_ns,
    inode; for a symlink, those of the file it points at, which the reader reads); a
    file contributes itself and its SQLite ``-wal``/``-journal`` beside it.
    Any append, rewrite, replace, new or removed file changes the fingerprint.
    """
    entries: list[str] = []

    def add(rel: str, st: os.stat_result) -> None:
        entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")

    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                try:
                    # the file a symlink points at, as the reader sees it: the link's own
                    # lstat never changes when its target grows (issue 25)
                    fst = os.stat(full)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # removed while walking, or a dangling link: nothing to read
                if stat.S_ISREG(fst.st_mode):
                    add(os.path.relpath(full, path), fst)
    else:
        add(path.name, st)
        for suffix in _DB_SIDECARS:
            side = path.with_name(path.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                add(side.name, os.stat(side))
    digest = hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape"))
    return f"{FINGERPRINT_VERSION}:{digest.hexdigest()}"


@dataclass(frozen=True)
class Outcome:
    """What happened to one discovered session in a run."""

    harness: str
    session_id: str
    status: str
    """``first``, ``extends``, ``diverged``, ``unchanged``, ``skipped`` or ``failed``."""
    snapshot_id: str | None = None
    previous_id: str | None = None
    records: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Progress:
    """A progress tick for a caller that shows one (the library itself never prints)."""

    phase: str
    """``discover`` (per harness), ``archive`` (per session) or ``done``."""
    done: int
    total: int
    counts: dict[str, int]
    bytes_done: int = 0
    """Native bytes of the sessions read so far (their size as listed)."""
    bytes_total: int = 0
    """Native bytes of every session to read (skipped ones left out)."""


@dataclass
class Summary:
    store: str
    coverage: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    snapshots_written: int = 0
    artifacts_written: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for o in self.outcomes:
            counts[o.status] += 1
        return counts

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failed and not any(
            c["status"].startswith("unreadable") for c in self.coverage
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "ok": self.ok,
            "sessions": len(self.outcomes),
            "counts": self.counts,
            "snapshots_written": self.snapshots_written,
            "artifacts_written": self.artifacts_written,
            "bytes_written": self.bytes_written,
            "seconds": round(self.seconds, 3),
            "coverage": self.coverage,
            "changed": [o.to_json() for o in self.outcomes if o.status not in ("skipped",)],
        }


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


def _refuse_store_in_home(
    found: list[tuple[Codec, SessionRef]], coverage: list[dict[str, Any]], store: Path
) -> None:
    """Checked before the store is created: archiving never writes into a native home.

    A home that is the user's whole home folder (a harness keeping ``~/.name``) only
    rules out its session folders; any other home is ruled out whole.
    """
    user_home = Path.home().resolve()
    places = [(row["harness"], Path(row["home"])) for row in coverage if row["home"]]
    places += [(c.name, r.path if r.path.is_dir() else r.path.parent) for c, r in found]
    for name, place in places:
        if place.exists() and place.resolve() != user_home and _inside(store, place):
            raise RefusedError(
                f"the store {store} is inside the {name} home {place}; archiving never "
                "writes into a native home, pick a STORE outside it"
            )


def _discover(
    harness: str | None, home: Path | None, summary: Summary
) -> list[tuple[Codec, SessionRef]]:
    from trajconv import find

    listing = find.list_sessions([harness] if harness else None, home, readable=True)
    summary.coverage = listing.coverage
    return [(registry.get(ref.harness), ref) for ref in listing.sessions]


def _read_in_worker(
    name: str, path: Path, session: str, limits: Limits
) -> tuple[Snapshot | None, str | None]:
    """Read one session in a worker process; errors come back as text (they may not pickle)."""
    try:
        return registry.get(name).read(path, session=session, limits=limits), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _read_here(c: Codec, ref: SessionRef, limits: Limits) -> tuple[Snapshot | None, str | None]:
    try:
        return c.read(ref.path, session=ref.session_id, limits=limits), None
    except Exception as exc:  # one unreadable session must not stop the archive of the rest
        return None, f"{type(exc).__name__}: {exc}"


def _reads(
    todo: list[tuple[Codec, SessionRef, str]], jobs: int, limits: Limits
) -> Iterator[tuple[Codec, SessionRef, str, Snapshot | None, str | None]]:
    """Read each session, in this process or in ``jobs`` worker processes."""
    if jobs <= 1 or len(todo) <= 1:
        for c, ref, fp in todo:
            yield (c, ref, fp, *_read_here(c, ref, limits))
        return
    # Workers load codecs by name from the entry points; results come back as they finish,
    # with at most 2 x jobs in flight so memory stays bounded on a large home.
    pending: dict[Future[tuple[Snapshot | None, str | None]], tuple[Codec, SessionRef, str]] = {}
    queue = iter(todo)
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=get_context("spawn"), initializer=_ignore_interrupt
    )
    try:
        while True:
            while len(pending) < 2 * jobs:
                item = next(queue, None)
                if item is None:
                    break
                c, ref, fp = item
                with _interrupt_blocked():  # a worker started now is born deaf to Ctrl-C
                    fut = pool.submit(_read_in_worker, c.name, ref.path, ref.session_id, limits)
                pending[fut] = item
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                c, ref, fp = pending.pop(fut)
                yield (c, ref, fp, *fut.result())
    finally:
        # Ctrl-C reaches the workers too; they ignore it, finish the read in hand and
        # remove its spool, and nothing queued starts.
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _interrupt_blocked() -> Iterator[None]:
    """Hold Ctrl-C back while worker processes may start: a spawned worker inherits the
    blocked signal, so one that is still starting (before ``_ignore_interrupt`` runs) cannot
    die of it with a traceback; here it is delivered when the block ends, nothing lost."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _ignore_interrupt() -> None:
    """Worker processes leave Ctrl-C to the main process (no traceback from each)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def archive(
    store_path: Path | str,
    *,
    harness: str | None = None,
    home: Path | None = None,
    jobs: int = 1,
    limits: Limits | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> Summary:
    """Archive every discovered session whose fingerprint changed into ``store_path``."""
    started = time.monotonic()
    local_path = None if is_url(store_path) else Path(store_path)
    limits = limits or Limits.from_env()
    summary = Summary(store=str(store_path))
    tick = progress or (lambda _p: None)
    refs = _discover(harness, home, summary)
    if local_path is not None:
        _refuse_store_in_home(refs, summary.coverage, local_path)
    elif str(store_path).startswith("file://"):
        _refuse_store_in_home(refs, summary.coverage, Path(str(store_path)[7:]))
    with open_store(store_path, create=True, write=True) as store:
        total = len(refs)
        tick(Progress("discover", 0, total, summary.counts))
        known = store.fingerprints()
        todo: list[tuple[Codec, SessionRef, str]] = []
        for c, ref in refs:
            try:
                fp = fingerprint(ref.path)
            except OSError as exc:
                summary.outcomes.append(
                    Outcome(c.name, ref.session_id, "failed", error=f"cannot stat: {exc}")
                )
                continue
            if known.get((c.name, ref.session_id)) == fp:
                summary.outcomes.append(Outcome(c.name, ref.session_id, "skipped"))
            else:
                todo.append((c, ref, fp))
        size = sum(ref.size or 0 for _c, ref, _fp in todo)
        done = 0
        tick(Progress("archive", len(summary.outcomes), total, summary.counts, 0, size))
        for c, ref, fp, snap, error in _reads(todo, jobs, limits):
            done += ref.size or 0
            if snap is None:
                summary.outcomes.append(Outcome(c.name, ref.session_id, "failed", error=error))
            else:
                try:
                    added = store.add(
                        snap, harness=c.name, session_id=ref.session_id, fingerprint=fp
                    )
                except (NoSpaceError, UsageError) as exc:  # no half entry: no files, no row
                    # (UsageError: a Snapshot whose source is not the session discover named)
                    summary.outcomes.append(
                        Outcome(c.name, ref.session_id, "failed", error=str(exc))
                    )
                    continue
                summary.snapshots_written += int(added.snapshot_written)
                summary.artifacts_written += added.artifacts_written
                summary.bytes_written += added.bytes_written
                summary.outcomes.append(
                    Outcome(
                        c.name,
                        ref.session_id,
                        added.row.relation,
                        snapshot_id=snap.id,
                        previous_id=added.row.previous_id,
                        records=added.row.records,
                    )
                )
            tick(Progress("archive", len(summary.outcomes), total, summary.counts, done, size))
    summary.seconds = time.monotonic() - started
    tick(Progress("done", len(summary.outcomes), total, summary.counts))
    return summary
