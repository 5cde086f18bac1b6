"""JSON documents written piece by piece, byte-equal to ``orjson`` ``OPT_INDENT_2``.

A document is plain JSON values plus :class:`Members` (an object), :class:`Items`
(an array whose elements come from an iterator) and :class:`Raw` (a value given as
its text, in pieces).
The Snapshot file and the Cursor readout are written with it, so neither is ever
held whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson


class Members(dict[str, Any]):
    """A JSON object :func:`json_chunks` writes member by member (some members stream)."""


@dataclass(frozen=True)
class Items:
    """A JSON array :func:`json_chunks` writes element by element, never holding it whole."""

    items: Iterable[Any]


@dataclass(frozen=True)
class Raw:
    """A JSON value given as its text, in pieces (a blob's base64, an artifact's bytes
    encoded chunk by chunk, spooled records), so it is never made into one ``str``. The
    text is written as it is: it must already have the indentation of its place."""

    pieces: Iterable[bytes]


_NOT_CONTROL = bytes(range(0x20, 0x100))
_SHORT_ESCAPES = {0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0C: b"\\f", 0x0D: b"\\r"}
_ESCAPES = {code: _SHORT_ESCAPES.get(code) or b"\\u%04x" % code for code in range(0x20)}


def utf8_string_body(data: bytes) -> bytes:
    """What ``orjson`` writes between the quotes of the string UTF-8 ``data`` holds.

    ``orjson`` escapes only ``"``, backslash and the C0 controls (five by their short
    names, the rest as lowercase ``\\u00XX``) and writes every other character as its
    UTF-8 bytes, so the escaping works byte by byte: nothing is decoded (about twice as
    fast on a large journal) and a text cut anywhere, even inside a character, escapes
    piece by piece into pieces that concatenate. ``tests/core/test_canonical.py`` checks
    it against ``orjson``.
    """
    # (``replace`` gives ``data`` itself when there is nothing to replace: no search first)
    data = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    controls = data.translate(None, _NOT_CONTROL)
    if controls:
        if controls.count(b"\n") == len(controls):  # only newlines: a JSONL file
            return data.replace(b"\n", b"\\n")
        for code in set(controls):
            data = data.replace(bytes((code,)), _ESCAPES[code])
    return data


def _plain(value: Any, pad: bytes) -> bytes:
    """A value without streamed parts, as ``OPT_INDENT_2`` writes it after ``pad``.

    JSON strings hold no raw newline, so each newline starts a line of the value's own
    layout, which moves right by the indentation of the place it is written at.
    """
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", pad)


def _indented(value: Any, depth: int) -> Iterator[bytes]:
    """``value`` as ``orjson`` ``OPT_INDENT_2`` writes it ``depth`` levels deep, with
    :class:`Members` and :class:`Items` written as they come."""
    pad = b"\n" + b"  " * depth
    inner = pad + b"  "
    streamed = (Members, Items)
    if isinstance(value, Members) and value:
        sep = b"{"
        for key, item in value.items():
            head = sep + inner + orjson.dumps(key) + b": "
            if isinstance(item, streamed):
                yield head
                yield from _indented(item, depth + 1)
            elif isinstance(item, Raw):
                yield head
                yield from item.pieces
            else:
                yield head + _plain(item, inner)
            sep = b","
        yield pad + b"}"
    elif isinstance(value, Items):
        sep = b"["
        for item in value.items:
            if isinstance(item, streamed):
                yield sep + inner
                yield from _indented(item, depth + 1)
            else:
                yield sep + inner + _plain(item, inner)
            sep = b","
        yield b"[]" if sep == b"[" else pad + b"]"
    else:
        yield _plain(value, pad)


def json_chunks(value: Any, size: int = 1 << 20) -> Iterator[bytes]:
    """``orjson.dumps(value, option=OPT_INDENT_2)`` in chunks of about ``size`` bytes (a
    larger piece as it comes, not copied into a chunk), with
    :class:`Members` and :class:`Items` parts streamed as they come (:class:`Raw` members
    as given)."""
    buf: list[bytes] = []
    held = 0
    for piece in _indented(value, 0):
        if len(piece) >= size:  # a large piece (a slice of records, of an artifact) as it is
            if buf:
                yield b"".join(buf)
                buf.clear()
                held = 0
            yield piece
            continue
        buf.append(piece)
        held += len(piece)
        if held >= size:
            yield b"".join(buf)
            buf.clear()
            held = 0
    if buf:
        yield b"".join(buf)
