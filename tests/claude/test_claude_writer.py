"""Claude Code writer: exports, round trips, conversions from other harnesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from proof.loaders.claude import snapshot_items
from tests.claude.support import (
    IDS,
    OTHER_IDS,
    TRANSCRIPTS,
    expected_items,
    other_sources,
    read_other,
)
from tests.helpers import export_tree
from trajconv.codecs.claude import layout
from trajconv.codecs.claude.native import HARNESS_TEXT
from trajconv.errors import RefusedError
from trajconv.snapshot import io
from trajconv.snapshot.models import Snapshot


def _written(export: trajconv.Export) -> Path:
    return next((export.out_dir / "home").glob(".claude/projects/*/*.jsonl"))


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_claude_round_trip_keeps_every_record(path: Path, tmp_path: Path) -> None:
    snap, export = trajconv.convert("claude", "claude", path, tmp_path / "out", allow_lossy=True)
    again = trajconv.read("claude", _written(export))
    assert snapshot_items(again) == expected_items(snap)
    assert again.session.cwd == snap.session.cwd
    assert [r.result.exit_code for r in again.records if r.kind == "tool-result"] == [
        r.result.exit_code
        for r in snap.records
        if r.kind == "tool-result" and r.result.call_id not in ("toolu_nowhere",)
    ]
    system = [r.text for r in snap.records if r.kind == "system"]
    assert [r.text for r in again.records if r.kind == "system"] == system
    # the CLI's own system lines never went to the model; the harness text it sent goes
    # back as isMeta user lines (sent again); any other system text is named
    own = [r for r in snap.records if r.kind == "system"]
    meta = [
        r.text for r in own if r.evidence.native == "user(harness)" and HARNESS_TEXT.match(r.text)
    ]
    lines = [json.loads(x) for x in _written(export).read_text().splitlines()]
    assert [x["message"]["content"] for x in lines if x.get("isMeta")] == meta
    named = {d.code: d.count for d in export.diagnostics}.get("untranslated-system", 0)
    assert named == sum(not (r.evidence.native or "").startswith("system:") for r in own) - len(
        meta
    )


@pytest.mark.parametrize(("harness", "path", "session"), other_sources(), ids=OTHER_IDS)
def test_other_harnesses_convert_with_named_losses(
    harness: str, path: Path, session: str | None, tmp_path: Path
) -> None:
    snap = read_other(harness, path, session)
    export = trajconv.write(snap, "claude", tmp_path / "out", allow_lossy=True)
    again = trajconv.read("claude", _written(export))
    assert snapshot_items(again) == expected_items(snap)
    diags = {d.code: d.count for d in export.diagnostics}
    assert diags.get("untranslated-reasoning", 0) == sum(
        r.kind == "reasoning" for r in snap.records
    )
    assert diags.get("untranslated-observation", 0) == sum(
        r.kind == "observation" for r in snap.records
    )
    # system text is kept as a system line, which the CLI does not send to the model
    assert diags.get("untranslated-system", 0) == sum(r.kind == "system" for r in snap.records)
    # without a title of its own the session shows its last prompt, as the picker does
    prompts = [r.text for r in snap.records if r.kind == "user"]
    assert again.session.title == (snap.session.title or prompts[-1])


def test_export_tree_snapshot(tmp_path: Path, snapshot) -> None:
    src = next(p for p in TRANSCRIPTS if "recorded-tool-failures" in p.parts)
    _snap, export = trajconv.convert("claude", "claude", src, tmp_path / "out")
    assert export.resume_argv == ["claude", "--resume", export.session_id]
    assert export_tree(export.out_dir) == snapshot


def test_lines_are_one_compact_chain_with_derived_ids(tmp_path: Path) -> None:
    src = next(p for p in TRANSCRIPTS if "recorded-multi-turn" in p.parts)
    _snap, one = trajconv.convert("claude", "claude", src, tmp_path / "a")
    _snap, two = trajconv.convert("claude", "claude", src, tmp_path / "b")
    data = _written(one).read_bytes()
    assert data == _written(two).read_bytes()  # deterministic
    lines = [json.loads(x) for x in data.splitlines()]
    assert all(b", " not in x.split(b'"text"')[0] for x in data.splitlines())
    chain = [x for x in lines if "uuid" in x]
    assert chain[0]["parentUuid"] is None
    assert [x["parentUuid"] for x in chain[1:]] == [x["uuid"] for x in chain[:-1]]
    assert all("entrypoint" not in x for x in chain)  # shown in the interactive picker
    assert {x["sessionId"] for x in chain} == {one.session_id}
    last = lines[-1]  # the title is the last prompt: no ai-title line pins it
    assert last["type"] == "last-prompt" and last["leafUuid"] == chain[-1]["uuid"]
    assert last["lastPrompt"] == "Which one comes last?"
    assert _written(one).parent.name == layout.project_key("/work/demo")
    assert any(d.code == "ids-derived" for d in one.diagnostics)


def test_foreign_reasoning_is_left_out_never_given_a_signature(tmp_path: Path) -> None:
    src = next(p for p in TRANSCRIPTS if "recorded-thinking" in p.parts)
    snap = trajconv.read("claude", src)
    foreign = snap.model_copy(update={"source": snap.source.model_copy(update={"harness": "grok"})})
    export = trajconv.write(foreign, "claude", tmp_path / "out")
    text = _written(export).read_text()
    assert '"thinking"' not in text and "sig-" not in text
    assert {d.code: d.count for d in export.diagnostics}["untranslated-reasoning"] == 1
    # from Claude Code itself the block goes back with the signature the API gave
    own = trajconv.write(snap, "claude", tmp_path / "own")
    assert '"signature":"sig-0001"' in _written(own).read_text()


def test_an_exit_status_the_text_lacks_heads_it_and_is_named(tmp_path: Path) -> None:
    src = next(p for p in TRANSCRIPTS if "recorded-continuation" in p.parts)
    snap = trajconv.read("claude", src)
    own = trajconv.write(snap, "claude", tmp_path / "own")
    # Claude Code's own result already opens with the heading: nothing added, nothing named
    assert "exit-status-in-text" not in {d.code for d in own.diagnostics}
    records = []
    for r in snap.records:
        if r.kind == "tool-result" and r.result.exit_code == 2:
            bare = r.result.output.removeprefix("Exit code 2\n")
            r = r.model_copy(update={"result": r.result.model_copy(update={"output": bare})})
        records.append(r)
    other = snap.model_copy(update={"records": tuple(records)})
    export = trajconv.write(other, "claude", tmp_path / "other")
    assert {d.code: d.count for d in export.diagnostics}["exit-status-in-text"] == 1
    lines = [json.loads(x) for x in _written(export).read_text().splitlines()]
    results = [
        b
        for x in lines
        if x.get("type") == "user"
        for b in x["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert results[-1]["content"].startswith("Exit code 2\nls: cannot access")
    assert results[-1]["is_error"] is True


def test_session_and_record_facts_are_kept_or_named(tmp_path: Path) -> None:
    from tests.core.test_fact_conservation import fact_losses

    src = next(p for p in TRANSCRIPTS if "recorded-continuation" in p.parts)
    snap = trajconv.read("claude", src)
    data = json.loads(io.dumps(snap))
    data["session"].update(
        title="What is in src/?", created_at=None, parent_session_id="p-1", model="other-model"
    )
    answers = [r for r in data["records"] if r["kind"] == "assistant"]
    answers[0]["model"] = None
    results = [r for r in data["records"] if r["kind"] == "tool-result"]
    results[0]["result"]["exit_code"] = 0  # the CLI never prints a heading for 0
    changed = Snapshot.model_validate(data)
    export = trajconv.write(changed, "claude", tmp_path / "out")
    again = trajconv.read("claude", _written(export))
    assert again.session.title == "What is in src/?"  # kept: an ai-title line
    need, seen = fact_losses(changed, again)
    got = {d.code: d.count for d in export.diagnostics}
    assert dict(need) == {
        "timestamps-synthesized": 1,
        "untranslated-model": 1,
        "untranslated-parent-session": 1,
        "model-assumed": 1,
        "untranslated-exit-code": 1,
    }, seen
    assert all(got.get(code, 0) >= n for code, n in need.items()), (got, seen)


def test_unfinished_turn_is_refused_unless_lossy(tmp_path: Path) -> None:
    src = next(p for p in TRANSCRIPTS if "edge-cases" in p.parts)
    with pytest.raises(RefusedError):
        trajconv.convert("claude", "claude", src, tmp_path / "out")
    _snap, export = trajconv.convert("claude", "claude", src, tmp_path / "lossy", allow_lossy=True)
    assert {d.code for d in export.diagnostics} >= {"untranslated-pending-call"}
    assert "toolu_e5" not in _written(export).read_text()


def test_prepare_installs_and_refuses_to_replace(tmp_path: Path) -> None:
    src = next(p for p in TRANSCRIPTS if "recorded-resume" in p.parts)
    _snap, export = trajconv.convert("claude", "claude", src, tmp_path / "out")
    home = tmp_path / "home"
    prepare = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)]
    first = subprocess.run(prepare, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert f"claude --resume {export.session_id}" in first.stdout
    installed = next(home.glob(".claude/projects/-work-demo/*.jsonl"))
    assert installed.read_bytes() == _written(export).read_bytes()
    again = subprocess.run(prepare, capture_output=True, text=True, check=False)
    assert again.returncode == 3 and installed.read_bytes() == _written(export).read_bytes()
