"""Build a Snapshot: readers add records and artifacts in order, the builder hashes.

Readers call ``add_*`` as they parse; ``build`` computes the chain (docs/design.md §3)
in one pass and returns the frozen Snapshot. Record ids and times come from the
reader; the builder never invents either.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypedDict

import orjson
from pydantic import JsonValue

from trajconv.errors import NO_SPACE, FormatError, LimitError, NoSpaceError
from trajconv.snapshot import hashing, secrets
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import (
    FORMAT,
    TIME_PATTERN,
    Child,
    Diagnostic,
    Producer,
    Session,
    Snapshot,
    Source,
)
from trajconv.snapshot.spool import (
    CHUNK,
    ArtifactEntry,
    ArtifactLog,
    ArtifactTable,
    Blob,
    RecordLog,
    RecordSpool,
    Spool,
)
from trajconv.version import __version__


def iso_ms(moment: datetime) -> str:
    """RFC 3339 UTC with milliseconds, the Snapshot's one time format."""
    # isoformat truncates to milliseconds, pads the year to four digits (strftime's %Y
    # does not, under 1000, and "999-" is not a Snapshot time) and ends in "+00:00".
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


# Integer milliseconds below this (2106-02-07) divide by 1000 into a double that rounds
# back to the exact microsecond, so the seconds and milliseconds can be split exactly.
_EXACT_MS = 2**32 * 1000
_day_cache: tuple[int, str] = (-1, "")


def time_from_ms(ms: int | float) -> str | None:
    """Unix milliseconds as a Snapshot time; ``None`` for a number no UTC instant of
    years 1-9999 is (issue 34: ``99999999999999999`` crashed readers and discover)."""
    global _day_cache
    if type(ms) is int and 0 <= ms < _EXACT_MS:
        # Fast path, byte-equal to the general one below (tests/core/test_canonical.py):
        # Unix time has 86400 s a day, so only the date needs the calendar (cached).
        day, rest = divmod(ms, 86_400_000)
        cached_day, date = _day_cache
        if cached_day != day:
            date = datetime.fromtimestamp(day * 86_400, tz=UTC).strftime("%Y-%m-%dT")
            _day_cache = (day, date)
        hour, rest = divmod(rest, 3_600_000)
        minute, rest = divmod(rest, 60_000)
        second, milli = divmod(rest, 1000)
        return f"{date}{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"
    try:
        return iso_ms(datetime.fromtimestamp(ms / 1000, tz=UTC))
    except (ValueError, OverflowError, OSError):  # past year 9999, before year 1, NaN
        return None


# A time already in the Snapshot's format (as Copilot and fx write theirs), which is kept
# as it is once its date is known to exist: what the general path gives it back.
_SNAPSHOT_TIME = re.compile(TIME_PATTERN[1:-1])
"""The models' pattern: the calendar is in it, so a matching time is a real instant."""


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


class EvidenceFields(TypedDict):
    """A record's ``evidence`` as the builder takes it: the members of
    :class:`trajconv.snapshot.models.Evidence`, checked when the record is spooled."""

    artifact: str
    line: int | None
    json_path: str | None
    native: str
    native_id: str | None
    units: int


def evidence(
    artifact: str,
    *,
    native: str,
    line: int | None = None,
    json_path: str | None = None,
    native_id: str | None = None,
    units: int = 1,
) -> EvidenceFields:
    """Where a record came from (the model's fields and defaults, made as a dict: a
    reader makes one per record, and a model cost 1.8 us where this costs 0.3)."""
    return {
        "artifact": artifact,
        "line": line,
        "json_path": json_path,
        "native": native,
        "native_id": native_id,
        "units": units,
    }


