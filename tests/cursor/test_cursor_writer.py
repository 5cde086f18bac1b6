"""Cursor writer: export tree + manifest, prepare.py builds store.db, round trips, refusals."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cursor_support import AGENTS, CASES, CWD, PLANTED_KEY, blob_ids, fixture_store, meta

from tests.helpers import export_tree, projection
from trajconv.codecs.cursor import CODEC, layout, native, proto
from trajconv.codecs.export import emit
from trajconv.errors import RefusedError
from trajconv.snapshot import io
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source


def _built(title: str | None = "Fix tests") -> Snapshot:
    """A hand-built Snapshot from another harness (every record kind)."""
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="s-1", locator="x/s-1"), "test/1"
    )
    b.session = Session(
        id="s-1",
        title=title,
        cwd="/work/app",
        model="m-1",
        created_at="2025-01-01T00:00:00.000Z",
    )

    def ev(n: int) -> EvidenceFields:
        return evidence(artifact="updates.jsonl", line=n, native="x")

    b.add_text("system", "g:0", "be brief", time=None, turn=None, evidence=ev(0))
    b.add_text("user", "g:1", "run tests", time="2025-01-01T00:00:01.000Z", turn=0, evidence=ev(1))
    b.add_text("reasoning", "g:2", "use pytest", time=None, turn=0, evidence=ev(2), model="m-1")
    b.add_text("assistant", "g:3", "Running.", time=None, turn=0, evidence=ev(3), model="m-1")
    b.add_call("g:4", "c1", "shell", {"command": "pytest"}, time=None, turn=0, evidence=ev(4))
    b.add_result("g:5", "c1", False, "1 failed", time=None, turn=0, evidence=ev(5), exit_code=1)
    b.add_text("observation", "g:6", "<reminder>", time=None, turn=0, evidence=ev(6))
    b.add_text(
        "assistant", "g:7", "One test fails.", time=None, turn=0, evidence=ev(7), model="m-1"
    )
    return b.build()


def _prepare(out: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home), *extra],
        capture_output=True,
        text=True,
        check=False,
    )


def _installed(home: Path) -> Path:
    (found,) = sorted(home.glob(".cursor/chats/*/*/store.db"))
    return found


def test_lowered_export_tree(tmp_path: Path, snapshot: object) -> None:
    export = emit(CODEC.plan(_built()), tmp_path / "out")
    tree = export_tree(tmp_path / "out")
    assert tree == snapshot
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes["untranslated-exit-code"] == 1
    assert codes["untranslated-time"] == 1
    assert codes["ids-derived"] >= 3


@pytest.mark.parametrize("case", CASES)
def test_cursor_export_manifest(case: str, tmp_path: Path, snapshot: object) -> None:
    export = emit(CODEC.plan(CODEC.read(fixture_store(case)), allow_lossy=True), tmp_path / "o")
    manifest = dict(export.manifest)
    manifest.pop("producer")
    assert manifest == snapshot
    assert export.resume_argv == ["cursor-agent", "--resume", AGENTS[case]]


def test_compaction_state_written_back_whole_from_its_blobs() -> None:
    plan = CODEC.plan(CODEC.read(fixture_store("compaction")))  # no refusal: nothing is lost
    assert plan.notes[0] == "blobs written back unchanged from the Cursor source"


def test_compaction_state_refused_by_name_when_rebuilt_from_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trajconv.codecs.cursor import writer

    snap = CODEC.read(fixture_store("compaction"))
    monkeypatch.setattr(writer, "_from_cursor", lambda _snap: None)  # blobs not in the Snapshot
    with pytest.raises(RefusedError, match="allow-lossy") as refused:
        CODEC.plan(snap)
    message = str(refused.value)
    assert "root.summary (the compaction summary the model reads" in message
    assert "the model would not see what it saw before" in message
    notes = CODEC.plan(snap, allow_lossy=True).notes
    assert any(n.startswith("--allow-lossy: left out the Cursor root state root.") for n in notes)


def test_untitled_chat_gets_cursors_own_name_and_title_missing(tmp_path: Path) -> None:
    export = emit(CODEC.plan(_built(title=None)), tmp_path / "out")
    doc = json.loads(next((tmp_path / "out" / "cursor").glob("*.readout.json")).read_bytes())
    assert doc["meta_decoded"]["name"] == "New Agent"  # meta["0"], as Cursor writes it
    assert "title-missing" in {d.code for d in export.diagnostics}
    # read back, Cursor's placeholder is no title: nothing invented
    again = CODEC.read(next((tmp_path / "out" / "cursor").glob("*.readout.json")))
    assert again.session.title is None


@pytest.mark.parametrize("case", CASES)
def test_prepare_builds_store_that_rereads_as_readout(case: str, tmp_path: Path) -> None:
    snap = CODEC.read(fixture_store(case))
    out = tmp_path / "out"
    emit(CODEC.plan(snap, allow_lossy=True), out)
    readout = out / "cursor" / f"{AGENTS[case]}.readout.json"
    proc = _prepare(out, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    store = _installed(tmp_path / "home")
    assert store.parent.parent.name == layout.workspace_hash(CWD)
    from_store, from_readout = CODEC.read(store), CODEC.read(readout)
    # only the locator differs (store path vs readout path), so record hashes differ
    assert from_store.source.locator != from_readout.source.locator
    assert [r.model_dump(exclude={"hash"}) for r in from_store.records] == [
        r.model_dump(exclude={"hash"}) for r in from_readout.records
    ]
    assert from_store.artifacts == from_readout.artifacts
    assert from_store.session == from_readout.session
    # byte-identical blobs, every one verified against its id
    doc = json.loads(readout.read_bytes())
    assert blob_ids(store) == sorted(b["id"] for b in doc["blobs"])
    # cursor -> Snapshot -> cursor -> Snapshot keeps every record
    assert [r.model_dump(exclude={"hash"}) for r in from_store.records] == [
        r.model_dump(exclude={"hash"}) for r in snap.records
    ]
    con_meta = meta(store)
    assert con_meta["agentId"] == AGENTS[case] and "blobEncryptionKey" not in con_meta


def test_prepare_refuses_existing_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    emit(CODEC.plan(CODEC.read(fixture_store("multi-turn"))), out)
    home = tmp_path / "home"
    dry = _prepare(out, home, "--dry-run")
    assert dry.returncode == 0 and not home.exists()
    assert _prepare(out, home).returncode == 0
    again = _prepare(out, home)
    assert again.returncode == 3 and "refusing" in again.stderr


def test_prepare_rejects_a_tampered_blob(tmp_path: Path) -> None:
    out = tmp_path / "out"
    emit(CODEC.plan(CODEC.read(fixture_store("multi-turn"))), out)
    readout = out / "cursor" / f"{AGENTS['multi-turn']}.readout.json"
    doc = json.loads(readout.read_bytes())
    doc["blobs"][1]["data"] = "e30="  # "{}"
    readout.write_text(json.dumps(doc))
    proc = _prepare(out, tmp_path / "home")
    assert proc.returncode == 1 and "sha256" in proc.stderr
    assert not (tmp_path / "home" / ".cursor").exists()


def _rehash(out: Path, readout: Path) -> None:
    """Make the manifest match an edited readout, so prepare's own checks are what fail."""
    manifest = out / "trajconv-export.json"
    doc = json.loads(manifest.read_text())
    for entry in doc["files"]:
        if entry["path"].endswith(".readout.json"):
            entry["sha256"] = hashlib.sha256(readout.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("blob", "sha256 does not match its id"),
        ("truncate", "readout is not JSON (unterminated string at byte"),
        ("base64", "blob data is not base64"),
        ("format", "not a cursor-agent-sqlite-readout-v1 document"),
    ],
)
def test_prepare_checks_every_blob_and_the_readout_before_writing(
    edit: str, message: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    emit(CODEC.plan(CODEC.read(fixture_store("multi-turn"))), out)
    readout = out / "cursor" / f"{AGENTS['multi-turn']}.readout.json"
    data = readout.read_bytes()
    doc = json.loads(data)
    if edit == "blob":
        doc["blobs"][-1]["data"] = "e30="  # "{}"
        readout.write_text(json.dumps(doc))
    elif edit == "base64":
        doc["blobs"][-1]["data"] = "not base64!"
        readout.write_text(json.dumps(doc))
    elif edit == "format":
        doc["format"] = "cursor-agent-sqlite-readout-v2"
        readout.write_text(json.dumps(doc))
    else:
        readout.write_bytes(data[: data.index(doc["blobs"][-1]["data"].encode()) + 8])
    _rehash(out, readout)
    proc = _prepare(out, tmp_path / "home")
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "home" / ".cursor").exists()


