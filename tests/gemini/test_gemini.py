"""Gemini CLI codec: reader on hand-made and recorded fixtures, writer, prepare, round trips."""

from __future__ import annotations

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
    merged_projection,
    tiny_session,
)
from trajconv.codecs import registry
from trajconv.codecs.base import continuity
from trajconv.codecs.gemini import layout
from trajconv.codecs.jsonl import count_units
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io

GEMINI = FIXTURES / "gemini"
#: the first file of each case's session (a session resumed in later minutes has more)
FILES = sorted(
    {
        p.parents[4]: p
        for p in sorted(GEMINI.glob("*/.gemini/tmp/*/chats/session-*"), reverse=True)
    }.values()
)
IDS = [p.parents[4].name for p in FILES]
HOLDS = ("user", "assistant", "tool-call", "tool-result", "reasoning")


def _by_case(case: str) -> Path:
    return next(p for p in FILES if p.parents[4].name == case)


def test_fixtures_cover_handmade_legacy_and_recorded_cases() -> None:
    assert {"edited", "legacy", "recorded-tool-failures", "recorded-resume"} <= set(IDS)
    assert "recorded-compress" in IDS


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reader_snapshot(path: Path, snapshot) -> None:
    snap = trajconv.read("gemini", path)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_every_line_is_accounted_for(path: Path) -> None:
    snap = trajconv.read("gemini", path)
    files = layout.files_of(path, snap.source.session_id)  # one per resume minute
    conservation(
        snap, sum(1 if f.suffix == ".json" else count_units(f.read_bytes()) for f in files)
    )


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_reading_never_changes_the_native_home(path: Path) -> None:
    home = path.parents[3]
    before = fingerprint(home)
    trajconv.read("gemini", path)
    assert fingerprint(home) == before


def test_record_kinds_rewind_replace_and_status() -> None:
    snap = trajconv.read("gemini", _by_case("edited"))
    assert [r.kind for r in snap.records] == [
        "user",
        "reasoning",
        "tool-call",
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
        "tool-result",
        "assistant",
        "system",
        "user",
        "reasoning",
        "assistant",
    ]
    results = {r.result.call_id: r.result for r in snap.records if r.kind == "tool-result"}
    assert results["call-ls-1"].ok is True and results["call-ls-1"].output == "notes.txt\nsrc/"
    assert results["call-rd-2"].ok is False
    assert results["call-rd-2"].output == "File not found: missing.txt"
    assert results["call-sh-3"].ok is False  # cancelled
    texts = [r.text for r in snap.records if r.kind == "user"]
    assert texts == ["List the files and read notes.txt", "Summarise notes.txt instead"]
    diags = {d.code: d.count for d in snap.diagnostics}
    assert diags["rewound"] == 2 and diags["duplicate-message"] == 1 and diags["torn-line"] == 1
    assert snap.session.title == "Inspect notes" and snap.session.cwd == "/work/proj2"
    assert snap.session.model == "gemini-2.5-flash"
    assert snap.records[1].text == "**Plan** List then read."


def test_recorded_tool_failures_take_ok_from_status_and_exit_code() -> None:
    snap = trajconv.read("gemini", _by_case("recorded-tool-failures"))
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.ok, r.exit_code) for r in results] == [(True, None), (False, None), (False, 2)]
    assert "File not found" in results[1].output
    # the CLI's second copy of each result (a user message) is counted, not read twice
    diags = {d.code: d.count for d in snap.diagnostics}
    assert diags["repeated-terminal-result"] == 2
    # ... and each result in it, since the CLI replays that copy to the model on resume
    assert diags["repeated-result-replayed"] == 3
    assert [r.kind for r in snap.records].count("system") == 1  # the <session_context>


def test_a_failing_shell_command_is_written_as_the_cli_records_it(tmp_path: Path) -> None:
    """A shell result whose output says its exit code is a ``success`` with that output (as
    the CLI records and replays it); any other failure is an ``error`` response."""
    _snap, out = _convert(_by_case("recorded-tool-failures"), tmp_path / "out")
    written = next((out / "home/.gemini/tmp").glob("*/chats/session-*.jsonl"))
    calls = [
        call
        for line in written.read_text(encoding="utf-8").splitlines()
        for call in json.loads(line).get("toolCalls", [])
    ]
    shown = [
        (c["name"], c["status"], *c["result"][0]["functionResponse"]["response"]) for c in calls
    ]
    assert shown == [
        ("list_directory", "success", "output"),
        ("read_file", "error", "error"),
        ("run_shell_command", "success", "output"),
    ]
    again = [r.result for r in trajconv.read("gemini", written).records if r.kind == "tool-result"]
    assert [(r.ok, r.exit_code) for r in again] == [(True, None), (False, None), (False, 2)]


