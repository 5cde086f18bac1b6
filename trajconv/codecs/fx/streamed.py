"""A large schema 1/2 ``session.json`` read as a stream (the codec README).

Legacy fx kept the whole history inside ``session.json``, one JSON document that grows
with the session; parsed whole it costs several times its size in memory. A document
above ``Limits.stream_json_bytes`` is read in two passes of ijson's C parser over the
Snapshot's copy, so memory stays flat: while the file is copied, :class:`Outline`
builds the top-level members other than ``history``, counts the history turns and
checks every member name for a credential; then :meth:`Outline.turns` yields the turns
one at a time.

Streaming must give exactly what parsing the document whole gives, so a document it
could read differently goes to the whole path instead, whose parse (``orjson``), errors
and secret stripping are the reference: not valid JSON for ijson, not an object, a
repeated top-level member, a top-level name with a dot (ijson's path separator), no
``history`` array, nesting deeper than ``max_json_depth``, a credential-looking member
name (stripping rewrites the document), a surrogate escape such as ``\\ud800`` (ijson
turns a lone surrogate into ``?``, where orjson refuses it) or a raw vertical tab or form
feed byte (whitespace to ijson's yajl, not to JSON). ijson refuses what orjson
refuses otherwise; it also refuses integers beyond 64 bits, which orjson reads as floats,
and those go to the whole path too (``tests/fx/test_fx_streamed.py`` compares the two
paths).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import ijson
from ijson.common import ObjectBuilder

from trajconv.errors import FormatError
from trajconv.snapshot.secrets import is_secret_key
from trajconv.snapshot.spool import CHUNK

HISTORY = "history"
_HIGH_OR_LOW = re.compile(rb"\\u[dD][89a-fA-F]")  # \uD800-\uDFFF, found by its backslash
_LOW = re.compile(rb"\\u[dD][c-fC-F]")
_PAIR = 12  # bytes of a surrogate pair's escapes: one starting later is judged next time


def _judge_escapes(data: bytes, end: int) -> int | None:
    """Check the surrogate escapes that start before ``end``: ``None`` when one is lone,
    else where the bytes not yet judged start (``end``, or after a pair that crosses it)."""
    paired = -1
    for match in _HIGH_OR_LOW.finditer(data):
        start = match.start()
        if start >= end:
            break
        run = start  # an escape only after an even run of backslashes (else it is text)
        while run > 0 and data[run - 1] == 0x5C:
            run -= 1
        if (start - run) % 2 or start == paired:
            continue
        if data[start + 3] in b"cdefCDEF" or not _LOW.match(data, start + 6):
            return None
        paired = start + 6
    return max(end, paired + 6) if paired >= 0 else end


class History(NamedTuple):
    """A streamed history: how many turns, and the turns as they are parsed."""

    length: int
    turns: Iterator[Any]


class Outline:
    """Fed the document's bytes in order (:meth:`feed`, then :meth:`close`)."""

    def __init__(self, name: str, max_depth: int) -> None:
        self.name = name
        self.members: dict[str, Any] = {}
        """Top-level members, ``history`` left out."""
        self.count = 0
        """Turns in the history array."""
        self.streamable = True
        self._max_depth = max_depth
        self._events = ijson.sendable_list()
        self._parser = ijson.basic_parse_coro(self._events, use_float=True)
        self._tail = b""
        self._depth = 0
        self._key = ""
        self._in_history = False
        self._seen_history = False
        self._build: Any = None  # an ObjectBuilder for a top-level member's container value

    def feed(self, chunk: bytes) -> None:
        if not self.streamable or not chunk:  # an empty send would end ijson's parse
            return
        if b"\x0b" in chunk or b"\x0c" in chunk:
            # yajl skips a vertical tab or form feed between tokens, orjson refuses the
            # document; inside a string both refuse the raw byte
            self.streamable = False
            return
        data = self._tail + chunk
        end = max(len(data) - _PAIR, 0)
        while end > 0 and data[end - 1] == 0x5C:  # a run of backslashes is judged whole
            end -= 1
        judged = _judge_escapes(data, end)
        if judged is None:
            self.streamable = False
            return
        self._tail = data[judged:]
        try:
            self._parser.send(chunk)
        except (ijson.JSONError, ValueError):  # ValueError: bytes that are not UTF-8
            self.streamable = False
            return
        self._take()

    def close(self) -> None:
        if self.streamable and _judge_escapes(self._tail, len(self._tail)) is None:
            self.streamable = False
        if self.streamable:
            try:
                self._parser.close()
            except (ijson.JSONError, ValueError):  # ValueError: bytes that are not UTF-8
                self.streamable = False
                return
            self._take()
        self.streamable = self.streamable and self._depth == 0 and self._seen_history

    def history(self, copy: Path) -> History:
        """The history of ``copy`` (the bytes fed here), its turns parsed one at a time."""
        return History(self.count, self._turns(copy))

    def _turns(self, copy: Path) -> Iterator[Any]:
        with copy.open("rb") as fh:
            try:
                yield from ijson.items(fh, f"{HISTORY}.item", use_float=True, buf_size=CHUNK)
            except (ijson.JSONError, ValueError) as exc:  # outlined as valid: the copy changed
                raise FormatError(self.name, f"not JSON: {exc}") from None

    def _take(self) -> None:
        """Follow the parser's events; one loop with locals, as there is one per value."""
        depth, key, build = self._depth, self._key, self._build
        in_history, count = self._in_history, self.count
        members = self.members
        ok = True
        for event, value in self._events:
            if event == "map_key":
                if is_secret_key(value):  # cached for the short names that repeat
                    ok = False
                    break
                if depth == 1:
                    if (
                        value in members
                        or "." in value
                        or (value == HISTORY and self._seen_history)
                    ):
                        ok = False
                        break
                    key = value
                elif build is not None:
                    build.event(event, value)
            elif event == "start_map" or event == "start_array":
                depth += 1
                if depth > self._max_depth or (depth == 1 and event != "start_map"):
                    ok = False
                    break
                if depth == 2:
                    if key == HISTORY:
                        if event != "start_array":
                            ok = False
                            break
                        in_history = self._seen_history = True
                    else:
                        build = ObjectBuilder()
                        build.event(event, value)
                elif in_history:
                    count += depth == 3
                elif depth > 2:
                    build.event(event, value)
            elif event == "end_map" or event == "end_array":
                depth -= 1
                if depth == 1:
                    if in_history:
                        in_history = False
                    else:
                        build.event(event, value)
                        members[key] = build.value
                        build = None
                elif depth > 1 and not in_history:
                    build.event(event, value)
            elif depth == 1:  # a scalar member
                members[key] = value
            elif depth == 0:  # a document that is one scalar
                ok = False
                break
            elif in_history:
                count += depth == 2
            else:
                build.event(event, value)
        del self._events[:]
        self._depth, self._key, self._build = depth, key, build
        self._in_history, self.count = in_history, count
        self.streamable = ok
