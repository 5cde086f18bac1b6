"""Credential-looking fields never reach a Snapshot, an export, a diagnostic or a log.

Native metadata sometimes carries credentials (Cursor's ``blobEncryptionKey``,
tokens in sidecars). Readers drop every JSON member whose key looks like one;
the artifact then holds the JSON without it, and a ``secret-dropped``
diagnostic names the key's path (never its value). A JSON Lines journal is
scanned line by line with the same rules (:class:`JsonlStripper`): only a line
holding such a member is rewritten, every other byte is kept.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import orjson

SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|"
    r"^token$|_token$|secret|password|passwd|authorization|credential|encryption[_-]?key|"
    r"private[_-]?key|cookie|session[_-]?key)",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """Whether a member name looks like a credential."""
    # Names repeat across a session's documents, so short ones are looked up once.
    return _is_short_secret_key(key) if len(key) <= 64 else bool(SECRET_KEY.search(key))


@functools.lru_cache(maxsize=4096)
def _is_short_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key))


def strip(value: Any, path: str = "$") -> tuple[Any, list[str]]:
    """``value`` without credential-looking members, and the JSON paths removed."""
    dropped: list[str] = []
    if isinstance(value, dict):
        clean: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_key(key):
                dropped.append(f"{path}.{key}")
                continue
            clean[key], sub = strip(item, f"{path}.{key}")
            dropped.extend(sub)
        return clean, dropped
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            cleaned, sub = strip(item, f"{path}[{i}]")
            out.append(cleaned)
            dropped.extend(sub)
        return out, dropped
    return value, dropped


_CLEAN_NAMES: set[str] = set()
"""Member names :func:`is_secret_key` found clean (at most :data:`_CLEAN_KEPT`): a
session's documents repeat a few names, so most objects are checked by one
``issuperset``, in C, instead of a lookup per name."""
_CLEAN_KEPT = 4096


def has_secret_key(value: Any) -> bool:
    """Whether a parsed JSON value has a member whose name looks like a credential."""
    clean = _CLEAN_NAMES
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        if type(item) is str:  # most of a document: a string is neither
            continue
        if isinstance(item, dict):
            if not clean.issuperset(item):
                for key in item:
                    if key not in clean and isinstance(key, str):
                        if is_secret_key(key):
                            return True
                        if len(clean) < _CLEAN_KEPT:
                            clean.add(key)
            push(item.values())
        elif isinstance(item, list):
            push(item)
    return False


UNPARSED: Any = object()
"""``parsed`` of :func:`strip_json_bytes` when the caller has not parsed the bytes."""


def strip_json_bytes(data: bytes, parsed: Any = UNPARSED) -> tuple[bytes, list[str]]:
    """JSON document bytes without credentials; unchanged bytes when there are none
    (or when the bytes are not one JSON document).

    Only members are removed, by name, so a document is parsed (``orjson``, fast) and
    its member names checked; a long text that merely mentions a token is not scanned.
    ``parsed``: ``orjson.loads(data)`` when the caller has it already (not parsed again).
    """
    if not data:
        return data, []
    try:
        found = has_secret_key(orjson.loads(data) if parsed is UNPARSED else parsed)
    except orjson.JSONDecodeError:
        found = True  # not strict JSON for orjson (NaN, UTF-16, huge integers): let json say
    if not found:
        return data, []
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # not one JSON document json can hold
        return data, []
    clean, dropped = strip(value)
    if not dropped:
        return data, []
    text = json.dumps(clean, indent=2, ensure_ascii=False)
    try:
        return text.encode(), dropped
    except UnicodeEncodeError:  # a lone surrogate (\ud800): only its escape is UTF-8
        return json.dumps(clean, indent=2).encode(), dropped


_YAML_KEY = re.compile(rb"^(\s*)(?:-\s+)?[\"']?([A-Za-z0-9_.\-]+)[\"']?\s*:")
_FLOW_KEY = re.compile(rb"[{,]\s*[\"']?([A-Za-z0-9_.\-]+)[\"']?\s*:")
"""A key inside a flow mapping on the line: ``auth: {token: X}``, ``- {api_key: X}``."""
_WORDS = re.compile(rb"(?i)key|token|secret|passw|authorization|credential|cookie")
"""Text without any of these holds no name :data:`SECRET_KEY` finds."""


def strip_yaml_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """YAML text without credential-looking mappings (the key line and its nested block;
    a line whose flow mapping holds one goes whole).

    Line-based, so the rest of the file keeps its exact bytes; names what it removed.
    """
    if not _WORDS.search(data):
        return data, []
    out: list[bytes] = []
    dropped: list[str] = []
    skip_deeper_than: int | None = None
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        indent = len(line) - len(line.lstrip(b" "))
        if skip_deeper_than is not None:
            if line.strip() and indent <= skip_deeper_than:
                skip_deeper_than = None
            else:
                continue
        match = _YAML_KEY.match(line)
        keys = [match.group(2)] if match else []
        keys += [m.group(1) for m in _FLOW_KEY.finditer(line)]
        names = [k.decode("utf-8", "replace") for k in keys]
        secret = next((i for i, name in enumerate(names) if is_secret_key(name)), None)
        if secret is not None:
            dropped.append(f"line {number}: {'.'.join(names[: secret + 1])}")
            skip_deeper_than = indent
            continue
        out.append(line)
    return b"".join(out), dropped


NDJSON = "application/x-ndjson"

# A line worth parsing holds one of these (lowercased), or a \u escape (a name may spell
# itself with escapes): a superset of what ``is_secret_key`` finds.
_LINE_WORDS = (
    b"key",
    b"token",
    b"secret",
    b"passw",
    b"authorization",
    b"credential",
    b"cookie",
    b"\\u",
)


_NAME_REACH = 256
_THEN_COLON = re.compile(rb"[ \t\r]*:")
"""What follows a member name on a JSON line: any run of JSON's whitespace (a line ends at
``\n``), then the colon (issue 34: 20 spaces or a ``\r`` hid the name from a fixed window)."""
_NAMES_KEPT = 4096
"""How many member names' verdicts a :class:`JsonlStripper` keeps (then it starts over)."""
_ESCAPE = re.compile(rb"\\u")
_THEN_NAME_END = rb'(?=([^"]{0,%d}+)"[ \t\r]*+:)' % (_NAME_REACH - 1)
"""After a word that may be in a member name: the first quote after it lies within
:data:`_NAME_REACH` bytes and is followed by :data:`_THEN_COLON` (group 1 ends at that
quote)."""
_IN_NAME: tuple[tuple[re.Pattern[bytes], int, dict[int, int]], ...] = (
    # key, token, cookie at their k: what follows the k tells which (at +2: y, n, e)
    (
        re.compile(rb"k(?:ey|(?<=tok)en|(?<=cook)ie)" + _THEN_NAME_END),
        2,
        {ord("y"): 0, ord("n"): 2, ord("e"): 3},
    ),
    # secret and credential at their cr (at +3: t, d)
    (re.compile(rb"cr(?:(?<=secr)et|edential)" + _THEN_NAME_END), 3, {ord("t"): 2, ord("d"): 0}),
    (re.compile(rb"w(?<=passw)" + _THEN_NAME_END), 0, {ord("w"): 4}),
    (re.compile(rb"z(?<=authoriz)ation" + _THEN_NAME_END), 0, {ord("z"): 7}),
)
"""Every word of :data:`_LINE_WORDS` but ``\\u``, where a member name may hold it
(:data:`_THEN_NAME_END`), found by one search per pattern, in C: a journal has tens of
thousands of hits in its texts (``"a token"``), which a Python loop over ``bytes.find``
paid for one by one. Each pattern starts at a byte that is rare in text (``k``, ``cr``,
``w``, ``z``) and looks behind for the rest of its word: ``re`` scans for a literal first
byte fast, while a search per word, each from its first letter, took twice as long
(issue 38). With each pattern: the offset of a byte after the one it starts at that tells
its words apart, and for that byte, how far before the match the word starts. No two of
the words overlap, so a match never hides another word's hit."""


