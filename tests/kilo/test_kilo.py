"""Kilo codec: reader on the recorded fixtures, discover, detection, writer, round trips
(no real CLI here; ``test_kilo_loader.py`` runs it)."""

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
from tests.opencode.support import units
from trajconv.codecs import registry
from trajconv.codecs.base import CERTAIN, LIKELY
from trajconv.codecs.kilo import layout, writer
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot import io

KILO = FIXTURES / "kilo"
TOOLS_DB = KILO / "recorded-tools" / layout.DB
SUB_DB = KILO / "recorded-subagent" / layout.DB
HELD = ("user", "assistant", "reasoning", "tool-call", "tool-result")


def _sessions(db: Path) -> list[tuple[str, str | None]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(r[0], r[1]) for r in con.execute("select id, parent_id from session order by id")]
    finally:
        con.close()


CASES = [
    (f"{db.parent.name}-{'child' if parent else 'root'}", db, sid)
    for db in (TOOLS_DB, SUB_DB)
    for sid, parent in _sessions(db)
]
IDS = [c[0] for c in CASES]
ROOT, CHILD = (sid for sid, _ in sorted(_sessions(SUB_DB), key=lambda s: s[1] is not None))


def read(path: Path, session: str | None = None) -> trajconv.Snapshot:
    return trajconv.read("kilo", path, session=session)


# -- reader ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "path", "sid"), CASES, ids=IDS)
def test_reader_snapshot(name: str, path: Path, sid: str, snapshot) -> None:
    snap = read(path, sid)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize(("name", "path", "sid"), CASES, ids=IDS)
def test_every_part_is_accounted_for_and_the_store_is_untouched(
    name: str, path: Path, sid: str
) -> None:
    before = fingerprint(path.parent)
    snap = read(path, sid)
    conservation(snap, units(path, sid) + sum(units(path, c.session.id) for c in snap.children))
    assert io.dumps(read(path, sid)) == io.dumps(snap)
    assert fingerprint(path.parent) == before


def test_tampering_fails_verification() -> None:
    doc = json.loads(io.dumps(read(TOOLS_DB)))
    result = next(r for r in doc["records"] if r["kind"] == "tool-result")["result"]
    result["ok"] = not result["ok"]
    assert io.verify_document(doc).ok is False


def test_recorded_tools_rules() -> None:
    snap = read(TOOLS_DB)
    kinds = [r.kind for r in snap.records]
    # the three calls of one step come before their results, as Kilo sends them
    assert kinds[:9] == ["user", "reasoning", *["tool-call"] * 3, *["tool-result"] * 3, "assistant"]
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.ok, r.exit_code) for r in results] == [
        (True, 0),  # ls
        (False, None),  # read of a missing file: the error state
        (False, 2),  # ls nope: completed, exit 2
        (True, None),  # glob (ripgrep)
        (True, None),  # read
    ]
    assert results[1].output == "File not found: /work/demo/missing.txt"
    assert results[3].output == "/work/demo/notes.txt"
    assert snap.records[0].text == (
        '"List the files, read missing.txt and try ls on a folder that does not exist"'
    )  # `kilo run` stores (and sends) a prompt with spaces in double quotes
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    assert {r.model for r in snap.records if r.kind in ("assistant", "reasoning")} == {
        "trajconv/scripted"
    }
    assert snap.records[0].id.startswith("kilo:prt_")
    assert snap.source.harness == "kilo" and snap.source.harness_version == "7.7.7"
    assert snap.source.locator == f"kilo.db#{snap.session.id}"
    assert (snap.session.title, snap.session.cwd) == ("List files and read a missing one",
                                                      "/work/demo")  # fmt: skip
    assert snap.diagnostic_count("lifecycle-dropped") == 10  # step-start/finish of 5 steps
    # Kilo sends each user message with an <environment_details> block it makes per request
    assert snap.diagnostic_count("context-not-projected") == 2


