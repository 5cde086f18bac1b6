"""Helpers several codecs share, kept once here so that no codec imports another.

What is here: a cheap look at a file for ``layout.claims`` (its first bytes, its first
JSON line), a whole file as the JSON object it must hold, session ids (a UUID kept, else a
uuid5 of the Snapshot id), RFC 3339 text to epoch milliseconds, what every writer checks
first (:func:`start_write`, :func:`open_write`), the session facts a target has no place
for (:func:`name_unheld`), the message a home holding several sessions gives, and
:class:`LineUnit` (a JSONL reader's native line).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import orjson

from trajconv.codecs.base import check_continuable, safe_component
from trajconv.errors import FormatError, RefusedError, UsageError

if TYPE_CHECKING:
    from collections.abc import Container, Iterator, Mapping

    from trajconv.codecs.base import Limits
    from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder
    from trajconv.snapshot.diagnostics import Diagnostics
    from trajconv.snapshot.models import Session, Snapshot
    from trajconv.snapshot.spool import Spool

#: how much of a file ``layout.claims`` may look at: a first line, never a whole read
HEAD_BYTES = 64 * 1024


def head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of ``path`` (empty when it cannot be read)."""
    try:
        with path.open("rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def json_object(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, else None (not JSON, or another JSON value)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def json_document(
    data: bytes, file: str | Path, not_object: str = "not a JSON object"
) -> dict[str, Any]:
    """``data``, read from ``file``, as the JSON object it must hold; else a FormatError
    naming ``file``: ``not JSON: <why>``, or ``not_object`` for another JSON value."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(file, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FormatError(file, not_object)
    return value


def json_text_member(doc: str | bytes, key: str) -> str | None:
    """The non-empty string the JSON object ``doc`` holds under ``key``; ``None`` when it
    holds none there or ``doc`` is no JSON object (read by :func:`json.loads`)."""
    import json

    try:
        value = json.loads(doc)
    except ValueError:
        return None
    member = value.get(key) if isinstance(value, dict) else None
    return member if isinstance(member, str) and member else None


def first_json(path: Path) -> dict[str, Any] | None:
    """The first line of ``path`` as a JSON object (at most :data:`HEAD_BYTES`), else None."""
    return json_object(head(path, HEAD_BYTES).split(b"\n", 1)[0])


def is_uuid(value: str) -> bool:
    """Whether ``value`` parses as a UUID (any of the spellings :class:`uuid.UUID` takes)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def uuid_session_id(
    snapshot: Snapshot, diags: Diagnostics, what: str, sample: str = "session id"
) -> str:
    """For a harness that names sessions by UUID: the Snapshot's session id in the canonical
    spelling when it is one, else uuid5 of the Snapshot id and ``what`` (``"grok-session"``),
    named ``ids-derived``. The same Snapshot always gets the same id."""
    sid = snapshot.session.id
    if is_uuid(sid):
        return str(uuid.UUID(sid))
    diags.add("ids-derived", sample)
    return derived_uuid(snapshot.id, what)


