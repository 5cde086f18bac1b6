"""Pi coding agent codec: reader on the recorded fixtures, discover, claims, writer, round trip."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from tests.helpers import FIXTURES, conservation, export_tree, fingerprint, projection
from trajconv.codecs import registry
from trajconv.codecs.base import CERTAIN
from trajconv.codecs.jsonl import count_units
from trajconv.codecs.pi import layout
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io

PI = FIXTURES / "pi"
FILES = sorted(PI.glob("*/sessions/*/*.jsonl"))
IDS = [f"{p.parts[len(PI.parts)]}/{p.stem.split('_')[1][:13]}" for p in FILES]
TOOLS = next(PI.glob("recorded-tools/sessions/*/*.jsonl"))
TREE = PI / "recorded-tree"
HELD = ("user", "assistant", "reasoning", "tool-call", "tool-result")


def _tree_files() -> tuple[Path, Path]:
    """The recorded tree's first session and its fork (the file whose header names a parent)."""
    files = sorted(TREE.glob("sessions/*/*.jsonl"))
    fork = next(p for p in files if "parentSession" in json.loads(p.read_text().splitlines()[0]))
    first = next(p for p in files if p != fork)
    return first, fork


# -- reader ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reader_snapshot(path: Path, snapshot) -> None:
    snap = trajconv.read("pi", path)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_line_is_accounted_for(path: Path) -> None:
    conservation(trajconv.read("pi", path), count_units(path.read_bytes()))


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reading_never_changes_the_native_home(path: Path) -> None:
    root = path.parents[2]
    before = fingerprint(root)
    first = io.dumps(trajconv.read("pi", path))
    assert io.dumps(trajconv.read("pi", path)) == first
    assert fingerprint(root) == before


def test_tampering_fails_verification() -> None:
    doc = json.loads(io.dumps(trajconv.read("pi", TOOLS)))
    user = next(r for r in doc["records"] if r["kind"] == "user")
    user["text"] = "something else"
    assert not io.verify_document(doc).ok


def test_recorded_tools_calls_failures_exit_code_and_resumed_turn() -> None:
    snap = trajconv.read("pi", TOOLS)
    assert [r.kind for r in snap.records] == [
        "user", "reasoning", "tool-call", "tool-call", "tool-call",
        "tool-result", "tool-result", "tool-result", "assistant",
        "user", "tool-call", "tool-result", "assistant",
    ]  # fmt: skip
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.ok, r.exit_code) for r in results] == [
        ("call_ls_1", True, None),
        ("call_rd_2", False, None),  # read of a missing file: isError, no exit status
        ("call_ls_3", False, 2),  # "Command exited with code 2"
        ("call_rd_4", True, None),
    ]
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    assert snap.session.cwd == "/work/demo" and snap.session.model == "scripted"
    assert snap.session.id == layout.id_of_file(TOOLS)


def test_the_conversation_is_the_chain_from_the_last_entry() -> None:
    first, _fork = _tree_files()
    snap = trajconv.read("pi", first)
    users = [r.text for r in snap.records if r.kind == "user"]
    # "How many lines ...?" and its reasoning answer are on the branch the user left
    assert users == [
        "Write hello.txt saying hi, then change bye to ciao in it",
        "Append a second line saying ok",
        "And how many words?",
        "What did we change last?",
    ]
    assert "reasoning" not in {r.kind for r in snap.records}
    diags = {d.code: d for d in snap.diagnostics}
    assert diags["rewound"].count == 2
    # the branch summary and the compaction summary are what pi sends its model for them
    systems = [r for r in snap.records if r.kind == "system"]
    assert [r.evidence.native for r in systems] == ["branch_summary", "compaction"]
    # the user's own `!cat hello.txt; exit 3`, as the text pi sends its model
    obs = next(r for r in snap.records if r.kind == "observation")
    assert obs.text.startswith("Ran `cat hello.txt; exit 3`")
    assert obs.text.endswith("Command exited with code 3")
    edit = next(r.result for r in snap.records if r.kind == "tool-result" and not r.result.ok)
    assert edit.output.startswith("Could not find the exact text")


def test_a_fork_names_its_parent_session() -> None:
    first, fork = _tree_files()
    parent = trajconv.read("pi", first)
    child = trajconv.read("pi", fork)
    assert child.session.parent_session_id == parent.session.id
    assert parent.session.parent_session_id is None
    assert [r.text for r in child.records if r.kind == "user"][-1] == "Is hello.txt empty?"


def test_read_by_home_and_session(tmp_path: Path) -> None:
    _first, fork = _tree_files()
    sid = layout.id_of_file(fork)
    assert trajconv.read("pi", TREE, session=sid).session.id == sid
    with pytest.raises(UsageError):
        trajconv.read("pi", TREE)  # two sessions: pick one
    with pytest.raises(UsageError):
        trajconv.read("pi", TREE, session="0000-not-here")
    bad = tmp_path / "2026-01-01T00-00-00-000Z_x.jsonl"
    bad.write_text('{"type":"message"}\n')
    with pytest.raises(FormatError):
        trajconv.read("pi", bad)