def test_child_session_is_linked_both_ways() -> None:
    parent, child = read(SUB_DB, ROOT), read(SUB_DB, CHILD)
    assert child.session.parent_session_id == ROOT
    assert parent.session.parent_session_id is None
    children = next(a for a in parent.artifacts if a.name == "children.json")
    assert json.loads(children.read() or b"") == [CHILD]
    task = next(r for r in parent.records if r.kind == "tool-call")
    assert (task.call.name, task.call.arguments["subagent_type"]) == ("task", "general")
    result = next(r for r in parent.records if r.kind == "tool-result").result
    assert f'<task id="{CHILD}" state="completed">' in result.output
    # the child's prompt came from the task tool, not `kilo run`: not quoted
    assert child.records[0].text == "Count the .txt files in the current folder"
    bash = next(r.result for r in child.records if r.kind == "tool-result")
    assert (bash.ok, bash.exit_code) == (False, 2)
    assert child.session.title == "Count txt files (@general subagent)"
    # the parent's Snapshot holds the child as a sub-agent of the task call
    (kid,) = parent.children
    assert (kid.session.id, kid.parent_call_id) == (CHILD, "call_task_1")
    assert [r.kind for r in kid.records] == [r.kind for r in child.records]


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="pick one with --session"):
        read(SUB_DB)
    with pytest.raises(UsageError, match="no kilo session 'ses_nope'"):  # exit 2
        read(KILO / "recorded-tools", "ses_nope")
    junk = tmp_path / "kilo.db"
    junk.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(FormatError, match=r"kilo\.db"):
        read(junk)
    doc = tmp_path / "x.json"
    doc.write_text("{}")
    with pytest.raises(FormatError, match="not a kilo export document"):
        read(doc)


# -- discover and detection --------------------------------------------------------------


def test_discover_takes_a_home_or_the_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "home" / layout.DATA_REL
    data.mkdir(parents=True)
    shutil.copy(SUB_DB, data / layout.DB)
    by_home = trajconv.discover("kilo", tmp_path / "home")
    assert [r.session_id for r in by_home] == [ROOT, CHILD]  # newest first
    assert [r.session_id for r in trajconv.discover("kilo", data)] == [ROOT, CHILD]
    assert {r.cwd for r in by_home} == {"/work/demo"}
    assert trajconv.discover("kilo", tmp_path / "nothing-here") == []


def test_claims_and_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claim = layout.claims(TOOLS_DB)
    assert claim is not None and (claim.confidence, claim.what) == (CERTAIN, "store")
    renamed = tmp_path / "copy.db"
    shutil.copy(TOOLS_DB, renamed)  # Kilo's own tables tell it from OpenCode's
    claim = layout.claims(renamed)
    assert claim is not None and claim.confidence == LIKELY
    assert layout.claims(FIXTURES / "opencode" / "recorded-tools" / "opencode.db") is None
    assert layout.claims(tmp_path / "home") is None
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert layout.default_home() == tmp_path / "xdg" / "kilo"
    codec = registry.get("kilo")
    assert codec.capabilities.subagents and codec.capabilities.exit_code
    assert [w.name for w in codec.write_options] == ["agent"]


# -- writer ------------------------------------------------------------------------------


@pytest.mark.parametrize("sid", [ROOT, CHILD], ids=["root", "child"])
def test_writer_export_round_trips(sid: str, tmp_path: Path, snapshot) -> None:
    snap, export = trajconv.convert("kilo", "kilo", SUB_DB, tmp_path / "out", session=sid)
    assert export_tree(export.out_dir) == snapshot
    back = read(export.out_dir / writer.DOCUMENT)
    assert projection(back, HELD) == projection(snap, HELD)
    assert back.session.id == snap.session.id  # a Kilo id is kept
    assert back.session.parent_session_id == snap.session.parent_session_id
    doc = json.loads((export.out_dir / writer.DOCUMENT).read_text())
    assert {m["info"].get("agent") for m in doc["messages"]} == {"code"}
    assert doc["info"]["version"] == "7.7.7"
    manifest = json.loads((export.out_dir / "trajconv-export.json").read_text())
    assert manifest["resume"]["argv"] == ["kilo", "--session", snap.session.id]
    # the root's sub-agent is a document of its own, linked by parentID and the task call
    kids = sorted((export.out_dir / layout.CHILDREN).glob("*.json"))
    assert [k.stem for k in kids] == ([CHILD] if sid == ROOT else [])
    if kids:
        assert [c.session.id for c in back.children] == [CHILD]
        assert back.children[0].parent_call_id == "call_task_1"


