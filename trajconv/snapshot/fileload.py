"""Load a Snapshot file a record and a chunk at a time, checking it as it goes.

``io.load`` parses a file whole, checks it against the JSON Schema, then the models:
a 212 MB Snapshot file (a 100 MB Copilot session) took 42 s and 1.2 GB, nearly all
of it the schema walk over 66,000 records. A file as :func:`trajconv.snapshot.io.write`
lays it out (``orjson`` ``OPT_INDENT_2``: a top-level member per line group, each
record and artifact an object whose braces are indented by exactly four spaces, since
no raw newline can be inside a JSON string) is read here instead, in one pass:

* each record is parsed alone, checked by the models (``builder.plain_record``'s type
  tests, or pydantic strict), hashed into the chain and spooled as a reader's would
  be, and its ``hash`` and ``seq`` must be the ones the chain gives;
* each artifact's ``data`` string is decoded in 1 MiB pieces into the spool (never
  held whole, not even as one line) and must have its ``sha256`` and ``size``; the
  artifacts must come in name order, each name once, as the writer puts them;
* the id must be the one the content gives.

So what it returns is a Snapshot that verifies, backed by a spool like a built one
(a stored Snapshot's artifacts are read from its store's files, checked first).
:func:`verify_streamed` makes the same checks and keeps nothing: no record is spooled
and the artifacts' bytes are hashed, not written (``trajconv verify`` of that 212 MB
file used to write a 212 MB copy to ``$TMPDIR`` while it checked). It also checks a
Snapshot an archive store keeps, whose artifacts (``data: null``) are files of the
store, and picks out the chain hashes the store's history checks need: a store's
verify parsed each document whole and held them all (43 s and 586 MB for the one
Snapshot of that Copilot session).
Anything else (another layout, a broken hash, ``data: null`` where no store is given,
a member the models would fill in or change, an error the models name, an OSError
reading it or writing the spool) gives ``None``, and the caller takes the
whole-document path, whose checks and messages are the reference.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import ValidationError

from trajconv.snapshot import hashing
from trajconv.snapshot.builder import assemble, meta_hash_of, plain_record
from trajconv.snapshot.models import (
    FORMAT,
    Artifact,
    Child,
    Diagnostic,
    Evidence,
    Producer,
    Session,
    Snapshot,
    Source,
    ToolCall,
    ToolResult,
)
from trajconv.snapshot.spool import (
    CHUNK,
    ArtifactLog,
    ArtifactTable,
    RecordSpool,
    Spool,
    _record_adapter,
)
from trajconv.snapshot.strictjson import strict_loads

_LINE = 1 << 20  # a line of the document's frame longer than this is not the layout
_SCAN = 4 << 20  # a record longer than this is read line by line
_PIECE = 1 << 16  # records and a data string are read and decoded this much at a time
_TAIL = 64 << 20  # diagnostics and producer, after the artifacts
_HEAD_LINES = 200  # format, id, source and session take about 20
_RECORD = b"    {\n"
_RECORD_END = (b"    },\n", b"    }\n")
_DATA = b'      "data": '
_STORED = b"null\n"  # an archive store's Snapshot: the artifact is a file of the store
_HEAD = ("format", "id", "meta_hash", "source", "session")
_CHILD_HEAD = ("id", "parent_call_id", "source", "session")
_CHILD_INDENT = b"        "  # a child's records: an item of an array three levels deep
_FOOT = ("diagnostics", "producer")
_META = ("name", "media_type", "sha256", "size", "encoding")


class _NotTheLayout(Exception):
    """The file is not one this loader takes; the whole-document path decides."""


def _member_orders() -> dict[str, tuple[str, ...]]:
    from trajconv.snapshot import models

    # the members as the builder spools them: the hash is put in by the spool
    return {
        kind: tuple(f for f in k.model_fields if f != "hash")
        for kind, k in models.RECORD_MODELS.items()
    }


_ORDERS = _member_orders()
_EVIDENCE = tuple(Evidence.model_fields)
_CALL = tuple(ToolCall.model_fields)
_RESULT = tuple(ToolResult.model_fields)


def _in_model_order(rec: dict[str, Any]) -> bool:
    """The record's members (and its objects') are in the order the models write them
    (``hash`` aside); for a record :func:`plain_record` passed."""
    if tuple(rec) != _ORDERS.get(rec.get("kind"), ()):  # type: ignore[arg-type]
        return False
    if tuple(rec["evidence"]) != _EVIDENCE:
        return False
    call, result = rec.get("call"), rec.get("result")
    return (call is None or tuple(call) == _CALL) and (result is None or tuple(result) == _RESULT)


def _object(lines: list[bytes]) -> dict[str, Any]:
    """The members given as lines (the last one may end with a comma) as an object; one
    naming a member twice, or with an integer beyond 64 bits, is not the layout."""
    body = b"".join(lines).rstrip(b"\n").removesuffix(b",")
    try:
        value = strict_loads(b"{" + body + b"}")
    except ValueError:
        raise _NotTheLayout from None
    if not isinstance(value, dict):
        raise _NotTheLayout
    return value


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _meta_object(lines: list[bytes]) -> dict[str, Any]:
    """An artifact's members before ``data`` (:data:`_META`, in that order) as an object.

    Lines exactly as :func:`trajconv.snapshot.io.write` lays them out name no member twice
    and hold no integer beyond 64 bits, so ``orjson`` reads them (a tenth of ``_object``'s
    time: a Cursor Snapshot has an artifact per blob); any other lines go to ``_object``.
    """
    text = b"".join(lines)
    try:
        value = orjson.loads(b"{" + text.removesuffix(b",\n") + b"}")
    except orjson.JSONDecodeError:
        raise _NotTheLayout from None
    if type(value) is dict and tuple(value) == _META:
        # written as an item of a top-level array: "[\n  [\n    {\n", the members, then
        # "\n    }\n  ]\n]"; the lines hold the members and a comma (``data`` follows)
        written = orjson.dumps([[value]], option=orjson.OPT_INDENT_2)
        if (
            text.endswith(b",\n")
            and len(written) == len(text) + 22
            and written.startswith(text[:-2], 12)
        ):
            return value
    value = _object(lines)
    if tuple(value) != _META:
        raise _NotTheLayout
    return value


def _plain_meta(meta: dict[str, Any]) -> bool:
    """True when :class:`Artifact`'s strict models take these members (``data`` aside):
    the common case, checked without them; ``False`` leaves it to the models."""
    name, media_type, sha256, size, encoding = meta.values()
    return (
        type(name) is str
        and type(media_type) is str
        and type(sha256) is str
        and _SHA256.fullmatch(sha256) is not None
        and type(size) is int
        and size >= 0
        and encoding in _ENCODINGS
    )


_ENCODINGS = ("utf8", "base64")


def _whole_data(string: bytes, encoding: str) -> bytes:
    """The bytes of an artifact's ``data`` given whole as a JSON string (its quotes too):
    what :meth:`_Loader._data` gives for it in pieces."""
    text = orjson.loads(string)
    if type(text) is not str:
        raise _NotTheLayout
    data = text.encode("utf-8")
    if encoding == "utf8":
        return data
    if len(data) % 4:
        raise _NotTheLayout
    return base64.b64decode(data, validate=True)  # which allows "=" only at its end


def _as_written(text: bytes, value: Any, indent: bytes = b"    ") -> bool:
    """Whether ``text``, a record's lines as the file holds them (its closing brace
    aside), is exactly how :func:`trajconv.snapshot.io.write` writes ``value``: then no
    member is named twice and no number was read as another (issue 25); otherwise the
    record is read again by ``strict_loads``, which checks both.

    ``value`` is written as the item of arrays nested as deep as ``indent`` says, so
    ``orjson`` indents its lines as the file does (no replace of every newline after).
    """
    depth = len(indent) // 2
    wrapped = [[value]] if depth == 2 else value
    if depth != 2:
        for _ in range(depth):
            wrapped = [wrapped]
    written = orjson.dumps(wrapped, option=orjson.OPT_INDENT_2)
    # the arrays' opening lines, then the value's, then its closing brace and theirs
    cut = depth * (depth + 1)
    return len(written) == cut + len(text) + len(indent) + 1 + cut and written.startswith(text, cut)


def _high_surrogate_escape(buf: bytes, at: int) -> bool:
    """``buf[at:]`` starts with an escape ``\\uD800`` to ``\\uDBFF`` (an odd run of
    backslashes ends at ``at``: an even one is escaped backslashes)."""
    if buf[at : at + 2] != b"\\u" or buf[at + 2 : at + 4].upper() not in _HIGH:
        return False
    start = at
    while start > 0 and buf[start - 1] == 0x5C:
        start -= 1
    return (at - start) % 2 == 0


_HIGH = (b"D8", b"D9", b"DA", b"DB")


def _cut(buf: bytes) -> int:
    """Where ``buf``, a piece of a JSON string's body, can be cut: no escape, surrogate
    pair or UTF-8 character straddles the place (0: nowhere yet)."""
    last = buf.rfind(b"\\")
    cut = len(buf) - 1
    while cut >= last + 6 and 0x80 <= buf[cut] <= 0xBF:  # an escape is at most 6 bytes
        cut -= 1
    if cut >= last + 6:
        return cut
    # An escape ends the piece: cut before its run of backslashes (whole pairs before
    # an escape cut nothing), and before a high surrogate its low one may follow.
    cut = last
    while cut > 0 and buf[cut - 1] == 0x5C:
        cut -= 1
    if cut >= 6 and _high_surrogate_escape(buf, cut - 6):
        cut -= 6
    return cut


def _string_bytes(parts: Iterator[bytes]) -> Iterator[bytes]:
    """The UTF-8 bytes of a JSON string whose body (escaped, without the quotes) comes
    in ``parts``, cut anywhere; each piece decoded ends at a :func:`_cut`.

    A part is decoded :data:`_PIECE` bytes at a time: a string of a 1 MiB piece with a
    4-byte character in it takes 4 MiB, and made and encoded again it cost a third more
    than pieces that stay in the processor's cache.
    """
    carry = b""
    for whole in parts:
        for start in range(0, len(whole), _PIECE):
            part = whole[start : start + _PIECE]
            buf = carry + part if carry else part
            cut = _cut(buf)
            if cut <= 0:
                carry = buf
                continue
            yield orjson.loads(b'"' + buf[:cut] + b'"').encode("utf-8")
            carry = buf[cut:]
    if carry:
        yield orjson.loads(b'"' + carry + b'"').encode("utf-8")


def _base64_bytes(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Base64 decoded in pieces of whole 4-character groups; padding only at the very end
    (decoding the whole string stops at the first padding, so one in the middle of it
    would make the pieces say more than the document does)."""
    pending = b""
    padded = False
    for piece in pieces:
        if padded and piece:
            raise _NotTheLayout
        pending += piece
        cut = len(pending) - len(pending) % 4
        block = pending[:cut]
        padded = block.endswith(b"=")
        yield base64.b64decode(block, validate=True)  # which allows "=" only at its end
        pending = pending[cut:]
    if pending:
        raise _NotTheLayout


