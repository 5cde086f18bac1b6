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

A document this cannot read as ``orjson`` would (a ``\\ud800`` escape, which yajl turns
into ``?``) or one with a credential-looking member (whose stripped copy is made from the
whole document) is read whole instead (:data:`WHOLE`).
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


@dataclass
class Frame:
    doc: Json
    """The document with ``steps`` empty (the steps are read by :func:`steps`)."""
    steps: int
    sha256: str
    whole: bool
    """Read it whole instead: a surrogate escape or a credential-looking member name."""


def _scan_bytes(copy: Path) -> tuple[str, bool]:
    """The copy's sha256 and whether it holds a surrogate escape, in one chunked read."""
    h = hashlib.sha256()
    found = False
    tail = b""
    with copy.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            if not found and _SURROGATE.search(tail + chunk):
                found = True
            tail = chunk[-8:]
    return h.hexdigest(), found


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
