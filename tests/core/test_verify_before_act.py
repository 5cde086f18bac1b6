"""Verify before act (issue 33): a command that consumes a Snapshot, a store or an export
checks everything it acts on first, and refuses (exit 1) with the first broken record
named, writing nothing. Before, ``verify`` named an edited record but ``write``,
``convert`` and ``show`` of the same file exited 0 with the edited text and the stale id.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import trajconv
from tests.archive import support
from tests.helpers import FIXTURES, session_dir
from trajconv.cli.main import cli
from trajconv.errors import VerifyError
from trajconv.harvest import archive
from trajconv.snapshot import io
from trajconv.store.local import SNAPSHOTS, Store, load_input

GROK = session_dir(FIXTURES / "grok" / "recorded-multi-turn", "sessions/*/*")


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def snap():
    return trajconv.read("grok", GROK)


def _text_record(doc: dict) -> tuple[int, dict]:
    return next((i, r) for i, r in enumerate(doc["records"]) if r.get("text"))


def _edited_in_place(snap, path: Path) -> str:
    """The Snapshot file with one record's text edited in its own bytes (the layout the
    streaming loader reads), as a user with an editor would; the record's id."""
    data = io.dumps(snap)
    doc = orjson.loads(data)
    _, rec = _text_record(doc)
    needle = orjson.dumps(rec["text"])
    assert data.count(needle) >= 1
    path.write_bytes(data.replace(needle, needle[:-1] + b' (edited)"', 1))
    return str(rec["id"])


def _edited_reserialized(snap, path: Path) -> str:
    """The Snapshot parsed, one record's text edited, written back with json.dump."""
    doc = orjson.loads(io.dumps(snap))
    _, rec = _text_record(doc)
    rec["text"] += " (edited)"
    path.write_text(json.dumps(doc, indent=1))
    return str(rec["id"])


EDITS = {"in-place": _edited_in_place, "reserialized": _edited_reserialized}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_write_convert_and_show_refuse_an_edited_record(snap, tmp_path: Path, edit: str) -> None:
    bad = tmp_path / "edited.json"
    rid = EDITS[edit](snap, bad)
    # verify names it ...
    code, _, err = run("verify", bad)
    assert code == 1 and f"({rid}): hash does not match" in err
    # ... and so does every command that would act on it, writing nothing
    commands = {
        "write": ("write", "--to", "codex", bad, "-o", tmp_path / "w"),
        "convert": ("convert", "--to", "claude", bad, "-o", tmp_path / "c"),
        "show": ("show", bad),
        "show-json": ("show", bad, "--json"),
        "show-diff": ("show", "--diff", bad, bad),
        "dataset": ("dataset", "--format", "openai", bad, "-o", tmp_path / "d"),
    }
    for name, argv in commands.items():
        code, out, err = run(*argv)
        assert code == 1, (name, out, err)
        assert f"({rid}): hash does not match its content" in err, name
        assert snap.id not in out, name  # no stale id printed as if written
    assert not any((tmp_path / o).exists() for o in ("w", "c", "d"))


def test_an_untouched_snapshot_still_loads_both_ways(snap, tmp_path: Path) -> None:
    """The whole-document path (another layout) takes a Snapshot that verifies."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(orjson.loads(io.dumps(snap)), indent=1))
    assert load_input(path).id == snap.id
    code, out, err = run("write", "--to", "codex", path, "-o", tmp_path / "w")
    assert code == 0, err
    assert snap.id in out


def test_an_edited_artifact_is_refused(snap, tmp_path: Path) -> None:
    doc = orjson.loads(io.dumps(snap))
    art = doc["artifacts"][0]
    assert art["encoding"] == "utf8"
    art["data"] = art["data"].replace("a", "b", 1)
    bad = tmp_path / "art.json"
    bad.write_text(json.dumps(doc, indent=1))
    with pytest.raises(VerifyError, match=f"artifact {art['name']}: bytes do not match"):
        load_input(bad)
    code, _, err = run("convert", "--to", "codex", bad, "-o", tmp_path / "o")
    assert code == 1 and "bytes do not match" in err and not (tmp_path / "o").exists()


def test_an_edited_session_fact_is_refused(snap, tmp_path: Path) -> None:
    doc = orjson.loads(io.dumps(snap))
    doc["session"]["cwd"] = "/elsewhere"
    bad = tmp_path / "cwd.json"
    bad.write_text(json.dumps(doc, indent=1))
    code, _, err = run("write", "--to", "codex", bad, "-o", tmp_path / "o")
    assert code == 1 and "content gives" in err and not (tmp_path / "o").exists()


def _stored_and_edited(tmp_path: Path) -> tuple[Path, str, str]:
    home = support.grok_home(tmp_path / "user", ["recorded-multi-turn"])
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    with Store.open(store) as st:
        (row,) = st.rows()
    doc_path = store / SNAPSHOTS / f"{row.snapshot_id[7:]}.json"
    doc = orjson.loads(doc_path.read_bytes())
    _, rec = _text_record(doc)
    rec["text"] += " (edited)"
    doc_path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return store, row.session_id, str(rec["id"])


def test_a_store_whose_snapshot_was_edited_is_refused_by_every_consumer(tmp_path: Path) -> None:
    store, session, rid = _stored_and_edited(tmp_path)
    broken = f"({rid}): hash does not match its content"
    for argv in (
        ("convert", "--to", "codex", store, "--session", session, "-o", tmp_path / "c"),
        ("show", store, "--session", session),
        ("archive", "export", store, tmp_path / "a.tar.gz"),
    ):
        code, out, err = run(*argv)
        assert code == 1, (argv, out, err)
        assert broken in err, argv
    assert not (tmp_path / "c").exists() and not (tmp_path / "a.tar.gz").exists()
    pytest.importorskip("pyarrow")
    code, _, err = run("archive", "export", store, tmp_path / "pq", "--format", "parquet")
    assert code == 1 and broken in err and not (tmp_path / "pq").exists()


def test_prepare_refuses_an_export_whose_files_changed(snap, tmp_path: Path) -> None:
    out = tmp_path / "out"
    trajconv.write(snap, "codex", out)
    manifest = json.loads((out / "trajconv-export.json").read_text())
    session_file = next(f["path"] for f in manifest["files"] if f["path"].endswith(".jsonl"))
    for rel in ("prepare.py", session_file):
        target = out / rel
        original = target.read_bytes()
        target.write_bytes(original + b"\n")
        code, _, err = run("prepare", out, "--home", tmp_path / "home", "--dry-run")
        assert code == 1 and f"{rel} does not match the sha256/size" in err
        target.write_bytes(original)
    code, _, err = run("prepare", out, "--home", tmp_path / "home", "--dry-run")
    assert code == 0, err


def test_a_tampered_child_is_refused_before_a_write(tmp_path: Path) -> None:
    """A sub-agent's records are acted on too (written as children, or counted)."""
    from tests.core.test_children import _build

    data = io.dumps(_build())
    bad = tmp_path / "child.json"
    bad.write_bytes(data.replace(b'"done"', b'"DONE"'))
    with pytest.raises(VerifyError, match=r"child 0 \(k\): record 1 \(t:k2\): hash does not"):
        load_input(bad)
    code, _, err = run("write", "--to", "claude", bad, "-o", tmp_path / "o")
    assert code == 1 and "child 0 (k)" in err and not (tmp_path / "o").exists()
