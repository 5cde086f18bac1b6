"""Issue 25: hostile input that used to cost far more than its size or end in a
traceback. Each test failed on the code before its fix; see ``hostile.py``."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.helpers import FIXTURES
from tests.robustness.hostile import (
    CASES,
    amplified_cursor_store,
    empty_records_document,
    export_file,
)
from trajconv.codecs.base import Limits
from trajconv.errors import FormatError, LimitError

F = TypeVar("F", bound=Callable[..., None])
GROK = (
    FIXTURES
    / "grok"
    / "multi-turn"
    / "sessions"
    / "%2Fsrv%2Fdemo"
    / "019c0000-1111-7000-8000-00000000abcd"
)


def hostile(what: str) -> Callable[[F], F]:
    """Register a test as a standing hostile case, with what it checks."""

    def mark(func: F) -> F:
        CASES[func.__name__] = what
        return func

    return mark


@hostile(
    "Cursor root referencing one 1 MB message blob 800 times (2 MB store): refused by "
    "max_expansion before it is spooled, instead of 800 MB in $TMPDIR plus an 800 MB Snapshot"
)
def test_cursor_repeated_blob_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trajconv
    from trajconv.codecs.base import EXPANSION_FLOOR

    db = amplified_cursor_store(tmp_path / "agent", blob_bytes=1 << 20, references=800)
    assert db.stat().st_size < 3 << 20
    projected: list[int] = []  # the work done, counted in bytes (not timed)
    check = Limits.check_expansion

    def counted(self: Limits, expanded: int, read: int, file: str | Path) -> None:
        projected.append(expanded)
        check(self, expanded, read, file)

    monkeypatch.setattr(Limits, "check_expansion", counted)
    with pytest.raises(LimitError) as caught:
        trajconv.read("cursor", db, limits=Limits(max_expansion=1))
    assert caught.value.limit == "max_expansion"
    assert "--max-expansion" in str(caught.value)
    # refused at the first blob over the limit: about 17 of the 800 references projected
    assert EXPANSION_FLOOR < max(projected) <= EXPANSION_FLOOR + (2 << 20)


@hostile("Cursor blob referenced a few times (what Cursor does for equal messages): still read")
def test_cursor_repeated_blob_within_limit_reads(tmp_path: Path) -> None:
    import trajconv

    db = amplified_cursor_store(tmp_path / "agent", blob_bytes=1000, references=3)
    snap = trajconv.read("cursor", db)
    texts = [r.text for r in snap.records if r.kind in ("user", "observation")]
    assert texts.count("x" * 1000) == 3


def _schema_checks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Where the schema was applied (the work done, counted rather than timed)."""
    from trajconv.snapshot import io as snapshot_io

    seen: list[tuple[Any, ...]] = []
    check = snapshot_io._schema_error

    def counted(validator: Any, value: Any, where: tuple[Any, ...]) -> str | None:
        seen.append(where)
        return check(validator, value, where)

    monkeypatch.setattr(snapshot_io, "_schema_error", counted)
    return seen


@hostile(
    "Snapshot of 100,000 empty records (300 KB): rejected at records/0 in well under a "
    "second (was 49 s of jsonschema best_match over oneOf per record)"
)
def test_invalid_records_rejected_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    doc = tmp_path / "empty.json"
    doc.write_bytes(empty_records_document())
    assert doc.stat().st_size < 400_000
    seen = _schema_checks(monkeypatch)
    with pytest.raises(FormatError, match=r"schema: at records/0: kind is None"):
        io.load(doc)
    result = CliRunner().invoke(cli, ["verify", str(doc)])
    assert result.exit_code == 1, result.output
    assert "records/0" in result.output
    # the frame is checked, then no record at all: records/0 names no kind, so it stops there
    assert len(seen) <= 2 * 2, seen


@hostile(
    "archive import of an 8 KB tar.gz holding a 100,000-empty-record Snapshot: refused in "
    "well under a second (was 394 s)"
)
def test_import_of_invalid_records_is_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trajconv.store.local import import_store

    doc = empty_records_document()
    name = f"snapshots/{'0' * 64}.json"
    export = export_file(tmp_path / "x.tar.gz", {name: doc}, tmp=tmp_path)
    assert export.stat().st_size < 16_000
    seen = _schema_checks(monkeypatch)
    with pytest.raises(FormatError, match=r"does not verify: .*records/0"):
        import_store(export, tmp_path / "restored")
    assert len(seen) <= 2, seen  # not one check per record of the 100,000
    assert not (tmp_path / "restored").exists()


