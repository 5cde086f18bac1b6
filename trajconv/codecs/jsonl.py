"""Line-oriented JSON logs, read the way the harnesses themselves read them.

Shared by every codec whose store is a JSONL journal. Blank lines, torn lines
(a write cut short: not complete JSON) and invalid lines (JSON that is not an
object) are counted with their line numbers and skipped; the rest is yielded
one object at a time. A line that parses once a UTF-8 byte-order mark is
stripped, or once its bytes that are not UTF-8 are replaced by U+FFFD, is kept
and counted (``bom-stripped``, ``replaced-bytes``): it is often the user's
prompt, and dropping it would lose the conversation silently. A UTF-16 journal
is an error that says so (its lines would otherwise all be skipped).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.errors import FormatError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.spool import CHUNK

if TYPE_CHECKING:
    from trajconv.snapshot.blob import Blob
    from trajconv.snapshot.builder import SnapshotBuilder


def read_bounded(path: Path, limit: int, limits_name: str = "max_session_bytes") -> bytes:
    """Read a whole native file, refusing one over ``limit`` bytes before reading it."""
    from trajconv.errors import LimitError

    try:
        with open(path, "rb") as fh:  # the size of what was opened: one look-up of the path
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise LimitError(path, limits_name, limit)
            # read(n) sets n bytes aside first: the size found, not the limit (4 GiB by
            # default, which a machine with less memory and swap refuses outright)
            data = fh.read(size + 1)
            if len(data) > size:  # it grew since: read on, a chunk at a time, to the limit
                parts, held = [data], len(data)
                while held <= limit and (part := fh.read(CHUNK)):
                    parts.append(part)
                    held += len(part)
                data = b"".join(parts)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LimitError(path, limits_name, limit)
    return data


def iter_objects(
    data: bytes, name: str, diags: Diagnostics, limits: Limits
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every good line of ``data`` (1-based lines)."""
    return _objects(_split_lines(data), name, diags, limits)


class Utf8Tally:
    """Whether every line of a file was UTF-8, known once all lines were read.

    ``orjson`` accepts only UTF-8 and the other lines are decoded to tell torn from
    invalid, so the line iterator learns it for free; the builder then need not decode
    a whole journal again to choose the artifact's encoding.
    """

    def __init__(self) -> None:
        self.ok = True
        self.complete = False

    def verdict(self) -> bool | None:
        """UTF-8 or not; ``None`` when the lines were not all read."""
        return self.ok if self.complete else None


