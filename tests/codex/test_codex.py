"""Codex codec: reader on recorded and hand-made rollouts, writer, prepare, discover."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from tests.helpers import FIXTURES, conservation, export_tree, fingerprint, projection
from trajconv.codecs.codex import layout
from trajconv.codecs.jsonl import count_units
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io

CODEX = FIXTURES / "codex"
ROLLOUTS = sorted(CODEX.glob("*/.codex/**/rollout-*.jsonl"))
IDS = [f"{p.parts[len(CODEX.parts)]}/{p.name[-42:-34]}" for p in ROLLOUTS]
RECORDED = {
    p.parts[len(CODEX.parts)]: p
    for p in ROLLOUTS
    if p.parts[len(CODEX.parts)] in ("shell-patch", "resumed")
}
SUBAGENT = [p for p in ROLLOUTS if p.parts[len(CODEX.parts)] == "subagent"]
LEGACY = CODEX / "legacy" / ".codex"
LEGACY_MAIN = next(LEGACY.glob("sessions/2026/10/02/*.jsonl"))
EVENTS_ONLY = next(LEGACY.glob("sessions/2026/10/03/*.jsonl"))


def test_fixtures_cover_recorded_and_handmade_cases() -> None:
    assert set(RECORDED) == {"shell-patch", "resumed"}
    assert len(SUBAGENT) == 2  # parent and sub-agent, recorded
    assert len(ROLLOUTS) == 7  # 4 recorded, 3 hand-made (one archived)


def test_recorded_subagent_is_linked_to_its_parent() -> None:
    parent, child = (trajconv.read("codex", p) for p in SUBAGENT)
    if parent.session.parent_session_id:
        parent, child = child, parent
    assert child.session.parent_session_id == parent.session.id
    spawn = next(r for r in parent.records if r.kind == "tool-call")
    assert spawn.call.name == "spawn_agent"
    assert spawn.evidence.native == "response_item:function_call:multi_agent_v1"
    assert [r.text for r in child.records if r.kind == "user"] == [spawn.call.arguments["message"]]
    # with `codex exec` the sub-agent's turn is aborted when the parent's turn ends
    assert child.records[-1].text.startswith("<turn_aborted>")  # type: ignore[union-attr]


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=IDS)
def test_reader_snapshot(rollout: Path, snapshot) -> None:
    snap = trajconv.read("codex", rollout)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=IDS)
def test_every_line_is_accounted_for(rollout: Path) -> None:
    snap = trajconv.read("codex", rollout)
    # the rollouts it spawned are read with it, as its children: their lines are its units
    spawned = [next(rollout.parent.glob(f"rollout-*-{c.session.id}.jsonl")) for c in snap.children]
    conservation(snap, sum(count_units(p.read_bytes()) for p in [rollout, *spawned]))


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=IDS)
def test_reading_never_changes_the_home(rollout: Path) -> None:
    home = rollout.parents[4] if "sessions" in rollout.parts else rollout.parents[1]
    before = fingerprint(home)
    trajconv.read("codex", rollout)
    assert fingerprint(home) == before


@pytest.mark.parametrize("rollout", ROLLOUTS, ids=IDS)
def test_one_family_is_the_conversation_and_each_prompt_counts_once(rollout: Path) -> None:
    snap = trajconv.read("codex", rollout)
    families = {r.evidence.native.split(":")[0] for r in snap.records}
    prompts = []  # the UI's copy of each prompt: legacy user_message, paginated UserMessage
    for line in rollout.read_text().splitlines():
        payload = json.loads(line)["payload"] if line.endswith("}") else {}
        if payload.get("type") == "user_message":
            prompts.append(payload["message"])
        elif (payload.get("item") or {}).get("type") == "UserMessage":
            prompts.append(payload["item"]["content"][0]["text"])
    assert [r.text for r in snap.records if r.kind == "user"] == prompts  # type: ignore[union-attr]
    expected = "event_msg" if rollout == EVENTS_ONLY else "response_item"
    assert families == {expected}


def test_recorded_shell_and_patch_results_keep_exit_codes() -> None:
    snap = trajconv.read("codex", RECORDED["shell-patch"])
    calls = [(r.call.name, r.call.arguments) for r in snap.records if r.kind == "tool-call"]
    assert calls[0] == ("exec_command", {"cmd": "ls docs"})
    assert calls[2][0] == "apply_patch" and calls[2][1]["input"].startswith("*** Begin Patch")
    results = [(r.result.ok, r.result.exit_code) for r in snap.records if r.kind == "tool-result"]
    # ls exits 2, wc 0, the patch applies (item_completed FileChange), the bad patch has no
    # status at all in the rollout (only its text says it failed)
    assert results == [(False, 2), (True, 0), (True, 0), (None, None)]
    assert [r.kind for r in snap.records].count("reasoning") == 2
    assert snap.session.title == "Look at notes.txt, then add a summary file."  # state_5 row


def test_resumed_session_reads_both_turns() -> None:
    snap = trajconv.read("codex", RECORDED["resumed"])
    users = [r for r in snap.records if r.kind == "user"]
    assert [u.turn for u in users] == [0, 1]
    codes = [r.result.exit_code for r in snap.records if r.kind == "tool-result"]
    assert codes == [0, 0, 1]


def test_legacy_rollout_rules() -> None:
    snap = trajconv.read("codex", LEGACY_MAIN)
    kinds = [r.kind for r in snap.records]
    assert kinds.count("user") == 2 and kinds.count("system") == 2
    text = io.dumps(snap)
    record_json = json.dumps([r.model_dump(mode="json") for r in snap.records])
    assert "gAAAAB-opaque-blob" not in record_json  # encrypted reasoning never in a record
    assert b"gAAAAB-opaque-blob-1" in text  # but kept in the rollout artifact
    reasoning = next(r for r in snap.records if r.kind == "reasoning")
    assert reasoning.evidence.native == "response_item:reasoning+encrypted_content"
    results = {r.result.call_id: r.result for r in snap.records if r.kind == "tool-result"}
    assert (results["call_wc"].ok, results["call_wc"].exit_code) == (True, 0)
    assert (results["call_ls"].ok, results["call_ls"].exit_code) == (False, 2)
    pending = next(d for d in snap.diagnostics if d.code == "pending-tool-call")
    assert pending.count == 1 and any("shell" in s for s in pending.samples)
    bad_args = next(r for r in snap.records if r.kind == "tool-call" and r.call.id == "call_head")
    assert bad_args.call.arguments == '{"command":["head","-1",'  # invalid JSON kept as text
    for code in ("orphan-tool-result", "redacted-content", "torn-line", "unknown-kind"):
        assert snap.diagnostic_count(code) == 1, code


def test_index_with_wal_is_read_from_a_copy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX / "shell-patch", home)
    db = home / ".codex" / layout.STATE_DB
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("UPDATE threads SET title = 'Title from the WAL'")
    con.commit()  # the connection stays open: -wal and -shm exist
    try:
        assert (home / ".codex" / f"{layout.STATE_DB}-wal").exists()
        before = fingerprint(home)
        rollout = next(home.glob(".codex/sessions/*/*/*/*.jsonl"))
        snap = trajconv.read("codex", rollout)
        assert snap.session.title == "Title from the WAL"
        assert fingerprint(home) == before
    finally:
        con.close()


def test_a_damaged_index_is_not_required(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX / "shell-patch", home)
    (home / ".codex" / layout.STATE_DB).write_bytes(b"not sqlite at all" * 100)
    snap = trajconv.read("codex", next(home.glob(".codex/sessions/*/*/*/*.jsonl")))
    assert snap.session.title is None
    assert snap.diagnostic_count("metadata-invalid") == 1
    assert any(r.kind == "user" for r in snap.records)


def test_home_needs_a_session_and_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="3 sessions; pick one with --session"):
        trajconv.read("codex", CODEX / "legacy")
    with pytest.raises(UsageError, match="no codex session"):  # exit 2, as the README says
        trajconv.read("codex", CODEX / "resumed", session="00000000-0000-4000-8000-000000000000")
    with pytest.raises(FormatError, match="not a Codex home"):
        trajconv.read("codex", tmp_path)
    sid = layout.parse_name(RECORDED["resumed"].name)[1]  # type: ignore[index]
    # a user home or the .codex folder itself
    assert (
        trajconv.read("codex", CODEX / "resumed" / ".codex", session=sid).source.session_id == sid
    )


# --------------------------------------------------------------------------- discover


def test_discover_lists_every_rollout_newest_first() -> None:
    for home in (CODEX / "legacy", LEGACY):
        refs = trajconv.discover("codex", home)
        assert [r.session_id for r in refs] == [
            "0b9e8d7c-6f5a-4b3c-9d2e-1f0a9b8c7d6e",
            "3f2a8c1e-5b7d-4e90-a1c2-6d4e8f0b9a13",
            "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f",
        ]
        assert [r.title for r in refs] == [
            "Only events here",
            "How many lines does notes.txt have?",
            "An archived question",
        ]
        assert {r.cwd for r in refs} == {"/home/u/proj"}
    recorded = trajconv.discover("codex", CODEX / "resumed")
    assert [(r.title, r.cwd) for r in recorded] == [("What does app.py print?", "/work/demo")]


# --------------------------------------------------------------------------- writer


def _write(source: Path, out: Path, **kw: object) -> trajconv.Export:  # type: ignore[name-defined]
    snap = trajconv.read("codex", source)
    return trajconv.write(snap, "codex", out, **kw)


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_writer_export_tree(case: str, tmp_path: Path, snapshot) -> None:
    export = _write(RECORDED[case], tmp_path / "out")
    tree = export_tree(export.out_dir)
    assert "encrypted_content" not in json.dumps(tree)
    assert tree == snapshot


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_round_trip_keeps_the_conversation(case: str, tmp_path: Path) -> None:
    snap = trajconv.read("codex", RECORDED[case])
    export = trajconv.write(snap, "codex", tmp_path / "out")
    back = trajconv.read("codex", export.out_dir / "home")  # a user home
    kinds = ("user", "assistant", "system", "tool-call", "tool-result")
    assert projection(back, kinds) == projection(snap, kinds)
    assert back.source.session_id == snap.source.session_id
    written = {d.code: d.count for d in export.diagnostics}
    assert written["untranslated-reasoning"] == sum(r.kind == "reasoning" for r in snap.records)
    assert written["codex-model-provider"] == 1
    meta = json.loads(
        next(export.out_dir.glob("home/.codex/sessions/*/*/*/*.jsonl")).open().readline()
    )
    # a round trip keeps the source's provider (issue 33: it became openai, and the user's
    # own home, configured with the source's provider, refused to resume it)
    source_meta = json.loads(RECORDED[case].open().readline())
    assert meta["payload"]["model_provider"] == source_meta["payload"]["model_provider"]
    assert meta["payload"]["source"] == "cli"


def test_model_provider_is_an_option(tmp_path: Path) -> None:
    export = _write(RECORDED["resumed"], tmp_path / "out", model_provider="my-proxy")
    rollout = next(export.out_dir.glob("home/.codex/sessions/*/*/*/*.jsonl"))
    assert json.loads(rollout.open().readline())["payload"]["model_provider"] == "my-proxy"


def test_exit_status_from_another_harness_reaches_the_output_text(tmp_path: Path) -> None:
    grok = next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl"))
    snap = trajconv.read("grok", grok)
    export = trajconv.write(snap, "codex", tmp_path / "out", allow_lossy=True)
    back = trajconv.read("codex", export.out_dir / "home")
    src = {r.result.call_id: r.result for r in snap.records if r.kind == "tool-result"}
    got = {r.result.call_id: r.result for r in back.records if r.kind == "tool-result"}
    assert set(got) <= set(src)
    for call_id, res in got.items():
        assert src[call_id].output in res.output
        if src[call_id].exit_code is not None:
            assert res.exit_code == src[call_id].exit_code
        if src[call_id].ok is False:
            assert res.ok is False


def test_writer_refuses_a_pending_call_unless_lossy(tmp_path: Path) -> None:
    with pytest.raises(RefusedError):
        _write(LEGACY_MAIN, tmp_path / "out")
    export = _write(LEGACY_MAIN, tmp_path / "lossy", allow_lossy=True)
    codes = {d.code for d in export.diagnostics}
    assert {"untranslated-pending-call", "untranslated-observation"} <= codes


def _prepare(out: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_prepare_installs_and_refuses_to_replace(tmp_path: Path) -> None:
    export = _write(RECORDED["resumed"], tmp_path / "out")
    home = tmp_path / "home"
    home.mkdir()
    first = _prepare(export.out_dir, home)
    assert first.returncode == 0, first.stderr
    assert f"codex resume {export.session_id}" in first.stdout
    again = _prepare(export.out_dir, home)
    assert again.returncode == 3 and "refusing" in again.stderr


def test_prepare_refuses_the_same_id_elsewhere_and_a_stale_index_row(tmp_path: Path) -> None:
    export = _write(RECORDED["resumed"], tmp_path / "out")
    # the same session under another date folder (another start time)
    home = tmp_path / "h1"
    other = home / ".codex" / "sessions" / "2020" / "01" / "01"
    other.mkdir(parents=True)
    (other / f"rollout-2020-01-01T00-00-00-{export.session_id}.jsonl").write_text("{}\n")
    r1 = _prepare(export.out_dir, home)
    assert r1.returncode == 3 and "already has session" in r1.stderr
    # a thread-index row for the id (pointing anywhere): a stale rollout_path breaks resume
    home2 = tmp_path / "h2"
    shutil.copytree(CODEX / "resumed", home2)
    for old in home2.glob(".codex/sessions/*/*/*/*.jsonl"):
        old.unlink()
    r2 = _prepare(export.out_dir, home2)
    assert r2.returncode == 3 and "stale row" in r2.stderr
    assert not list(home2.glob(".codex/sessions/*/*/*/*.jsonl"))  # nothing half-installed


@pytest.mark.parametrize("target", ["grok", "copilot"])
def test_shell_and_patch_session_converts_with_every_call_and_result(
    target: str, tmp_path: Path
) -> None:
    snap = trajconv.read("codex", RECORDED["shell-patch"])
    export = trajconv.write(snap, target, tmp_path / "out")
    manifest = json.loads((export.out_dir / "trajconv-export.json").read_text())
    back = trajconv.read(target, export.out_dir / "home" / manifest["session_paths"][0])
    calls = [
        (r.call.id, r.call.name, r.call.arguments) for r in snap.records if r.kind == "tool-call"
    ]
    assert [
        (r.call.id, r.call.name, r.call.arguments) for r in back.records if r.kind == "tool-call"
    ] == calls
    src = [
        (r.result.call_id, r.result.output, r.result.exit_code)
        for r in snap.records
        if r.kind == "tool-result"
    ]
    got = [
        (r.result.call_id, r.result.output, r.result.exit_code)
        for r in back.records
        if r.kind == "tool-result"
    ]
    assert got == src
    oks = [r.result.ok for r in back.records if r.kind == "tool-result"]
    assert oks[:3] == [False, True, True]  # the unknown status of the failed patch is assumed
    assert {d.code: d.count for d in export.diagnostics}["tool-status-assumed"] == 1


def test_an_index_of_another_schema_still_gives_the_title(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX / "resumed", home)
    db = home / ".codex" / layout.STATE_DB
    db.unlink()
    sid = layout.parse_name(RECORDED["resumed"].name)[1]  # type: ignore[index]
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, title TEXT)")  # no other column
    con.execute("INSERT INTO threads VALUES (?, 'Older schema title')", (sid,))
    con.commit()
    con.close()
    snap = trajconv.read("codex", home)
    assert snap.session.title == "Older schema title"
    assert snap.diagnostic_count("metadata-invalid") == 0


def test_a_spawned_agent_call_takes_its_outcome_from_item_completed() -> None:
    """Issue 33: the ``CollabAgentToolCall`` item of a ``spawn_agent`` call says
    ``status: completed``; the result read as outcome unknown (``ok: null``)."""
    parent = next(
        p
        for p in (CODEX / "subagent").rglob("rollout-*.jsonl")
        if '"CollabAgentToolCall"' in p.read_text("utf-8")
    )
    snap = trajconv.read("codex", parent)
    calls = {r.call.id: r.call.name for r in snap.records if r.kind == "tool-call"}
    spawned = [
        r
        for r in snap.records
        if r.kind == "tool-result" and calls[r.result.call_id] == "spawn_agent"
    ]
    assert spawned and all(r.result.ok is True for r in spawned)