#: The file of an artifact kept beside the document (sha256, size), when it is there
#: whole; ``None`` when it is not.
StoredCheck = Callable[[str, int], Path | None]


@dataclass(frozen=True)
class Checked:
    """What :func:`verify_streamed` found in a file that verifies; the archive also
    makes one of a Snapshot in memory or of a document parsed whole, for relations."""

    id: str
    records: int
    artifacts: int
    source: dict[str, Any]
    session: dict[str, Any]
    hashes: dict[int, str]
    """The chain hashes at the positions asked for, and the last record's."""
    digests: tuple[str, ...] = ()
    """The artifacts' sha256, in name order (a check gives them)."""
    children: int = 0
    """Sub-agent sessions (each checked: chain, id, spawning call)."""
    child_records: int = 0

    @property
    def last_hash(self) -> str | None:
        return self.hashes[self.records - 1] if self.records else None


class _Loader:
    """One pass over the file. ``keep``: spool the records and the artifacts' bytes (a
    load, whose Snapshot is ``snapshot`` after :meth:`read`), or only hash them (a check).
    """

    def __init__(
        self,
        fh: BinaryIO,
        *,
        keep: bool,
        stored: StoredCheck | None = None,
        hashes_at: Collection[int] = (),
    ) -> None:
        self._fh = fh
        self._spool = Spool() if keep else None
        self._stored = stored
        self._hashes_at = hashes_at
        self._hashes: dict[int, str] = {}
        # when kept: the artifact pack, then the store files stored artifacts are read from
        self._files: list[Path] = []
        self.snapshot: Snapshot | None = None

    def _line(self, limit: int = _LINE) -> bytes:
        line = self._fh.readline(limit)
        if not line.endswith(b"\n"):
            raise _NotTheLayout
        return line

    def read(self) -> Checked:
        if self._line() != b"{\n":
            raise _NotTheLayout
        head_lines = []
        while (line := self._line()) not in (b'  "records": [\n', b'  "records": [],\n'):
            head_lines.append(line)
            if len(head_lines) > _HEAD_LINES:  # not a Snapshot's head: stop reading here
                raise _NotTheLayout
        head = _object(head_lines)
        if tuple(head) != _HEAD or head["format"] != FORMAT:
            raise _NotTheLayout
        source = Source.model_validate(head["source"], strict=True)
        session = Session.model_validate(head["session"], strict=True)
        source_json = source.model_dump(mode="json")
        session_json = session.model_dump(mode="json")
        if source_json != head["source"] or session_json != head["session"]:
            raise _NotTheLayout  # a member left to its default: the id is over the members
        digest = hashing.header_digest(FORMAT, source_json)
        records = RecordSpool(self._spool) if self._spool is not None else None
        count = 0
        calls: set[str] = set()
        try:
            if line == b'  "records": [\n':
                digest, count = self._records(records, digest, calls=calls)
                self._hashes[count - 1] = hashing.tag(digest)
        finally:
            log = records.close() if records is not None else None
        line = self._line()
        children: tuple[Child, ...] = ()
        child_ids: list[str] = []
        child_records = 0
        if line == b'  "children": [\n':
            children, child_ids, child_records = self._children(session.id, calls)
            line = self._line()
        if line == b'  "artifacts": [\n':
            artifacts = self._artifacts()
        elif line == b'  "artifacts": [],\n':
            artifacts = ArtifactTable()
        else:
            raise _NotTheLayout
        art_log = ArtifactLog(artifacts, self._files, self._spool)
        tail = self._tail()
        foot = _object([tail[:-2]])
        if tuple(foot) != _FOOT or not isinstance(foot["diagnostics"], list):
            raise _NotTheLayout
        diagnostics = tuple(
            Diagnostic.model_validate_json(orjson.dumps(d), strict=True)  # JSON: lists are tuples
            for d in foot["diagnostics"]
        )
        producer = Producer.model_validate(foot["producer"], strict=True)
        sid = hashing.snapshot_id(
            FORMAT, source_json, session_json, digest, art_log.metadata(), child_ids
        )
        if sid != head["id"]:
            raise _NotTheLayout
        meta = meta_hash_of(diagnostics, producer, art_log)
        if meta != head["meta_hash"]:
            raise _NotTheLayout
        if log is not None:
            self.snapshot = assemble(
                sid, meta, source, session, log, children, art_log, diagnostics, producer
            )
        digests = tuple(m["sha256"] for m in art_log.metadata())
        return Checked(
            sid,
            count,
            len(art_log),
            source_json,
            session_json,
            self._hashes,
            digests,
            len(child_ids),
            child_records,
        )

    def _children(
        self, parent_session: str, parent_calls: set[str]
    ) -> tuple[tuple[Child, ...], list[str], int]:
        """The ``children`` array: each child's members, its records (chained from its
        source, checked and spooled as the Snapshot's are), its id and the call that
        spawned it, which must be one of the session its ``parent_session_id`` names."""
        kids: list[Child] = []
        ids: list[str] = []
        total = 0
        calls_of = {parent_session: parent_calls}
        while True:
            if self._line() != _RECORD:
                raise _NotTheLayout
            head_lines = []
            while (line := self._line()) not in (
                b'      "records": [\n',
                b'      "records": []\n',
            ):
                head_lines.append(line)
                if len(head_lines) > _HEAD_LINES:
                    raise _NotTheLayout
            head = _object(head_lines)
            if tuple(head) != _CHILD_HEAD:
                raise _NotTheLayout
            source = Source.model_validate(head["source"], strict=True)
            session = Session.model_validate(head["session"], strict=True)
            call = head["parent_call_id"]
            if not (call is None or type(call) is str) or type(head["id"]) is not str:
                raise _NotTheLayout
            source_json = source.model_dump(mode="json")
            session_json = session.model_dump(mode="json")
            if source_json != head["source"] or session_json != head["session"]:
                raise _NotTheLayout
            digest = hashing.header_digest(FORMAT, source_json)
            spool = RecordSpool(self._spool) if self._spool is not None else None
            calls: set[str] = set()
            count = 0
            try:
                if line == b'      "records": [\n':
                    digest, count = self._records(spool, digest, _CHILD_INDENT, calls)
            finally:
                log = spool.close() if spool is not None else None
            cid = hashing.child_id(FORMAT, call, source_json, session_json, digest)
            spawner = calls_of.get(session.parent_session_id or "")
            if cid != head["id"] or spawner is None or (call is not None and call not in spawner):
                raise _NotTheLayout  # the whole-document check names which
            calls_of.setdefault(session.id, calls)
            ids.append(cid)
            total += count
            if log is not None:
                kids.append(
                    Child.model_construct(
                        id=cid, parent_call_id=call, source=source, session=session, records=log
                    )
                )
            if self._item_end():
                break
        return tuple(kids), ids, total

    def _item_end(self) -> bool:
        """After an item of a top-level array: True (and the array's end read) when it was
        the last."""
        end = self._line()
        if end == b"    },\n":
            return False
        if end != b"    }\n" or self._line() != b"  ],\n":
            raise _NotTheLayout
        return True

    def _tail(self) -> bytes:
        """The rest of the document (diagnostics, producer), read a piece at a time: a
        read of the whole limit would take that much memory at once."""
        pieces, held = [], 0
        while piece := self._fh.read(CHUNK):
            pieces.append(piece)
            held += len(piece)
            if held > _TAIL:
                raise _NotTheLayout
        tail = b"".join(pieces)
        if not tail.endswith(b"}\n"):
            raise _NotTheLayout
        return tail

    def _records(
        self,
        spool: RecordSpool | None,
        digest: bytes,
        indent: bytes = b"    ",
        calls: set[str] | None = None,
    ) -> tuple[bytes, int]:
        """A records array whose items are indented by ``indent`` (a child's are deeper);
        each tool call's id goes into ``calls``."""
        seq = 0
        top = indent == b"    "
        for item, last in self._items(indent):
            size = len(item) - (1 if last else 2)  # up to the item's closing brace
            rec = orjson.loads(memoryview(item)[:size])
            text = item[: size - len(indent) - 1]  # its lines, the closing one aside
            written = _as_written(text, rec, indent)
            if not written:  # another writer's escapes or order: strictly
                try:
                    rec = strict_loads(text + b"}")
                except ValueError:
                    raise _NotTheLayout from None
            if type(rec) is not dict or rec.get("seq") != seq:
                raise _NotTheLayout
            # laid out as the spool holds a record (a top-level item, its hash after its
            # evidence, where the models have it): its text is spooled as it is
            as_spooled = written and top and tuple(rec)[5:6] == ("hash",)
            stated = rec.pop("hash", None)
            plain = plain_record(rec) and _in_model_order(rec)
            if not plain:  # through the models, which also put the members in order
                adapter = _record_adapter()  # built only when a record needs it
                model = adapter.validate_python({**rec, "hash": stated}, strict=True)
                ordered = adapter.dump_python(model, mode="json")
                del ordered["hash"]
                if ordered != rec:  # a member left to its default: the hash is over the members
                    raise _NotTheLayout
                rec = ordered
            digest = hashing.record_digest(digest, rec, plain=plain)
            tag = hashing.tag(digest)
            if stated != tag:
                raise _NotTheLayout
            if seq in self._hashes_at:
                self._hashes[seq] = tag
            if calls is not None and rec["kind"] == "tool-call":
                calls.add(rec["call"]["id"])
            if spool is None:
                pass
            elif plain and as_spooled:  # the members in model order, as orjson writes them
                spool.append_item(b",\n" + item[:size])
            else:  # checked by plain_record or just now by the models
                spool.append(rec, tag, checked=True)
            seq += 1
        closing = b"  ],\n" if top else indent[:-2] + b"]\n"
        if self._line() != closing:
            raise _NotTheLayout
        return digest, seq

    def _items(self, indent: bytes) -> Iterator[tuple[bytes, bool]]:
        """The items of an array of objects whose braces are indented by ``indent``: each
        item's lines (its opening and closing ones too) and whether it was the last (its
        closing brace without a comma); the file is then read on from just after it.

        An item ends at the first line after its opening one that is its closing brace,
        alone, as a line by line read finds it; here it is found in pieces of the file
        read :data:`_PIECE` at a time (a ``readline`` a line cost a third of a load). An
        item longer than :data:`_SCAN` is read line by line, so memory stays bounded.
        """
        fh = self._fh
        opening = indent + b"{\n"
        mark = b"\n" + indent + b"}"
        # a line's indent is most of its bytes: bytes.find, skipping by the last byte
        # only, took a third longer than the regular expression's scan
        find = re.compile(re.escape(mark)).search
        first = len(opening) - 1  # the opening line's newline, from an item's start
        buf = b""
        at = 0  # where the next item starts in buf
        base = fh.tell()  # the file's offset of buf[0]
        search = first
        while True:
            found = find(buf, search)
            if found is not None:
                p = found.start()
                q = p + len(mark)
                after = buf[q : q + 2]
                last = after[:1] == b"\n"
                if last or after == b",\n":
                    if not buf.startswith(opening, at):
                        raise _NotTheLayout
                    end = q + 1 if last else q + 2
                    yield buf[at:end], last
                    if last:
                        fh.seek(base + end)
                        return
                    at = end
                    search = at + first
                    continue
                if len(after) == 2:  # a line that only starts as the closing one does
                    search = p + 1
                    continue
                search = p  # the closing line, maybe: the piece ends within it
            else:
                search = max(search, len(buf) - len(mark) + 1)
            if len(buf) - at > _SCAN:
                fh.seek(base + at)
                item, last = self._item_lines(opening, indent)
                yield item, last
                if last:
                    return
                buf, at, base, search = b"", 0, fh.tell(), first
                continue
            piece = fh.read(max(_PIECE, len(buf) - at))  # a long item: doubling, not quadratic
            if not piece:
                raise _NotTheLayout
            buf = buf[at:] + piece
            search -= at
            base += at
            at = 0

    def _item_lines(self, opening: bytes, indent: bytes) -> tuple[bytes, bool]:
        """One item of :meth:`_items`, read line by line."""
        readline = self._fh.readline
        ends = (indent + b"},\n", indent + b"}\n")
        first = readline()
        if first != opening:
            raise _NotTheLayout
        lines = [first]
        while (line := readline()) not in ends:
            if not line.endswith(b"\n"):
                raise _NotTheLayout
            lines.append(line)
        lines.append(line)
        return b"".join(lines), line == ends[1]

    def _artifacts(self) -> ArtifactTable:
        table = ArtifactTable()
        pack: BinaryIO | None = None  # a check: the bytes are hashed, not kept
        if self._spool is not None:
            path = self._spool.new_file("artifacts.bin")
            self._files.append(path)
            pack = path.open("wb", buffering=CHUNK)
        offset = 0  # where the next artifact's bytes go in the pack
        last: str | None = None
        with pack if pack is not None else contextlib.nullcontext():
            while True:
                if self._line() != _RECORD:
                    raise _NotTheLayout
                meta_lines = []
                while not (line := self._fh.readline(_LINE)).startswith(_DATA):
                    if not line.endswith(b"\n"):
                        raise _NotTheLayout
                    meta_lines.append(line)
                meta = _meta_object(meta_lines)
                if not _plain_meta(meta):
                    Artifact.model_validate({**meta, "data": None}, strict=True)
                if last is not None and meta["name"] <= last:
                    raise _NotTheLayout  # the writer sorts them; the table would sort them
                last = meta["name"]
                rest = line[len(_DATA) :]
                if rest == _STORED:
                    where = self._stored(meta["sha256"], meta["size"]) if self._stored else None
                    if where is None:
                        raise _NotTheLayout
                    if pack is not None:  # a load: the Snapshot reads it from there
                        self._files.append(where)
                    stub = (meta["media_type"], meta["sha256"], meta["size"], meta["encoding"])
                    table.put((last, *stub, len(self._files) - 1 if pack is not None else 0, 0))
                else:
                    if rest.endswith(b'"\n'):  # the whole string on the line: decoded at once
                        data = _whole_data(rest[:-1], meta["encoding"])
                        if pack is not None:
                            pack.write(data)
                        sha256, size = hashlib.sha256(data).hexdigest(), len(data)
                    else:
                        digest, size = hashlib.sha256(), 0
                        for chunk in self._data(rest, meta["encoding"]):
                            if pack is not None:
                                pack.write(chunk)
                            digest.update(chunk)
                            size += len(chunk)
                        sha256 = digest.hexdigest()
                    if sha256 != meta["sha256"] or size != meta["size"]:
                        raise _NotTheLayout
                    at = offset if pack is not None else 0
                    table.put((last, meta["media_type"], sha256, size, meta["encoding"], 0, at))
                    offset += size
                if self._item_end():
                    break
        return table

    def _data(self, start: bytes, encoding: str) -> Iterator[bytes]:
        """The bytes of an artifact's ``data``, from the rest of its line on."""
        if not start.startswith(b'"'):
            raise _NotTheLayout  # null: the bytes are beside the document

        def body() -> Iterator[bytes]:
            part = start[1:]
            while not part.endswith(b"\n"):
                after = self._fh.readline(_PIECE)
                if not after:
                    raise _NotTheLayout
                if after == b"\n":  # the piece ended just before the line's newline
                    part += after
                    break
                yield part
                part = after
            if not part.endswith(b'"\n'):
                raise _NotTheLayout
            yield part[:-2]

        text = _string_bytes(body())
        return text if encoding == "utf8" else _base64_bytes(text)