def derived_uuid(snapshot_id: str, what: str) -> str:
    """uuid5 of ``trajconv:<snapshot id>:<what>``: the same Snapshot always gets the same id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot_id}:{what}"))


def several_sessions(path: Path, label: str, ids: list[str]) -> UsageError:
    """A usage error for ``path`` (a home of ``label``) holding ``ids``: none, or several,
    listed so the user can pick one with ``--session``."""
    if not ids:
        return UsageError(f"{path}: this {label} home holds no session")
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return UsageError(
        f"{path}: this {label} home holds {len(ids)} sessions ({shown}); pick one with --session ID"
    )


def pick_session(
    path: Path, found: list[Path], session: str | None, holder: str, id_of: Callable[[Path], object]
) -> Path | None:
    """The session ``path`` resolves to among ``found``: with no ``session``, the only one
    (else UsageError: this ``holder`` holds N sessions, pick one with ``--session``); with
    one, the first whose ``id_of`` is ``session`` (a safe path component), else None."""
    if session is None:
        if len(found) == 1:
            return found[0]
        raise UsageError(
            f"{path}: this {holder} holds {len(found)} sessions; pick one with --session ID"
        )
    safe_component(session, "session id", path)
    return next((p for p in found if id_of(p) == session), None)


_ISO_MS: dict[str, int] = {}
""":func:`iso_ms` of the times seen last (at most :data:`_ISO_MS_KEPT`, then it starts
over): a writer asks for a record's time more than once, and a line's records share one."""
_ISO_MS_KEPT = 8192


def iso_ms(time: str | None) -> int | None:
    """Epoch milliseconds of an RFC 3339 time as Snapshots carry it (``None`` stays ``None``)."""
    if time is None:
        return None
    known = type(time) is str
    if known and (ms := _ISO_MS.get(time)) is not None:
        return ms
    ms = int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp() * 1000)
    if known:
        if len(_ISO_MS) >= _ISO_MS_KEPT:
            _ISO_MS.clear()
        _ISO_MS[time] = ms
    return ms


class Opening(NamedTuple):
    """What a writer knows once :func:`open_write` let it start."""

    diags: Diagnostics
    drop: set[str]
    """Record ids a lossy write leaves out (:func:`trajconv.codecs.base.check_continuable`)."""
    cwd: str
    session_id: str
    """The session id as a UUID (:func:`uuid_session_id`), safe as a path component."""


def work_folder(snapshot: Snapshot, target: str, cwd: str | None) -> str:
    """The working folder a writer writes the session for: ``cwd`` given, else the
    session's; else RefusedError naming ``--cwd``."""
    workdir = cwd or snapshot.session.cwd
    if not workdir:
        raise RefusedError(f"refusing to write {target}: the session has no cwd; pass --cwd DIR")
    return workdir


def start_write(
    snapshot: Snapshot,
    target: str,
    *,
    allow_lossy: bool,
    cwd: str | None,
    refuse_pending: bool = True,
) -> tuple[Diagnostics, set[str], str]:
    """What a writer of a harness that keeps sessions by working folder checks before it
    writes: a Snapshot it can continue (else RefusedError, unless ``allow_lossy``; the
    record ids to leave out) and a working folder (:func:`work_folder`); with the
    Diagnostics it counts in."""
    from trajconv.snapshot.diagnostics import Diagnostics

    diags = Diagnostics()
    drop = check_continuable(
        snapshot, target, allow_lossy=allow_lossy, refuse_pending=refuse_pending
    )
    return diags, drop, work_folder(snapshot, target, cwd)


def open_write(
    snapshot: Snapshot,
    target: str,
    *,
    allow_lossy: bool,
    cwd: str | None,
    refuse_pending: bool = True,
) -> Opening:
    """What :func:`start_write` checks, and the session id a writer of a harness that
    keeps sessions by UUID writes."""
    diags, drop, workdir = start_write(
        snapshot, target, allow_lossy=allow_lossy, cwd=cwd, refuse_pending=refuse_pending
    )
    sid = safe_component(uuid_session_id(snapshot, diags, f"{target}-session"), "session id")
    return Opening(diags, drop, workdir, sid)


#: the session facts a target may have no place for, by the code a writer names one with
SESSION_FACTS = {
    "untranslated-model": "model",
    "untranslated-title": "title",
    "untranslated-branch": "branch",
    "untranslated-parent-session": "parent_session_id",
}


def name_unheld(diags: Diagnostics, session: Session, samples: Mapping[str, str | None]) -> None:
    """Name the facts of ``session`` the target has no place for: ``samples`` maps the code
    of each (a key of :data:`SESSION_FACTS`) to its sample, ``None`` for the fact itself.
    A fact the session does not hold (``None`` or empty) is not named."""
    for code, sample in samples.items():
        value = getattr(session, SESSION_FACTS[code])
        if value:
            diags.add(code, value if sample is None else sample)


#: a session folder's lock and temporary files, never kept (:func:`other_files`)
SKIP_SUFFIXES = (".lock", ".tmp")


