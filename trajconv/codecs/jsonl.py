"""Line-oriented JSON logs, read the way the harnesses themselves read them.

Shared by every codec whose store is a JSONL journal. Blank lines, torn lines
(a write cut short: not complete JSON) and invalid lines (not UTF-8, or JSON
that is not an object) are counted with their line numbers and skipped; the
rest is yielded one object at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.errors import FormatError
from trajconv.snapshot.diagnostics import Diagnostics


def read_bounded(path: Path, limit: int, limits_name: str = "max_session_bytes") -> bytes:
    """Read a whole native file, refusing one over ``limit`` bytes before reading it."""
    from trajconv.errors import LimitError

    try:
        size = path.stat().st_size
        if size > limit:
            raise LimitError(path, limits_name, limit)
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LimitError(path, limits_name, limit)
    return data


def iter_objects(
    data: bytes, name: str, diags: Diagnostics, limits: Limits
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every good line of ``data`` (1-based lines)."""
    start = 0
    number = 0
    end = len(data)
    view = memoryview(data)  # lines are parsed in place, not copied out first
    find = data.find
    loads = orjson.loads
    max_line = limits.max_line_bytes
    while start < end:
        nl = find(b"\n", start)
        stop = end if nl < 0 else nl
        number += 1
        raw = view[start:stop]
        start = stop + 1
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
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                diags.add("invalid-line", f"{name}:{number}")
                continue
            diags.add("torn-line", f"{name}:{number}")
            continue
        if not isinstance(value, dict):
            diags.add("invalid-line", f"{name}:{number}")
            continue
        yield number, value


def count_units(data: bytes) -> int:
    """Lines in a JSONL file as the readers count them (a final line without newline counts)."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