def load_streamed(path: Path, *, stored: StoredCheck | None = None) -> Snapshot | None:
    """The Snapshot in ``path`` when it is laid out as trajconv writes it and verifies;
    ``None`` otherwise (see the module docstring).

    ``stored``: a stored Snapshot's artifacts are beside it; this gives the file of
    each, checked whole, which the Snapshot then reads.
    """
    found = _read(path, keep=True, stored=stored)
    return found[0].snapshot if found is not None else None


def verify_streamed(
    path: Path, *, stored: StoredCheck | None = None, hashes_at: Collection[int] = ()
) -> Checked | None:
    """What :func:`load_streamed` checks, keeping nothing, when the Snapshot in ``path``
    is laid out as trajconv writes it and verifies; ``None`` otherwise.

    ``stored``: a stored Snapshot's artifacts are beside it; this says whether each is
    there, whole (and where). ``hashes_at``: the record positions whose chain hashes
    to give.
    """
    found = _read(path, keep=False, stored=stored, hashes_at=hashes_at)
    return found[1] if found is not None else None


def _read(
    path: Path,
    *,
    keep: bool,
    stored: StoredCheck | None = None,
    hashes_at: Collection[int] = (),
) -> tuple[_Loader, Checked] | None:
    try:
        with path.open("rb", buffering=CHUNK) as fh:
            loader = _Loader(fh, keep=keep, stored=stored, hashes_at=hashes_at)
            return loader, loader.read()
    except (
        OSError,  # reading it, or the spool: the whole-document path reports the file's
        _NotTheLayout,
        orjson.JSONDecodeError,
        ValidationError,
        UnicodeEncodeError,
        binascii.Error,
    ):
        return None