_SAFE = hashing.MAX_SAFE_INTEGER
_EVIDENCE_KEYS = {"artifact", "line", "json_path", "native", "native_id", "units"}
_BASE_KEYS = {"seq", "id", "time", "turn", "evidence", "kind"}
_TEXT_KEYS = _BASE_KEYS | {"text"}
_MODEL_KEYS = _TEXT_KEYS | {"model"}
_KEYS = {
    "user": _TEXT_KEYS,
    "assistant": _MODEL_KEYS,
    "reasoning": _MODEL_KEYS,
    "system": _TEXT_KEYS,
    "observation": _TEXT_KEYS,
    "tool-call": _BASE_KEYS | {"call"},
    "tool-result": _BASE_KEYS | {"result"},
}
_CALL_KEYS = {"id", "name", "arguments"}
_TEXT_KINDS = frozenset(kind for kind, keys in _KEYS.items() if keys == _TEXT_KEYS)
_NO_MODEL: Any = object()
"""``model`` of :meth:`SnapshotBuilder._add` for a record without one."""
_RESULT_KEYS = {"call_id", "ok", "output", "truncated", "exit_code"}


def _safe_int(value: Any, low: int = -_SAFE) -> bool:
    return type(value) is int and low <= value <= _SAFE


_TIMES: set[str] = set()
"""Times :data:`_SNAPSHOT_TIME` matched (at most :data:`_TIMES_KEPT`, then it starts
over): the records of a native line share its time, which ``time_from_iso`` checked."""
_TIMES_KEPT = 8192


def _known_time(time: str) -> bool:
    """Whether ``time`` is in the Snapshot's time format (:data:`_SNAPSHOT_TIME`)."""
    if time in _TIMES:
        return True
    if _SNAPSHOT_TIME.fullmatch(time) is None:
        return False
    if len(_TIMES) >= _TIMES_KEPT:
        _TIMES.clear()
    _TIMES.add(time)
    return True


def _plain_head(rid: Any, time: Any, turn: Any, ev: Any) -> bool:
    """:func:`plain_record` of the members every record has (``seq`` and ``kind`` aside):
    an id, a time, a turn and an evidence the models accept, of plain JSON."""
    # _safe_int written out: this runs once per record
    if not (
        type(rid) is str
        and (time is None or (type(time) is str and _known_time(time)))
        and (turn is None or (type(turn) is int and -_SAFE <= turn <= _SAFE))
        and type(ev) is dict
        and ev.keys() == _EVIDENCE_KEYS
    ):
        return False
    units, line = ev["units"], ev["line"]
    return (
        type(ev["artifact"]) is str
        and type(ev["native"]) is str
        and type(units) is int
        and 0 <= units <= _SAFE
        and (line is None or (type(line) is int and -_SAFE <= line <= _SAFE))
        and (ev["json_path"] is None or type(ev["json_path"]) is str)
        and (ev["native_id"] is None or type(ev["native_id"]) is str)
    )


def _plain_call(call_id: Any, name: Any, arguments: Any) -> bool:
    return type(call_id) is str and type(name) is str and hashing.plain_json(arguments)


def _plain_result(call_id: Any, ok: Any, output: Any, truncated: Any, code: Any) -> bool:
    return (
        type(call_id) is str
        and (ok is None or type(ok) is bool)
        and type(output) is str
        and type(truncated) is bool
        and (code is None or _safe_int(code))
    )


def plain_record(rec: dict[str, Any]) -> bool:
    """True when the models accept ``rec`` (given a hash) and ``orjson`` with sorted keys
    writes its RFC 8785 bytes: only strings, booleans, null and safe integers, with the
    members the models have.

    Sound, not complete: ``False`` means the builder asks pydantic and ``rfc8785``, as it
    always did, so only the common record skips the two (about 6.5 us a record against
    2 us here). ``tests/core/test_canonical.py`` checks that every record this accepts
    is accepted by both. The builder checks the records it makes from their parts, as
    they are added (:meth:`SnapshotBuilder.add_text`), the same way.
    """
    kind = rec.get("kind")
    keys = _KEYS.get(kind) if type(kind) is str else None
    if keys is None or rec.keys() != keys:
        return False
    seq = rec["seq"]
    if not (
        type(seq) is int
        and 0 <= seq <= _SAFE
        and _plain_head(rec["id"], rec["time"], rec["turn"], rec["evidence"])
    ):
        return False
    if kind == "tool-call":
        call = rec["call"]
        return (
            type(call) is dict
            and call.keys() == _CALL_KEYS
            and _plain_call(call["id"], call["name"], call["arguments"])
        )
    if kind == "tool-result":
        res = rec["result"]
        if type(res) is not dict or res.keys() != _RESULT_KEYS:
            return False
        return _plain_result(
            res["call_id"], res["ok"], res["output"], res["truncated"], res["exit_code"]
        )
    model = rec.get("model")
    return type(rec["text"]) is str and (model is None or type(model) is str)


