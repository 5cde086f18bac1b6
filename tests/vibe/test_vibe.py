"""Mistral Vibe codec: reader on the recorded stores, discover, claims, writer, round trip,
bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from tests.helpers import (
    FIXTURES,
    conservation,
    export_tree,
    fingerprint,
    projection,
    tiny_session,
)
from trajconv import api
from trajconv.codecs import registry
from trajconv.codecs.base import CERTAIN
from trajconv.codecs.vibe import layout
from trajconv.errors import FormatError, RefusedError
from trajconv.snapshot import io

VIBE = FIXTURES / "vibe"
STORES = sorted(VIBE.glob("recorded-*/store/*"))
IDS = [p.parts[len(VIBE.parts)] for p in STORES]
TOOLS = next(VIBE.glob("recorded-tools/store/*"))
HELD = ("user", "assistant", "reasoning", "tool-call", "tool-result")


def _transcript(store: Path) -> list[object]:
    """The current generation's checkpoint transcript, read straight from the files."""
    current = json.loads((store / "CURRENT").read_text())
    manifest = json.loads(
        (store / "generations" / current["generation"] / "manifest.json").read_text()
    )
    items: list[object] = []
    for digest in manifest["checkpoint"]["chunks"]:
        items.extend(json.loads((store / "chunks" / f"{digest}.json").read_text()))
    return items


def _units(store: Path) -> int:
    current = json.loads((store / "CURRENT").read_text())
    manifest = json.loads(
        (store / "generations" / current["generation"] / "manifest.json").read_text()
    )
    journal = store / manifest["recovery_journal_segment"]["path"]
    return len(_transcript(store)) + len(journal.read_bytes().splitlines())


# -- reader ------------------------------------------------------------------------------


@pytest.mark.parametrize("store", STORES, ids=IDS)
def test_reader_snapshot(store: Path, snapshot) -> None:
    snap = trajconv.read("vibe", store)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("store", STORES, ids=IDS)
def test_every_transcript_item_is_accounted_for(store: Path) -> None:
    conservation(trajconv.read("vibe", store), _units(store))


@pytest.mark.parametrize("store", STORES, ids=IDS)
def test_reading_never_changes_the_store(store: Path) -> None:
    before = fingerprint(store)
    first = io.dumps(trajconv.read("vibe", store))
    assert io.dumps(trajconv.read("vibe", store)) == first
    assert fingerprint(store) == before


def test_recorded_tools_failures_exit_codes_and_resumed_turn() -> None:
    snap = trajconv.read("vibe", TOOLS)
    assert [r.kind for r in snap.records] == [
        "user",
        *["tool-call", "tool-result"] * 5,
        "assistant", "user", "assistant",
    ]  # fmt: skip
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.ok, r.exit_code) for r in results] == [
        ("call_ls", True, 0),
        ("call_read", True, None),
        ("call_missing", False, None),  # tool_failed: file not found
        ("call_ls_missing", True, 2),  # the command ran and exited 2
        ("call_exit", False, None),  # tool_denied: never ran
    ]
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    assert snap.session.cwd == "/tmp/trajconv-vibe-rec-wtbaokk5/proj"
    assert snap.session.model == "test-model"
    assert not snap.diagnostics


def test_discover_and_claims() -> None:
    codec = registry.get("vibe")
    refs = codec.discover(VIBE / "recorded-tools")
    assert [r.session_id for r in refs] == [TOOLS.name]
    assert refs[0].cwd == "/tmp/trajconv-vibe-rec-wtbaokk5/proj"
    claim = codec.claims(TOOLS)
    assert claim is not None and claim.confidence == CERTAIN and claim.what == "session"
    store = codec.claims(TOOLS.parent)
    assert store is not None and store.what == "store" and store.sessions == (TOOLS.name,)
    assert codec.claims(FIXTURES / "pi") is None
    inner = codec.claims(TOOLS / "CURRENT")
    assert inner is not None and inner.what == "session" and inner.sessions == (TOOLS.name,)
    assert codec.claims(VIBE / "recorded-tools" / "requests-1.jsonl") is None
    journal = sorted((TOOLS / "journal").glob("*.jsonl"))[0]
    assert trajconv.read("vibe", journal).session.id == TOOLS.name


