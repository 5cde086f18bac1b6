"""Hostile inputs of issue 25, built small: each is a few KB on disk that used to cost
far more than its size (time, disk, memory) or end in a traceback.

``tests/robustness/test_hostile.py`` runs them as standing cases; ``python -m
tests.robustness.run`` lists them in ``evidence/robustness.md`` (:data:`CASES`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from tests.helpers import FIXTURES
from trajconv.codecs.cursor import native, proto

CASES: dict[str, str] = {}
"""Test name: what the hostile input is and what trajconv does with it now (filled in
by the tests' ``hostile`` decorator, in the order they are defined)."""


def amplified_cursor_store(dest: Path, *, blob_bytes: int, references: int) -> Path:
    """A copy of the multi-turn Cursor fixture whose root references one user message
    blob of about ``blob_bytes`` bytes ``references`` times (legitimate Cursor: equal
    messages share a blob id); the store holds it once."""
    dest.mkdir(parents=True, exist_ok=True)
    db = dest / "store.db"
    shutil.copyfile(FIXTURES / "cursor" / "multi-turn" / "store.db", db)
    message = native.json_bytes({"role": "user", "content": "x" * blob_bytes})
    con = sqlite3.connect(db)
    try:
        (value,) = con.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
        meta = json.loads(bytes.fromhex(value).decode("utf-8"))
        (old_root,) = con.execute(
            "SELECT data FROM blobs WHERE id = ?", (meta["latestRootBlobId"],)
        ).fetchone()
        root = proto.decode("ConversationStateStructure", old_root)
        del root.root_prompt_messages_json[:]
        root.root_prompt_messages_json.extend([hashlib.sha256(message).digest()] * references)
        new_root = proto.encode(root)
        for data in (message, new_root):
            con.execute(
                "INSERT OR REPLACE INTO blobs (id, data) VALUES (?, ?)",
                (hashlib.sha256(data).hexdigest(), data),
            )
        meta["latestRootBlobId"] = hashlib.sha256(new_root).hexdigest()
        con.execute(
            "UPDATE meta SET value = ? WHERE key = '0'",
            (json.dumps(meta).encode("utf-8").hex(),),
        )
        con.commit()
        con.execute("VACUUM")
    finally:
        con.close()
    return db


def empty_records_document(records: int = 100_000) -> bytes:
    """A Snapshot file of ``records`` empty ``{}`` records (about 3 bytes each)."""
    doc = {
        "format": "trajconv.snapshot/1",
        "id": "sha256:" + "0" * 64,
        "meta_hash": "sha256:" + "0" * 64,
        "source": {"harness": "grok", "harness_version": None, "session_id": "s", "locator": "s"},
        "session": {"id": "s"},
        "records": [{}] * records,
        "artifacts": [],
        "diagnostics": [],
        "producer": {"name": "trajconv", "version": "0", "reader": "grok"},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def export_file(
    dest: Path, members: dict[str, bytes], *, manifest: bytes | None = None, tmp: Path
) -> Path:
    """A store export (``trajconv archive export``'s layout) holding ``members`` (paths in
    the store) beside an empty store's marker and index; its manifest lists them unless
    ``manifest`` is given."""
    import io
    import tarfile

    from trajconv.store.local import EXPORT_FORMAT, STORE_FORMAT, Store

    with Store.open(tmp / "empty-store", create=True):
        pass
    files = {
        "trajconv-store.json": (tmp / "empty-store" / "trajconv-store.json").read_bytes(),
        **members,
        "index.sqlite": (tmp / "empty-store" / "index.sqlite").read_bytes(),
    }
    if manifest is None:
        entries = [
            {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            for rel, data in files.items()
        ]
        manifest = json.dumps(
            {"format": EXPORT_FORMAT, "store": STORE_FORMAT, "files": entries}
        ).encode()
    with tarfile.open(dest, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel, data in [*files.items(), ("MANIFEST.json", manifest)]:
            info = tarfile.TarInfo(f"trajconv-store/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


def atif_document(dest: Path, total: int, message: int = 1000) -> Path:
    """An ATIF trajectory of about ``total`` bytes: user and agent steps in turn, each
    agent step with a tool call and its result, messages of ``message`` characters."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as out:
        out.write(
            '{"schema_version":"ATIF-v1.6","session_id":"big","agent":{"name":"x",'
            '"version":"1","model_name":"m"},"steps":['
        )
        size, i = 0, 0
        while size < total:
            i += 1
            text = (f"step {i} " * message)[:message]
            step: dict[str, object] = {"step_id": i, "source": "user", "message": text}
            if i % 2 == 0:
                step = {
                    "step_id": i,
                    "source": "agent",
                    "message": text,
                    "tool_calls": [
                        {"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {}}
                    ],
                    "observation": {"results": [{"source_call_id": f"c{i}", "content": "ok"}]},
                }
            piece = ("," if i > 1 else "") + json.dumps(step, separators=(",", ":"))
            out.write(piece)
            size += len(piece)
        out.write("]}")
    return dest