def time_from_iso(text: str) -> str | None:
    """Normalise an RFC 3339 / ISO 8601 time with an offset; ``None`` when unparsable."""
    if len(text) == 24 and _known_time(text):
        return text
    moment = _moment(text)
    if moment is None:
        return None
    try:
        return iso_ms(moment)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the first UTC instant
        return None


_utf8_decoder = codecs.getincrementaldecoder("utf-8")


def _is_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8, decoded a :data:`CHUNK` at a time as
    :class:`ArtifactWriter` checks it (decoding makes a string of what it is given)."""
    if data.isascii():
        return True
    if len(data) <= CHUNK:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    decoder = _utf8_decoder()
    view = memoryview(data)
    try:
        for start in range(0, len(data), CHUNK):
            decoder.decode(view[start : start + CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


class ArtifactWriter:
    """Writes one artifact's bytes into the spool, hashing them as they come."""

    def __init__(self, name: str, fh: BinaryIO, *, check_utf8: bool = True) -> None:
        self.name = name
        self._fh = fh
        self._offset = fh.tell()
        self._check_utf8 = check_utf8
        self._sha = hashlib.sha256()
        self._utf8: codecs.IncrementalDecoder | None = None  # made at the first non-ASCII byte
        self._is_utf8 = True
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self._fh.write(chunk)
        self._sha.update(chunk)
        self.size += len(chunk)
        if not (self._check_utf8 and self._is_utf8):
            return
        utf8 = self._utf8
        if utf8 is None:
            if chunk.isascii():
                return
            utf8 = self._utf8 = _utf8_decoder()
        elif chunk.isascii() and not utf8.getstate()[0]:
            return
        view = memoryview(chunk)
        try:
            # checked a piece at a time: decoding makes a string of what it is given
            for start in range(0, len(chunk), CHUNK):
                utf8.decode(view[start : start + CHUNK])
        except UnicodeDecodeError:
            self._is_utf8 = False

    def finish(self, media_type: str, file: int) -> ArtifactEntry:
        """The artifact's entry; ``file`` is the index of its spool file in the builder."""
        if self._is_utf8 and self._utf8 is not None:
            try:
                self._utf8.decode(b"", final=True)
            except UnicodeDecodeError:
                self._is_utf8 = False
        encoding: Literal["utf8", "base64"] = "utf8" if self._is_utf8 else "base64"
        sha256 = self._sha.hexdigest()
        return (self.name, media_type, sha256, self.size, encoding, file, self._offset)