def test_discover_and_claims() -> None:
    codec = registry.get("pi")
    refs = codec.discover(TREE)
    assert sorted(r.session_id for r in refs) == sorted(
        str(layout.id_of_file(p)) for p in _tree_files()
    )
    assert {r.cwd for r in refs} == {"/work/demo"}
    claim = codec.claims(TOOLS)
    assert claim is not None and claim.confidence == CERTAIN and claim.what == "session"
    assert codec.claims(TREE) is not None and codec.claims(TREE).what == "home"  # type: ignore[union-attr]
    assert codec.claims(TOOLS.parent).what == "store"  # type: ignore[union-attr]
    assert codec.claims(FIXTURES / "grok") is None


def test_folder_for_cwd_is_pis_encoding() -> None:
    assert layout.folder_for_cwd("/work/demo") == "--work-demo--"
    assert layout.folder_for_cwd("C:\\Users\\me") == "--C--Users-me--"
    assert layout.file_name("2026-01-01T00:00:00.000Z", "abc") == (
        "2026-01-01T00-00-00-000Z_abc.jsonl"
    )


# -- writer ------------------------------------------------------------------------------


def test_writer_export_tree(tmp_path: Path, snapshot) -> None:
    snap = trajconv.read("pi", TOOLS)
    export = trajconv.write(snap, "pi", tmp_path / "out")
    assert export_tree(export.out_dir) == snapshot
    assert export.resume_argv == ["pi", "--session", snap.session.id]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_round_trip_keeps_the_conversation(path: Path, tmp_path: Path) -> None:
    snap = trajconv.read("pi", path)
    export = trajconv.write(snap, "pi", tmp_path / "out", allow_lossy=True)
    written = next((export.out_dir / "home").glob(".pi/agent/sessions/*/*.jsonl"))
    again = trajconv.read("pi", written)
    assert projection(again, HELD) == projection(snap, HELD)
    assert again.session.cwd == snap.session.cwd
    assert again.session.created_at == snap.session.created_at
    codes = {d.code for d in export.diagnostics}
    # what pi holds but the writer does not write back is named
    if any(r.kind == "system" for r in snap.records):
        assert "untranslated-system" in codes
    if any(r.kind == "observation" for r in snap.records):
        assert "untranslated-observation" in codes
    if snap.session.parent_session_id:
        assert "untranslated-parent-session" in codes
    # the file is one linear chain: its last entry is the leaf pi continues from
    lines = [json.loads(x) for x in written.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == export.session_id
    for before, entry in itertools.pairwise(lines[1:]):
        assert entry["parentId"] == before["id"]


def test_writer_places_the_session_in_the_target_cwds_folder(tmp_path: Path) -> None:
    snap = trajconv.read("pi", TOOLS)
    export = trajconv.write(snap, "pi", tmp_path / "out", cwd="/srv/other")
    files = list((export.out_dir / "home").glob(".pi/agent/sessions/*/*.jsonl"))
    assert [f.parent.name for f in files] == ["--srv-other--"]
    assert json.loads(files[0].read_text().splitlines()[0])["cwd"] == "/srv/other"
    assert "untranslated-cwd" in {d.code for d in export.diagnostics}


def test_prepare_refuses_to_replace_a_session(tmp_path: Path) -> None:
    snap = trajconv.read("pi", TOOLS)
    export = trajconv.write(snap, "pi", tmp_path / "out")
    home = tmp_path / "home"
    (home / ".pi/agent/sessions/--work-demo--").mkdir(parents=True)
    shutil.copy(TOOLS, home / ".pi/agent/sessions/--work-demo--" / TOOLS.name)
    done = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert (home / ".pi/agent/sessions/--work-demo--" / TOOLS.name).read_bytes() == (
        TOOLS.read_bytes()
    )


def test_other_harness_reasoning_and_failures_are_named(tmp_path: Path) -> None:
    src = next(FIXTURES.glob("claude/recorded-tool-failures/.claude/projects/*/*.jsonl"))
    snap = trajconv.read("claude", src)
    export = trajconv.write(snap, "pi", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    failed = sum(1 for r in snap.records if r.kind == "tool-result" and r.result.ok is False)
    assert failed and codes.get("untranslated-tool-status") == failed
    written = next((export.out_dir / "home").glob(".pi/agent/sessions/*/*.jsonl"))
    msgs = [json.loads(x).get("message") or {} for x in written.read_text().splitlines()[1:]]
    assert {m.get("provider") for m in msgs if m.get("role") == "assistant"} == {"claude"}


def test_a_session_without_cwd_is_refused() -> None:
    snap = trajconv.read("pi", TOOLS)
    bare = snap.model_copy(update={"session": snap.session.model_copy(update={"cwd": None})})
    with pytest.raises(RefusedError):
        trajconv.write(bare, "pi", Path("/nonexistent/out"))


def test_own_round_trip_keeps_the_provider(tmp_path: Path) -> None:
    snap = trajconv.read("pi", TOOLS)
    export = trajconv.write(snap, "pi", tmp_path / "out")
    written = next((export.out_dir / "home").glob(".pi/agent/sessions/*/*.jsonl"))
    entries = [json.loads(x) for x in written.read_text().splitlines()[1:]]
    providers = {e.get("provider") or e["message"].get("provider") for e in entries}
    assert providers - {None} == {"trajconv"}  # as the recorded file names it
    assert "defaults-assumed" not in {
        d.code for d in export.diagnostics if "provider" in " ".join(d.samples)
    }


def _line(obj: dict[str, object]) -> str:
    return json.dumps(obj) + "\n"


def test_edge_entries_are_counted_and_the_chain_is_followed(tmp_path: Path) -> None:
    """Entries built from the format facts (README "The file"): what the recordings lack."""
    folder = tmp_path / ".pi/agent/sessions/--work-demo--"
    folder.mkdir(parents=True)
    sid = "01a24d41-0000-7000-8000-000000000001"
    t = "2026-01-01T00:00:0{}.000Z"

    def msg(eid: str, parent: str | None, n: int, message: dict[str, object]) -> str:
        return _line(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": t.format(n),
                "message": message,
            }
        )

    assistant = {"api": "openai-completions", "provider": "p", "model": "m", "stopReason": "stop"}
    text = (
        _line({"type": "session", "version": 3, "id": sid, "timestamp": t.format(0), "cwd": "/w"})
        + msg("u1", None, 1, {"role": "user", "content": "hi"})
        + msg(
            "a1",
            "u1",
            2,
            {
                **assistant,
                "role": "assistant",
                "content": [{"type": "text", "text": "partial"}],
                "stopReason": "aborted",
            },
        )
        + "\n"
        + msg(
            "u2",
            "u1",
            3,
            {
                "role": "user",
                "content": [
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "text", "text": "look"},
                ],
            },
        )
        + _line(
            {
                "type": "label",
                "id": "l1",
                "parentId": "u2",
                "timestamp": t.format(4),
                "targetId": "u2",
                "label": "mark",
            }
        )
        + msg(
            "r0",
            "l1",
            5,
            {
                "role": "toolResult",
                "toolCallId": "nope",
                "toolName": "bash",
                "content": [],
                "isError": False,
            },
        )
        + _line(
            {
                "type": "session_info",
                "id": "s1",
                "parentId": "r0",
                "timestamp": t.format(6),
                "name": "A title",
            }
        )
        + _line({"type": "mystery", "id": "x1", "parentId": "s1", "timestamp": t.format(7)})
        + msg(
            "a2",
            "s1",
            8,
            {
                **assistant,
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "", "thinkingSignature": "reasoning_content"},
                    {"type": "text", "text": "done"},
                ],
            },
        )
        + msg("u1", "a2", 9, {"role": "user", "content": "again"})  # a repeated id
        + '{"type": "message", "id": "torn'
    )
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_text(text)
    snap = trajconv.read("pi", path)
    conservation(snap, count_units(path.read_bytes()))
    assert [(r.kind, getattr(r, "text", None)) for r in snap.records] == [
        ("user", "hi"),
        ("user", "look"),
        ("assistant", "done"),
    ]
    codes = {d.code: d.count for d in snap.diagnostics}
    assert codes["rewound"] == 1  # the aborted answer is on a branch the user left
    assert codes["block-dropped"] == 2  # the image, the empty thinking (beside records)
    assert codes["orphan-tool-result"] == 1
    assert codes["unknown-kind"] == 1  # "mystery"
    assert codes["duplicate-message"] == 1
    assert codes["torn-line"] == 1 and codes["blank-line"] == 1
    assert snap.session.title == "A title" and snap.session.model == "m"


def test_an_aborted_answer_on_the_chain_is_not_projected(tmp_path: Path) -> None:
    folder = tmp_path / "--w--"
    folder.mkdir()
    sid = "01a24d41-0000-7000-8000-000000000002"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "par"}],
                "stopReason": "error",
                "model": "m",
            },
        },
    ]
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_text("".join(_line(x) for x in lines))
    snap = trajconv.read("pi", path)
    assert [r.kind for r in snap.records] == ["user"]
    assert {d.code for d in snap.diagnostics} >= {"aborted-message"}
    conservation(snap, 3)
