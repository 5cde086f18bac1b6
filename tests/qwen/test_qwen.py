"""Qwen Code codec: reader on the recorded fixtures, writer, round trips, layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import trajconv
from tests.helpers import (
    FIXTURES,
    conservation,
    export_tree,
    fingerprint,
    merged_projection,
    rebuilt,
)
from trajconv.codecs import registry
from trajconv.codecs.base import CERTAIN, Export, continuity
from trajconv.codecs.jsonl import count_units
from trajconv.codecs.qwen import layout
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Source

QWEN = FIXTURES / "qwen"
FILES = sorted(QWEN.glob("*/.qwen/projects/*/chats/*.jsonl"))
IDS = [p.parents[4].name for p in FILES]
HOLDS = ("user", "assistant", "tool-call", "tool-result", "reasoning", "system")


def _by_case(case: str) -> Path:
    return next(p for p in FILES if p.parents[4].name == case)


def _read(case: str) -> trajconv.Snapshot:
    return trajconv.read("qwen", _by_case(case))


def test_fixtures_are_the_recorded_cases() -> None:
    assert set(IDS) == {
        "recorded-tool-failures",
        "recorded-subagent-compress",
        "recorded-subagent-background",
    }


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reader_snapshot(path: Path, snapshot) -> None:
    snap = trajconv.read("qwen", path)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_line_is_accounted_for(path: Path) -> None:
    """Every line of the session file and of its sub-agents' files, counted apart from
    the reader, ends in one record or one unit-counting diagnostic."""
    snap = trajconv.read("qwen", path)
    files = [path, *layout.subagent_files(path)]
    conservation(snap, sum(count_units(f.read_bytes()) for f in files))
    assert len(snap.children) == len(files) - 1


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reading_never_changes_the_native_home(path: Path) -> None:
    home = path.parents[3]
    before = fingerprint(home)
    trajconv.read("qwen", path)
    assert fingerprint(home) == before


def test_tool_failures_take_ok_from_status_and_the_exit_code_from_the_shell_result() -> None:
    snap = _read("recorded-tool-failures")
    assert [r.kind for r in snap.records] == [
        "user",
        "reasoning",
        "assistant",
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
        "tool-call",
        "tool-result",
        "reasoning",
        "assistant",
        "user",
        "assistant",
    ]
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.ok, r.exit_code) for r in results] == [
        ("call_tf_1", True, None),
        ("call_tf_2", False, None),
        ("call_tf_3", False, 2),
    ]
    assert results[1].output == "File not found: /work/demo/missing.txt"
    assert snap.session.cwd == "/work/demo" and snap.session.model == "qwen3-coder-plus"
    assert snap.source.harness_version == "0.24.4"
    # the resumed turn is turn 1 of the same session
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    diags = {d.code: d.count for d in snap.diagnostics}
    assert diags == {"lifecycle-dropped": 9}  # telemetry and attribution records


def test_a_sub_agent_is_a_child_of_the_call_that_spawned_it() -> None:
    snap = _read("recorded-subagent-compress")
    (child,) = snap.children
    assert child.parent_call_id == "call_sa_1"
    assert child.session.id == "general-purpose-call_sa_1"
    assert child.session.parent_session_id == snap.session.id
    assert [r.kind for r in child.records] == ["user", "tool-call", "tool-result", "assistant"]
    call = next(r for r in snap.records if r.kind == "tool-call")
    assert (call.call.id, call.call.name) == ("call_sa_1", "agent")
    # its files are the parent's artifacts; its empty first answer is named
    names = {a.name for a in snap.artifacts}
    assert {f"subagents/{snap.session.id}/agent-{child.session.id}.meta.json"} < names
    assert snap.diagnostic_count("empty-content") == 1


def test_a_compression_keeps_the_summary_and_the_clis_answer_as_the_resumed_history() -> None:
    snap = _read("recorded-subagent-compress")
    kinds = [(r.kind, r.evidence.native) for r in snap.records]
    at = kinds.index(("system", "chat_compression/system"))
    assert kinds[at + 1] == ("assistant", "chat_compression/assistant")
    summary = snap.records[at].text
    assert summary.startswith("<state_snapshot>") and "alpha and beta" in summary
    # the turns before it are kept (they happened); the turn after it follows
    assert [r.text for r in snap.records if r.kind == "user"] == [
        "Ask a helper agent what notes.txt says.",
        "What were the two lines?",
    ]


def test_a_sub_agent_file_reads_alone_as_a_session_naming_its_parent() -> None:
    home = QWEN / "recorded-subagent-compress"
    snap = trajconv.read("qwen", home, session="general-purpose-call_sa_1")
    assert snap.session.parent_session_id == "a5d609c4-09f5-4f3d-b862-9ef633391a0b"
    assert not snap.children and len(snap.records) == 4


def test_claims_discover_and_resolve() -> None:
    home = QWEN / "recorded-tool-failures"
    codec = registry.get("qwen")
    path = _by_case("recorded-tool-failures")
    assert codec.claims(path) == layout.claims(path)
    assert codec.claims(path).confidence == CERTAIN and codec.claims(path).what == "session"
    assert codec.claims(home).what == "home"
    assert codec.claims(FIXTURES / "gemini" / "recorded-tool-failures") is None
    for where in (home, home / ".qwen"):
        refs = trajconv.discover("qwen", where)
        assert [r.session_id for r in refs] == [path.stem]
        assert refs[0].cwd == "/work/demo" and refs[0].size == path.stat().st_size
    assert layout.encode_cwd("/work/my_demo.v2") == "-work-my-demo-v2"


def test_default_home_honours_the_clis_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("QWEN_HOME", "/opt/q")
    assert registry.get("qwen").default_home() == Path("/opt/q")
    monkeypatch.setenv("QWEN_RUNTIME_DIR", "/opt/runtime")
    assert registry.get("qwen").default_home() == Path("/opt/runtime")


def test_bad_input_is_named(tmp_path: Path) -> None:
    chats = tmp_path / ".qwen/projects/-p/chats"
    chats.mkdir(parents=True)
    (chats / "x.jsonl").write_text("not json\n")
    with pytest.raises(FormatError, match="not a Qwen Code session"):
        trajconv.read("qwen", chats / "x.jsonl")
    with pytest.raises(UsageError, match="no session 'nope'"):
        trajconv.read("qwen", QWEN / "recorded-tool-failures", session="nope")


def _convert(case: str, out: Path, **options: object) -> tuple[trajconv.Snapshot, Path]:
    snap, export = trajconv.convert("qwen", "qwen", _by_case(case), out, **options)
    return snap, export.out_dir


def _written(out: Path) -> Path:
    return next((out / "home/.qwen/projects").glob("*/chats/*.jsonl"))


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_round_trip_keeps_every_record_and_child(path: Path, tmp_path: Path) -> None:
    snap, export = trajconv.convert("qwen", "qwen", path, tmp_path / "out")
    again = trajconv.read("qwen", _written(export.out_dir))
    assert merged_projection(again, HOLDS) == merged_projection(snap, HOLDS)
    assert [merged_projection_of(c) for c in again.children] == [
        merged_projection_of(c) for c in snap.children
    ]
    assert [(c.session.id, c.parent_call_id) for c in again.children] == [
        (c.session.id, c.parent_call_id) for c in snap.children
    ]
    assert again.session.id == snap.session.id and again.session.cwd == snap.session.cwd
    assert (again.session.created_at, again.session.updated_at) == (
        snap.session.created_at,
        snap.session.updated_at,
    )
    codes = {d.code for d in export.diagnostics if not d.code.startswith("lifecycle")}
    assert codes <= {"ids-derived", "model-assumed", "empty-content"}
    assert not continuity(again).pending


def merged_projection_of(child: object) -> list[tuple[object, ...]]:
    from tests.helpers import projection

    return [p for p in projection(child, HOLDS)]  # type: ignore[arg-type]


def test_export_tree_snapshot(tmp_path: Path, snapshot) -> None:
    _snap, out = _convert("recorded-subagent-compress", tmp_path / "out", cwd="/work/elsewhere")
    tree = export_tree(out)
    assert json.loads(tree.pop("trajconv-export.json")) == snapshot(name="manifest")
    assert tree == snapshot(name="tree")


def test_the_records_name_the_session_and_the_cwd_it_is_written_for(tmp_path: Path) -> None:
    snap, out = _convert("recorded-tool-failures", tmp_path / "out", cwd="/srv/proj")
    written = _written(out)
    assert written.parent.parent.name == "-srv-proj" and written.stem == snap.session.id
    lines = [json.loads(x) for x in written.read_text(encoding="utf-8").splitlines()]
    assert {x["sessionId"] for x in lines} == {snap.session.id}
    assert {x["cwd"] for x in lines} == {"/srv/proj"}
    # one chain, parent before child
    assert [x["parentUuid"] for x in lines[1:]] == [x["uuid"] for x in lines[:-1]]
    assert lines[0]["parentUuid"] is None
    results = [x for x in lines if x["type"] == "tool_result"]
    assert [
        (
            x["toolCallResult"].get("status"),
            *x["message"]["parts"][0]["functionResponse"]["response"],
        )
        for x in results
    ] == [
        ("success", "output"),
        ("error", "error"),
        ("error", "error"),
    ]
    assert results[2]["toolCallResult"]["resultDisplay"] == {"type": "shell_result", "exitCode": 2}


def test_prepare_installs_into_a_home_and_never_replaces(tmp_path: Path) -> None:
    snap, out = _convert("recorded-tool-failures", tmp_path / "out")
    home = tmp_path / "home"
    run = [sys.executable, str(out / "prepare.py"), "--home", str(home)]
    done = subprocess.run(run, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    installed = home / ".qwen/projects/-work-demo/chats" / f"{snap.session.id}.jsonl"
    assert installed.read_bytes() == _written(out).read_bytes()
    again = subprocess.run(run, capture_output=True, text=True, check=False)
    assert again.returncode != 0 and installed.read_bytes() == _written(out).read_bytes()


def test_the_writer_refuses_without_cwd_or_user_message(tmp_path: Path) -> None:
    snap = _read("recorded-tool-failures")
    no_cwd = rebuilt(snap, session=snap.session.model_copy(update={"cwd": None}))
    with pytest.raises(RefusedError, match="no cwd"):
        trajconv.write(no_cwd, "qwen", tmp_path / "a")
    assert trajconv.write(no_cwd, "qwen", tmp_path / "b", cwd="/x").session_id


def test_a_foreign_session_names_what_its_model_is_not_shown(tmp_path: Path) -> None:
    """A Gemini CLI session: its failure flags are not sent on (Chat Completions has no such
    field), its system text is left out; a non-UUID id would be derived."""
    gemini = next(FIXTURES.glob("gemini/recorded-tool-failures/.gemini/tmp/*/chats/session-*"))
    snap = trajconv.read("gemini", gemini)
    export = trajconv.write(snap, "qwen", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    failed = sum(1 for r in snap.records if r.kind == "tool-result" and r.result.ok is False)
    assert codes.get("untranslated-tool-status") == failed
    systems = sum(1 for r in snap.records if r.kind == "system")
    assert codes.get("untranslated-system", 0) == systems
    assert export.session_id == snap.session.id


def test_a_cwd_whose_folder_name_the_cli_cannot_make_is_refused(tmp_path: Path) -> None:
    snap = _read("recorded-tool-failures")
    long_cwd = "/" + "/".join(["x" * 60] * 5)  # 306 bytes: the CLI keeps no session there
    with pytest.raises(RefusedError, match="over 255 bytes"):
        trajconv.write(snap, "qwen", tmp_path / "a", cwd=long_cwd, allow_lossy=True)


def test_only_an_id_the_cli_takes_as_an_id_is_kept(tmp_path: Path) -> None:
    """``qwen --resume`` takes a UUID of version 1 to 5 as an id and looks anything else up as
    a title: a Grok session's UUID 7 is replaced by a derived one, named."""
    grok = next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl")).parent
    snap = trajconv.read("grok", grok)
    assert snap.session.id[14] == "7"
    export = trajconv.write(snap, "qwen", tmp_path / "out", allow_lossy=True)
    assert export.session_id != snap.session.id and export.session_id[14] == "5"
    assert any(d.code == "ids-derived" and "session id" in d.samples for d in export.diagnostics)


