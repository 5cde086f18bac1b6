"""Shared constants and helpers for the Cursor codec tests."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from tests.helpers import FIXTURES
from trajconv.codecs.cursor import native

CASES = ("multi-turn", "compaction")
AGENTS = {
    "multi-turn": "3b2a3c9e-5f1d-4a8e-9c0b-1d2e3f405162",
    "compaction": "9c1d2e3f-4a5b-4c6d-8e7f-a0b1c2d3e4f5",
}
CWD = "/home/dev/demo-app"
#: the blobEncryptionKey planted in the multi-turn fixture (fixtures/record/cursor_build.py)
PLANTED_KEY = hashlib.sha256(b"trajconv-cursor-fixture-planted-blobEncryptionKey").hexdigest()


def fixture_store(case: str) -> Path:
    return FIXTURES / "cursor" / case / "store.db"


def copy_store(case: str, dest_dir: Path) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / "store.db"
    shutil.copyfile(fixture_store(case), dest)
    return dest


def meta(db: Path) -> dict[str, object]:
    con = sqlite3.connect(db)
    try:
        (value,) = con.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
    finally:
        con.close()
    decoded = json.loads(bytes.fromhex(value).decode("utf-8"))
    assert isinstance(decoded, dict)
    return decoded


def blob_ids(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [row[0] for row in con.execute("SELECT id FROM blobs ORDER BY id")]
    finally:
        con.close()


def walk(db: Path) -> tuple[native.CursorStore, dict[str, tuple[str, bytes]]]:
    """Walk a store as the reader does: the store, and each referenced blob's role and bytes."""
    blobs: dict[str, tuple[str, bytes]] = {}
    with native.read_store(db, max_blob=1 << 30) as store:
        store.walk(
            lambda bid, role, data: blobs.setdefault(bid, (role, data)),
            lambda *_: None,
            blobs.__contains__,
        )
    return store, blobs