def test_lowered_round_trip_keeps_every_record(tmp_path: Path) -> None:
    snap = _built()
    out = tmp_path / "out"
    emit(CODEC.plan(snap), out)
    assert _prepare(out, tmp_path / "home").returncode == 0
    again = CODEC.read(_installed(tmp_path / "home"))
    assert projection(again) == [
        (k, *rest) if k != "tool-result" else (k, rest[0], rest[1], rest[2], None)
        for k, *rest in projection(snap)
    ]
    assert again.session.title == "Fix tests" and again.session.cwd == "/work/app"
    assert again.session.model == "m-1"
    assert io.verify(again).ok


def test_lowered_root_re_decodes_to_its_ids(tmp_path: Path) -> None:
    emit(CODEC.plan(_built()), tmp_path / "out")
    (readout,) = (tmp_path / "out" / "cursor").glob("*.readout.json")
    with native.read_readout(readout, max_blob=1 << 30) as store:
        root_hex = json.loads(readout.read_bytes())["latest_root_blob_id"]
        root_bytes = store.source.get(root_hex)
        root = proto.decode("ConversationStateStructure", root_bytes)
        assert proto.encode(root) == root_bytes
        for raw in [*root.root_prompt_messages_json, *root.turns]:
            assert native.blob_id(store.source.get(raw.hex()) or b"") == raw.hex()
    assert list(root.previous_workspace_uris) == ["file:///work/app"]