def line_starts(block: bytes, names: dict[bytes, bool] | None = None) -> set[int]:
    """Where each line of ``block`` starts that may hold a member :func:`is_secret_key`
    finds: one of :data:`_LINE_WORDS` inside a member name (``"...word...":``), or any
    ``\\u`` escape (unsure is yes: such a line is parsed and its names checked exactly).
    A word with no quote within :data:`_NAME_REACH` bytes on either side is in a long
    text, not a name (names that long are not looked for). ``names`` keeps each name's
    verdict: a journal has tens of thousands of hits, most of them a few names
    (``"input_tokens"``)."""
    if names is None:
        names = {}
    low = block.lower()  # only A-Z change: quotes, colons and offsets stay
    starts: set[int] = set()
    escape = _ESCAPE.search(low)
    while escape is not None:
        at = escape.start()
        starts.add(low.rfind(b"\n", 0, at) + 1)
        end = low.find(b"\n", at)
        escape = None if end == -1 else _ESCAPE.search(low, end)  # on to the next line
    rfind = block.rfind
    for pattern, tell, back in _IN_NAME:
        for hit in pattern.finditer(low):
            found = hit.start()
            at = found - back[low[found + tell]]
            opened = rfind(b'"', max(0, at - _NAME_REACH), at)
            if opened == -1:
                continue
            name = block[opened + 1 : hit.end(1)]
            secret = names.get(name)
            if secret is None:
                secret = names[name] = b"\\" in name or is_secret_key(
                    name.decode("utf-8", "replace")
                )
            if secret:
                starts.add(low.rfind(b"\n", 0, at) + 1)
    return starts