def iter_file_objects(
    path: Path, name: str, diags: Diagnostics, limits: Limits, utf8: Utf8Tally | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Like :func:`iter_objects` for the file at ``path``, read in chunks (never whole)."""
    return _objects(_file_lines(path, limits.max_line_bytes), name, diags, limits, utf8)


def copy_jsonl(
    b: SnapshotBuilder,
    name: str,
    path: Path,
    limits: Limits,
    utf8: Utf8Tally,
    *,
    watch: Callable[[bytes], None] | None = None,
) -> tuple[Blob, Path]:
    """Copy the JSON Lines file at ``path`` into ``b`` as the artifact ``name`` (at most
    ``limits.max_session_bytes``); its blob and the copy the reader parses (the same bytes
    as the artifact, even if the harness appends meanwhile). ``utf8`` learns from that parse
    whether the file is UTF-8."""
    from trajconv.snapshot.secrets import NDJSON

    blob = b.add_artifact_file(
        name,
        NDJSON,
        path,
        limits.max_session_bytes,
        "max_session_bytes",
        utf8=utf8.verdict,
        watch=watch,
    )
    copy = blob.whole_file
    assert copy is not None  # add_artifact_file writes a file of its own
    return blob, copy


def project_jsonl(
    line: Callable[[int, dict[str, Any]], None],
    copy: Path,
    name: str,
    b: SnapshotBuilder,
    limits: Limits,
    utf8: Utf8Tally,
    native: Path,
) -> None:
    """Hand every good line of ``copy`` (the artifact ``name``) to ``line`` in order; more
    than ``limits.max_records`` records in ``b`` is a LimitError naming ``native``'s line."""
    from trajconv.errors import LimitError

    max_records = limits.max_records
    for number, obj in iter_file_objects(copy, name, b.diagnostics, limits, utf8):
        line(number, obj)
        if b.record_count > max_records:
            raise LimitError(native, "max_records", max_records, line=number)


_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def check_not_utf16(head: bytes | memoryview, file: str | Path) -> None:
    """Refuse a journal whose first line is UTF-16 (a byte-order mark or NUL-padded ASCII)."""
    start = bytes(head[:64])
    # ASCII text in UTF-16 has a NUL in every other byte
    nul_padded = len(start) >= 4 and 0 in (max(start[0::2]), max(start[1::2]))
    if start.startswith(_UTF16_BOMS) or nul_padded:
        raise FormatError(
            file,
            "the journal is UTF-16 encoded; harnesses write UTF-8 JSON lines "
            "(re-encode it, e.g. iconv -f UTF-16 -t UTF-8)",
            line=1,
        )


def salvage(raw: bytes | memoryview) -> tuple[Any, str] | None:
    """Parse a line that did not parse as it is: without a UTF-8 byte-order mark, or with
    the bytes that are not UTF-8 replaced. Returns the value and the diagnostic code that
    says which, or ``None`` when the line still is not JSON."""
    line = bytes(raw)
    code = "replaced-bytes"
    if line.startswith(_BOM):
        line = line[len(_BOM) :]
        code = "bom-stripped"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        line = line.decode("utf-8", errors="replace").encode("utf-8")
        code = "replaced-bytes"
    else:
        if code != "bom-stripped":
            return None  # valid UTF-8 without a mark: the JSON itself is broken
    try:
        return orjson.loads(line), code
    except orjson.JSONDecodeError:
        return None


def _split_lines(data: bytes) -> Iterator[memoryview]:
    """Lines of ``data`` without their newline; a final line without newline counts."""
    start = 0
    end = len(data)
    view = memoryview(data)  # lines are parsed in place, not copied out first
    find = data.find
    while start < end:
        nl = find(b"\n", start)
        stop = end if nl < 0 else nl
        yield view[start:stop]
        start = stop + 1


def file_lines(path: Path, max_line: int) -> Iterator[bytes]:
    """The raw lines of the file at ``path`` (without their newline), as the iterators
    number them: for a reader that needs the bytes of a line it could not parse."""
    return _file_lines(path, max_line)


def _file_lines(path: Path, max_line: int) -> Iterator[bytes]:
    """Lines of the file at ``path`` without their newline, as :func:`_split_lines` cuts them.

    The file is read in chunks and split there (faster than a read per line). A line
    running on past ``max_line`` bytes is yielded as soon as it is known to be too long,
    so :func:`_objects` refuses it without it being held whole.
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        read = fh.read
        head: list[bytes] = []  # the pieces of a line that runs on into the next chunk
        held = 0
        while chunk := read(CHUNK):
            lines = chunk.split(b"\n")
            tail = lines.pop()
            if lines:
                if head:
                    head.append(lines[0])
                    lines[0] = b"".join(head)
                    head = []
                    held = 0
                yield from lines
            if tail:
                head.append(tail)
                held += len(tail)
                if held > max_line:
                    yield b"".join(head)
                    return
        if head:
            yield b"".join(head)


def _objects(
    lines: Iterable[bytes | memoryview],
    name: str,
    diags: Diagnostics,
    limits: Limits,
    utf8: Utf8Tally | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The per-line rules of both iterators, over lines without their newline."""
    loads = orjson.loads
    max_line = limits.max_line_bytes
    for number, raw in enumerate(lines, 1):
        if len(raw) > max_line:
            from trajconv.errors import LimitError

            raise LimitError(name, "max_line_bytes", limits.max_line_bytes, line=number)
        try:
            value = loads(raw)
        except orjson.JSONDecodeError:
            # A blank line never parses, so blank, torn and invalid lines are told apart
            # here, off the hot path.
            line = bytes(raw)
            if not line.strip():
                diags.add("blank-line", f"{name}:{number}")
                continue
            if number == 1:
                check_not_utf16(line, name)
            saved = salvage(line)
            if saved is None:
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    diags.add("invalid-line", f"{name}:{number}")
                    if utf8 is not None:
                        utf8.ok = False
                    continue
                diags.add("torn-line", f"{name}:{number}")
                continue
            value, code = saved
            diags.add(code, f"{name}:{number}")
            if code == "replaced-bytes" and utf8 is not None:
                utf8.ok = False
        if not isinstance(value, dict):
            diags.add("invalid-line", f"{name}:{number}")
            continue
        yield number, value
    if utf8 is not None:
        utf8.complete = True


def count_units(data: bytes) -> int:
    """Lines in a JSONL file as the readers count them (a final line without newline counts)."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