def test_lowering_is_deterministic(tmp_path: Path) -> None:
    emit(CODEC.plan(_built()), tmp_path / "a")
    emit(CODEC.plan(_built()), tmp_path / "b")
    assert export_tree(tmp_path / "a") == export_tree(tmp_path / "b")


def test_planted_key_never_reaches_export_or_diagnostics(tmp_path: Path) -> None:
    snap = CODEC.read(fixture_store("multi-turn"))
    export = emit(CODEC.plan(snap), tmp_path / "out")
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert PLANTED_KEY.encode() not in data
            assert PLANTED_KEY.encode().hex().encode() not in data
    assert PLANTED_KEY not in json.dumps([d.model_dump() for d in export.diagnostics])
    assert _prepare(tmp_path / "out", tmp_path / "home").returncode == 0
    assert PLANTED_KEY.encode() not in _installed(tmp_path / "home").read_bytes()


def test_unpaired_call_refused(tmp_path: Path) -> None:
    b = SnapshotBuilder(
        Source(harness="fx", harness_version=None, session_id="x", locator="x"), "t/1"
    )
    ev = evidence(artifact="a", line=0, native="x")
    b.add_text("user", "x:0", "hi", time=None, turn=0, evidence=ev)
    b.add_call("x:1", "c9", "read", {}, time=None, turn=0, evidence=ev)
    b.add_text("assistant", "x:2", "ok", time=None, turn=0, evidence=ev)
    snap = b.build()
    with pytest.raises(RefusedError):
        CODEC.plan(snap)
    plan = CODEC.plan(snap, allow_lossy=True)
    assert any(d.code == "untranslated-pending-call" for d in plan.diagnostics)
