"""Claude Code discovery: project folders, newest first, the picker's titles, either home form."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import trajconv
from tests.claude.support import CLAUDE, TRANSCRIPTS
from tests.helpers import fingerprint


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user home holding every claude fixture's project folders."""
    root = tmp_path / "user"
    for case in sorted(CLAUDE.iterdir()):
        if (case / ".claude").is_dir():
            shutil.copytree(case / ".claude", root / ".claude", dirs_exist_ok=True)
    return root


def test_lists_every_session_newest_first_with_the_picker_title(home: Path) -> None:
    before = fingerprint(home)
    refs = trajconv.discover("claude", home)
    assert fingerprint(home) == before  # listing reads only
    by_id = {r.session_id: r for r in refs}
    assert len(refs) == len(by_id) == len(TRANSCRIPTS)
    updated = [r.updated_at or "" for r in refs]
    assert updated == sorted(updated, reverse=True)
    multi = next(r for r in refs if r.title == "Which one comes last?")  # last-prompt
    assert multi.cwd == "/work/demo" and multi.path.suffix == ".jsonl"
    assert by_id["0c1d2e3f-4a5b-4c6d-8e7f-000000000e0e"].title == "Edge cases"  # custom title
    children = [r.title for r in refs if r.session_id.startswith("agent-")]
    assert any(t and t.startswith("SUBTASK-7") for t in children)  # its first prompt
    # every listed session reads
    for ref in refs:
        assert trajconv.read("claude", ref.path).session.id == ref.session_id


def test_home_may_be_the_claude_folder_itself_or_named_by_claude_config_dir(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [r.session_id for r in trajconv.discover("claude", home)]
    assert [r.session_id for r in trajconv.discover("claude-code", home / ".claude")] == ids
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    assert [r.session_id for r in trajconv.discover("claude")] == ids


def test_an_empty_or_foreign_home_lists_nothing(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "projects" / "-x").mkdir(parents=True)
    (tmp_path / ".claude" / "projects" / "-x" / "notes.jsonl").write_text("{}\n")
    assert trajconv.discover("claude", tmp_path) == []
