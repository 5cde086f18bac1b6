"""The OpenCode fixtures as (name, path, session) cases, and native units counted directly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.helpers import FIXTURES

OPENCODE = FIXTURES / "opencode"
TOOLS_DB = OPENCODE / "recorded-tools" / "opencode.db"
SUB_DB = OPENCODE / "recorded-subagent" / "opencode.db"
LEGACY = OPENCODE / "legacy-json"


def _sessions(db: Path) -> list[tuple[str, str | None]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(r[0], r[1]) for r in con.execute("select id, parent_id from session order by id")]
    finally:
        con.close()


def cases() -> list[tuple[str, Path, str]]:
    """Every session of every fixture: ``(id, path to read, session id)``; a sub-session's
    id ends in ``-child``."""
    found = []
    for db in (TOOLS_DB, SUB_DB):
        for sid, parent in _sessions(db):
            found.append((f"{db.parent.name}-{'child' if parent else 'root'}", db, sid))
    for path in sorted((LEGACY / "storage" / "session").glob("*/*.json")):
        child = "parentID" in json.loads(path.read_text("utf-8"))
        found.append((f"legacy-json-{'child' if child else 'root'}", LEGACY, path.stem))
    return found


CASES = cases()
IDS = [c[0] for c in CASES]
ROOTS = [c for c in CASES if not c[0].endswith("-child")]


def units(path: Path, session: str) -> int:
    """Native units of a session counted without the reader: its parts, plus each message
    that has none."""
    if path.is_file():
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            parts = con.execute(
                "select count(*) from part p where exists (select 1 from message m where "
                "m.id = p.message_id and m.session_id = ?) or (p.session_id = ? and not exists "
                "(select 1 from message m where m.id = p.message_id and m.session_id = ?))",
                (session, session, session),
            )
            empty = con.execute(
                "select count(*) from message m where m.session_id = ? and not exists "
                "(select 1 from part p where p.message_id = m.id)",
                (session,),
            )
            return int(parts.fetchone()[0]) + int(empty.fetchone()[0])
        finally:
            con.close()
    storage = path / "storage"
    total = 0
    for msg in (storage / "message" / session).glob("*.json"):
        n = len(list((storage / "part" / msg.stem).glob("*.json")))
        total += n or 1
    return total