def test_harness_told_without_from(tmp_path: Path) -> None:
    from trajconv.find import detect

    assert detect(TOOLS) == "vibe"
    assert detect(TOOLS.parent) == "vibe"
    home = tmp_path / ".vibe" / layout.UNIFIED
    home.mkdir(parents=True)
    shutil.copytree(TOOLS, home / TOOLS.name)
    assert registry.get("vibe").claims(tmp_path / ".vibe").what == "home"  # type: ignore[union-attr]
    snap = trajconv.read("vibe", tmp_path / ".vibe")
    assert snap.session.id == TOOLS.name


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / TOOLS.name
    shutil.copytree(TOOLS, dest)
    return dest


def test_a_changed_chunk_is_a_format_error_naming_it(tmp_path: Path) -> None:
    store = _copy(tmp_path)
    current = json.loads((store / "CURRENT").read_text())
    manifest = json.loads(
        (store / "generations" / current["generation"] / "manifest.json").read_text()
    )
    (digest,) = manifest["checkpoint"]["chunks"]
    chunk = store / "chunks" / f"{digest}.json"
    chunk.write_bytes(chunk.read_bytes().replace(b"notes", b"NOTES"))
    with pytest.raises(FormatError) as err:
        trajconv.read("vibe", store)
    assert chunk.name in str(err.value)


def test_bad_manifest_and_current_are_format_errors(tmp_path: Path) -> None:
    store = _copy(tmp_path)
    current = json.loads((store / "CURRENT").read_text())
    manifest = store / "generations" / current["generation"] / "manifest.json"
    manifest.write_bytes(manifest.read_bytes() + b" ")
    with pytest.raises(FormatError, match="manifest"):
        trajconv.read("vibe", store)
    (store / "CURRENT").write_text("{not json\n")
    with pytest.raises(FormatError):
        trajconv.read("vibe", store)