def test_a_command_the_cli_answered_itself_is_not_a_prompt(tmp_path: Path) -> None:
    """A typed ``/stats`` followed by its ``slash_command`` result (shape from the bundle's
    ``SessionApiHistoryAccumulator``: interactive runs write it, headless ones write nothing)
    is never sent to the model, so it is not a user record; a command sent on is."""
    chats = tmp_path / ".qwen/projects/-p/chats"
    chats.mkdir(parents=True)
    sid = "3f1c2a9e-5b7d-4c8e-9a10-2b3c4d5e6f70"
    base = {"sessionId": sid, "cwd": "/p", "timestamp": "2026-12-01T10:00:00.000Z"}

    def rec(n: int, **fields: object) -> str:
        parent = f"00000000-0000-4000-8000-00000000000{n - 1}" if n > 1 else None
        uid = f"00000000-0000-4000-8000-00000000000{n}"
        return json.dumps({"uuid": uid, "parentUuid": parent, **base, **fields})

    def result(raw: str, sent: bool) -> dict[str, object]:
        return {
            "phase": "result",
            "rawCommand": raw,
            "sentToModel": sent,
            "outputHistoryItems": [{"type": "assistant", "text": "ok"}],
        }

    lines = [
        rec(1, type="user", message={"role": "user", "parts": [{"text": "/stats"}]}),
        rec(2, type="system", subtype="slash_command", systemPayload=result("/stats", False)),
        rec(3, type="user", message={"role": "user", "parts": [{"text": "/review x"}]}),
        rec(4, type="system", subtype="slash_command", systemPayload=result("/review x", True)),
        rec(5, type="assistant", message={"role": "model", "parts": [{"text": "done"}]}),
    ]
    (chats / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    snap = trajconv.read("qwen", chats / f"{sid}.jsonl")
    assert [(r.kind, r.text) for r in snap.records] == [
        ("user", "/review x"),
        ("assistant", "done"),
    ]
    conservation(snap, 5)
    (dropped,) = [d for d in snap.diagnostics if d.code == "lifecycle-dropped"]
    assert dropped.count == 3 and "user:slash-command: 1" in dropped.samples


def test_a_background_sub_agent_ends_in_the_clis_notification(tmp_path: Path) -> None:
    snap = _read("recorded-subagent-background")
    (child,) = snap.children
    assert child.parent_call_id == "call_bg_1"
    result = next(r.result for r in snap.records if r.kind == "tool-result")
    assert result.output.startswith("Background agent launched successfully.")
    note = next(r for r in snap.records if r.kind == "system")
    assert note.text.startswith("<task-notification>") and "notes.txt: alpha, beta." in note.text
    assert note.evidence.native == "user/notification"
    # written back as the user message the CLI made of it, which its model is sent
    out = trajconv.write(snap, "qwen", tmp_path / "out").out_dir
    lines = [json.loads(x) for x in _written(out).read_text(encoding="utf-8").splitlines()]
    (written,) = [x for x in lines if x.get("subtype") == "notification"]
    assert (written["type"], written["provenance"]) == ("user", "system")
    assert written["message"]["parts"] == [{"text": note.text}]


def _boundaries(export: Export) -> tuple[int, tuple[str, ...]]:
    found = [d for d in export.diagnostics if d.code == "untranslated-message-boundary"]
    return (found[0].count, found[0].samples) if found else (0, ())


def test_a_run_the_resumed_cli_sends_as_one_message_is_named(tmp_path: Path) -> None:
    """Aider's answer and its edit error (two answer texts, no result between) reach the
    resumed model as one text (``processContent`` joins a model Content's text parts), and
    ``/run ...`` then ``Thanks`` as the parts of one user message (``extractCuratedHistory``):
    the file keeps all four records, and each joined to the one before it is named."""
    snap = trajconv.read("aider", FIXTURES / "aider/recorded-edits")
    export = trajconv.write(snap, "qwen", tmp_path / "out", allow_lossy=True)
    assert _boundaries(export) == (2, ("aider:L52", "aider:L98"))
    again = trajconv.read("qwen", export.out_dir / "home", session=export.session_id)
    texts = [r.text for r in again.records if r.kind in ("user", "assistant")]
    assert texts == [r.text for r in snap.records if r.kind in ("user", "assistant")]
    # one model Content holds both answer texts, as two parts
    lines = [json.loads(x) for x in _written(export.out_dir).read_text().splitlines()]
    answers = [x["message"]["parts"] for x in lines if x["type"] == "assistant"]
    assert [len(p) for p in answers] == [1, 2, 1]


def test_only_texts_the_cli_joins_are_named(tmp_path: Path) -> None:
    """Three prompts in a row are one message (the second and third named); a prompt after
    a result, an answer's text after its result, one reasoning and an empty answer text are
    not joined; two reasoning texts of one answer are (one ``reasoning_content``)."""
    b = SnapshotBuilder(Source(harness="t", harness_version="1", session_id="s", locator="s"), "t")
    b.session = b.session.model_copy(update={"cwd": "/p"})
    ev = evidence("log", native="x", line=1)
    at: dict[str, Any] = {"time": None, "turn": None, "evidence": ev}
    for n in (1, 2, 3):
        b.add_text("user", f"u{n}", f"prompt {n}", **at)
    b.add_text("reasoning", "r1", "think", **at)
    b.add_call("c1", "call-1", "shell", {"command": "ls"}, **at)
    b.add_result("res1", "call-1", True, "a", **at)
    b.add_text("user", "u4", "and then", **at)
    b.add_text("reasoning", "r2", "first", **at)
    b.add_text("reasoning", "r3", "second", **at)
    b.add_text("assistant", "a1", "", **at)
    b.add_text("assistant", "a2", "done", **at)
    export = trajconv.write(b.build(), "qwen", tmp_path / "out", allow_lossy=True)
    assert _boundaries(export) == (3, ("u2", "u3", "r3"))