def other_files(
    folder: Path, known: Container[str], limits: Limits, budget: int, skip_dirs: Container[str] = ()
) -> Iterator[tuple[Path, str]]:
    """Every other file of a session folder for the reader to keep byte for byte, with its
    name relative to ``folder``: not a symlink, not one of the ``known`` names the reader
    parses, not a lock or temporary file, not under a top folder in ``skip_dirs``. Their
    sizes after ``budget`` bytes over ``limits.max_session_bytes`` is a LimitError."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if (
            not path.is_file()
            or path.is_symlink()
            or rel in known
            or path.name.endswith(SKIP_SUFFIXES)
            or rel.split("/", 1)[0] in skip_dirs
        ):
            continue
        budget += path.stat().st_size
        limits.check("max_session_bytes", budget, folder)
        yield path, rel


def spooled(path: Path, spool: Spool) -> Callable[[], Iterator[bytes]]:
    """The chunks of a file a writer wrote to ``spool`` (kept alive until the export is
    written), as an ``ExportFile``'s content."""
    from trajconv.snapshot.spool import Blob

    return Blob(path=path, size=path.stat().st_size, keep=spool).chunks


class LineProjector(Protocol):
    """What a :class:`LineUnit` adds to: the reader's projection of one file."""

    name: str
    b: SnapshotBuilder
    d: Diagnostics
    turn: int | None


class LineUnit:
    """One native line (or entry) of a JSONL session and the records made of it.

    Record ids are ``<prefix>:<native id>``, then ``:<n>`` for the n-th record of the line;
    the first record carries the line's unit. What the line drops is counted at the end
    (:meth:`finish`): the first drop of a line that made no record under its own code (the
    line is then that drop), every other as ``block-dropped`` with its code as the name.
    """

    def __init__(
        self, proj: LineProjector, prefix: str, number: int, nid: str, time: str | None
    ) -> None:
        self.proj = proj
        self.prefix = prefix
        self.number = number
        self.nid = nid
        self.time = time
        self.records = 0
        self.dropped: list[tuple[str, str | None]] = []

    def add(self, make: Callable[..., object], native_kind: str, path: str | None) -> str:
        """Make the line's next record with ``make(record id, evidence)``; its id."""
        rid, ev = self._next(native_kind, path)
        make(rid, ev)
        self.records += 1
        return rid

    def _next(self, native_kind: str, path: str | None) -> tuple[str, EvidenceFields]:
        """The id and evidence of the line's next record."""
        from trajconv.snapshot.builder import evidence

        n = self.records
        rid = f"{self.prefix}:{self.nid}" if n == 0 else f"{self.prefix}:{self.nid}:{n}"
        ev = evidence(
            artifact=self.proj.name,
            line=self.number,
            json_path=path,
            native=native_kind,
            native_id=self.nid,
            units=1 if n == 0 else 0,
        )
        return rid, ev

    def text(
        self, kind: str, text: str, native_kind: str, path: str | None, model: str | None = None
    ) -> None:
        proj = self.proj
        rid, ev = self._next(native_kind, path)
        proj.b.add_text(kind, rid, text, time=self.time, turn=proj.turn, evidence=ev, model=model)
        self.records += 1

    def result(
        self,
        call_id: str,
        ok: bool,
        output: str,
        native_kind: str,
        path: str | None,
        exit_code: int | None = None,
    ) -> None:
        """The line's next record: the result of the tool call ``call_id``."""
        proj = self.proj
        rid, ev = self._next(native_kind, path)
        proj.b.add_result(
            rid,
            call_id,
            ok,
            output,
            time=self.time,
            turn=proj.turn,
            evidence=ev,
            exit_code=exit_code,
        )
        self.records += 1

    def drop(self, code: str, name: str | None = None) -> None:
        self.dropped.append((code, name))

    def finish(self) -> None:
        place = f"{self.proj.name}:{self.number}"
        for i, (code, name) in enumerate(self.dropped):
            if self.records == 0 and i == 0:
                self.proj.d.add(code, place, name=name)
            else:
                self.proj.d.add("block-dropped", place, name=name or code)
