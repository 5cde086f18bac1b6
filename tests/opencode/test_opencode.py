"""OpenCode codec: reader on the fixtures, discover, writer, round trips (no real CLI here)."""

from __future__ import annotations

import json
import shutil
import sqlite3
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
    projection,
    tiny_session,
)
from tests.opencode.support import CASES, IDS, LEGACY, ROOTS, SUB_DB, TOOLS_DB, units
from trajconv.codecs.opencode import layout, writer
from trajconv.errors import FormatError, RefusedError, UsageError
from trajconv.snapshot import io

HELD = ("user", "assistant", "reasoning", "tool-call", "tool-result")


def read(path: Path, session: str | None = None) -> trajconv.Snapshot:
    return trajconv.read("opencode", path, session=session)


# -- reader ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "path", "sid"), CASES, ids=IDS)
def test_reader_snapshot(name: str, path: Path, sid: str, snapshot) -> None:
    snap = read(path, sid)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize(("name", "path", "sid"), CASES, ids=IDS)
def test_every_part_is_accounted_for(name: str, path: Path, sid: str) -> None:
    # its child sessions are read with it, as its children: their parts are its units too
    snap = read(path, sid)
    conservation(snap, units(path, sid) + sum(units(path, c.session.id) for c in snap.children))


@pytest.mark.parametrize(("name", "path", "sid"), CASES, ids=IDS)
def test_reading_never_changes_the_store(name: str, path: Path, sid: str) -> None:
    root = path.parent if path.is_file() else path
    before = fingerprint(root)
    first = io.dumps(read(path, sid))
    assert io.dumps(read(path, sid)) == first
    assert fingerprint(root) == before


def test_tampering_fails_verification() -> None:
    doc = json.loads(io.dumps(read(TOOLS_DB)))
    user = next(r for r in doc["records"] if r["kind"] == "user")
    user["text"] = "something else"
    assert not io.verify_document(doc).ok


def test_recorded_tools_rules() -> None:
    snap = read(TOOLS_DB)
    kinds = [r.kind for r in snap.records]
    # the three calls of one step come before their results, as OpenCode sends them
    assert kinds[:9] == ["user", "reasoning", *["tool-call"] * 3, *["tool-result"] * 3, "assistant"]
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.ok, r.exit_code) for r in results] == [
        (True, 0),
        (False, None),
        (False, 2),
        (True, None),
    ]
    assert results[1].output.startswith("File not found: /work/demo/missing.txt")
    assert snap.records[0].text.startswith('"List the files')  # `opencode run` quotes the prompt
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    assert snap.records[1].model == "trajconv/scripted"
    assert snap.session.title == "List files and read a missing one"
    assert snap.session.cwd == "/work/demo"
    assert snap.source.harness_version == "1.18.33"
    assert snap.diagnostic_count("lifecycle-dropped") == 8  # step-start/finish of 4 steps


def test_sub_session_is_linked_both_ways() -> None:
    con = sqlite3.connect(f"file:{SUB_DB}?mode=ro", uri=True)
    root, child = (
        r[0] for r in con.execute("select id from session order by parent_id nulls first")
    )
    con.close()
    parent = read(SUB_DB, root)
    sub = read(SUB_DB, child)
    assert sub.session.parent_session_id == root
    assert parent.session.parent_session_id is None
    children = next(a for a in parent.artifacts if a.name == "children.json")
    assert json.loads(children.read() or b"") == [child]
    task = next(r for r in parent.records if r.kind == "tool-call")
    assert task.call.name == "task"
    assert child in next(r for r in parent.records if r.kind == "tool-result").result.output


def test_legacy_rules() -> None:
    snap = read(LEGACY, "ses_dd60ed7ffffeKy9Pf34qY6Nb3w")
    kinds = [r.kind for r in snap.records]
    assert kinds.count("system") == 2  # the synthetic text and the APIError message
    assert "APIError: Overloaded" in [r.text for r in snap.records if r.kind == "system"]
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    bash = next(r for r in results if r.call_id == "toolu_03")
    assert (bash.ok, bash.exit_code) == (False, 1)  # completed, but exit 1
    for code in ("pending-tool-call", "invalid-line", "unknown-kind", "compaction-state",
                 "non-text-content"):  # fmt: skip
        assert snap.diagnostic_count(code) == 1, code
    invalid = next(d for d in snap.diagnostics if d.code == "invalid-line")
    assert invalid.samples[0].startswith("part/msg_229f12be0003")  # names the file


