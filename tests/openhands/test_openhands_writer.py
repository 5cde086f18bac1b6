"""OpenHands writer: the export tree, round trips, other harnesses' sessions, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import trajconv
from tests.helpers import (
    FIXTURES,
    conservation,
    export_tree,
    fingerprint,
    projection,
    run_prepare,
)
from trajconv.codecs import registry
from trajconv.codecs.openhands import layout
from trajconv.codecs.openhands.writer import ERROR_HEADER
from trajconv.errors import RefusedError
from trajconv.parity import fixture_sessions, write_options

OPENHANDS = FIXTURES / "openhands"
CASES = sorted(p.name for p in OPENHANDS.glob("recorded-*"))
CLAUDE = next(FIXTURES.glob("claude/recorded-tool-failures/.claude/projects/*/*.jsonl"))


def _conv(case: str) -> Path:
    (conv,) = (OPENHANDS / case / ".openhands" / "conversations").iterdir()
    return conv


def _written(out: Path) -> Path:
    (conv,) = (out / "home" / ".openhands" / "conversations").iterdir()
    return conv


def _units(conv: Path) -> int:
    """One unit an event file, the sub-agents' included."""
    return len(layout.event_files(conv)) + sum(_units(sub) for sub in layout.subagents(conv))


def _events(conv: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in layout.event_files(conv)]


def _codes(export: Any) -> dict[str, int]:
    return {d.code: d.count for d in export.diagnostics}


def test_the_codec_writes() -> None:
    assert registry.get("openhands").can_write


def test_writer_export_tree(tmp_path: Path, snapshot) -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    export = trajconv.write(snap, "openhands", tmp_path / "out")
    assert export_tree(export.out_dir) == snapshot
    assert export.session_id == snap.session.id  # OpenHands' own id (32 hex digits) is kept
    assert export.resume_argv == ["openhands", "--resume", snap.session.id]


@pytest.mark.parametrize("case", CASES)
def test_round_trip_keeps_the_conversation(case: str, tmp_path: Path) -> None:
    snap = trajconv.read("openhands", _conv(case))
    export = trajconv.write(snap, "openhands", tmp_path / "out", allow_lossy=True)
    conv = _written(export.out_dir)
    assert conv.name == snap.session.id
    again = trajconv.read("openhands", conv)
    conservation(again, _units(conv))

    assert projection(again) == projection(snap)  # exit codes too (TerminalObservation)
    codes = _codes(export)
    assert "untranslated-exit-code" not in codes
    assert codes["untranslated-cwd"] == 1
    assert "target-prompt-missing" not in codes  # its own system prompt is written back
    events = _events(conv)
    assert events[0]["kind"] == "SystemPromptEvent"
    assert [e["id"] for e in events] == [
        layout.EVENT_NAME.match(p.name)["event_id"]  # type: ignore[index]
        for p in layout.event_files(conv)
    ]
    # a task sub-agent's conversation comes back as the child of the same call
    assert "untranslated-subagent" not in codes
    assert [(c.session.id, c.parent_call_id, projection(c)) for c in again.children] == [
        (c.session.id, c.parent_call_id, projection(c)) for c in snap.children
    ]


def test_a_sub_agent_of_another_harness(tmp_path: Path) -> None:
    """A child is written as ``subagents/<hex id>/`` of the conversation, its id derived when
    it is no UUID; its records are not lost (the reader links it to a ``task`` call only)."""
    snaps = [trajconv.read(c.harness, c.path, session=c.session) for c in _with_children()]
    snaps = [s for s in snaps if s.children]
    assert len({s.source.harness for s in snaps}) >= 2
    for i, snap in enumerate(snaps):
        export = trajconv.write(
            snap, "openhands", tmp_path / f"out{i}", allow_lossy=True, **write_options(snap)
        )
        again = trajconv.read("openhands", _written(export.out_dir))
        direct = [
            c for c in snap.children if c.session.parent_session_id in (None, snap.session.id)
        ]
        # a failed result of another harness reads back under the SDK's error header, and
        # without its exit code (an MCPToolObservation holds none: untranslated-exit-code)
        assert [_unheaded(c) for c in again.children] == [
            _unheaded(c, header="") for c in sorted(direct, key=lambda c: _folder(c, snap))
        ]


def _unheaded(conv: Any, header: str = ERROR_HEADER) -> list[tuple[Any, ...]]:
    return [
        (*p[:3], p[3].removeprefix(header)) if p[0] == "tool-result" else p
        for p in projection(conv)
    ]


def _folder(child: Any, snap: Any) -> str:
    import uuid

    from trajconv.codecs.common import derived_uuid, is_uuid

    sid = child.session.id
    return uuid.UUID(sid if is_uuid(sid) else derived_uuid(child.id, "openhands-subagent")).hex


def _with_children() -> list[Any]:
    found = []
    for codec in registry.all_codecs():
        if codec.name == "openhands" or not codec.can_read:
            continue
        for fx in fixture_sessions(codec):
            if "subagent" in fx.label or "task" in fx.label:
                found.append(fx)
    return found


