"""Deep Agents codec: reader on recorded fixtures, writer, round trips, conversions."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.deepagents.support import (
    DA,
    THREAD_IDS,
    THREADS,
    count_units,
    hand_snapshot,
    listing_row,
)
from tests.helpers import FIXTURES, conservation, export_tree, fingerprint, projection
from trajconv.codecs import export, registry
from trajconv.codecs.deepagents import CODEC, layout
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io
from trajconv.snapshot.diagnostics import REGISTRY

if os.environ.get("CI") != "true":  # under CI a missing dependency must fail
    pytest.importorskip("langgraph.checkpoint.serde.jsonplus")


def read(case: str, tid: str) -> Any:
    return CODEC.read(DA / case / "sessions.db", session=tid)


def slim(snapshot: Any) -> dict[str, Any]:
    """The Snapshot JSON with artifact bytes left out (they are MBs of base64)."""
    doc = json.loads(io.dumps(snapshot))
    for art in doc["artifacts"]:
        art["data"] = None
    return dict(doc)


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_reader_snapshot(case: str, tid: str, snapshot: Any) -> None:
    snap = read(case, tid)
    assert io.verify(snap).ok
    assert slim(snap) == snapshot


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_every_row_and_message_is_accounted_for(case: str, tid: str) -> None:
    conservation(read(case, tid), count_units(DA / case / "sessions.db", tid))


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_reader_agrees_with_dcode_listing(case: str, tid: str) -> None:
    """message_count, first prompt and cwd as the real `dcode threads list` printed them."""
    snap = read(case, tid)
    row = listing_row(case, tid)
    messages = [r for r in snap.records if r.evidence.units == 1]
    assert len(messages) == row["message_count"]
    users = [r.text for r in snap.records if r.kind == "user"]
    assert users[0] == row["initial_prompt"]
    assert snap.session.cwd == row["cwd"]


def test_snapshot_mix_reads_the_stored_snapshot_and_later_writes() -> None:
    (tid,) = [t for c, t in THREADS if c == "snapshot-mix"]
    snap = read("snapshot-mix", tid)
    # LangGraph starts from the newest stored value (an ext-7 snapshot of 50 messages)
    # and folds only the writes after it; the 50 earlier writes are repeats by id.
    from_snapshot = [
        r for r in snap.records if r.evidence.artifact == "checkpoints.jsonl" and r.evidence.units
    ]
    assert len(from_snapshot) == 50
    assert snap.diagnostic_count("duplicate-message") == 50
    assert all(r.time is not None for r in snap.records)  # times from the first write
    assert len([r for r in snap.records if r.kind == "tool-result"]) == 27


def test_approval_duplicates_and_rejections() -> None:
    tid = next(
        t
        for c, t in THREADS
        if c == "multi-thread" and len(t) == 32 and listing_row(c, t)["message_count"] == 10
    )
    snap = read("multi-thread", tid)
    assert snap.diagnostic_count("duplicate-message") == 2
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.ok) for r in results] == [("call_write_1", True), ("call_sh_1", False)]


def test_failed_tools_and_exit_codes() -> None:
    (tid,) = [t for c, t in THREADS if c == "failed-tool"]
    results = [r.result for r in read("failed-tool", tid).records if r.kind == "tool-result"]
    assert [(r.ok, r.exit_code) for r in results] == [(False, None), (True, 2), (False, None)]


def test_reasoning_blocks_become_reasoning_records() -> None:
    tid = next(
        t
        for c, t in THREADS
        if c == "multi-thread" and listing_row(c, t)["initial_prompt"] == "explain the notes"
    )
    kinds = [(r.kind, getattr(r, "text", None)) for r in read("multi-thread", tid).records]
    assert kinds == [
        ("user", "explain the notes"),
        ("reasoning", "The user wants a summary."),
        ("assistant", "The notes list two reminders."),
    ]


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_tampering_is_detected(case: str, tid: str) -> None:
    doc = json.loads(io.dumps(read(case, tid)))
    doc["records"][0]["text"] = "tampered"
    report = io.verify_document(doc)
    assert not report.ok
    assert "record 0" in report.problems[0]


def test_reading_never_changes_the_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(DA / "multi-thread", home / ".deepagents" / ".state")
    before = fingerprint(home)
    for ref in CODEC.discover(home):
        CODEC.read(home, session=ref.session_id)
    assert fingerprint(home) == before


def test_a_store_in_wal_use_is_read_from_a_copy(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    shutil.copyfile(DA / "tool-calls" / "sessions.db", db)
    holder = sqlite3.connect(db)
    holder.execute("pragma journal_mode=wal")
    holder.execute("pragma wal_autocheckpoint=0")
    # A committed change that lives only in the -wal file until a checkpoint.
    holder.execute("update checkpoints set metadata = json_set(metadata, '$.cwd', '/from/wal')")
    holder.commit()
    try:
        wal = tmp_path / "sessions.db-wal"
        assert wal.stat().st_size > 0
        before = fingerprint(tmp_path)
        snap = CODEC.read(db)
        assert len(snap.records) == 9
        assert snap.session.cwd == "/from/wal"
        assert fingerprint(tmp_path) == before
    finally:
        holder.close()


def test_hostile_values_are_never_constructed(tmp_path: Path) -> None:
    """msgpack ext values naming arbitrary callables stay data (strict serializer)."""
    import ormsgpack

    db = tmp_path / "sessions.db"
    shutil.copyfile(DA / "tool-calls" / "sessions.db", db)
    marker = tmp_path / "pwned"
    evil = ormsgpack.packb(
        [ormsgpack.Ext(2, ormsgpack.packb(["os", "system", {"command": f"touch {marker}"}]))]
    )
    conn = sqlite3.connect(db)
    (tid, first) = conn.execute(
        "select thread_id, min(checkpoint_id) from checkpoints group by thread_id"
    ).fetchone()
    conn.execute(
        "insert into writes values (?, '', ?, 'evil', '~zz', 0, 'messages', 'msgpack', ?)",
        (tid, first, evil),
    )
    conn.commit()
    conn.close()
    snap = CODEC.read(db)
    assert not marker.exists()
    assert snap.diagnostic_count("unknown-kind") == 1
    conservation(snap, count_units(db, tid))


def test_discover_lists_every_thread() -> None:
    refs = CODEC.discover(DA / "multi-thread")
    assert sorted(r.session_id for r in refs) == sorted(
        t for c, t in THREADS if c == "multi-thread"
    )
    assert {r.cwd for r in refs} == {"/tmp/trajconv-rec-deepagents/proj"}


def test_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="pick one with --session"):
        CODEC.read(DA / "multi-thread" / "sessions.db")
    with pytest.raises(UsageError, match="did you mean"):
        CODEC.read(DA / "multi-thread" / "sessions.db", session="0a9f11")
    junk = tmp_path / "sessions.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(FormatError):
        CODEC.read(junk)
    empty = tmp_path / "empty" / "sessions.db"
    empty.parent.mkdir()
    sqlite3.connect(empty).execute("create table t(x)").connection.close()
    with pytest.raises(FormatError, match="no checkpoints table"):
        CODEC.read(empty)
    with pytest.raises(FormatError, match="not a Deep Agents store"):
        CODEC.read(tmp_path / "nowhere")
    bad_seed = tmp_path / "seed" / layout.SEED
    bad_seed.parent.mkdir()
    bad_seed.write_text(json.dumps({"format": layout.SEED_FORMAT, "messages": [{}]}))
    with pytest.raises(FormatError, match="thread_id"):
        CODEC.read(bad_seed.parent)


# -- writer ---------------------------------------------------------------------------


def test_writer_export_tree(tmp_path: Path, snapshot: Any) -> None:
    exp = export.emit(CODEC.plan(hand_snapshot()), tmp_path / "out")
    tree = export_tree(tmp_path / "out")
    assert tree == snapshot
    codes = {d.code: d.count for d in exp.diagnostics}
    assert codes == {
        "ids-derived": 5,
        "tool-status-assumed": 1,
        "untranslated-exit-code": 1,
        "untranslated-observation": 1,
        "untranslated-system": 1,
        "untranslated-time": 1,
        "untranslated-tool-status": 1,  # the failed result: the model is sent its text alone
    }
    assert all(REGISTRY[c].side == "writer" for c in codes)
    seed = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    ai = seed["messages"][1]
    assert ai["content"] == [
        {"type": "reasoning", "reasoning": "Look first."},
        {"type": "text", "text": "Let me look."},
    ]
    assert [c["id"] for c in ai["tool_calls"]] == ["call_7", "call_8"]
    assert exp.resume_argv == ["dcode", "-r", "s-1"]


def test_writer_can_drop_reasoning(tmp_path: Path) -> None:
    plan = CODEC.plan(hand_snapshot(), reasoning="drop")
    assert "untranslated-reasoning" in {d.code for d in plan.diagnostics}
    seed = json.loads(plan.files[0].read())
    assert seed["messages"][1]["content"] == "Let me look."


def test_writer_refusals() -> None:
    with pytest.raises(RefusedError, match="unfinished"):
        CODEC.plan(hand_snapshot(finished=False))
    with pytest.raises(RefusedError, match="no cwd"):
        CODEC.plan(hand_snapshot(cwd=None))
    assert CODEC.plan(hand_snapshot(cwd=None), cwd="/elsewhere").files


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_round_trip_keeps_every_record(case: str, tid: str, tmp_path: Path) -> None:
    snap = read(case, tid)
    exp = export.emit(CODEC.plan(snap), tmp_path / "out")
    back = CODEC.read(tmp_path / "out")
    assert projection(back) == projection(snap)
    assert [r.id for r in back.records] == [r.id for r in snap.records]
    assert [r.time for r in back.records] == [r.time for r in snap.records]
    assert back.session.id == snap.session.id and back.session.cwd == snap.session.cwd
    assert not {d.code for d in exp.diagnostics} - {"untranslated-model", "untranslated-time"}
    assert io.verify(back).ok


def test_seed_fixture_reads_like_its_source() -> None:
    (tid,) = [t for c, t in THREADS if c == "tool-calls"]
    seed = CODEC.read(DA / "seed")
    assert projection(seed) == projection(read("tool-calls", tid))
    assert seed.source.locator == layout.SEED


# -- conversions ------------------------------------------------------------------------

GROK_SESSIONS = sorted(
    p for p in (FIXTURES / "grok").glob("*/sessions/*/*") if (p / "summary.json").is_file()
)


@pytest.mark.parametrize("sdir", GROK_SESSIONS, ids=[p.parents[2].name for p in GROK_SESSIONS])
def test_grok_to_deepagents(sdir: Path, tmp_path: Path) -> None:
    snap = registry.get("grok").read(sdir)
    try:
        plan = CODEC.plan(snap, allow_lossy=True)
    except RefusedError as exc:  # e.g. no cwd: named, not guessed
        assert "cwd" in str(exc)
        return
    exp = export.emit(plan, tmp_path / "out")
    back = CODEC.read(tmp_path / "out")
    lost = {d.code for d in exp.diagnostics}
    kept = ("user", "assistant", "reasoning", "tool-call", "tool-result")
    if not lost & {"untranslated-pending-call", "untranslated-orphan-result"}:
        assert [p for p in projection(back, kept) if p[0] != "tool-result"] == [
            p for p in projection(snap, kept) if p[0] != "tool-result"
        ]
    for kind in ("system", "observation"):
        if any(r.kind == kind for r in snap.records):
            assert f"untranslated-{kind}" in lost


def _writers() -> list[str]:
    return [n for n in registry.names() if n != "deepagents" and registry.get(n).can_write]


@pytest.mark.parametrize("target", _writers())
@pytest.mark.parametrize(("case", "tid"), THREADS[:3], ids=THREAD_IDS[:3])
def test_deepagents_to_other_harnesses(case: str, tid: str, target: str, tmp_path: Path) -> None:
    snap = read(case, tid)
    codec = registry.get(target)
    exp = export.emit(codec.plan(snap, allow_lossy=True), tmp_path / "out")
    assert all(d.code in REGISTRY for d in exp.diagnostics)
    assert (tmp_path / "out" / "trajconv-export.json").is_file()


def test_provider_ids_and_names_are_named() -> None:
    """ChatOpenAI sends an AI message's name and its Responses-API item ids back to the
    model; the Snapshot has no place for them, so the reader names them (issue 23, class 5)."""
    import trajconv

    refs = trajconv.discover("deepagents", FIXTURES / "deepagents" / "multi-thread")
    ref = next(r for r in refs if r.session_id == "0a9f1184b8584fbd98d734d94f7231b2")
    snap = trajconv.read("deepagents", ref.path, session=ref.session_id)
    codes = {d.code: d.count for d in snap.diagnostics}
    # one AI message: a name plus a reasoning item id (rs_…) from the Responses-shaped reply
    assert codes["provider-ids-not-projected"] == 2
