"""Mutations of native session files, driven by a ``random.Random`` (seeded, reproducible).

Each mutation takes the bytes of one native file and returns new bytes; the
same functions serve the hypothesis property tests and the on-demand run that
writes ``evidence/robustness.md``.
"""

from __future__ import annotations

import copy
import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOSTILE_IDS = ["../../x", "/etc/passwd", "a/b", "nul\x00id", "..", "", "C:\\x", "\u202e" * 3]
WRONG_TYPES: list[Any] = [None, 0, -1, 1e308, "x", "", [], {}, True, [1, [2]], {"a": {}}]
ID_KEYS = ("sessionId", "toolCallId", "id", "parentId", "session_id", "call_id", "toolUseId")
KIND_KEYS = ("sessionUpdate", "type", "kind", "method")

Mutation = Callable[[random.Random, bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def truncate(r: random.Random, data: bytes) -> bytes:
    return data[: r.randrange(len(data) + 1)]


def drop_line(r: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    del lines[r.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(r: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = r.randrange(len(lines))
    lines.insert(i, lines[i])
    return b"\n".join(lines)


def reorder_lines(r: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = r.randrange(len(lines)), r.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def flip_bytes(r: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(r.randint(1, 8)):
        if buf:
            buf[r.randrange(len(buf))] ^= 1 << r.randrange(8)
    return bytes(buf)


def invalid_utf8(r: random.Random, data: bytes) -> bytes:
    i = r.randrange(len(data) + 1)
    return (
        data[:i] + r.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"]) + data[i:]
    )


def _json_lines(data: bytes) -> list[tuple[int, Any]]:
    out = []
    for i, line in enumerate(_lines(data)):
        try:
            out.append((i, json.loads(line)))
        except ValueError:
            continue
    return out


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_paths(v, (*prefix, i)))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    target = value
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return value


def _edit_json_line(r: random.Random, data: bytes, edit: Callable[[Any], Any]) -> bytes:
    candidates = _json_lines(data)
    if not candidates:
        return data
    i, value = r.choice(candidates)
    lines = _lines(data)
    lines[i] = json.dumps(edit(value), ensure_ascii=False).encode()
    return b"\n".join(lines)


def wrong_type(r: random.Random, data: bytes) -> bytes:
    def edit(value: Any) -> Any:
        path = r.choice(_paths(value))
        return _set(value, path, r.choice(WRONG_TYPES))

    return _edit_json_line(r, data, edit)


def _keyed(value: Any, keys: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return [p for p in _paths(value) if p and p[-1] in keys]


def hostile_id(r: random.Random, data: bytes) -> bytes:
    def edit(value: Any) -> Any:
        paths = _keyed(value, ID_KEYS) or _paths(value)
        return _set(value, r.choice(paths), r.choice(HOSTILE_IDS))

    return _edit_json_line(r, data, edit)


def unknown_kind(r: random.Random, data: bytes) -> bytes:
    def edit(value: Any) -> Any:
        paths = _keyed(value, KIND_KEYS) or _paths(value)
        return _set(value, r.choice(paths), f"future_kind_{r.randrange(1000)}")

    return _edit_json_line(r, data, edit)


def huge_string(r: random.Random, data: bytes) -> bytes:
    def edit(value: Any) -> Any:
        strings = [p for p in _paths(value) if p]
        return _set(value, r.choice(strings), "é" * r.choice([10**5, 10**6]))

    return _edit_json_line(r, data, edit)


def deep_nesting(r: random.Random, data: bytes) -> bytes:
    depth = r.choice([300, 5000, 100_000])
    line = b"[" * depth + b"]" * depth
    lines = _lines(data)
    lines.insert(r.randrange(len(lines) + 1), line)
    return b"\n".join(lines)


# -- several fields at once (issue 34) ---------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    *WRONG_TYPES,
    *HOSTILE_IDS,
    99_999_999_999_999_999,  # milliseconds no datetime holds (year 3170843)
    -99_999_999_999_999_999,
    2**63,
    2**64 + 1,
    -(2**63) - 1,
    -0.0,
    1e-320,
    "2026-13-45T25:61:61Z",
    "2026-02-30T00:00:00.000Z",
    "0001-01-01T00:00:00+01:00",
    "\x1b]0;pwned\x07\x1b[2J",
    "\ud800",
    ["text"],
    {"type": "text"},
    [{"type": ["x"]}],
]
"""Values a multi-field case plants: wrong types, numbers past every native range,
impossible times, terminal escapes and containers where a name is expected."""


def _planted(r: random.Random, value: Any, donors: list[Any]) -> Any:
    """A hostile value, or (one time in four) a real value of another field of the same
    input, so that the other fields still steer the reader down its deeper paths."""
    if donors and r.random() < 0.25:
        return r.choice(donors)
    return copy.deepcopy(value)  # never one list in two places


def multi_field(r: random.Random, data: bytes, values: list[Any] | None = None) -> bytes:
    """Plant ``values`` (several, drawn from :data:`HOSTILE_VALUES` when not given) at as
    many random places of the JSON lines (or one JSON document) at once, several on the
    same line when it has them: a reader that checks one field at a time has to check
    them all."""
    if values is None:
        values = [r.choice(HOSTILE_VALUES) for _ in range(r.randint(2, 8))]
    lines = _lines(data)
    parsed = dict(_json_lines(data))
    if not parsed:  # one pretty-printed document, not JSON lines
        try:
            parsed = {-1: json.loads(data)}
        except ValueError:
            return data
    donors = [
        v for doc in parsed.values() for p in _paths(doc) if p for v in [_get(doc, p)]
        if isinstance(v, (str, int)) and len(str(v)) < 80
    ]  # fmt: skip
    keys = list(parsed)
    line = r.choice(keys)
    for value in values:
        if r.random() < 0.3:
            line = r.choice(keys)  # most edits land on the same line, some elsewhere
        paths = [p for p in _paths(parsed[line]) if p] or [()]
        parsed[line] = _set(parsed[line], r.choice(paths), _planted(r, value, donors))
    if -1 in parsed:
        return _dump(parsed[-1], indent=2)
    for i, doc in parsed.items():
        lines[i] = _dump(doc)
    return b"\n".join(lines)


def _dump(doc: Any, indent: int | None = None) -> bytes:
    """JSON text of ``doc``; a lone surrogate is written as its ``\\ud800`` escape."""
    try:
        return json.dumps(doc, ensure_ascii=False, indent=indent).encode()
    except UnicodeEncodeError:
        return json.dumps(doc, indent=indent).encode()


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def multi_cell(r: random.Random, db: Path, values: list[Any] | None = None) -> None:
    """Plant ``values`` in several cells of a SQLite store at once: inside the JSON a
    text cell holds (at a random path), else as the cell's value (an integer past every
    native range in a time column, a string in a number column...)."""
    if values is None:
        values = [r.choice(HOSTILE_VALUES) for _ in range(r.randint(2, 8))]
    con = sqlite3.connect(db)
    try:
        tables = [
            t
            for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone()
        ]
        if not tables:
            return
        table = r.choice(tables)
        for value in values:
            if r.random() < 0.3:
                table = r.choice(tables)
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
            rowids = [i for (i,) in con.execute(f'SELECT rowid FROM "{table}" ORDER BY rowid')]
            rowid, col = r.choice(rowids), r.choice(cols)
            (cell,) = con.execute(
                f'SELECT "{col}" FROM "{table}" WHERE rowid = ?', (rowid,)
            ).fetchone()
            new: Any
            try:
                doc = json.loads(cell) if isinstance(cell, (str, bytes)) else None
            except ValueError:
                doc = None
            if isinstance(doc, (dict, list)) and r.random() < 0.8:
                paths = [p for p in _paths(doc) if p] or [()]
                new = json.dumps(_set(doc, r.choice(paths), copy.deepcopy(value)))
                if isinstance(cell, bytes):
                    new = new.encode()
            elif isinstance(value, bool) or value is None or isinstance(value, (str, float)):
                new = value
            elif isinstance(value, int):
                new = value if -(2**63) <= value < 2**63 else str(value)
            else:
                new = json.dumps(value)
            try:
                con.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid = ?', (new, rowid))
            except sqlite3.Error:
                continue  # a constraint refused it: the other edits still stand
        con.commit()
    finally:
        con.close()


TEXT_MUTATIONS: dict[str, Mutation] = {
    "truncate": truncate,
    "drop-line": drop_line,
    "duplicate-line": duplicate_line,
    "reorder-lines": reorder_lines,
    "flip-bytes": flip_bytes,
    "invalid-utf8": invalid_utf8,
    "wrong-type": wrong_type,
    "hostile-id": hostile_id,
    "unknown-kind": unknown_kind,
    "huge-string": huge_string,
    "deep-nesting": deep_nesting,
    "multi-field": multi_field,
}


# -- SQLite stores -----------------------------------------------------------------------------


def sqlite_mutations() -> dict[str, Callable[[random.Random, Path], None]]:
    """Mutations applied in place to a copied SQLite file."""

    def corrupt_pages(r: random.Random, db: Path) -> None:
        buf = bytearray(db.read_bytes())
        for _ in range(r.randint(1, 16)):
            buf[r.randrange(100, len(buf))] = r.randrange(256)
        db.write_bytes(bytes(buf))

    def truncate_file(r: random.Random, db: Path) -> None:
        data = db.read_bytes()
        db.write_bytes(data[: r.randrange(len(data))])

    def _exec(db: Path, sql: str, *args: Any) -> None:
        con = sqlite3.connect(db)
        try:
            con.execute(sql, args)
            con.commit()
        finally:
            con.close()

    def _tables(db: Path) -> list[str]:
        con = sqlite3.connect(db)
        try:
            return [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        finally:
            con.close()

    def drop_table(r: random.Random, db: Path) -> None:
        _exec(db, f'DROP TABLE "{r.choice(_tables(db))}"')

    def wrong_column_type(r: random.Random, db: Path) -> None:
        table = r.choice(_tables(db))
        con = sqlite3.connect(db)
        try:
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
            col = r.choice(cols)
            con.execute(
                f'UPDATE "{table}" SET "{col}" = ?', (r.choice([42, 3.5, "text", b"\x00"]),)
            )
            con.commit()
        finally:
            con.close()

    def delete_row(r: random.Random, db: Path) -> None:
        table = r.choice(_tables(db))
        con = sqlite3.connect(db)
        try:
            rows = [rid for (rid,) in con.execute(f'SELECT rowid FROM "{table}" ORDER BY rowid')]
        finally:
            con.close()
        if rows:
            _exec(db, f'DELETE FROM "{table}" WHERE rowid = ?', r.choice(rows))

    def tamper_value(r: random.Random, db: Path) -> None:
        table = r.choice(_tables(db))
        con = sqlite3.connect(db)
        try:
            cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
            col = cols[-1]
            rows = [rid for (rid,) in con.execute(f'SELECT rowid FROM "{table}"')]
            if rows:
                con.execute(
                    f'UPDATE "{table}" SET "{col}" = CAST("{col}" AS BLOB) || X\'00\' '
                    "WHERE rowid = ?",
                    (r.choice(rows),),
                )
                con.commit()
        finally:
            con.close()

    return {
        "corrupt-pages": corrupt_pages,
        "truncate-file": truncate_file,
        "drop-table": drop_table,
        "wrong-column-type": wrong_column_type,
        "delete-row": delete_row,
        "tamper-value": tamper_value,
        "multi-cell": multi_cell,
    }
