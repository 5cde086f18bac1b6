"""Mutations of native session files, driven by a ``random.Random`` (seeded, reproducible).

Each mutation takes the bytes of one native file and returns new bytes; the
same functions serve the hypothesis property tests and the on-demand run that
writes ``evidence/robustness.md``.
"""

from __future__ import annotations

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
    }