class JsonlStripper:
    """A JSON Lines file fed in chunks, given back without credential-looking members.

    A line that parses as JSON and holds such a member is written again as compact JSON
    without it (the line count stays, so line numbers in evidence hold); every other
    line keeps its bytes. ``dropped`` names what went: ``line N: $.path``.
    """

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the start of a line not yet ended
        self._line = 0
        self.dropped: list[str] = []
        self._names: dict[bytes, bool] = {}  # a member name's verdict, by its bytes

    def feed(self, chunk: bytes) -> bytes:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            self._pending.append(chunk)
            return b""
        block = b"".join([*self._pending, chunk[:cut]])
        self._pending = [chunk[cut:]] if cut < len(chunk) else []
        return self._lines(block)

    def finish(self) -> bytes:
        block = b"".join(self._pending)
        self._pending = []
        return self._lines(block)

    def _lines(self, block: bytes) -> bytes:
        """``block`` (whole lines) with each line that may hold a credential checked."""
        if len(self._names) > _NAMES_KEPT:
            self._names.clear()
        starts = line_starts(block, self._names)
        if not starts:
            self._line += block.count(b"\n")
            return block
        out, pos = [], 0
        for start in sorted(starts):
            end = block.find(b"\n", start)
            end = len(block) if end == -1 else end + 1
            self._line += block.count(b"\n", pos, start) + 1
            out.append(block[pos:start])
            out.append(self._strip_line(block[start:end]))
            pos = end
        self._line += block.count(b"\n", pos)
        out.append(block[pos:])
        return b"".join(out)

    def _strip_line(self, line: bytes) -> bytes:
        body = line.rstrip(b"\r\n")
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return line  # not a JSON line: the reader names it
        if not has_secret_key(value):
            return line
        clean, dropped = strip(value)
        self.dropped.extend(f"line {self._line}: {path}" for path in dropped)
        return orjson.dumps(clean) + line[len(body) :]


def strip_jsonl_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """:class:`JsonlStripper` over bytes held whole."""
    stripper = JsonlStripper()
    out = stripper.feed(data) + stripper.finish()
    return out, stripper.dropped