def test_wal_database_is_read_from_a_copy(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(TOOLS_DB, db)
    writer_con = sqlite3.connect(db)
    writer_con.execute("pragma journal_mode=wal")
    writer_con.execute("pragma wal_autocheckpoint=0")
    writer_con.execute("update session set title = 'Renamed in the WAL'")
    writer_con.commit()  # the change lives only in opencode.db-wal while this stays open
    try:
        assert (tmp_path / "opencode.db-wal").stat().st_size > 0
        before = fingerprint(tmp_path)
        snap = read(db)
        assert snap.session.title == "Renamed in the WAL"
        assert fingerprint(tmp_path) == before
    finally:
        writer_con.close()


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="pick one with --session"):
        read(SUB_DB)
    with pytest.raises(UsageError, match="no opencode session 'ses_nope'"):  # exit 2
        read(LEGACY, "ses_nope")
    junk = tmp_path / "opencode.db"
    junk.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(FormatError, match=r"opencode\.db"):
        read(junk)
    doc = tmp_path / "x.json"
    doc.write_text("{}")
    with pytest.raises(FormatError, match="not an opencode export document"):
        read(doc)


# -- discover ----------------------------------------------------------------------------


def test_discover_takes_a_home_or_the_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "home" / layout.DATA_REL
    data.mkdir(parents=True)
    shutil.copy(SUB_DB, data / layout.DB)
    shutil.copytree(LEGACY / "storage", data / "storage")
    by_home = trajconv.discover("opencode", tmp_path / "home")
    by_data = trajconv.discover("opencode", data)
    assert [r.session_id for r in by_home] == [r.session_id for r in by_data]
    assert len(by_home) == 4
    titles = {r.title for r in by_home}
    assert {"Delegate a count to a sub-agent", "Read notes, fix a bug"} <= titles
    assert all(r.cwd == "/work/demo" for r in by_home)
    assert trajconv.discover("opencode", tmp_path / "nothing-here") == []


# -- writer ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "path", "sid"), ROOTS, ids=[c[0] for c in ROOTS])
def test_writer_export(name: str, path: Path, sid: str, tmp_path: Path, snapshot) -> None:
    snap, export = trajconv.convert(
        "opencode", "opencode", path, tmp_path / "out", session=sid, allow_lossy=True
    )
    tree = export_tree(export.out_dir)
    assert tree == snapshot
    # the document reads back with the same conversation
    back = read(export.out_dir / writer.DOCUMENT)
    assert projection(back, HELD) == [
        p for p in projection(snap, HELD) if not (p[0] == "tool-call" and p[1] == "toolu_05")
    ]
    assert back.session.id == snap.session.id  # an OpenCode id is kept
    assert back.session.title == snap.session.title


@pytest.mark.parametrize(
    ("harness", "rel", "journal"),
    [
        ("grok", "grok/recorded-tool-failures", "updates.jsonl"),
        ("copilot", "copilot/multi-turn", "events.jsonl"),
    ],
)
def test_other_harnesses_round_trip(harness: str, rel: str, journal: str, tmp_path: Path) -> None:
    path = sorted((FIXTURES / rel).rglob(journal))[0]
    snap, export = trajconv.convert(harness, "opencode", path, tmp_path / "out", allow_lossy=True)
    back = read(export.out_dir / writer.DOCUMENT)
    # OpenCode reads a non-zero exit as a failure: an exit code that contradicts the success
    # flag is left out of the file (the code also names codes kept but not sent to the model)
    lost = {
        r.id
        for r in snap.records
        if r.kind == "tool-result"
        and r.result.exit_code is not None
        and (r.result.exit_code == 0) == (r.result.ok is False)
    }
    named = {s for d in export.diagnostics if d.code == "untranslated-exit-code" for s in d.samples}
    assert lost <= named
    expected = [
        (*p[:4], None) if p[0] == "tool-result" and r.id in lost else p
        for p, r in zip(projection(snap), snap.records, strict=True)
        if p[0] in HELD
    ]
    assert projection(back, HELD) == expected
    codes = {d.code for d in export.diagnostics}
    assert "ids-derived" in codes
    assert back.session.id.startswith("ses_")
    doc = json.loads((export.out_dir / writer.DOCUMENT).read_text())
    ids = [p["id"] for m in doc["messages"] for p in m["parts"]]
    assert ids == sorted(ids)  # OpenCode reads parts in id order
    mids = [m["info"]["id"] for m in doc["messages"]]
    assert mids == sorted(mids)