def test_agent_option_and_a_foreign_source(tmp_path: Path) -> None:
    path = sorted((FIXTURES / "grok" / "recorded-tool-failures").rglob("updates.jsonl"))[0]
    snap, export = trajconv.convert(
        "grok", "kilo", path, tmp_path / "out", allow_lossy=True, agent="ask"
    )
    doc = json.loads((export.out_dir / writer.DOCUMENT).read_text())
    assert {m["info"]["agent"] for m in doc["messages"]} == {"ask"}
    ids = [p["id"] for m in doc["messages"] for p in m["parts"]]
    assert ids == sorted(ids)  # Kilo reads parts in id order
    codes = {d.code for d in export.diagnostics}
    assert "ids-derived" in codes and "defaults-assumed" in codes
    back = read(export.out_dir / writer.DOCUMENT)
    assert back.session.id.startswith("ses_")
    assert [p[:2] for p in projection(back, HELD)] == [
        p[:2] for p in projection(snap, HELD)
    ]  # every held record, in order, under its own call ids


def test_prepare_refuses_to_replace_and_dry_runs(tmp_path: Path) -> None:
    export = trajconv.write(read(TOOLS_DB), "kilo", tmp_path / "out", cwd=str(tmp_path))
    script = (export.out_dir / "prepare.py").read_text()
    assert '"db": "kilo.db"' in script and '"db_env": "KILO_DB"' in script
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
    proc = subprocess.run([*prepare, "--dry-run", "--kilo", "/bin/true"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"into {data / layout.DB}" in proc.stdout and "dry run: nothing written" in proc.stdout
    assert not any(data.iterdir())


def test_prepare_makes_kilo_folders_through_no_symlink(tmp_path: Path) -> None:
    """The home folders prepare.py makes are Kilo's own; one that is a symlink is refused
    before the CLI runs, and nothing is written through it."""
    export = trajconv.write(read(TOOLS_DB), "kilo", tmp_path / "out", cwd=str(tmp_path))
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home / ".config").mkdir(parents=True)
    elsewhere.mkdir()
    (home / ".config" / "kilo").symlink_to(elsewhere)
    prepare = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)]
    proc = subprocess.run([*prepare, "--kilo", "/bin/false"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert f"refusing to write under {home}" in proc.stderr
    assert (home / ".local" / "share" / "kilo").is_dir()  # made before the symlink was met
    assert not any(elsewhere.iterdir())
    assert not (home / ".local" / "share" / "opencode").exists()


def test_two_answers_of_one_step_are_named_as_joined(tmp_path: Path) -> None:
    snap = tiny_session(
        ("user", "hi"), ("assistant", "One."), ("system", "s"), ("assistant", "Two.")
    )
    export = trajconv.write(snap, "kilo", tmp_path / "out", allow_lossy=True)
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes.get("untranslated-message-boundary") == 1
    again = read(export.out_dir / writer.DOCUMENT)
    assert [r.text for r in again.records if r.kind == "assistant"] == ["One.", "Two."]


def test_unwrap_user_splits_off_the_environment_block() -> None:
    from proof.loaders.kilo import unwrap_user

    sent = (
        '"Say hi"\n\n<environment_details>\nMessage time: 2026-12-06T21:29:19Z\n'
        "Working directory: /tmp/x/project\nWorkspace root folder: /tmp\n</environment_details>"
    )
    assert unwrap_user(sent) == ('"Say hi"', "Message time: 2026-12-06T21:29:19Z")
    assert unwrap_user("plain") == ("plain", None)