def test_recorded_resume_reads_the_rewritten_history_once() -> None:
    snap = trajconv.read("gemini", _by_case("recorded-resume"))
    user = [r.text for r in snap.records if r.kind == "user"]
    assert user == ["What does notes.txt say?", "And how many words is that?"]
    assert [r.kind for r in snap.records].count("tool-result") == 1
    assert not continuity(snap).pending and not continuity(snap).orphans


def test_project_hash_and_slug_as_the_cli_computes_them() -> None:
    path = _by_case("recorded-tool-failures")
    first = json.loads(path.read_text().splitlines()[0])
    assert first["projectHash"] == layout.project_hash("/work/demo")
    assert path.parents[1].name == layout.slugify("/work/demo") == "demo"
    assert layout.slugify("/x/My Project__v2!") == "my-project-v2"
    assert layout.slugify("/") == "project"


def test_legacy_hash_folder_finds_its_cwd_through_the_registry() -> None:
    snap = trajconv.read("gemini", _by_case("legacy"))
    assert snap.session.cwd == "/work/legacy"
    assert [r.kind for r in snap.records] == [
        "user",
        "assistant",
        "tool-call",
        "tool-result",
        "assistant",
    ]


@pytest.mark.parametrize("which", ["user home", ".gemini"])
def test_discover_takes_a_user_home_or_the_gemini_folder(which: str) -> None:
    home = GEMINI / "edited"
    refs = trajconv.discover("gemini", home if which == "user home" else home / ".gemini")
    assert [(r.session_id, r.cwd) for r in refs] == [
        ("5b0c2f4e-8d1a-4c3e-9f6b-1a2b3c4d5e6f", "/work/proj2")
    ]
    # title and last update come from the tail's $set lines, as the session ends
    assert (refs[0].title, refs[0].updated_at) == ("Inspect notes", "2026-11-30T03:12:12.000Z")


def test_a_home_of_one_session_is_read_and_of_several_lists_their_ids(tmp_path: Path) -> None:
    home = GEMINI / "edited"
    snap = trajconv.read("gemini", home, session="5b0c2f4e-8d1a-4c3e-9f6b-1a2b3c4d5e6f")
    assert snap.session.title == "Inspect notes"
    assert trajconv.read("gemini", home).id == snap.id  # the one session it holds
    both = tmp_path / "both"
    for case in ("edited", "recorded-resume"):
        shutil.copytree(GEMINI / case / ".gemini", both / ".gemini", dirs_exist_ok=True)
    with pytest.raises(UsageError, match="holds 2 sessions") as err:
        trajconv.read("gemini", both)
    assert "5b0c2f4e-8d1a-4c3e-9f6b-1a2b3c4d5e6f" in str(err.value)
    chats = _by_case("edited").parent  # a project's chats/ folder with one session
    assert trajconv.read("gemini", chats).id == snap.id
    bad = tmp_path / "session-2026-01-01T00-00-aaaaaaaa.jsonl"
    bad.write_text('{"id": "x", "type": "user"}\n')
    with pytest.raises(FormatError, match="no sessionId") as err:
        trajconv.read("gemini", bad)
    assert str(bad) in str(err.value)


def _convert(src: Path, out: Path, **options: object) -> tuple[object, Path]:
    snap, export = trajconv.convert("gemini", "gemini", src, out, **options)
    return snap, export.out_dir


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_round_trip_keeps_every_record_the_format_holds(path: Path, tmp_path: Path) -> None:
    snap, export = trajconv.convert("gemini", "gemini", path, tmp_path / "out", allow_lossy=True)
    written = next((export.out_dir / "home/.gemini/tmp").glob("*/chats/session-*.jsonl"))
    again = trajconv.read("gemini", written)
    found = continuity(snap)
    drop = set(found.pending) | set(found.orphans)
    kept = snap.model_copy(update={"records": tuple(r for r in snap.records if r.id not in drop)})
    assert merged_projection(again, HOLDS) == merged_projection(kept, HOLDS)
    diags = {d.code: d.count for d in export.diagnostics}
    dropped = [r for r in snap.records if r.kind == "system" and "<state_snapshot>" not in r.text]
    assert diags.get("untranslated-system", 0) == len(dropped)
    assert again.session.cwd == snap.session.cwd and again.session.title == snap.session.title
    assert again.session.id == snap.session.id