def test_unknown_message_and_part_kinds_are_named(tmp_path: Path) -> None:
    store = _copy(tmp_path)
    items = [
        {"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
         "source": "history", "turn_index": 0},
        {"message": {"role": "assistant", "content": [
            {"type": "reasoning", "content": [{"type": "text", "text": "think"},
                                              {"type": "redacted", "data": "x"}]},
            {"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "text", "text": "done"}]}, "source": "history", "turn_index": 0},
        {"message": {"role": "oracle", "content": []}, "source": "history", "turn_index": 0},
    ]  # fmt: skip
    body = json.dumps(items, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(body).hexdigest()
    (store / "chunks" / f"{digest}.json").write_bytes(body + b"\n")
    current = json.loads((store / "CURRENT").read_text())
    path = store / "generations" / current["generation"] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["checkpoint"]["chunks"] = [digest]
    mbody = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(mbody + b"\n")
    current["manifest_sha256"] = hashlib.sha256(mbody).hexdigest()
    (store / "CURRENT").write_text(
        json.dumps(current, sort_keys=True, separators=(",", ":")) + "\n"
    )
    snap = trajconv.read("vibe", store)
    assert [r.kind for r in snap.records] == ["user", "reasoning", "assistant"]
    codes = {d.code: d.count for d in snap.diagnostics}
    assert codes == {"block-dropped": 2, "unknown-kind": 1}
    conservation(snap, 3)


# -- writer ------------------------------------------------------------------------------


def test_writer_export_tree(tmp_path: Path, snapshot) -> None:
    snap = trajconv.read("vibe", TOOLS)
    export = trajconv.write(snap, "vibe", tmp_path / "out")
    assert export_tree(export.out_dir) == snapshot
    assert export.resume_argv == ["vibe", "--resume", snap.session.id]


def test_the_written_transcript_is_the_recorded_one_byte_for_byte(tmp_path: Path) -> None:
    snap = trajconv.read("vibe", TOOLS)
    export = trajconv.write(snap, "vibe", tmp_path / "out")
    written = export.out_dir / "home" / ".vibe/logs/session/unified" / export.session_id
    assert _transcript(written) == _transcript(TOOLS)
    current = json.loads((TOOLS / "CURRENT").read_text())
    manifest = json.loads(
        (TOOLS / "generations" / current["generation"] / "manifest.json").read_text()
    )
    (chunk,) = manifest["checkpoint"]["chunks"]
    assert (written / "chunks" / f"{chunk}.json").read_bytes() == (
        TOOLS / "chunks" / f"{chunk}.json"
    ).read_bytes()


@pytest.mark.parametrize("store", STORES, ids=IDS)
def test_round_trip_keeps_the_conversation(store: Path, tmp_path: Path) -> None:
    snap = trajconv.read("vibe", store)
    export = trajconv.write(snap, "vibe", tmp_path / "out")
    written = export.out_dir / "home" / ".vibe/logs/session/unified" / export.session_id
    again = trajconv.read("vibe", written)
    assert projection(again, HELD) == projection(snap, HELD)
    assert again.session.id == snap.session.id
    assert io.verify(again).ok
    # written twice, the same bytes: nothing random
    second = trajconv.write(snap, "vibe", tmp_path / "out2")
    assert export_tree(second.out_dir) == export_tree(export.out_dir)


def test_other_harnesses_round_trip_with_what_is_lost_named(tmp_path: Path) -> None:
    src = next(FIXTURES.glob("claude/recorded-tool-failures/.claude/projects/*/*.jsonl"))
    snap = trajconv.read("claude", src)
    export = trajconv.write(snap, "vibe", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    failed = sum(1 for r in snap.records if r.kind == "tool-result" and r.result.ok is False)
    assert failed and codes.get("untranslated-tool-status") == failed
    written = export.out_dir / "home" / ".vibe/logs/session/unified" / export.session_id
    again = trajconv.read("vibe", written)
    kinds = ("user", "assistant", "tool-call")
    assert projection(again, kinds) == projection(snap, kinds)


def test_prepare_refuses_to_replace_a_session(tmp_path: Path) -> None:
    snap = trajconv.read("vibe", TOOLS)
    export = trajconv.write(snap, "vibe", tmp_path / "out")
    home = tmp_path / "home"
    existing = home / ".vibe" / layout.UNIFIED / TOOLS.name
    shutil.copytree(TOOLS, existing)
    before = fingerprint(existing)
    done = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert fingerprint(existing) == before


def test_a_session_without_cwd_is_refused() -> None:
    snap = trajconv.read("vibe", TOOLS)
    bare = snap.model_copy(update={"session": snap.session.model_copy(update={"cwd": None})})
    with pytest.raises(RefusedError):
        trajconv.write(bare, "vibe", Path("/nonexistent/out"))


def test_what_a_resumed_vibe_does_not_send_is_named(tmp_path: Path) -> None:
    """Another harness's system text is kept but not sent (vibe sends its own prompt), and
    two answers with nothing kept between them are one message's two texts, sent as one."""
    snap = tiny_session(
        ("system", "context"), ("user", "hi"), ("assistant", "One."), ("observation", "o"),
        ("assistant", "Two."),
    )  # fmt: skip
    export = trajconv.write(snap, "vibe", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes.get("system-not-sent") == 1
    assert codes.get("untranslated-message-boundary") == 1
    again = api.reread(export.out_dir, "vibe", export.session_id)
    assert [r.text for r in again.records if r.kind == "assistant"] == ["One.", "Two."]
