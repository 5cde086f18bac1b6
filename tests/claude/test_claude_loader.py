"""The real ``claude`` (npm @anthropic-ai/claude-code, pinned) resumes what we write, offline,
and its model request carries the whole earlier conversation, in order, nothing invented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import claude as claude_loader
from tests.claude.support import (
    IDS,
    OTHER_IDS,
    TRANSCRIPTS,
    expected_items,
    other_sources,
    read_other,
)
from tests.conftest import require_loader
from trajconv.codecs.claude.native import HARNESS_TEXT

PROMPT = "Please go on from here."
CASES = [("claude", p, None) for p in TRANSCRIPTS] + other_sources()
CASE_IDS = IDS + [f"{h}->claude" for h in OTHER_IDS]


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    found = claude_loader.find(tools_dir())
    require_loader(found, "claude")
    assert found is not None
    return found


@pytest.mark.parametrize(("harness", "path", "session"), CASES, ids=CASE_IDS)
def test_real_claude_resumes_with_the_whole_history(
    claude_bin: Path, harness: str, path: Path, session: str | None, tmp_path: Path
) -> None:
    snap = read_other(harness, path, session)
    export = trajconv.write(snap, "claude", tmp_path / "out", allow_lossy=True)
    home = tmp_path / "home"
    subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        check=True,
        capture_output=True,
    )
    bodies = claude_loader.continue_session(
        claude_bin, home, export.session_id, snap.session.cwd or "", PROMPT, tmp_path / "work"
    )
    assert bodies, "no model request"
    items = claude_loader.request_items(bodies[0])
    expected = expected_items(snap)
    if expected[-1][0] != "assistant":
        # A session written lossily may end without an answer (edge-cases: its last call has
        # no result and is left out); the CLI itself then puts this placeholder answer
        # before the new prompt. It is the only item the request may add.
        expected.append(("assistant", "No response requested."))
    assert claude_loader.conversation(items) == [*expected, ("user", PROMPT)]
    # every result answers the call just made before it, by id
    open_ids: list[str] = []
    for it in items:
        if it["kind"] == "tool-call":
            open_ids.append(it["id"])
        elif it["kind"] == "tool-result":
            assert it["call_id"] in open_ids
    # a Claude Code source's own harness text (reminders, command echoes, task notifications)
    # was sent to its model, and is sent again (written as isMeta lines)
    users = {str(it["text"]).rstrip("\n") for it in items if it["kind"] == "user"}
    resent = [
        r.text.rstrip("\n")
        for r in snap.records
        if r.kind == "system"
        and r.evidence.native == "user(harness)"
        and HARNESS_TEXT.match(r.text)
    ]
    assert [t for t in resent if t not in users] == []
    # the CLI appended its turn to the same transcript
    transcript = next(home.glob(f".claude/projects/*/{export.session_id}.jsonl"))
    assert claude_loader.REPLY in transcript.read_text(encoding="utf-8")


def test_request_items_reads_every_block_kind() -> None:
    body = {
        "system": [{"type": "text", "text": "You are a test."}],
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": "a"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                    {"type": "text", "text": "<system-reminder>r</system-reminder>"},
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "env"}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>now</system-reminder>"},
                    {"type": "text", "text": "go on"},
                ],
            },
        ],
    }
    assert claude_loader.request_items(body) == [
        {"kind": "system", "text": "You are a test."},
        {"kind": "user", "text": "hi"},
        {"kind": "reasoning", "text": "t"},
        {"kind": "assistant", "text": "a"},
        {"kind": "tool-call", "name": "Bash", "arguments": {"c": 1}, "id": "toolu_1"},
        {"kind": "tool-result", "call_id": "toolu_1", "text": "x", "error": False},
        {"kind": "user", "text": "<system-reminder>r</system-reminder>"},
        {"kind": "system", "text": "env"},
        # the CLI's context beside the turn being asked belongs to that turn
        {"kind": "system", "text": "<system-reminder>now</system-reminder>"},
        {"kind": "user", "text": "go on"},
    ]


def test_unwrap_user_tells_the_clis_context_from_a_prompt() -> None:
    assert claude_loader.unwrap_user("hi") == ("hi", None)
    reminder = "<system-reminder>\nToday's date is 2026-12-01.\n</system-reminder>"
    assert claude_loader.unwrap_user(reminder) == ("", reminder)
    left_out = "[CLI text left out: 579 chars, sha256 c7c420407202d49d]\n"
    assert claude_loader.unwrap_user(left_out) == ("", left_out)
    # the context is not part of the conversation the native check compares
    items = [{"kind": "user", "text": reminder}, {"kind": "user", "text": "hi"}]
    assert claude_loader.conversation(items) == [("user", "hi")]


def test_context_is_compared_and_the_new_turns_context_left_aside() -> None:
    from proof import continuation as cont

    reminder = "<system-reminder>\nAttribution\n</system-reminder>"

    def body(*messages: object) -> dict[str, object]:
        return {"system": "sys", "messages": list(messages)}

    prompt = {"role": "user", "content": cont.PROMPT}
    hi = {
        "role": "user",
        "content": [{"type": "text", "text": reminder}, {"type": "text", "text": "hi"}],
    }
    answer = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    base = claude_loader.request_items(body(hi, answer, prompt))
    # the continued copy lacks the first turn's reminder; the CLI sends one with the new prompt
    beside = {
        "role": "user",
        "content": [{"type": "text", "text": reminder}, {"type": "text", "text": cont.PROMPT}],
    }
    got = claude_loader.request_items(body({"role": "user", "content": "hi"}, answer, beside))
    bare = cont.compare("claude", "claude", base, got, {})
    assert [(d.kind, d.what) for d in bare.differences] == [("context", "missing")]
    named = cont.compare("claude", "claude", base, got, {"context-not-projected": 1})
    assert named.ok and named.summary() == "model saw 2/3"


def test_parity_verdict_uses_the_real_cli(claude_bin: Path, tmp_path: Path) -> None:
    from proof.verify import check_export

    src = next(p for p in TRANSCRIPTS if "recorded-tool-failures" in p.parts)
    _snap, export = trajconv.convert("claude", "claude", src, tmp_path / "out")
    written = trajconv.read("claude", next(export.out_dir.glob("home/.claude/projects/*/*.jsonl")))
    verdict = check_export("claude", export, written)
    assert verdict is not None and verdict["ok"], verdict
    assert verdict["version"] == claude_loader.VERSION
    # a written session that lost a result no longer matches what the CLI sends
    broken = written.model_copy(update={"records": tuple(written.records[:-2])})
    bad = check_export("claude", export, broken)
    assert bad is not None and bad["ok"] is False


def test_project_key_is_the_folder_the_cli_makes(claude_bin: Path, tmp_path: Path) -> None:
    from fixtures.record.modelserver import ModelServer
    from trajconv.codecs.claude.layout import project_key

    # over 200 characters, dots and a character outside the BMP: cut + hash suffix
    cwd = tmp_path / ("a" * 120) / ("b.c" * 40) / "é😀x"
    cwd.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    with ModelServer([{"text": "ok"}], tmp_path / "log.jsonl") as srv:
        extra = {
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{srv.port}",
            "ANTHROPIC_API_KEY": claude_loader.DUMMY_KEY,
        }
        proc = claude_loader.run(claude_bin, ["-p", "hi", "--bare"], home, cwd, extra, 120)
    assert proc.returncode == 0, proc.stderr
    made = [p.name for p in (home / ".claude" / "projects").iterdir()]
    assert made == [project_key(str(cwd))]
    assert len(made[0]) > 200