def test_export_tree_snapshot(tmp_path: Path, snapshot) -> None:
    _snap, out = _convert(_by_case("edited"), tmp_path / "out")
    assert export_tree(out) == snapshot


def _prepare(out: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_prepare_uses_the_homes_project_folder_and_never_replaces(tmp_path: Path) -> None:
    _snap, out = _convert(_by_case("edited"), tmp_path / "out")
    home = tmp_path / "home"
    gemini = home / ".gemini"
    # the user already ran gemini in /work/proj2, whose folder got the slug proj2-1
    (gemini / "tmp" / "proj2").mkdir(parents=True)
    (gemini / "tmp" / "proj2" / ".project_root").write_text("/elsewhere/proj2")
    (gemini / "tmp" / "proj2-1").mkdir()
    (gemini / "tmp" / "proj2-1" / ".project_root").write_text("/work/proj2")
    registry = '{"projects": {"/elsewhere/proj2": "proj2", "/work/proj2": "proj2-1"}}'
    (gemini / "projects.json").write_text(registry)
    dry = _prepare(out, home, "--dry-run")
    assert dry.returncode == 0 and not (gemini / "tmp/proj2-1/chats").exists()
    done = _prepare(out, home)
    assert done.returncode == 0, done.stderr
    installed = list((gemini / "tmp/proj2-1/chats").glob("session-*-5b0c2f4e.jsonl"))
    assert len(installed) == 1
    assert (gemini / "tmp/proj2/.project_root").read_text() == "/elsewhere/proj2"
    assert (gemini / "projects.json").read_text() == registry
    assert "gemini --resume 5b0c2f4e-8d1a-4c3e-9f6b-1a2b3c4d5e6f" in done.stdout
    assert "sessionRetention" in done.stderr  # the cleanup warning
    again = _prepare(out, home)
    assert again.returncode == 3 and "refusing" in again.stderr


def test_prepare_claims_a_free_folder_in_a_fresh_home(tmp_path: Path) -> None:
    _snap, out = _convert(_by_case("edited"), tmp_path / "out")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    settings = {"general": {"sessionRetention": {"enabled": False}}}
    (home / ".gemini/settings.json").write_text(json.dumps(settings))
    done = _prepare(out, home)
    assert done.returncode == 0 and "sessionRetention" not in done.stderr
    assert (home / ".gemini/tmp/proj2/.project_root").read_text() == "/work/proj2"
    assert len(list((home / ".gemini/tmp/proj2/chats").iterdir())) == 1


def test_writer_refuses_without_cwd_or_user_message(tmp_path: Path) -> None:
    snap = trajconv.read("gemini", _by_case("edited"))
    no_cwd = snap.model_copy(update={"session": snap.session.model_copy(update={"cwd": None})})
    with pytest.raises(RefusedError, match="cwd"):
        trajconv.write(no_cwd, "gemini", tmp_path / "a")
    only_ai = snap.model_copy(
        update={"records": tuple(r for r in snap.records if r.kind == "assistant")}
    )
    with pytest.raises(RefusedError, match="no user message"):
        trajconv.write(only_ai, "gemini", tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_session_split_over_two_files_reads_the_one_the_cli_resumes(tmp_path: Path) -> None:
    """Two files of one session that both hold conversation: the CLI resumes the one last
    updated (here the second, whose history rewrite holds the whole conversation), from
    whichever file is named; the other's lines are counted, its bytes kept."""
    source = _by_case("recorded-resume")
    whole = trajconv.read("gemini", source)
    lines = source.read_bytes().splitlines(keepends=True)
    home = tmp_path / "home"
    chats = home / ".gemini/tmp/demo/chats"
    chats.mkdir(parents=True)
    (home / ".gemini/tmp/demo/.project_root").write_text("/work/demo")
    first = chats / source.name
    second = chats / source.name.replace("T18-58-", "T18-59-")
    first.write_bytes(b"".join(lines[:11]))
    second.write_bytes(b"".join(lines[11:]))
    for path in (first, second):
        split = trajconv.read("gemini", path)
        assert merged_projection(split, HOLDS) == merged_projection(whole, HOLDS)
        conservation(split, len(lines))
        assert [a.name for a in split.artifacts if a.name.startswith("chats/")] == [
            f"chats/{first.name}",
            f"chats/{second.name}",
        ]
    refs = trajconv.discover("gemini", home)
    assert len(refs) == 1 and refs[0].size == len(b"".join(lines))


MINUTES = sorted(GEMINI.glob("recorded-resume-minutes/.gemini/tmp/*/chats/session-*"))


@pytest.mark.parametrize("named", range(3))
def test_a_session_resumed_in_later_minutes_reads_the_conversation(named: int) -> None:
    """Recorded: 0.61.0 resumed in a new minute writes a second file holding only its
    metadata and the ``<session_context>`` history (``$set.messages``), and goes on writing
    to the file it resumed. Read from any of the three files, the session is what the CLI
    sent its model on the compressed turn (request 7 of the fixture's README): the context,
    the summary, the acknowledgement and the turns kept after it."""
    assert len(MINUTES) == 3
    snap = trajconv.read("gemini", MINUTES[named])
    seen = [(r.kind, (getattr(r, "text", None) or "").split("\n")[0]) for r in snap.records]
    assert seen == [
        ("system", "<session_context>"),
        ("system", "<state_snapshot>"),
        ("assistant", "Got it. Thanks for the additional context!"),
        ("user", "Which line comes first?"),
        ("assistant", "alpha comes first."),
        ("user", "Now list the folder."),
        ("assistant", "Listing."),
        ("tool-call", ""),
        ("tool-result", ""),
        ("assistant", "The folder holds notes.txt."),
    ]
    assert "alpha, beta" in (snap.records[1].text or "")  # the first turn, summarised
    diags = {d.code: d for d in snap.diagnostics}
    assert diags["not-resumed-file"].count == 4  # two lines in each later file
    assert {s.split(":")[0] for s in diags["not-resumed-file"].samples} == {
        f"chats/{MINUTES[1].name}",
        f"chats/{MINUTES[2].name}",
    }
    assert [a.name for a in snap.artifacts if a.name.startswith("chats/")] == [
        f"chats/{p.name}" for p in MINUTES
    ]
    assert snap.session.created_at == "2026-12-06T21:34:35.336Z"
    assert snap.session.updated_at == "2026-12-06T21:36:11.605Z"
    assert snap.source.locator.endswith(MINUTES[0].name)
    refs = trajconv.discover("gemini", MINUTES[0].parents[4])
    assert [(r.session_id, r.updated_at) for r in refs] == [
        (snap.source.session_id, "2026-12-06T21:36:11.605Z")
    ]


def test_a_session_resumed_in_later_minutes_converts_with_its_conversation(
    tmp_path: Path,
) -> None:
    """Every target gets the conversation, not one system record (issue 33)."""
    from trajconv.parity import _reread

    snap = trajconv.read("gemini", MINUTES[-1])
    for target in ("claude", "codex", "opencode", "gemini"):
        export = trajconv.write(snap, target, tmp_path / target)
        again = _reread(registry.get(target), export.out_dir, export.session_id)
        users = [r.text for r in again.records if r.kind == "user"]
        assert "Now list the folder." in users, target
        assert any(r.kind == "tool-call" for r in again.records), target


def test_a_subagent_session_names_its_parent(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini/tmp/demo/chats"
    sub = chats / "37ca2d5b-de8f-4d44-acc4-a8313cabc856"
    sub.mkdir(parents=True)
    (tmp_path / ".gemini/tmp/demo/.project_root").write_text("/work/demo")
    meta = {"sessionId": "child-1", "projectHash": "x", "startTime": "2026-01-01T00:00:00Z"}
    msg = {"id": "m1", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "go"}
    (sub / "child-1.jsonl").write_text(
        json.dumps({**meta, "kind": "subagent"}) + "\n" + json.dumps(msg) + "\n"
    )
    snap = trajconv.read("gemini", sub / "child-1.jsonl")
    assert snap.session.parent_session_id == "37ca2d5b-de8f-4d44-acc4-a8313cabc856"
    assert snap.session.cwd == "/work/demo" and [r.text for r in snap.records] == ["go"]
    assert trajconv.discover("gemini", tmp_path) == []


def test_prepare_refuses_a_session_the_cli_cleanup_would_delete(tmp_path: Path) -> None:
    """The legacy fixture's lastUpdated is 2025-06-01: older than the default 30 days."""
    _snap, out = trajconv.convert(
        "gemini", "gemini", _by_case("legacy"), tmp_path / "out", cwd=str(tmp_path / "p")
    )
    home = tmp_path / "home"
    refused = _prepare(out.out_dir, home)
    assert refused.returncode == 3 and "--touch" in refused.stderr
    assert not (home / ".gemini/tmp").exists()
    done = _prepare(out.out_dir, home, "--touch")
    assert done.returncode == 0, done.stderr
    installed = next((home / ".gemini/tmp/p/chats").glob("session-*.jsonl"))
    exported = next((out.out_dir / "home/.gemini/tmp/p/chats").glob("session-*.jsonl"))
    lines = installed.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[:-1]) == exported.read_bytes()
    stamp = json.loads(lines[-1])["$set"]["lastUpdated"]
    assert stamp > "2026" and trajconv.read("gemini", installed).session.updated_at == stamp
    off = tmp_path / "off"
    (off / ".gemini").mkdir(parents=True)
    settings = {"general": {"sessionRetention": {"enabled": False}}}
    (off / ".gemini/settings.json").write_text(json.dumps(settings))
    assert _prepare(out.out_dir, off).returncode == 0  # nothing to fear: installed unchanged


def test_recorded_compression_keeps_the_summary_and_the_kept_turns(tmp_path: Path) -> None:
    snap = trajconv.read("gemini", _by_case("recorded-compress"))
    systems = [r.text for r in snap.records if r.kind == "system"]
    assert systems[1].startswith("<state_snapshot>") and "listing of the folder" in systems[1]
    # the first turn was compressed away; the summary, the CLI's acknowledgement and the
    # kept turn follow, under the new ids the rewrite gave them
    assert [r.text for r in snap.records if r.kind == "user"] == ["Now list the folder."]
    assert [r.kind for r in snap.records][2:] == [
        "assistant",
        "user",
        "assistant",
        "tool-call",
        "tool-result",
        "assistant",
    ]
    diags = {d.code: d.count for d in snap.diagnostics}
    assert diags["compaction-state"] >= 4  # the three rewrites and the compressed messages
    out = trajconv.write(snap, "gemini", tmp_path / "out").out_dir
    again = trajconv.read("gemini", next(out.glob("home/.gemini/tmp/*/chats/session-*.jsonl")))
    # written back as the user message the CLI replays (the old session context is not)
    assert [r.text for r in again.records if r.kind == "system"] == [systems[1]]
    assert [r.text for r in again.records if r.kind == "user"] == ["Now list the folder."]


def test_the_writer_names_every_session_and_record_fact_it_changes(tmp_path: Path) -> None:
    """A session with a branch and a parent, untimed records, answers without a model and an
    answer of another model joined into one message: each change the re-read shows is named
    (the fact check of ``tests/core/test_fact_conservation.py``)."""
    from tests.core.test_fact_conservation import fact_losses
    from trajconv.parity import _reread
    from trajconv.snapshot.models import Snapshot

    data = json.loads(io.dumps(trajconv.read("gemini", _by_case("recorded-tool-failures"))))
    data["session"].update(branch="main", parent_session_id="p-1", created_at=None)
    records = data["records"]
    answers = [r for r in records if r["kind"] in ("assistant", "reasoning")]
    answers[0]["model"], answers[1]["model"] = "other-model", None
    for rec in records[2:5]:
        rec["time"] = None
    call = next(r for r in records if r["kind"] == "tool-call")
    call["time"] = "2026-12-01T18:56:59.000Z"  # after the text that opens its message
    snap = Snapshot.model_validate(data)
    export = trajconv.write(snap, "gemini", tmp_path / "out", allow_lossy=True)
    need, seen = fact_losses(snap, _reread(registry.get("gemini"), export.out_dir, snap.session.id))
    assert {"untranslated-branch", "untranslated-parent-session", "untranslated-time"} <= set(
        need
    ), seen
    assert {"timestamps-synthesized", "untranslated-model"} & set(need), seen
    got = {d.code: d.count for d in export.diagnostics}
    assert all(got.get(code, 0) >= n for code, n in need.items()), (need, got, seen)


def test_a_prompt_the_cli_takes_for_a_command_is_named(tmp_path: Path) -> None:
    """Gemini CLI neither replays nor lists a user text opening with ``/`` or ``?`` as a
    prompt (an Aider ``/run`` is one): written, read back without it, and named."""
    snap = tiny_session(
        ("user", "hi"), ("assistant", "Hello."), ("user", "/run make"), ("user", "go on")
    )
    export = trajconv.write(snap, "gemini", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes.get("user-read-as-command") == 1
    again = trajconv.read("gemini", next((tmp_path / "out").rglob("session-*.jsonl")))
    assert [r.text for r in again.records if r.kind == "user"] == ["hi", "go on"]
