"""Claude Code reader: recorded and hand-made transcripts -> Snapshots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import trajconv
from tests.helpers import FIXTURES, conservation, fingerprint
from trajconv.codecs.claude import layout
from trajconv.codecs.jsonl import count_units
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot import io

CLAUDE = FIXTURES / "claude"
TRANSCRIPTS = sorted(CLAUDE.glob("*/.claude/projects/*/*.jsonl")) + sorted(
    CLAUDE.glob("*/.claude/projects/*/*/subagents/agent-*.jsonl")
)
IDS = [f"{p.parts[len(CLAUDE.parts)]}/{p.stem[:14]}" for p in TRANSCRIPTS]


def _read(case: str) -> trajconv.Snapshot:
    return trajconv.read("claude", next(CLAUDE.glob(f"{case}/.claude/projects/*/*.jsonl")))


def test_fixtures_cover_the_cases() -> None:
    cases = {p.parts[len(CLAUDE.parts)] for p in TRANSCRIPTS}
    assert {
        "edge-cases",
        "recorded-multi-turn",
        "recorded-tool-failures",
        "recorded-thinking",
        "recorded-resume",
        "recorded-subagent",
        "recorded-subagent-background",
    } <= cases


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_reader_snapshot(path: Path, snapshot) -> None:
    snap = trajconv.read("claude", path)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_every_line_is_accounted_for(path: Path) -> None:
    # a main transcript's sub-agents are read with it: their lines are its units too
    seen = count_units(path.read_bytes())
    if not layout.is_subagent(path):
        seen += sum(count_units(sub.read_bytes()) for sub in layout.subagent_files(path))
    conservation(trajconv.read("claude", path), seen)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_reading_never_changes_the_native_home(path: Path) -> None:
    home = path.parents[3] if "subagents" not in path.parts else path.parents[5]
    before = fingerprint(home)
    trajconv.read("claude", path)
    assert fingerprint(home) == before


def test_multi_turn_prompts_answers_calls_and_results() -> None:
    snap = _read("recorded-multi-turn")
    assert [r.kind for r in snap.records] == [
        "user",
        "assistant",
        "tool-call",
        "tool-result",
        "tool-call",
        "tool-result",
        "assistant",
        "user",
        "assistant",
    ]
    assert [r.text for r in snap.records if r.kind == "user"] == [
        "How many lines does notes.txt have?",
        "Which one comes last?",
    ]
    calls = [r.call for r in snap.records if r.kind == "tool-call"]
    assert [(c.id, c.name) for c in calls] == [
        ("toolu_01MT_wc", "Bash"),
        ("toolu_01MT_read", "Read"),
    ]
    assert [r.turn for r in snap.records] == [0] * 7 + [1, 1]
    assert snap.session.cwd == "/work/demo" and snap.session.model == "claude-opus-5-5"
    assert snap.source.harness_version == "2.1.332"
    # the picker's title: the last prompt
    assert snap.session.title == "Which one comes last?"


def test_failed_and_denied_tools_keep_their_error_flag_and_exit_status() -> None:
    snap = _read("recorded-tool-failures")
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [r.ok for r in results] == [False, False, False]
    assert [r.exit_code for r in results] == [None, 2, None]
    assert results[0].output.startswith("File does not exist.")
    assert results[1].output.startswith("Exit code 2\n")
    assert "has been denied" in results[2].output


def test_thinking_is_reasoning_and_its_signature_stays_out_of_the_text() -> None:
    snap = _read("recorded-thinking")
    reasoning = [r for r in snap.records if r.kind == "reasoning"]
    assert [r.text for r in reasoning] == ["91 = 7 * 13, so it is not prime."]
    assert reasoning[0].evidence.json_path == "$.message.content[0]"
    assert all("sig-" not in getattr(r, "text", "") for r in snap.records)


def test_resumed_and_continued_turns_are_one_session() -> None:
    snap = _read("recorded-resume")
    assert [r.text for r in snap.records if r.kind == "user"] == [
        "Remember the word: teal.",
        "What was the word?",
        "Spell it backwards.",
    ]
    assert not [d for d in snap.diagnostics if d.code == "rewound"]


def test_subagent_is_a_child_session_linked_to_the_parent() -> None:
    parent_path = next(CLAUDE.glob("recorded-subagent/.claude/projects/*/*.jsonl"))
    parent = trajconv.read("claude", parent_path)
    child_path = layout.subagent_files(parent_path)[0]
    child = trajconv.read("claude", child_path)
    assert child.session.parent_session_id == parent.session.id
    assert child.session.id == child_path.stem
    assert [r.kind for r in child.records] == ["user", "assistant"]
    call = next(r.call for r in parent.records if r.kind == "tool-call")
    meta = json.loads(child_path.with_name(child_path.stem + ".meta.json").read_text())
    assert call.name == "Agent" and meta["toolUseId"] == call.id
    # the parent keeps the sub-agent transcript and its meta byte for byte
    names = {a.name for a in parent.artifacts}
    assert f"subagents/{child_path.name}" in names
    # and holds the sub-agent as its child, linked to the Agent call: the same records
    (kid,) = parent.children
    assert kid.parent_call_id == call.id
    assert kid.session.parent_session_id == parent.session.id
    assert kid.session.id == child.session.id
    assert [r.model_dump(exclude={"hash", "evidence"}) for r in kid.records] == [
        r.model_dump(exclude={"hash", "evidence"}) for r in child.records
    ]
    assert {r.evidence.artifact for r in kid.records} == {f"subagents/{child_path.name}"}


def test_background_subagent_result_is_harness_text_not_a_prompt() -> None:
    snap = _read("recorded-subagent-background")
    assert [r.text for r in snap.records if r.kind == "user"] == [
        "Have a helper agent count the files here, in the background."
    ]
    note = next(r for r in snap.records if r.kind == "system")
    assert note.text.startswith("<task-notification>")
    assert "toolu_01BG_agent" in note.text
    assert [r.kind for r in snap.records][-1] == "assistant"


def test_edge_cases_chain_branches_harness_lines_and_side_lines() -> None:
    snap = _read("edge-cases")
    diags = {d.code: d for d in snap.diagnostics}
    # the branch left behind by the rewind: two lines, counted, not mixed in
    assert diags["rewound"].count == 2
    assert "Deleted." not in [getattr(r, "text", None) for r in snap.records]
    # harness-made user lines are never prompts
    assert [r.text for r in snap.records if r.kind == "user"] == [
        "List the files, then explain.",
        "Describe b.png",
    ]
    system = [r.text for r in snap.records if r.kind == "system"]
    assert "[Request interrupted by user]" in system
    assert "API Error: overloaded" in system
    assert "Summary: files were listed." in system  # the compaction summary is crossed
    assert diags["compaction-state"].count == 1
    assert diags["duplicate-message"].count == 1
    assert diags["nested-namespace"].count == 1
    assert diags["torn-line"].samples == (f"{snap.source.session_id}.jsonl:14",)
    assert "brand-new-kind: 1" in diags["unknown-kind"].samples
    assert diags["pending-tool-call"].count == 1
    failed = next(r.result for r in snap.records if r.kind == "tool-result" and not r.result.ok)
    assert failed.exit_code == 1
    assert snap.session.title == "Edge cases"  # a custom title wins


def test_shuffled_lines_give_the_same_conversation(tmp_path: Path) -> None:
    src = next(CLAUDE.glob("recorded-multi-turn/.claude/projects/*/*.jsonl"))
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    target = tmp_path / ".claude" / "projects" / "-work-demo" / src.name
    target.parent.mkdir(parents=True)
    # chain lines reversed; side lines (last-prompt names the leaf) keep their order
    chain = [line for line in lines if '"parentUuid"' in line]
    side = [line for line in lines if '"parentUuid"' not in line]
    target.write_text("".join(side + chain[::-1]), encoding="utf-8")
    ordered = trajconv.read("claude", src)
    shuffled = trajconv.read("claude", target)
    assert [(r.kind, r.id) for r in shuffled.records] == [(r.kind, r.id) for r in ordered.records]


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=IDS)
def test_lines_parsed_again_read_as_the_lines_kept(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript over ``HOLD_BYTES`` is parsed a second time instead of kept from the
    first pass: the same Snapshot, damaged lines (blank, torn, not an object, a byte-order
    mark, bytes not UTF-8) counted in the same places."""
    from trajconv.codecs.claude import reader

    home = tmp_path / "h"
    case = path.parts[len(CLAUDE.parts)]
    shutil.copytree(CLAUDE / case, home)
    damaged = home / path.relative_to(CLAUDE / case)
    lines = damaged.read_bytes().split(b"\n")
    lines[2:2] = [b"", b'{"type": "user", "uuid": "x', b"[1]", b'\xef\xbb\xbf{"type": "x"}']
    lines.insert(len(lines) // 2, b'{"type": "summary", "summary": "caf\xe9"}')
    damaged.write_bytes(b"\n".join(lines))
    for target in (path, damaged):
        kept = io.dumps(trajconv.read("claude", target))
        with monkeypatch.context() as patch:
            patch.setattr(reader, "HOLD_BYTES", -1)
            assert io.dumps(trajconv.read("claude", target)) == kept


def test_home_with_many_sessions_needs_a_session_id(tmp_path: Path) -> None:
    one = CLAUDE / "recorded-thinking"
    sid = next(one.glob(".claude/projects/*/*.jsonl")).stem
    assert trajconv.read("claude", one).session.id == sid  # a home with one session
    assert trajconv.read("claude", one / ".claude" / "projects" / "-work-demo").session.id == sid
    home = tmp_path / "home"
    for case in ("recorded-thinking", "recorded-resume"):
        shutil.copytree(CLAUDE / case / ".claude", home / ".claude", dirs_exist_ok=True)
    with pytest.raises(FormatError, match="2 Claude Code sessions; pick one with --session"):
        trajconv.read("claude", home)
    assert trajconv.read("claude", home, session=sid).session.id == sid
    with pytest.raises(UsageError, match="no claude session"):  # exit 2, as the README says
        trajconv.read("claude", home, session="00000000-0000-4000-8000-000000000000")


def test_older_subagent_file_beside_the_transcripts_names_its_parent(tmp_path: Path) -> None:
    src = next(CLAUDE.glob("recorded-subagent/.claude/projects/*/*/subagents/agent-*.jsonl"))
    older = tmp_path / "-work-demo" / src.name  # the layout before 2.1.x: in the project folder
    older.parent.mkdir()
    shutil.copy(src, older)
    snap = trajconv.read("claude", older)
    assert snap.session.parent_session_id == src.parents[1].name  # from the lines' sessionId
    assert snap.source.locator == f"-work-demo/{src.name}"
    assert [r.kind for r in snap.records] == ["user", "assistant"]


@pytest.mark.parametrize("keep", [0.5, 0.02], ids=["names-its-parent", "cut-before-its-parent"])
def test_a_torn_line_in_the_middle_loses_that_line_only(tmp_path: Path, keep: float) -> None:
    """Issue 33: one torn line (line 13, an assistant tool_use) cut the parentUuid chain
    and the whole first turn before it was counted ``rewound``. The chain goes on across it
    (from the parent its bytes still name, else the chain line before it); only its own
    record is lost, named ``torn-line`` (and so its call's result has no call)."""
    source = next((CLAUDE / "recorded-multi-turn").rglob("*.jsonl"))
    whole = trajconv.read("claude", source)
    lines = source.read_bytes().split(b"\n")
    torn_line = lines[12]
    assert json.loads(torn_line)["type"] == "assistant"
    lines[12] = torn_line[: max(2, int(len(torn_line) * keep))]
    home = tmp_path / "h"
    shutil.copytree(CLAUDE / "recorded-multi-turn", home)
    target = home / source.relative_to(CLAUDE / "recorded-multi-turn")
    target.write_bytes(b"\n".join(lines))
    snap = trajconv.read("claude", target)
    diags = {d.code: d for d in snap.diagnostics}
    assert "rewound" not in diags
    assert diags["torn-line"].count == 1 and diags["torn-line"].samples == (f"{target.name}:13",)
    torn_records = [r for r in whole.records if r.evidence.line == 13]
    calls = {r.call.id for r in torn_records if r.kind == "tool-call"}
    answers = [r for r in whole.records if r.kind == "tool-result" and r.result.call_id in calls]
    assert torn_records and answers  # the tool_use and the result that answered it
    lost = {r.id for r in (*torn_records, *answers)}
    assert [r.id for r in snap.records] == [r.id for r in whole.records if r.id not in lost]
    assert diags["orphan-tool-result"].count == len(answers)
    conservation(snap, count_units(target.read_bytes()))
