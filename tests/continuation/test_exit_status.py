"""A command's exit status reaches the model in the result's text, or the writer names it."""

from __future__ import annotations

from pathlib import Path

import pytest

import trajconv
from proof import continuation as cont
from trajconv.codecs.base import exit_code_shown


def test_each_harness_form_is_recognised() -> None:
    assert exit_code_shown("exit: 2\nls: cannot access\n", 2)  # Grok
    assert exit_code_shown("ls: nope\n<shellId: 0 completed with exit code 2>", 2)  # Copilot
    assert exit_code_shown("nope\n\n[Command failed with exit code 2]", 2)  # Deep Agents
    codex = "Chunk ID: ab\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nno\n"
    assert exit_code_shown(codex, 2)  # Codex exec_command
    assert exit_code_shown("Exit code: 1\nOutput:\nbad\n", 1)  # Codex apply_patch
    assert not exit_code_shown("ok\nProcess exited with code 2\n", 2)  # not at the head
    assert exit_code_shown("Exit code 2\nls: cannot access 'x'", 2)  # Claude Code
    assert exit_code_shown("Wall time: 0 seconds\nProcess exited with code 1\nOutput:\n", 1)
    assert exit_code_shown("Output: ls: x\nExit Code: 2\nProcess Group PGID: 7\n", 2)  # Gemini
    assert not exit_code_shown("Exit code 2\n", 1)
    assert not exit_code_shown("exit: 0\nok\n", 2)
    assert not exit_code_shown("the exit code was 2", 2)


@pytest.mark.parametrize("target", ["grok", "copilot", "deepagents", "openhands"])
def test_a_hidden_exit_status_is_named(target: str, tmp_path: Path) -> None:
    # a source of another harness (a same-harness source's text is its model's view already):
    # Grok's shell result reads "exit: 0\n…", Copilot's ends "<shellId: … exit code N>"
    snap = cont.read_fixture("copilot" if target == "grok" else "grok")
    shown = trajconv.write(snap, target, tmp_path / "shown", allow_lossy=True)
    assert "untranslated-exit-code" not in {d.code for d in shown.diagnostics}
    records = []
    for rec in snap.records:
        if rec.kind == "tool-result" and rec.result.exit_code is not None:
            hidden = rec.result.model_copy(update={"output": "some output\n"})
            rec = rec.model_copy(update={"result": hidden})
        records.append(rec)
    bare = snap.model_copy(update={"records": tuple(records)})
    export = trajconv.write(bare, target, tmp_path / "hidden", allow_lossy=True)
    with_code = sum(r.kind == "tool-result" and r.result.exit_code is not None for r in records)
    assert with_code > 0
    assert {d.code: d.count for d in export.diagnostics}["untranslated-exit-code"] == with_code


@pytest.mark.parametrize("target", ["grok", "copilot", "deepagents", "openhands"])
def test_a_failure_the_model_is_not_told_is_named(target: str, tmp_path: Path) -> None:
    """Claude Code's model saw ``is_error: true``; a Chat Completions target sends the text
    alone, so each failed result is named; its own sessions' results are not."""
    snap = cont.read_fixture("claude")
    failed = [r.id for r in snap.records if r.kind == "tool-result" and r.result.ok is False]
    assert failed
    export = trajconv.write(snap, target, tmp_path / "out", allow_lossy=True)
    status = next(d for d in export.diagnostics if d.code == "untranslated-tool-status")
    assert status.count == len(failed) and set(status.samples) <= set(failed)
    # Claude's "Exit code 2" head shows the status: no untranslated-exit-code for it
    assert "untranslated-exit-code" not in {d.code for d in export.diagnostics}
    own = cont.read_fixture(target)  # Copilot's and Deep Agents' hold failed results
    again = trajconv.write(own, target, tmp_path / "own", allow_lossy=True)
    assert "untranslated-tool-status" not in {d.code for d in again.diagnostics}
