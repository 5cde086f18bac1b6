"""Cursor reader: fixtures -> Snapshot (syrupy), conservation, verify, bad input, secrets."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cursor_support import (
    AGENTS,
    CASES,
    CWD,
    PLANTED_KEY,
    copy_store,
    fixture_store,
    meta,
    walk,
)

from tests.helpers import conservation, fingerprint
from trajconv.codecs.cursor import CODEC, native, proto, reader
from trajconv.errors import FormatError
from trajconv.snapshot import io


@pytest.mark.parametrize("case", CASES)
def test_fixture_snapshot(case: str, snapshot: object) -> None:
    snap = CODEC.read(fixture_store(case))
    assert io.dumps(snap).decode("utf-8") == snapshot


@pytest.mark.parametrize("case", CASES)
def test_conservation_and_verify(case: str) -> None:
    snap = CODEC.read(fixture_store(case))
    conservation(snap, reader.units_seen(snap))
    assert io.verify(snap).ok
    assert snap.session.id == AGENTS[case]
    assert snap.session.cwd == CWD
    assert all(r.time is None for r in snap.records)  # Cursor messages carry no time


def test_units_seen_counted_independently() -> None:
    # Count field-1 content parts straight from SQLite, not through the reader.
    db = fixture_store("multi-turn")
    con = sqlite3.connect(db)
    root_hex = meta(db)["latestRootBlobId"]
    (root_bytes,) = con.execute("SELECT data FROM blobs WHERE id = ?", (root_hex,)).fetchone()
    root = proto.decode("ConversationStateStructure", root_bytes)
    parts = 0
    for raw in root.root_prompt_messages_json:
        (data,) = con.execute("SELECT data FROM blobs WHERE id = ?", (raw.hex(),)).fetchone()
        content = json.loads(data)["content"]
        parts += 1 if isinstance(content, str) else len(content)
    con.close()
    snap = CODEC.read(db)
    assert parts == 17 - 1  # 16 parts + 1 unknown root field
    conservation(snap, parts + 1)


def test_projection_rules() -> None:
    snap = CODEC.read(fixture_store("multi-turn"))
    kinds = [r.kind for r in snap.records]
    assert kinds[:3] == ["system", "observation", "user"]
    results = {r.result.call_id: r.result.ok for r in snap.records if r.kind == "tool-result"}
    assert results == {"call_01": True, "call_02": None, "call_03\nshell": False}
    assert snap.diagnostic_count("redacted-content") == 1
    assert snap.diagnostic_count("empty-content") == 1  # signature-only reasoning
    assert snap.diagnostic_count("unknown-kind") == 1  # root field 40
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    models = {r.model for r in snap.records if r.kind in ("assistant", "reasoning")}
    assert models == {"gpt-5"}


def test_compaction_state_reported() -> None:
    snap = CODEC.read(fixture_store("compaction"))
    assert snap.diagnostic_count("compaction-state") == 4
    assert snap.records[1].kind == "observation"  # the isSummary message


def test_superseded_blobs_not_read() -> None:
    db = fixture_store("multi-turn")
    snap = CODEC.read(db)
    blob_arts = [a for a in snap.artifacts if a.name.startswith("cursor/blobs/")]
    con = sqlite3.connect(db)
    (total,) = con.execute("SELECT count(*) FROM blobs").fetchone()
    con.close()
    assert len(blob_arts) == 21
    assert total == 23  # an older root and a draft message stay unread


def test_planted_key_never_reaches_snapshot() -> None:
    db = fixture_store("multi-turn")
    assert meta(db)["blobEncryptionKey"] == PLANTED_KEY
    snap = CODEC.read(db)
    text = io.dumps(snap).decode("utf-8")
    assert PLANTED_KEY not in text
    assert PLANTED_KEY.encode().hex() not in text
    assert snap.diagnostic_count("secret-dropped") == 1
    assert all(PLANTED_KEY not in s for d in snap.diagnostics for s in d.samples)


def test_read_leaves_store_unchanged(tmp_path: Path) -> None:
    db = copy_store("multi-turn", tmp_path / "a")
    before = fingerprint(db.parent)
    CODEC.read(db)
    assert fingerprint(db.parent) == before


def test_tampered_snapshot_fails_verify() -> None:
    snap = CODEC.read(fixture_store("multi-turn"))
    doc = snap.model_dump(mode="json")
    doc["records"][3]["text"] = "changed"
    report = io.verify_document(doc)
    assert not report.ok
    assert "record 3" in report.problems[0]


def _rewrite_blob(db: Path, blob_hex: str, data: bytes | None) -> None:
    con = sqlite3.connect(db)
    if data is None:
        con.execute("DELETE FROM blobs WHERE id = ?", (blob_hex,))
    else:
        con.execute("UPDATE blobs SET data = ? WHERE id = ?", (data, blob_hex))
    con.commit()
    con.close()


def _first_message(db: Path) -> str:
    store, _ = walk(db)
    return next(store.message_ids())


def test_missing_blob_names_it(tmp_path: Path) -> None:
    db = copy_store("multi-turn", tmp_path)
    bid = _first_message(db)
    _rewrite_blob(db, bid, None)
    with pytest.raises(FormatError) as err:
        CODEC.read(db)
    assert err.value.blob == bid and "missing" in err.value.reason


def test_id_mismatch_names_it(tmp_path: Path) -> None:
    db = copy_store("multi-turn", tmp_path)
    bid = _first_message(db)
    _rewrite_blob(db, bid, b'{"role":"system","content":"tampered"}')
    with pytest.raises(FormatError) as err:
        CODEC.read(db)
    assert err.value.blob == bid and "sha256" in err.value.reason


def _root_of(db: Path) -> Any:
    store, blobs = walk(db)
    return proto.decode("ConversationStateStructure", blobs[store.root_id][1])


def _new_root(db: Path, root: Any, *blobs: bytes) -> None:
    """Store ``blobs`` and make ``root`` the store's latest root."""
    root_bytes = proto.encode(root)
    root_id = hashlib.sha256(root_bytes).hexdigest()
    con = sqlite3.connect(db)
    for data in (*blobs, root_bytes):
        con.execute("INSERT INTO blobs VALUES (?, ?)", (hashlib.sha256(data).hexdigest(), data))
    m = meta(db)
    m["latestRootBlobId"] = root_id
    con.execute("UPDATE meta SET value = ? WHERE key = '0'", (json.dumps(m).encode().hex(),))
    con.commit()
    con.close()