def _as_spooled(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` as the spool and the Snapshot file will hold it: an integer beyond 64 bits
    (which ``orjson`` cannot write) as the double ``orjson`` reads its digits as, so the
    chain hashes what is written (integers up to 64 bits keep their digits, hashing too)."""
    try:
        orjson.dumps(rec)
    except orjson.JSONEncodeError:
        try:
            converted: dict[str, Any] = orjson.loads(json.dumps(rec))
        except (ValueError, TypeError):
            return rec  # NaN, an infinity: hashing names it
        return converted
    return rec


class SnapshotBuilder:
    """Accumulates one session's records, artifacts and diagnostics.

    Records are hashed and spooled to disk as they come, except those a reader
    still ``hold``s (it may ``amend`` them) and the most recent few; artifact bytes
    go to the spool too. What stays in memory is 8 bytes a record (its place in the
    spool) and, per artifact, its name and about 140 bytes (:class:`ArtifactTable`):
    little, except for a Cursor chat with one artifact per blob (822,000 at 1 GB).
    """

    _TAIL = 64

    def __init__(
        self, source: Source, reader: str, *, _parent: SnapshotBuilder | None = None
    ) -> None:
        self.source = source
        self.reader = reader
        self.session = Session(id=source.session_id)
        self._children: list[tuple[SnapshotBuilder, str | None]] = []
        self._parent = _parent
        self.diagnostics: Diagnostics
        self._spool: Spool
        self._artifacts: ArtifactTable
        self._utf8_later: dict[str, Callable[[], bool | None]]
        self._files: list[Path]
        self._pack: BinaryIO
        self._root: SnapshotBuilder = self if _parent is None else _parent
        self._pack_end = 0  # the root's: the size of its pack so far
        if _parent is not None:  # a sub-agent: the parent's spool, artifacts, diagnostics
            self.diagnostics = _parent.diagnostics
            self._spool = _parent._spool
            self._artifacts = _parent._artifacts
            self._utf8_later = _parent._utf8_later
            self._files = _parent._files
            self._pack = _parent._pack
        else:
            self.diagnostics = Diagnostics()
            self._spool = Spool()
            self._artifacts = ArtifactTable()
            self._utf8_later = {}
            self._files = [self._spool.new_file("artifacts.bin")]  # the pack, then whole files
            self._pack = self._files[0].open("wb")
        self._records = RecordSpool(self._spool)
        self._digest = b""  # the chain head is computed at the first flush
        self._head_source: Source | None = None
        self._tail: list[dict[str, Any]] = []  # records not yet hashed, oldest first
        self._plain: list[bool | None] = []  # plain_record of each (None: ask it)
        self._count = 0
        self._hold: int | None = None

    def child(self, source: Source, parent_call_id: str | None) -> SnapshotBuilder:
        """A sub-agent's builder: its records chain apart (headed by ``source``), its
        artifacts and diagnostics are this Snapshot's. Set its ``session`` (with
        ``parent_session_id``) as for a Snapshot; :meth:`build` of the parent finishes it.
        Children come out in the order they were made."""
        root = self if self._parent is None else self._parent
        kid = SnapshotBuilder(source, self.reader, _parent=root)
        root._children.append((kid, parent_call_id))
        return kid

    # -- records -----------------------------------------------------------------
    def _add(
        self,
        kind: str,
        rid: str,
        time: str | None,
        turn: int | None,
        evidence: EvidenceFields,
        member: str,
        value: Any,
        plain: bool,
        model: Any = _NO_MODEL,
    ) -> int:
        """Add a record of ``kind`` whose body is ``member: value`` (and ``model``);
        ``plain``: what :func:`plain_record` says of it, worked out from its parts."""
        seq = self._count
        self._count = seq + 1
        # The members in the models' order (hash goes after evidence when spooled), so
        # a spooled line is the record as the Snapshot file holds it.
        rec = {
            "seq": seq,
            "id": rid,
            "time": time,
            "turn": turn,
            "evidence": dict(evidence),  # a reader may give one to several records
            "kind": kind,
            member: value,
        }
        if model is not _NO_MODEL:
            rec["model"] = model
        tail = self._tail
        tail.append(rec)
        self._plain.append(plain and seq <= _SAFE and _plain_head(rid, time, turn, rec["evidence"]))
        if len(tail) > 2 * self._TAIL:
            self._flush(self._count - self._TAIL)
        return seq

    def _flush(self, below: int) -> None:
        """Hash and spool the records before ``below`` (and before any held record)."""
        if self._hold is not None:
            below = min(below, self._hold)
        if self._head_source is None:
            # The chain starts from the source (docs/design.md §3), which a reader may complete
            # from the first native event (a harness version); a change after this point
            # costs build() one more pass over the spooled records.
            self._head_source = self.source
            self._digest = hashing.header_digest(FORMAT, self.source.model_dump(mode="json"))
        keep = 0
        digest = self._digest
        append = self._records.append
        dumps, sha256 = orjson.dumps, hashlib.sha256
        for rec, plain in zip(self._tail, self._plain, strict=True):
            if rec["seq"] >= below:
                break
            # hashing.record_digest, inlined for the plain record (a third of its time)
            if plain is None:  # amended
                plain = plain_record(rec)
            body: bytes | None = None
            if plain:
                try:
                    body = dumps(rec, option=orjson.OPT_SORT_KEYS)  # hashing.canonical's bytes
                except orjson.JSONEncodeError:  # a lone surrogate, deep nesting:
                    body = None  # the reference decides
            else:
                rec = _as_spooled(rec)
            if body is None:
                try:
                    body = hashing.canonical(rec, plain=plain)
                except ValueError as exc:  # NaN, an infinity, an integer no double holds
                    self._digest = digest
                    ev = rec["evidence"]
                    raise FormatError(
                        ev["artifact"], f"record {rec['id']}: {exc}", line=ev["line"]
                    ) from None
            digest = sha256(digest + body).digest()
            append(rec, hashing.PREFIX + digest.hex(), checked=plain)
            keep += 1
        self._digest = digest
        del self._tail[:keep]
        del self._plain[:keep]

    def hold(self, seq: int) -> None:
        """Keep record ``seq`` and all after it amendable until ``release``."""
        if seq < self._count - len(self._tail):
            raise ValueError(f"record {seq} is already written")
        self._hold = seq if self._hold is None else min(self._hold, seq)

    def release(self) -> None:
        self._hold = None

    def amend(self, seq: int, **fields: Any) -> None:
        """Change fields of record ``seq``, which must be held or among the last few."""
        first = self._count - len(self._tail)
        if seq < first:
            raise ValueError(f"record {seq} is already written")
        self._tail[seq - first].update(fields)
        self._plain[seq - first] = None  # checked again when it is spooled

    def add_text(
        self,
        kind: str,
        rid: str,
        text: str,
        *,
        time: str | None,
        turn: int | None,
        evidence: EvidenceFields,
        model: str | None = None,
    ) -> int:
        if kind in ("assistant", "reasoning"):
            plain = (
                type(kind) is str and type(text) is str and (model is None or type(model) is str)
            )
            return self._add(kind, rid, time, turn, evidence, "text", text, plain, model)
        plain = type(kind) is str and kind in _TEXT_KINDS and type(text) is str
        return self._add(kind, rid, time, turn, evidence, "text", text, plain)

    def add_call(
        self,
        rid: str,
        call_id: str,
        name: str,
        arguments: JsonValue,
        *,
        time: str | None,
        turn: int | None,
        evidence: EvidenceFields,
    ) -> int:
        call = {"id": call_id, "name": name, "arguments": arguments}
        plain = _plain_call(call_id, name, arguments)
        return self._add("tool-call", rid, time, turn, evidence, "call", call, plain)

    def add_result(
        self,
        rid: str,
        call_id: str,
        ok: bool | None,
        output: str,
        *,
        time: str | None,
        turn: int | None,
        evidence: EvidenceFields,
        truncated: bool = False,
        exit_code: int | None = None,
    ) -> int:
        result = {
            "call_id": call_id,
            "ok": ok,
            "output": output,
            "truncated": truncated,
            "exit_code": exit_code,
        }
        plain = _plain_result(call_id, ok, output, truncated, exit_code)
        return self._add("tool-result", rid, time, turn, evidence, "result", result, plain)

    @property
    def record_count(self) -> int:
        return self._count

    # -- artifacts ---------------------------------------------------------------
    def has_artifact(self, name: str) -> bool:
        return self._artifacts.find(name) is not None

    def artifact_size(self, name: str) -> int | None:
        """The size of the artifact kept as ``name`` (after stripping), or ``None``."""
        i = self._artifacts.find(name)
        return None if i is None else self._artifacts.entry(i)[3]

    def add_artifact(
        self,
        name: str,
        media_type: str,
        data: bytes,
        *,
        parsed: Any = secrets.UNPARSED,
        utf8: bool | None = None,
    ) -> Blob:
        """Keep a small native file's bytes; JSON and YAML lose credential-looking members.

        ``parsed``: for JSON, the value of ``data`` when the reader has it already, as
        ``orjson.loads`` or ``json.loads`` gives it: the credential check looks only at its
        member names, which the two give alike, and strips ``json.loads(data)`` when it
        finds one (:func:`secrets.strip_json_bytes`), so the bytes are not parsed again.
        ``utf8``: whether ``data`` is UTF-8, when the reader knows (then not checked
        again); ``None`` is a check of the bytes, but for JSON handed over ``parsed``,
        where it is taken as ``orjson.loads``'s value, which only UTF-8 gives (a
        ``json.loads`` value says nothing: json also reads UTF-16 and lone surrogates).
        Returns the bytes kept (after stripping).
        """
        dropped: list[str] = []
        if media_type == "application/json":
            if utf8 is None and parsed is not secrets.UNPARSED:
                utf8 = True
            data, dropped = secrets.strip_json_bytes(data, parsed)
        elif media_type in ("application/yaml", "text/yaml"):
            data, dropped = secrets.strip_yaml_bytes(data)
        elif media_type == secrets.NDJSON:
            data, dropped = secrets.strip_jsonl_bytes(data)
        for path in dropped:
            self.diagnostics.add("secret-dropped", f"{name}:{path}")
        # ArtifactWriter's entry, for bytes held whole: one write to the pack, one hash
        root = self._root
        offset = root._pack_end
        self._pack.write(data)
        root._pack_end = offset + len(data)
        if utf8 is None:
            utf8 = _is_utf8(data)
        sha256 = hashlib.sha256(data).hexdigest()
        encoding: Literal["utf8", "base64"] = "utf8" if utf8 else "base64"
        self._artifacts.put((name, media_type, sha256, len(data), encoding, 0, offset))
        return Blob.from_bytes(data)

    @contextlib.contextmanager
    def artifact_writer(
        self, name: str, media_type: str, *, utf8: Callable[[], bool | None] | None = None
    ) -> Iterator[ArtifactWriter]:
        """Write an artifact in pieces (it is never held whole); kept when the block ends.

        ``utf8``, when given, is asked at build time whether the bytes are UTF-8 instead
        of the writer decoding them (a reader that parsed every line knows; ``None``
        from it means it does not, and the bytes are checked then).
        """
        path = self._spool.new_file("artifact")
        with path.open("wb") as fh:
            writer = ArtifactWriter(name, fh, check_utf8=utf8 is None)
            yield writer
        if utf8 is not None:
            self._utf8_later[name] = utf8
        self._files.append(path)
        self._artifacts.put(writer.finish(media_type, len(self._files) - 1))

    def add_artifact_file(
        self,
        name: str,
        media_type: str,
        path: Path,
        limit: int,
        limit_name: str,
        *,
        utf8: Callable[[], bool | None] | None = None,
        watch: Callable[[bytes], None] | None = None,
    ) -> Blob:
        """Copy a native file into the Snapshot in chunks; returns the copy to parse.

        The reader parses the returned copy, not the native file, so the records and
        the artifact are the same bytes even if the harness appends meanwhile. Over
        ``limit`` bytes is a LimitError naming ``limit_name``. A JSON Lines file
        (``application/x-ndjson``) loses credential-looking members line by line
        (``secrets.JsonlStripper``), its other lines kept byte for byte; JSON and YAML
        files go through :meth:`add_artifact`, which strips their secrets,
        or are checked by the caller, whose ``add_artifact`` of the stripped bytes then
        replaces this copy (fx's large ``session.json``). ``utf8``: see
        :meth:`artifact_writer`; ``watch`` sees each chunk as it is copied (a reader's
        pre-scan without reading the file again).
        """
        # a journal loses credential-looking members line by line, the rest as it is
        jsonl = secrets.JsonlStripper() if media_type == secrets.NDJSON else None
        try:
            with path.open("rb") as src, self.artifact_writer(name, media_type, utf8=utf8) as out:
                while chunk := src.read(CHUNK):
                    if out.size + len(chunk) > limit:
                        raise LimitError(path, limit_name, limit)
                    out.write(jsonl.feed(chunk) if jsonl is not None else chunk)
                    if watch is not None:
                        watch(chunk)
                if jsonl is not None:
                    out.write(jsonl.finish())
        except OSError as exc:
            if exc.errno in NO_SPACE:  # the copy's side: the spool folder filled up
                raise NoSpaceError(self._spool.dir.parent, exc) from None
            raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
        for where in jsonl.dropped if jsonl is not None else ():
            self.diagnostics.add("secret-dropped", f"{name}:{where}")
        return Blob(path=self._files[-1], size=out.size, keep=self._spool)

    def _settle_encoding(self, name: str, is_utf8: bool | None) -> None:
        i = self._artifacts.find(name)
        assert i is not None  # registered with its artifact
        entry = self._artifacts.entry(i)
        if is_utf8 is None:  # the reader could not tell: decode the bytes once more
            blob = Blob(path=self._files[entry[5]], offset=entry[6], size=entry[3])
            decoder = codecs.getincrementaldecoder("utf-8")()
            try:
                for chunk in blob.chunks():
                    decoder.decode(chunk)
                decoder.decode(b"", final=True)
                is_utf8 = True
            except UnicodeDecodeError:
                is_utf8 = False
        self._artifacts.put((*entry[:4], "utf8" if is_utf8 else "base64", *entry[5:]))

    # -- finish ------------------------------------------------------------------
    def _close_records(self) -> RecordLog:
        self._hold = None
        self._flush(self._count)
        if self._head_source is not None and self._head_source != self.source:
            # the reader completed the source after records were spooled: chain them again
            head = hashing.header_digest(FORMAT, self.source.model_dump(mode="json"))
            self._digest = self._records.rechain(head)
            self._head_source = self.source
        return self._records.close()

    def _finish(self) -> tuple[dict[str, Any], dict[str, Any], RecordLog]:
        """Close the records; the source and the session as they are hashed, and the records."""
        records = self._close_records()
        return self.source.model_dump(mode="json"), self.session.model_dump(mode="json"), records

    def _build_child(self, parent_call_id: str | None) -> Child:
        source, session, records = self._finish()
        cid = hashing.child_id(FORMAT, parent_call_id, source, session, self._digest)
        return Child.model_construct(
            id=cid,
            parent_call_id=parent_call_id,
            source=self.source,
            session=Session.model_validate(session),
            records=records,
        )

    def build(self) -> Snapshot:
        if self._parent is not None:
            raise ValueError("a sub-agent's builder is finished by its parent's build()")
        source, session, records = self._finish()
        children = tuple(kid._build_child(call) for kid, call in self._children)
        self._pack.close()
        for name, utf8 in self._utf8_later.items():
            self._settle_encoding(name, utf8())
        artifacts = ArtifactLog(self._artifacts, self._files, self._spool)
        self._artifacts = ArtifactTable()
        sid = hashing.snapshot_id(
            FORMAT, source, session, self._digest, artifacts.metadata(), (c.id for c in children)
        )
        diagnostics = tuple(self.diagnostics.to_models())
        producer = Producer(version=__version__, reader=self.reader)
        meta = meta_hash_of(diagnostics, producer, artifacts)
        session_model = Session.model_validate(session)
        return assemble(
            sid,
            meta,
            self.source,
            session_model,
            records,
            children,
            artifacts,
            diagnostics,
            producer,
        )


def assemble(
    sid: str,
    meta: str,
    source: Source,
    session: Session,
    records: RecordLog,
    children: tuple[Child, ...],
    artifacts: ArtifactLog,
    diagnostics: tuple[Diagnostic, ...],
    producer: Producer,
) -> Snapshot:
    """The Snapshot of these parts, its id ``sid`` and ``meta`` hash already worked out (by
    the builder, or checked by the file loader): not validated again."""
    return Snapshot.model_construct(
        id=sid,
        meta_hash=meta,
        source=source,
        session=session,
        records=records,
        children=children,
        artifacts=artifacts,
        diagnostics=diagnostics,
        producer=producer,
    )


def meta_hash_of(
    diagnostics: Iterable[Diagnostic], producer: Producer, artifacts: ArtifactLog
) -> str:
    """A Snapshot's ``meta_hash`` from its models (:func:`hashing.meta_hash` of their JSON)."""
    return hashing.meta_hash(
        (d.model_dump(mode="json") for d in diagnostics),
        producer.model_dump(mode="json"),
        artifacts.metadata(),
    )
