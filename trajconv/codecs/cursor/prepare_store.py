#!/usr/bin/env python3
"""Install a trajconv Cursor export as a Cursor CLI chat store (stdlib only).

usage: python prepare.py [--home DIR] [--cwd DIR] [--dry-run]

Reads trajconv-export.json and the ``cursor-agent-sqlite-readout-v1`` readout
beside this file, checks every file's sha256 and every blob's sha256 against
its id, then creates ``<home>/.cursor/chats/<md5(resolved cwd)>/<agentId>/store.db``
with the pragmas and tables Cursor uses (WAL, ``user_version = 1``,
``blobs(id, data)``, ``meta(key, value)``). It never replaces an existing store
(exit 3); ``--dry-run`` prints the plan and writes nothing. The store is built
in a temporary folder beside the target, checkpointed, and renamed into place.
Resume with ``cursor-agent --resume <agentId>`` run in that cwd.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
READOUT_FORMAT = "cursor-agent-sqlite-readout-v1"


def fail(code: int, message: str) -> NoReturn:
    print(f"prepare: {message}", file=sys.stderr)
    raise SystemExit(code)


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_readout() -> tuple[dict[str, Any], Path]:
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    readout_path: Path | None = None
    for entry in manifest["files"]:
        rel = entry["path"]
        if rel == "prepare.py":
            continue
        path = HERE / rel
        if not path.is_file() or digest(path) != entry["sha256"]:
            fail(1, f"{rel}: missing or sha256 mismatch")
        if rel.endswith(".readout.json"):
            readout_path = path
    if readout_path is None:
        fail(1, "the manifest lists no readout")
    doc = json.loads(readout_path.read_text("utf-8"))
    if doc.get("format") != READOUT_FORMAT:
        fail(1, f"{readout_path.name}: not a {READOUT_FORMAT} document")
    return doc, readout_path


def build(doc: dict[str, Any], target: Path) -> None:
    """Create the store in a temporary folder beside ``target`` and rename it in."""
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        con = sqlite3.connect(tmp / "store.db")
        # Cursor's own schema and pragmas (shared/formats/cursor-agentkv.md section 2).
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
        con.execute("PRAGMA user_version = 1")
        con.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
        con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        for blob in doc["blobs"]:
            con.execute(
                "INSERT OR REPLACE INTO blobs (id, data) VALUES (?, ?)",
                (blob["id"], base64.b64decode(blob["data"])),
            )
        for row in doc["meta"]:
            con.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (row["key"], row["value"])
            )
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        if target.exists():
            fail(3, f"{target} appeared while preparing; refusing to replace it")
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--cwd", help="workspace the chat belongs to (default: the session's)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)

    doc, readout_path = load_readout()
    agent = doc.get("agent_id")
    if not isinstance(agent, str) or not agent or "/" in agent or agent in (".", ".."):
        fail(1, f"{readout_path.name}: bad agent_id {agent!r}")
    cwd = args.cwd or doc.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        fail(2, "the session has no cwd; pass --cwd DIR")
    for i, blob in enumerate(doc["blobs"]):
        data = base64.b64decode(blob["data"], validate=True)
        if hashlib.sha256(data).hexdigest() != blob["id"]:
            fail(1, f"blob {i} ({blob['id']}): sha256 does not match its id")
    rows = {row["key"]: row["value"] for row in doc["meta"]}
    meta = json.loads(bytes.fromhex(rows["0"]).decode("utf-8"))
    ids = {blob["id"] for blob in doc["blobs"]}
    if meta.get("latestRootBlobId") not in ids:
        fail(1, "latestRootBlobId names no blob of the readout")
    resolved = str(Path(cwd).expanduser().resolve())
    group = hashlib.md5(resolved.encode("utf-8"), usedforsecurity=False).hexdigest()
    home = args.home.expanduser().resolve()
    target = home / ".cursor" / "chats" / group / agent
    print(f"store: {target / 'store.db'} ({len(doc['blobs'])} blobs, cwd {resolved})")
    if target.exists() or target.is_symlink():
        fail(3, f"{target} exists; refusing to replace an existing Cursor chat")
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    build(doc, target)
    print(f"resume: cd {resolved} && cursor-agent --resume {agent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