def test_writing_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    snap = trajconv.read("openhands", _conv("recorded-exit-resume"))
    one = trajconv.write(snap, "openhands", tmp_path / "one")
    two = trajconv.write(snap, "openhands", tmp_path / "two")
    assert export_tree(one.out_dir) == export_tree(two.out_dir)


def test_another_harness_session(tmp_path: Path) -> None:
    snap = trajconv.read("claude", CLAUDE)
    export = trajconv.write(snap, "openhands", tmp_path / "out", allow_lossy=True)
    codes = _codes(export)
    conv = _written(export.out_dir)
    events = _events(conv)
    # the SDK adds no system prompt to a conversation that has one (Agent.init_state) and
    # refuses one whose user message comes first: it is written empty, and named
    assert events[0]["kind"] == "SystemPromptEvent"
    assert events[0]["system_prompt"]["text"] == ""
    assert codes["target-prompt-missing"] == 1
    assert events[1]["kind"] == "MessageEvent" and events[1]["source"] == "user"
    # failures are is_error observations: the SDK heads their text with its error header
    failed = [r for r in snap.records if r.kind == "tool-result" and r.result.ok is False]
    assert failed
    observed = [e["observation"] for e in events if e["kind"] == "ObservationEvent"]
    assert sum(o["is_error"] for o in observed) == len(failed)
    assert {o["kind"] for o in observed} == {"MCPToolObservation"}
    assert codes["exit-status-in-text"] == len(failed)
    assert codes["untranslated-tool-status"] == len(failed)
    # each observation answers its call's ActionEvent
    actions = {e["tool_call_id"]: e["id"] for e in events if e["kind"] == "ActionEvent"}
    assert all(e["action_id"] == actions[e["tool_call_id"]] for e in events if "action_id" in e)
    # times: the SDK's own form (wall-clock, no zone), in UTC
    timed = [r for r in snap.records if r.time is not None]
    assert timed and codes["untranslated-time"] >= len(timed)
    first_user = next(r for r in snap.records if r.kind == "user")
    assert first_user.time is not None
    assert events[1]["timestamp"] == first_user.time.replace("Z", "")[:23] + "000"
    again = trajconv.read("openhands", conv)
    conservation(again, len(events))
    assert [r.result.ok for r in again.records if r.kind == "tool-result"] == [
        r.result.ok for r in snap.records if r.kind == "tool-result"
    ]
    assert [r.call.arguments for r in again.records if r.kind == "tool-call"] == [
        r.call.arguments for r in snap.records if r.kind == "tool-call"
    ]


def test_parallel_calls_share_one_response(tmp_path: Path) -> None:
    """Codex's two calls of one step: two ActionEvents with one ``llm_response_id`` (the SDK
    joins them into one assistant message), the step's reasoning on the first."""
    from proof.continuation import read_fixture

    snap = read_fixture("codex")
    export = trajconv.write(snap, "openhands", tmp_path / "out", allow_lossy=True)
    events = _events(_written(export.out_dir))
    steps: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["kind"] == "ActionEvent":
            steps.setdefault(e["llm_response_id"], []).append(e)
    pair = next(s for s in steps.values() if len(s) == 2)
    assert pair[0]["reasoning_content"] and "reasoning_content" not in pair[1]
    assert pair[1]["thought"] == []
    at = [i for i, e in enumerate(events) if e in pair]
    assert at[1] == at[0] + 1


def test_records_without_a_time_are_written_without_one(tmp_path: Path) -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    assert all(r.time is None for r in snap.records)  # the reader takes no zone-less time
    export = trajconv.write(snap, "openhands", tmp_path / "out")
    events = _events(_written(export.out_dir))
    assert not any("timestamp" in e for e in events)
    assert _codes(export)["time-stamped-on-load"] == len(events)


def test_prepare_refuses_to_replace_a_conversation(tmp_path: Path) -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    export = trajconv.write(snap, "openhands", tmp_path / "out")
    home = tmp_path / "home"
    dest = home / ".openhands" / "conversations" / snap.session.id
    dest.mkdir(parents=True)
    (dest / "base_state.json").write_text("{}", encoding="utf-8")
    before = fingerprint(home)
    done = run_prepare(export.out_dir, home)
    assert done.returncode == 3, done.stderr
    assert fingerprint(home) == before


def test_prepare_installs_into_an_empty_home(tmp_path: Path) -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    export = trajconv.write(snap, "openhands", tmp_path / "out")
    home = tmp_path / "home"
    done = run_prepare(export.out_dir, home)
    assert done.returncode == 0, done.stderr
    conv = home / ".openhands" / "conversations" / snap.session.id
    assert len(layout.event_files(conv)) == len(_events(_written(export.out_dir)))
    assert not (conv / layout.BASE_STATE).exists()  # the CLI writes its own on resume


def test_a_session_without_cwd_is_refused() -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    bare = snap.model_copy(update={"session": snap.session.model_copy(update={"cwd": None})})
    with pytest.raises(RefusedError):
        trajconv.write(bare, "openhands", Path("/nonexistent/out"))