def test_non_json_message_names_it(tmp_path: Path) -> None:
    db = copy_store("multi-turn", tmp_path)
    root = _root_of(db)
    bad = b"\x00not json"
    bad_id = hashlib.sha256(bad).hexdigest()
    root.root_prompt_messages_json[0] = bytes.fromhex(bad_id)
    _new_root(db, root, bad)
    with pytest.raises(FormatError) as err:
        CODEC.read(db)
    assert err.value.blob == bad_id and "JSON" in err.value.reason


def test_a_blob_referenced_again_is_handed_over_once(tmp_path: Path) -> None:
    """The walk asks the caller which blobs it holds, and logs each once, in walk order."""
    db = copy_store("multi-turn", tmp_path)
    root = _root_of(db)
    again = root.root_prompt_messages_json[0]
    root.root_prompt_messages_json.append(again)
    _new_root(db, root)
    handed: list[tuple[str, str]] = []
    with native.read_store(db, max_blob=1 << 30) as store:
        store.walk(
            lambda bid, role, _data: handed.append((bid, role)),
            lambda *_: None,
            lambda bid: any(bid == seen for seen, _role in handed),
        )
    assert len(handed) == len(set(handed)) == 21  # as before: a new root, no new blob
    assert list(store.roles()) == handed
    assert handed[0] == (store.root_id, "root")
    assert list(store.message_ids()).count(again.hex()) == 2
    snap = CODEC.read(db)
    conservation(snap, reader.units_seen(snap))
    index = json.loads(snap.artifacts.get(reader.INDEX).read())
    assert [(b["id"], b["role"]) for b in index["blobs"]] == handed
    assert index["messages"].count(again.hex()) == 2


def test_not_a_store(tmp_path: Path) -> None:
    bogus = tmp_path / "store.db"
    bogus.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(FormatError):
        CODEC.read(bogus)


def test_discover_finds_cli_layout(tmp_path: Path) -> None:
    from trajconv.codecs.cursor import layout

    rel = layout.store_rel(CWD, AGENTS["multi-turn"])
    copy_store("multi-turn", (tmp_path / rel).parent)
    copy_store("compaction", (tmp_path / layout.store_rel(CWD, AGENTS["compaction"])).parent)
    refs = CODEC.discover(tmp_path)
    assert sorted(r.session_id for r in refs) == sorted(AGENTS.values())
    assert {r.title for r in refs} == {"Add a README", "Rename util"}
    snap = CODEC.read(tmp_path, session=AGENTS["multi-turn"])
    assert snap.source.locator == rel


def test_reads_uncheckpointed_wal_while_writer_open(tmp_path: Path) -> None:
    db = copy_store("multi-turn", tmp_path)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO meta (key, value) VALUES ('name', 'legacy title row')")
    writer.commit()  # committed into store.db-wal, not yet in store.db
    try:
        assert (tmp_path / "store.db-wal").stat().st_size > 0
        with native.read_store(db, max_blob=1 << 30) as store:
            assert store.other_meta == {"name": "legacy title row"}
    finally:
        writer.close()