def test_what_the_continuing_model_is_not_sent_is_named(tmp_path: Path) -> None:
    """Another harness's reasoning, failure flags and hidden exit codes stay in the file but
    reach the model continuing in OpenCode otherwise: each is named once; an OpenCode source
    names none of them (its text is what its model was sent)."""
    path = sorted((FIXTURES / "copilot" / "multi-turn").rglob("events.jsonl"))[0]
    snap, export = trajconv.convert("copilot", "opencode", path, tmp_path / "a", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    reasoning = [r for r in snap.records if r.kind == "reasoning" and r.text.strip()]
    failed = [r for r in snap.records if r.kind == "tool-result" and r.result.ok is False]
    assert reasoning and failed
    assert codes.get("reasoning-as-text") == len(reasoning)
    assert codes.get("untranslated-tool-status") == len(failed)
    back = read(export.out_dir / writer.DOCUMENT)
    assert back.session.updated_at == snap.session.updated_at  # kept, not recomputed
    assert codes.get("untranslated-model") == 1 + sum(
        1 for r in snap.records if r.kind in ("assistant", "reasoning") and r.model
    )  # a bare model name gets the source harness as provider: copilot/<model>
    own = trajconv.write(read(TOOLS_DB), "opencode", tmp_path / "b", cwd=str(tmp_path))
    own_codes = {d.code for d in own.diagnostics}
    assert not own_codes & {"reasoning-as-text", "untranslated-tool-status", "untranslated-model"}


def test_writer_refuses_without_cwd_and_unfinished_turns(tmp_path: Path) -> None:
    snap = read(LEGACY, "ses_dd60ed7ffffeKy9Pf34qY6Nb3w")
    with pytest.raises(RefusedError, match="unfinished"):
        trajconv.write(snap, "opencode", tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_prepare_refuses_to_replace_and_dry_runs(tmp_path: Path) -> None:
    snap = read(TOOLS_DB)
    export = trajconv.write(snap, "opencode", tmp_path / "out", cwd=str(tmp_path))
    home = tmp_path / "home"
    data = home / layout.DATA_REL
    data.mkdir(parents=True)
    shutil.copy(TOOLS_DB, data / layout.DB)  # the same session is already there
    prepare = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)]
    before = fingerprint(home)
    proc = subprocess.run(prepare, capture_output=True, text=True, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "refusing to replace existing session" in proc.stderr
    assert fingerprint(home) == before
    (data / layout.DB).unlink()
    proc = subprocess.run([*prepare, "--dry-run", "--opencode", "/bin/true"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "dry run: nothing written" in proc.stdout
    assert not any(data.iterdir())
    # a changed document is refused before anything runs
    doc = export.out_dir / writer.DOCUMENT
    doc.write_text(doc.read_text().replace("remember", "forget"))
    proc = subprocess.run(prepare, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "sha256" in proc.stderr


def test_request_items_reads_a_chat_completions_body() -> None:
    from proof.loaders.opencode import request_items

    body = {
        "messages": [
            {"role": "system", "content": "You are opencode."},
            {"role": "user", "content": [{"type": "text", "text": "List"}]},
            {"role": "assistant", "content": "", "reasoning_content": "Plan.",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "bash", "arguments": '{"command":"ls"}'}},
                            {"id": "c2", "type": "function",
                             "function": {"name": "read", "arguments": "not json"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt\n"},
            {"role": "tool", "tool_call_id": "c2", "content": "File not found"},
            {"role": "assistant", "content": "Done."},
        ]
    }  # fmt: skip
    assert request_items(body) == [
        {"kind": "system", "text": "You are opencode."},
        {"kind": "user", "text": "List"},
        {"kind": "reasoning", "text": "Plan."},
        {"kind": "tool-call", "name": "bash", "arguments": {"command": "ls"}, "id": "c1"},
        {"kind": "tool-call", "name": "read", "arguments": {"_raw": "not json"}, "id": "c2"},
        {"kind": "tool-result", "call_id": "c1", "text": "a.txt\n", "error": None},
        {"kind": "tool-result", "call_id": "c2", "text": "File not found", "error": None},
        {"kind": "assistant", "text": "Done."},
    ]


def test_two_texts_of_one_step_are_named_as_joined(tmp_path: Path) -> None:
    """Two answers with only dropped records between them are two text parts of one step,
    read back apart, but the CLI sends them to the model as one text."""
    snap = tiny_session(
        ("user", "hi"), ("assistant", "One."), ("system", "s"), ("assistant", "Two.")
    )
    export = trajconv.write(snap, "opencode", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes.get("untranslated-message-boundary") == 1
    again = trajconv.read("opencode", tmp_path / "out" / "opencode-export.json")
    assert [r.text for r in again.records if r.kind == "assistant"] == ["One.", "Two."]
