"""An ATIF document read a step at a time: memory in proportion to one step, not the file.

A trajectory is one JSON document whose ``steps`` array is nearly all of it (issue 34:
100 MB of small steps took 2 min 47 s and 1.5 GB parsed whole, and 263 MB under a 4 GB
cap died inside ``orjson``). The reader copies the file into the Snapshot's spool, then

* :func:`frame` reads the copy's events once (``ijson``, the yajl2 C backend) and builds
  everything but the steps (agent, metrics, extra, embedded subagents, continuation
  ref), counting the steps and noting a credential-looking member name anywhere;
* :func:`steps` yields the steps of the copy one at a time, each checked as the whole
  document was (``native.step_problem``: the ``atif`` step model, a sequential
  ``step_id``, a ``source_call_id`` naming a call of its step) and held to
  ``max_line_bytes``.

A document this cannot read as ``orjson`` would (a lone ``\\ud800`` escape, which yajl
turns into ``?``; a pair, such as an emoji, it reads as orjson does) or one with a
credential-looking member (whose stripped copy is made from the whole document) is read
whole instead (:data:`WHOLE`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ijson
import orjson

from trajconv.codecs.atif import native
from trajconv.codecs.base import Limits
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.secrets import is_secret_key

Json = dict[str, Any]

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A surrogate escape (``\\ud83d`` of a pair, or a lone one yajl would replace)."""
_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
"""A high surrogate escape and its low one: a character yajl decodes as orjson does (an
emoji, as ``json.dumps`` writes it by default)."""
_AFTER_BACKSLASH = re.compile(rb"\\\\u[dD][89a-fA-F]")
"""A surrogate escape after a backslash: maybe an escaped backslash's text, whose pairing
the count does not tell (such a document is read whole)."""
_ESCAPE_BYTES = b"\\u0123456789abcdefABCDEF"
"""What an escape is made of: the bytes a chunk ends with that may be part of one are held
for the next chunk."""
_HELD = 1 << 16


@dataclass
class Frame:
    doc: Json
    """The document with ``steps`` empty (the steps are read by :func:`steps`)."""
    steps: int
    sha256: str
    whole: bool
    """Read it whole instead: a lone surrogate escape or a credential-looking member name."""


def _lone(buf: bytes, end: int) -> bool:
    """Whether ``buf[:end]`` may hold a surrogate escape that is not half of a pair (looked
    at in place: a copy of each chunk counts against a streamed read's memory)."""
    found = len(_SURROGATE.findall(buf, 0, end))
    if not found:
        return False
    if _AFTER_BACKSLASH.search(buf, 0, end) is not None:
        return True
    return found != 2 * len(_PAIR.findall(buf, 0, end))


def _escape_tail(buf: bytes) -> int:
    """Where the escape characters ``buf`` ends with start (``len(buf)`` after a run longer
    than :data:`_HELD`, which is then judged as it is)."""
    cut = len(buf)
    while cut and buf[cut - 1] in _ESCAPE_BYTES:
        cut -= 1
        if len(buf) - cut > _HELD:
            return len(buf)
    return cut


def _scan_bytes(copy: Path) -> tuple[str, bool]:
    """The copy's sha256 and whether it may hold a lone surrogate escape (or one whose
    pairing this cannot tell), in one chunked read. A chunk is looked at up to the escape
    characters it ends with, which go with the next chunk (an escape holds no other)."""
    h = hashlib.sha256()
    found = False
    held = b""
    with copy.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            if found:
                continue
            found, held = _look(held + chunk if held else chunk)
    return h.hexdigest(), found or _lone(held, len(held))


def _look(buf: bytes) -> tuple[bool, bytes]:
    """Whether ``buf`` up to its escape characters may hold a lone surrogate escape, and
    those characters (a function, so ``buf`` is gone before the next chunk is read)."""
    cut = _escape_tail(buf)
    return _lone(buf, cut), buf[cut:]


def _not_json(path: Path, exc: Exception) -> FormatError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return FormatError(path, f"not JSON: {reason}")


def frame(copy: Path, path: Path, max_depth: int) -> Frame:
    """Everything but the steps of the document in ``copy`` (errors name ``path``).

    Read from ``ijson.basic_parse`` with the depth counted here: ``ijson.parse`` builds a
    dotted prefix for every event, whose length grows with the nesting, so 100,000 nested
    arrays took 23 GB before any check could refuse them. A document nested deeper than
    ``max_depth`` is refused at the first event past it."""
    sha256, surrogate = _scan_bytes(copy)
    doc: Json = {}
    secret = False
    count = 0
    key: str | None = None
    builder: Any = None
    skipping = False
    depth = 0  # containers open before this event
    try:
        with copy.open("rb") as fh:
            for event, value in ijson.basic_parse(fh, use_float=True):
                if event == "map_key" and not secret and is_secret_key(value):
                    secret = True
                opens = event in ("start_map", "start_array")
                if depth == 0:
                    if event != "start_map":
                        raise FormatError(path, "not a valid ATIF trajectory: document: an "
                                          "ATIF trajectory is a JSON object")  # fmt: skip
                    depth = 1
                    continue
                if opens and depth >= max_depth:
                    raise FormatError(path, f"nested more than {max_depth} levels deep")
                if depth == 1 and event in ("map_key", "end_map"):  # a member of the document
                    if builder is not None and key is not None:
                        doc[key] = builder.value
                    builder = None
                    if event == "map_key":
                        key, skipping = value, False
                        builder = ijson.ObjectBuilder()
                elif depth == 1 and key == "steps" and event == "start_array":
                    skipping, builder = True, None
                    doc["steps"] = []
                elif skipping:
                    if depth == 2 and event != "end_array":
                        count += 1  # a step starts (one that is no object too: checked later)
                else:
                    builder.event(event, value)
                depth += 1 if opens else -1 if event in ("end_map", "end_array") else 0
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError) as exc:
        raise _not_json(path, exc) from None
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        orjson.dumps(doc)
    except orjson.JSONEncodeError as exc:
        raise FormatError(path, f"not JSON: {exc}") from None
    return Frame(doc, count, sha256, surrogate or secret)


def steps(copy: Path, path: Path, limits: Limits) -> Iterator[tuple[int, Json]]:
    """The steps of the document in ``copy``, one at a time, each checked."""
    try:
        with copy.open("rb") as fh:
            for i, step in enumerate(ijson.items(fh, "steps.item", use_float=True)):
                try:
                    size = len(orjson.dumps(step))
                except orjson.JSONEncodeError as exc:
                    raise FormatError(path, f"steps[{i}]: not JSON: {exc}") from None
                if size > limits.max_line_bytes:
                    raise LimitError(path, "max_line_bytes", limits.max_line_bytes)
                found = native.step_problem(step, i)
                if found is not None:
                    raise FormatError(path, f"not a valid ATIF trajectory: {found}")
                yield i, step
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError) as exc:
        raise _not_json(path, exc) from None
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