@hostile(
    "archive import of an export whose MANIFEST.json is 64 MB of whitespace (64 KB "
    "compressed): refused after reading its cap (a few KB), not read whole (1.5 GB of "
    "whitespace took 3 GB)"
)
def test_import_manifest_read_is_capped(tmp_path: Path) -> None:
    import tracemalloc

    from trajconv.store.local import import_store

    manifest = b" " * (64 << 20) + b"{}"
    export = export_file(tmp_path / "x.tar.gz", {}, manifest=manifest, tmp=tmp_path)
    del manifest
    assert export.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=r"MANIFEST.json is over \d+ bytes"):
            import_store(export, tmp_path / "restored")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def _enospc_after(limit: int) -> Callable[[Any], Any]:
    """A stand-in for a file handle's ``write`` that fills up after ``limit`` bytes."""
    written = [0]

    def wrap(write: Any) -> Any:
        def full(data: Any) -> Any:
            written[0] += len(data)
            if written[0] > limit:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return write(data)

        return full

    return wrap


@hostile(
    "-o on a full disk (ENOSPC after 1 KB, simulated): `read -o` and `write -o` say which "
    "path filled up, exit 1, no traceback, nothing half-written (was a raw OSError traceback)"
)
def test_full_output_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    real_write = io.write
    fill = _enospc_after(1024)

    def full_write(snapshot: Any, stream: Any, **kw: Any) -> None:
        class Full:
            write = staticmethod(fill(stream.write))

        real_write(snapshot, Full(), **kw)  # type: ignore[arg-type]

    out = tmp_path / "snap.json"
    monkeypatch.setattr(io, "write", full_write)
    result = CliRunner().invoke(cli, ["read", "--from", "grok", str(GROK), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert f"{out}: cannot write: No space left on device" in result.output
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    snap_file = tmp_path / "ok.json"
    assert CliRunner().invoke(cli, ["read", "--from", "grok", str(GROK), "-o", str(snap_file)])
    export = tmp_path / "export"
    import trajconv.codecs.export as export_mod

    real_file = export_mod._write_file

    def full_file(staging: Path, f: Any) -> Any:
        if f.path == "prepare.py":  # the other files are written: the disk fills up now
            (staging / f.path).write_bytes(b"#")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_file(staging, f)

    monkeypatch.setattr(export_mod, "_write_file", full_file)
    result = CliRunner().invoke(cli, ["write", "--to", "fx", str(snap_file), "-o", str(export)])
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert f"{export}: cannot write: No space left on device" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.json"]


@hostile(
    "$TMPDIR full while reading (a 2 KB file-size rlimit in a subprocess): the error names "
    "$TMPDIR, not the native file, exit 1, no traceback (was `<journal>: cannot read: File "
    "too large`)"
)
def test_full_tmpdir_is_named(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    proc = subprocess.run(
        [sys.executable, "-m", "trajconv.cli.main", "read", "--from", "grok", str(GROK)],
        env={**os.environ, "TMPDIR": str(spool), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        preexec_fn=small_files,
        timeout=120,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert f"trajconv: error: {spool}: cannot write: File too large" in err, err
    assert str(GROK) not in err


@hostile(
    "archive store full (ENOSPC writing a Snapshot, simulated): that session is failed with "
    "the store named, no half entry (tmp/ empty, no row), the next run archives it"
)
def test_full_store_fails_the_session_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.archive.support import grok_home
    from trajconv.harvest import archive
    from trajconv.snapshot import io
    from trajconv.store.local import Store

    home = grok_home(tmp_path / "home", ["multi-turn"])
    store = tmp_path / "store"
    real_write = io.write

    def full_write(snapshot: Any, stream: Any, **kw: Any) -> None:
        stream.write(b"{")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(io, "write", full_write)
    summary = archive(store, harness="grok", home=home)
    monkeypatch.setattr(io, "write", real_write)
    [outcome] = summary.outcomes
    assert outcome.status == "failed"
    assert outcome.error is not None and f"{store}: cannot write" in outcome.error
    assert list((store / "tmp").iterdir()) == []
    assert list((store / "snapshots").iterdir()) == []
    with Store.open(store) as opened:
        assert opened.rows() == []
    again = archive(store, harness="grok", home=home)
    assert [o.status for o in again.outcomes] == ["first"]


@hostile(
    "a killed archive run's 0-byte file in the store's tmp/: removed by the next run "
    "(was left for ever, and `verify` noted it each time)"
)
def test_killed_run_tmp_file_is_cleaned(tmp_path: Path) -> None:
    from tests.archive.support import grok_home
    from trajconv.harvest import archive
    from trajconv.store.local import verify_store

    home = grok_home(tmp_path / "home", ["multi-turn"])
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    left = store / "tmp" / f"{'0' * 64}.json.4242.abcdef012345"
    left.touch()
    assert any("unfinished write" in n for n in verify_store(store).notes)
    archive(store, harness="grok", home=home)
    assert not left.exists()
    assert not any("unfinished write" in n for n in verify_store(store).notes)


@pytest.mark.parametrize("size", ["abc", None, -1, 1.5])
@hostile(
    'archive import of an export whose manifest says "size": "abc", null, -1 or 1.5: '
    "a named FormatError from the pydantic model of the manifest (was a ValueError or "
    "TypeError traceback)"
)
def test_manifest_is_validated(tmp_path: Path, size: Any) -> None:
    from trajconv.store.local import EXPORT_FORMAT, STORE_FORMAT, import_store

    manifest = {
        "format": EXPORT_FORMAT,
        "store": STORE_FORMAT,
        "files": [{"path": "trajconv-store.json", "sha256": "0" * 64, "size": size}],
    }
    export = export_file(
        tmp_path / "x.tar.gz", {}, manifest=json.dumps(manifest).encode(), tmp=tmp_path
    )
    with pytest.raises(FormatError, match=r"MANIFEST.json at files\.0\.size: "):
        import_store(export, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()


@hostile(
    "prepare.py: a folder of the install path replaced by a symlink to outside --home "
    "between the checks and the writes: refused (exit 1), nothing written outside (was "
    "installed through the symlink)"
)
def test_prepare_does_not_follow_a_swapped_folder(tmp_path: Path) -> None:
    import importlib.util

    import trajconv

    out = tmp_path / "export"
    trajconv.write(trajconv.read("grok", GROK), "grok", out)
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / ".grok" / "sessions").mkdir(parents=True)
    (outside / "sessions").mkdir(parents=True)
    spec = importlib.util.spec_from_file_location("hostile_prepare", out / "prepare.py")
    assert spec is not None and spec.loader is not None
    prepare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prepare)
    swapped: list[str] = []

    def swap_then_print(*args: Any, **kw: Any) -> None:
        if not swapped:  # the checks are done: the plan is being printed
            (home / ".grok").rename(tmp_path / "moved-away")
            (home / ".grok").symlink_to(outside, target_is_directory=True)
            swapped.append("yes")

    prepare.print = swap_then_print
    with pytest.raises(SystemExit) as exited:
        prepare.main(["--home", str(home)])
    assert exited.value.code == 1
    assert swapped
    assert [p for p in outside.rglob("*") if p.is_file()] == []


@hostile(
    "archive of a session whose journal is a symlink: an append to the target is archived "
    "on the next run (was skipped for ever: change detection took the link's own lstat)"
)
def test_symlinked_journal_change_is_seen(tmp_path: Path) -> None:
    from tests.archive.support import grok_home, grok_journal
    from trajconv.harvest import archive

    home = grok_home(tmp_path / "home", ["multi-turn"])
    journal = grok_journal(home, "019c0000")
    target = tmp_path / "elsewhere" / "updates.jsonl"
    target.parent.mkdir()
    journal.rename(target)
    journal.symlink_to(target)
    store = tmp_path / "store"
    assert [o.status for o in archive(store, harness="grok", home=home).outcomes] == ["first"]
    assert [o.status for o in archive(store, harness="grok", home=home).outcomes] == ["skipped"]
    last = target.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with target.open("ab") as fh:
        fh.write(last + b"\n")
    outcome = archive(store, harness="grok", home=home).outcomes
    assert [o.status for o in outcome] != ["skipped"]
    assert outcome[0].status in ("extends", "diverged"), outcome


def _planted_copy(
    src: Path, dest: Path, journal: str, edit: Callable[[dict[str, Any]], None]
) -> Path:
    """A copy of the session folder ``src`` whose journal's first line has ``edit`` applied."""
    import shutil

    shutil.copytree(src, dest)
    path = dest / journal
    first, rest = path.read_bytes().split(b"\n", 1)
    event = json.loads(first)
    edit(event)
    path.write_bytes(json.dumps(event, separators=(",", ":")).encode() + b"\n" + rest)
    return dest


PLANTED = "sk-hostile-planted-0123456789"


@hostile(
    "credentials inside JSONL journals (Copilot session.start apiKey/authToken, Grok "
    "_meta.authorization): stripped line by line with secret-dropped, other lines byte "
    "for byte, absent from the Snapshot, the export and the archive (were kept verbatim)"
)
def test_jsonl_credentials_are_dropped(tmp_path: Path) -> None:
    import trajconv
    from trajconv.harvest import archive
    from trajconv.snapshot import io

    copilot_src = next((FIXTURES / "copilot" / "multi-turn").rglob("events.jsonl")).parent

    def copilot_edit(event: dict[str, Any]) -> None:
        event["data"]["apiKey"] = PLANTED
        event["data"]["context"]["authToken"] = PLANTED

    def grok_edit(event: dict[str, Any]) -> None:
        event["params"]["_meta"]["authorization"] = f"Bearer {PLANTED}"

    cases = [
        (
            "copilot",
            copilot_src,
            FIXTURES / "copilot" / "multi-turn",
            "events.jsonl",
            copilot_edit,
            2,
        ),
        ("grok", GROK, FIXTURES / "grok" / "multi-turn", "updates.jsonl", grok_edit, 1),
    ]
    for harness, src, case, journal, edit, count in cases:
        home = tmp_path / f"{harness}-home"
        folder = _planted_copy(src, home / src.relative_to(case), journal, edit)
        original = (src / journal).read_bytes().split(b"\n")
        snap = trajconv.read(harness, folder)
        assert snap.diagnostic_count("secret-dropped") == count
        [diag] = [d for d in snap.diagnostics if d.code == "secret-dropped"]
        assert all(f"{journal}:line 1: $." in s for s in diag.samples), diag.samples
        kept = next(a for a in snap.artifacts if a.name == journal).read()
        assert kept is not None and PLANTED.encode() not in kept
        assert kept.split(b"\n")[1:] == original[1:]  # every other line as it was
        assert PLANTED.encode() not in io.dumps(snap)
        out = tmp_path / f"{harness}-export"
        trajconv.write(snap, "grok" if harness == "copilot" else "copilot", out)
        assert not [p for p in out.rglob("*") if p.is_file() and PLANTED.encode() in p.read_bytes()]
        store = tmp_path / f"{harness}-store"
        summary = archive(store, harness=harness, home=home)
        assert [o.status for o in summary.outcomes] == ["first"]
        assert not [
            p for p in store.rglob("*") if p.is_file() and PLANTED.encode() in p.read_bytes()
        ]


@hostile(
    "YAML flow mappings holding a credential (auth: {token: X}, - {api_key: X}) and a "
    "nested plain token: key: the line is dropped with secret-dropped (were kept)"
)
def test_yaml_flow_mapping_credentials_are_dropped() -> None:
    from trajconv.snapshot.secrets import strip_yaml_bytes

    text = (
        b"name: demo\n"
        b"auth: {token: X1, user: me}\n"
        b"servers:\n"
        b"  - {api_key: X2}\n"
        b"  - plain\n"
        b"nested:\n"
        b"  token: X3\n"
        b"after: 1\n"
    )
    clean, dropped = strip_yaml_bytes(text)
    assert clean == b"name: demo\nservers:\n  - plain\nnested:\nafter: 1\n"
    assert dropped == ["line 2: auth.token", "line 4: api_key", "line 7: token"]


@hostile(
    "a TRIGGER that deletes every row added to a store's index.sqlite: verify names it, "
    "archive and archive import refuse the store (were accepted; the index emptied silently)"
)
def test_unexpected_index_schema_is_refused(tmp_path: Path) -> None:
    import sqlite3
    import tarfile

    from tests.archive.support import grok_home
    from trajconv.harvest import archive
    from trajconv.store.local import export_store, import_store, verify_store

    home = grok_home(tmp_path / "home", ["multi-turn"])
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    export = export_store(store, tmp_path / "good.tar.gz")
    assert export.index_rows == 1
    conn = sqlite3.connect(store / "index.sqlite")
    conn.execute("CREATE TRIGGER wipe AFTER INSERT ON archived BEGIN DELETE FROM archived; END")
    conn.commit()
    conn.close()
    report = verify_store(store)
    assert not report.ok
    assert "index.sqlite: unexpected trigger 'wipe' in the schema" in report.problems
    (home / "sessions").rename(tmp_path / "gone")  # nothing to archive: only the open matters
    with pytest.raises(FormatError, match="unexpected trigger 'wipe'"):
        archive(store, harness="grok", home=home)
    # the same index inside an export whose manifest matches it
    bad = tmp_path / "bad.tar.gz"
    index = (store / "index.sqlite").read_bytes()
    with tarfile.open(tmp_path / "good.tar.gz") as src, tarfile.open(bad, "w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith("/index.sqlite"):
                data = index
            elif member.name.endswith("/MANIFEST.json"):
                manifest = json.loads(data)
                for entry in manifest["files"]:
                    if entry["path"] == "index.sqlite":
                        entry.update(sha256=hashlib.sha256(index).hexdigest(), size=len(index))
                data = json.dumps(manifest).encode()
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    with pytest.raises(FormatError, match="unexpected trigger 'wipe'"):
        import_store(bad, tmp_path / "restored")


def _snapshot_doc() -> dict[str, Any]:
    import orjson

    import trajconv
    from trajconv.snapshot import io

    doc: dict[str, Any] = orjson.loads(io.dumps(trajconv.read("grok", GROK)))
    return doc


def _rehash(doc: dict[str, Any]) -> None:
    """Chain hashes and id made again for the changed content, as a careful forger would."""
    from trajconv.snapshot import hashing

    digest = hashing.header_digest(doc["format"], doc["source"])
    for rec in doc["records"]:
        rec.pop("hash")
        digest = hashing.record_digest(digest, rec)
        rec["hash"] = hashing.tag(digest)
    arts = [{k: a[k] for k in ("name", "sha256", "size")} for a in doc["artifacts"]]
    doc["id"] = hashing.snapshot_id(doc["format"], doc["source"], doc["session"], digest, arts)


@hostile(
    "a Snapshot whose user record names text twice (a first-key parser sees the hidden "
    "one; the hash covers the last): refused by load and verify (was accepted)"
)
def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    import orjson
    from click.testing import CliRunner

    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    doc = _snapshot_doc()
    first = next(r for r in doc["records"] if r["kind"] == "user")
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    shown = b'"text": ' + orjson.dumps(first["text"])
    assert data.count(shown) == 1
    data = data.replace(shown, b'"text": "rm -rf ~ (hidden)",\n      ' + shown)
    file = tmp_path / "dup.json"
    file.write_bytes(data)
    with pytest.raises(FormatError, match="names 'text' twice"):
        io.load(file)
    result = CliRunner().invoke(cli, ["verify", str(file)])
    assert result.exit_code == 1
    assert "names 'text' twice" in result.output


@hostile(
    "a record holding 2^53 whose file says 2^53 + 1 (the same IEEE double): verify names "
    "record 0 (the RFC 8785 hash read both as one double, so it verified)"
)
def test_tampered_large_integer_does_not_verify(tmp_path: Path) -> None:
    import orjson
    from click.testing import CliRunner

    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    doc = _snapshot_doc()
    doc["records"][0]["evidence"]["line"] = 2**53
    _rehash(doc)
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    good = tmp_path / "good.json"
    good.write_bytes(data)
    assert io.load(good).records[0].evidence.line == 2**53  # kept exact, verifies
    assert CliRunner().invoke(cli, ["verify", str(good)]).exit_code == 0
    bad = tmp_path / "tampered.json"
    bad.write_bytes(data.replace(b'"line": 9007199254740992', b'"line": 9007199254740993'))
    assert bad.read_bytes() != data
    result = CliRunner().invoke(cli, ["verify", str(bad)])
    assert result.exit_code == 1, result.output
    assert "record 0" in result.output and "hash does not match" in result.output


@pytest.mark.parametrize("change", ["drop-diagnostic", "media-type", "producer"])
@hostile(
    "a Cursor Snapshot with its compaction-state diagnostic removed (or an artifact's "
    "media_type or the producer changed): verify names meta_hash and write --to cursor "
    "refuses (verify said ok and the write went through without --allow-lossy)"
)
def test_unhashed_parts_are_bound(tmp_path: Path, change: str) -> None:
    import orjson
    from click.testing import CliRunner

    import trajconv
    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    snap = trajconv.read("cursor", FIXTURES / "cursor" / "compaction" / "store.db")
    assert snap.diagnostic_count("compaction-state") > 0
    doc = orjson.loads(io.dumps(snap))
    if change == "drop-diagnostic":
        doc["diagnostics"] = [d for d in doc["diagnostics"] if d["code"] != "compaction-state"]
    elif change == "media-type":
        doc["artifacts"][0]["media_type"] = "text/plain"
    else:
        doc["producer"]["reader"] = "someone-else/1"
    file = tmp_path / "edited.json"
    file.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    runner = CliRunner()
    verified = runner.invoke(cli, ["verify", str(file)])
    assert verified.exit_code == 1, verified.output
    assert "meta_hash" in verified.output
    written = runner.invoke(cli, ["write", "--to", "cursor", str(file), "-o", str(tmp_path / "o")])
    assert written.exit_code != 0, written.output
    assert not (tmp_path / "o").exists()
    # the untouched Snapshot still verifies, with the same id as before meta_hash existed
    good = tmp_path / "good.json"
    io.dump(snap, good)
    assert runner.invoke(cli, ["verify", str(good)]).exit_code == 0
