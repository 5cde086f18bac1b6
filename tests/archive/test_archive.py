"""Archive whole native homes (issue 8): incremental runs, history, crash safety, moving a store.

Grok homes are copies of the fixtures, so journals can be appended to and rewritten
line by line; every other registered codec gets homes generated through its own
writer and prepare.py (tests/archive/support.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from io import BytesIO
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import trajconv
from tests.archive import support
from tests.helpers import REPO, fingerprint, rebuilt
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.errors import FormatError, RefusedError, VerifyError
from trajconv.harvest import Outcome, Summary, archive
from trajconv.snapshot import io
from trajconv.store.local import (
    ARTIFACTS,
    SNAPSHOTS,
    Store,
    export_store,
    import_store,
    load_input,
    verify_store,
)

GENERATED = support.codecs_for_generated_homes()


def _rows(store: Path) -> list[tuple[str, str]]:
    with Store.open(store) as st:
        return [(r.session_id, r.relation) for r in st.rows()]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return support.grok_home(tmp_path / "user")


@pytest.fixture
def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Calls of every registered codec's ``read``, patched once per codec class (codec
    objects may be frozen dataclasses, and several may share one class)."""
    calls: list[str] = []
    classes = {type(registry.get(name)) for name in registry.names()}
    for cls in classes:
        real = cls.read

        def counted(self: object, path: Path, *a: object, _real=real, **k: object) -> object:
            calls.append(f"{getattr(self, 'name', '?')}:{path}")
            return _real(self, path, *a, **k)

        monkeypatch.setattr(cls, "read", counted)
    return calls


# -- first run, no-change run ---------------------------------------------------------------


def test_first_run_archives_every_session_and_stores_artifacts_once(
    home: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    before = fingerprint(home)
    summary = archive(store, harness="grok", home=home)
    refs = trajconv.discover("grok", home)
    assert len(refs) == 8 and summary.ok
    assert summary.counts["first"] == len(refs)
    assert fingerprint(home) == before  # writing never touches the native home
    report = verify_store(store)
    assert report.ok, report.problems
    assert (report.snapshots, report.index_rows, report.sessions) == (8, 8, 8)
    with Store.open(store) as st:
        for ref in refs:
            row = st.latest("grok", ref.session_id)
            assert row is not None and row.relation == "first" and row.previous_id is None
            stored = orjson.loads(st.document_path(row.snapshot_id).read_bytes())
            assert all(a["data"] is None for a in stored["artifacts"])
            for art in stored["artifacts"]:
                assert (store / ARTIFACTS / art["sha256"]).is_file()
            # the same Snapshot either way: byte-identical once artifacts are put back
            assert io.dumps(st.load(row.snapshot_id)) == io.dumps(trajconv.read("grok", ref.path))
    digests = {p.name for p in (store / ARTIFACTS).iterdir()}
    referenced = [
        a["sha256"]
        for p in (store / SNAPSHOTS).iterdir()
        for a in orjson.loads(p.read_bytes())["artifacts"]
    ]
    assert set(referenced) == digests
    assert len(referenced) > len(digests)  # identical files (e.g. lock files) are kept once


def test_no_change_rerun_reads_no_session_file(
    home: Path, tmp_path: Path, count_reads: list[str]
) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    assert len(count_reads) == 8
    count_reads.clear()
    with support.opened_files() as listing:
        trajconv.discover("grok", home)
    with support.opened_files() as opened:
        summary = archive(store, harness="grok", home=home)
    assert count_reads == []
    assert summary.counts["skipped"] == 8 and summary.snapshots_written == 0
    in_home = support.under(opened, home)
    assert in_home <= support.under(listing, home)  # only what listing itself opens
    assert not any(p.endswith("updates.jsonl") for p in in_home)
    assert _rows(store) == [(sid, "first") for sid, _ in _rows(store)]


def test_touched_but_identical_session_is_recorded_unchanged_then_skipped(
    home: Path, tmp_path: Path, count_reads: list[str]
) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    journal = support.grok_journal(home, "01a22a84-7842")
    os.utime(journal, ns=(journal.stat().st_atime_ns, journal.stat().st_mtime_ns + 10**9))
    count_reads.clear()
    summary = archive(store, harness="grok", home=home)
    assert summary.counts["unchanged"] == 1 and summary.counts["skipped"] == 7
    assert len(count_reads) == 1 and summary.snapshots_written == 0
    count_reads.clear()
    assert archive(store, harness="grok", home=home).counts["skipped"] == 8
    assert count_reads == []


# -- history: extends, diverged ------------------------------------------------------------------


def _append_prompt(journal: Path, text: str) -> None:
    """Append a new user prompt, shaped like the journal's first one."""
    lines = [json.loads(x) for x in journal.read_bytes().splitlines() if x.strip()]
    first = next(
        x for x in lines if x["params"]["update"].get("sessionUpdate") == "user_message_chunk"
    )
    first["params"]["update"]["content"]["text"] = text
    first["params"]["update"]["_meta"]["promptIndex"] = 99
    with journal.open("ab") as handle:
        handle.write(json.dumps(first).encode() + b"\n")


def test_appending_to_a_journal_yields_an_extending_snapshot(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    journal = support.grok_journal(home, "01a22a84-7842")
    sid = journal.parent.name
    _append_prompt(journal, "One more question")
    summary = archive(store, harness="grok", home=home)
    assert summary.counts == {**summary.counts, "extends": 1, "skipped": 7}
    with Store.open(store) as st:
        old, new = st.rows(session=sid)
        assert (old.relation, new.relation, new.previous_id) == (
            "first",
            "extends",
            old.snapshot_id,
        )
        assert new.records == old.records + 1 and not new.facts_changed
        old_doc, new_doc = st.document(old.snapshot_id), st.document(new.snapshot_id)
    n = len(old_doc["records"])
    assert new_doc["records"][n - 1]["hash"] == old_doc["records"][n - 1]["hash"]
    assert verify_store(store).ok


def test_growth_with_updated_session_facts_still_extends(home: Path, tmp_path: Path) -> None:
    """Grok rewrites summary.json (updated_at) as a session grows; the chain head changes."""
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    journal = support.grok_journal(home, "01a22a84-7842")
    _append_prompt(journal, "One more question")
    summary_path = journal.with_name("summary.json")
    summary = json.loads(summary_path.read_text())
    summary["updated_at"] = summary["last_active_at"] = "2027-01-01T00:00:00.000Z"
    summary_path.write_text(json.dumps(summary))
    archive(store, harness="grok", home=home)
    with Store.open(store) as st:
        new = st.rows(session=journal.parent.name)[-1]
    assert new.relation == "extends" and new.facts_changed
    assert verify_store(store).ok


def test_rewriting_a_journal_yields_a_diverged_snapshot_and_keeps_the_old(
    home: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    journal = support.grok_journal(home, "01a22a84-7842")
    sid = journal.parent.name
    data = journal.read_bytes()
    lines = data.splitlines(keepends=True)
    i = next(n for n, x in enumerate(lines) if b"user_message_chunk" in x)
    obj = json.loads(lines[i])
    obj["params"]["update"]["content"]["text"] = "A different question (edited by the harness)"
    lines[i] = json.dumps(obj).encode() + b"\n"
    journal.write_bytes(b"".join(lines))
    summary = archive(store, harness="grok", home=home)
    assert summary.counts["diverged"] == 1
    with Store.open(store) as st:
        old, new = st.rows(session=sid)
        assert new.relation == "diverged" and new.previous_id == old.snapshot_id
        assert st.document_path(old.snapshot_id).is_file()
        assert st.load(old.snapshot_id).id == old.snapshot_id  # the older Snapshot is kept whole
    assert verify_store(store).ok
    result = CliRunner().invoke(cli, ["archive", "log", str(store), sid, "--json"])
    assert result.exit_code == 0
    assert [r["relation"] for r in json.loads(result.output)] == ["first", "diverged"]


# -- crash safety ------------------------------------------------------------------------------


def test_injected_failure_before_the_index_row_leaves_a_store_that_verifies(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    real = Store._insert
    calls = {"n": 0}

    def failing(self: Store, row: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected failure after the files, before the index row")
        real(self, row)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "_insert", failing)
    with pytest.raises(RuntimeError, match="injected"):
        archive(store, harness="grok", home=home)
    monkeypatch.undo()
    report = verify_store(store)
    assert report.ok, report.problems
    assert report.index_rows == 2 and report.snapshots == 3  # the third is complete, unindexed
    assert any("not in the index yet" in n for n in report.notes)
    summary = archive(store, harness="grok", home=home)
    assert summary.counts["first"] == 6 and summary.counts["skipped"] == 2
    report = verify_store(store)
    assert report.ok and report.index_rows == 8 and report.notes == []


def test_injected_failure_while_writing_artifacts_leaves_a_store_that_verifies(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    real_replace = os.replace
    seen = {"n": 0}

    def flaky(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if str(dst).startswith(str(store / ARTIFACTS)):
            seen["n"] += 1
            if seen["n"] == 20:
                raise OSError(28, "No space left on device (injected)")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError, match="injected"):
        archive(store, harness="grok", home=home)
    monkeypatch.undo()
    report = verify_store(store)
    assert report.ok, report.problems
    assert 0 < report.index_rows < 8
    archive(store, harness="grok", home=home)
    report = verify_store(store)
    assert report.ok and report.index_rows == 8 and report.sessions == 8


def test_killed_process_mid_transaction_leaves_a_store_that_verifies(
    home: Path, tmp_path: Path
) -> None:
    """A hard kill (os._exit: no cleanup, no rollback) between INSERT and COMMIT."""
    store = tmp_path / "store"
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from trajconv.harvest import Outcome, Summary, archive
        from trajconv.store.local import Store

        calls = 0
        real_execute = None

        def killing_insert(self, row):
            global calls
            calls += 1
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(
                "INSERT INTO archived (harness, session_id, snapshot_id, fingerprint, "
                "archived_at, relation, previous_id, records, last_hash, facts_changed, "
                "locator) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (row.harness, row.session_id, row.snapshot_id, row.fingerprint,
                 row.archived_at, row.relation, row.previous_id, row.records,
                 row.last_hash, int(row.facts_changed), row.locator),
            )
            if calls == 4:
                os._exit(9)
            self.conn.execute("COMMIT")

        Store._insert = killing_insert
        archive(Path({str(store)!r}), harness="grok", home=Path({str(home)!r}))
        """
    )
    # its spool folder stays behind (killed): in tmp_path, not the machine's temp dir
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, env=env)
    assert proc.returncode == 9, proc.stderr.decode()
    report = verify_store(store)
    assert report.ok, report.problems
    assert report.index_rows == 3
    summary = archive(store, harness="grok", home=home)
    assert summary.ok and summary.counts["first"] == 5
    assert verify_store(store).ok


def test_a_session_that_cannot_be_read_fails_alone(home: Path, tmp_path: Path) -> None:
    broken = home / "sessions" / "%2Fsrv%2Fbroken" / "019c0000-9999-7000-8000-000000000009"
    broken.mkdir(parents=True)
    (broken / "summary.json").write_text("{}")  # listed, but no updates.jsonl to read
    store = tmp_path / "store"
    result = CliRunner().invoke(
        cli, ["archive", str(store), "--home", str(home), "--harness", "grok", "--json"]
    )
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["counts"]["first"] == 8 and summary["counts"]["failed"] == 1
    assert "updates.jsonl" in result.stderr
    assert verify_store(store).ok


def test_a_store_inside_a_native_home_is_refused_before_anything_is_written(home: Path) -> None:
    inside = home / "archive"
    with pytest.raises(RefusedError, match="inside"):
        archive(inside, harness="grok", home=home)
    assert not inside.exists()


def test_parallel_reading_gives_the_same_store(home: Path, tmp_path: Path) -> None:
    archive(tmp_path / "one", harness="grok", home=home)
    summary = archive(tmp_path / "two", harness="grok", home=home, jobs=2)
    assert summary.counts["first"] == 8
    assert sorted(p.name for p in (tmp_path / "one" / SNAPSHOTS).iterdir()) == sorted(
        p.name for p in (tmp_path / "two" / SNAPSHOTS).iterdir()
    )


# -- moving a store ----------------------------------------------------------------------------


def test_export_import_verify_round_trip(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    _append_prompt(support.grok_journal(home, "01a22a84-7842"), "grow once")
    archive(store, harness="grok", home=home)
    runner = CliRunner()
    out = tmp_path / "store.tar.gz"
    result = runner.invoke(cli, ["archive", "export", str(store), str(out), "--json"])
    assert result.exit_code == 0, result.output
    copy = tmp_path / "copy"
    result = runner.invoke(cli, ["archive", "import", str(out), str(copy), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["index_rows"] == 9
    result = runner.invoke(cli, ["verify", str(copy), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"]
    assert _rows(copy) == _rows(store)
    with Store.open(store) as a, Store.open(copy) as b:
        for row in a.rows():
            assert io.dumps(a.load(row.snapshot_id)) == io.dumps(b.load(row.snapshot_id))
    # importing again over a store is refused: it would replace data
    result = runner.invoke(cli, ["archive", "import", str(out), str(copy)])
    assert result.exit_code == 3


def _damaged_copies(export: Path, tmp: Path) -> dict[str, Path]:
    data = export.read_bytes()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    cases = {"bit flip": bytes(flipped), "truncated": data[: len(data) * 2 // 3]}
    # a well-formed tar.gz whose artifact bytes no longer match the manifest
    retarred = tmp / "retarred.tar.gz"
    with tarfile.open(export, "r:gz") as src, tarfile.open(retarred, "w:gz") as dst:
        changed = False
        for member in src:
            handle = src.extractfile(member)
            assert handle is not None
            body = handle.read()
            if not changed and f"/{ARTIFACTS}/" in member.name:
                body = body[:-1] + bytes([body[-1] ^ 1])
                changed = True
            dst.addfile(member, BytesIO(body))
    out = {}
    for name, blob in cases.items():
        path = tmp / f"{name.replace(' ', '-')}.tar.gz"
        path.write_bytes(blob)
        out[name] = path
    out["content changed"] = retarred
    return out


def test_a_damaged_export_is_refused(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    export = tmp_path / "store.tar.gz"
    export_store(store, export)
    for name, damaged in _damaged_copies(export, tmp_path).items():
        target = tmp_path / f"into-{damaged.stem}"
        with pytest.raises(FormatError, match="damaged export") as info:
            import_store(damaged, target)
        assert not target.exists(), name
        assert not list(tmp_path.glob(f".into-{damaged.stem}*")), name  # no staging left
        result = CliRunner().invoke(cli, ["archive", "import", str(damaged), str(target)])
        assert result.exit_code == 1 and "damaged export" in str(result.exception or "") + (
            result.stderr or ""
        ), (name, info.value)


def test_verify_store_names_a_damaged_artifact_and_a_bad_index_row(
    home: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    victim = sorted((store / ARTIFACTS).iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"x")
    result = CliRunner().invoke(cli, ["verify", str(store)])
    assert result.exit_code == 1
    assert f"{ARTIFACTS}/{victim.name}: bytes do not match" in result.stderr
    import sqlite3

    fresh = tmp_path / "fresh"
    archive(fresh, harness="grok", home=home)
    con = sqlite3.connect(fresh / "index.sqlite")
    con.execute("UPDATE archived SET relation = 'extends' WHERE row = 1")
    con.commit()
    con.close()
    report = verify_store(fresh)
    assert not report.ok and "recorded as extends, the Snapshots say first" in report.problems[0]


# -- the CLI and converting from a store ---------------------------------------------------------


def test_cli_archive_default_action_log_and_verify(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    runner = CliRunner()
    result = runner.invoke(cli, ["archive", str(store), "--home", str(home), "--harness", "grok"])
    assert result.exit_code == 0, result.output
    assert "archived 8 sessions" in result.stdout and "first 8" in result.stdout
    result = runner.invoke(
        cli, ["archive", "run", str(store), "--home", str(home), "--harness", "grok", "--json"]
    )
    assert json.loads(result.stdout)["counts"]["skipped"] == 8
    result = runner.invoke(cli, ["archive", "log", str(store), "--json"])
    assert len(json.loads(result.stdout)) == 8
    result = runner.invoke(cli, ["verify", str(store)])
    assert result.exit_code == 0 and result.stdout.startswith(f"ok {store}: 8 Snapshots")
    assert runner.invoke(cli, ["archive", "--help"]).exit_code == 0


def _writable_target() -> str:
    names = [n for n in registry.names() if registry.get(n).can_write]
    return "fx" if "fx" in names else names[0]


def test_convert_from_a_stored_snapshot_and_by_session_id(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    sdir = support.grok_journal(home, "01a22a84-7842").parent
    with Store.open(store) as st:
        row = st.latest("grok", sdir.name)
    assert row is not None
    doc_path = store / SNAPSHOTS / f"{row.snapshot_id[7:]}.json"
    target = _writable_target()
    runner = CliRunner()
    by_file = runner.invoke(
        cli, ["convert", "--to", target, str(doc_path), "-o", str(tmp_path / "a"), "--json"]
    )
    assert by_file.exit_code == 0, by_file.output
    by_session = runner.invoke(
        cli,
        ["convert", "--to", target, str(store), "--session", sdir.name, "-o", str(tmp_path / "b")],
    )
    assert by_session.exit_code == 0, by_session.output
    direct = runner.invoke(
        cli, ["convert", "--from", "grok", "--to", target, str(sdir), "-o", str(tmp_path / "c")]
    )
    assert direct.exit_code == 0
    tree = {p.relative_to(tmp_path / "c") for p in (tmp_path / "c").rglob("*")}
    for out in ("a", "b"):
        assert {p.relative_to(tmp_path / out) for p in (tmp_path / out).rglob("*")} == tree
    assert json.loads(by_file.stdout)["snapshot_id"] == row.snapshot_id
    assert runner.invoke(cli, ["verify", str(doc_path)]).exit_code == 0
    assert load_input(doc_path).id == row.snapshot_id
    # neither a Snapshot nor a store: the harness is told from its files (issue 24)
    result = runner.invoke(cli, ["convert", "--to", target, str(sdir), "-o", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "as grok (--from to say otherwise)" in result.stderr
    # a folder no codec claims needs --from
    (tmp_path / "plain").mkdir()
    result = runner.invoke(
        cli, ["convert", "--to", target, str(tmp_path / "plain"), "-o", str(tmp_path / "e")]
    )
    assert result.exit_code == 2 and "--from" in result.stderr


# -- every registered codec --------------------------------------------------------------------


def test_every_registered_codec_gets_a_generated_home() -> None:
    """Codecs that cannot write, or have no home to discover (ATIF documents), have no
    generated home here; they are named, not skipped."""
    assert "grok" in GENERATED
    missing = support.codecs_without_generated_homes()
    assert all(not (registry.get(n).can_write and registry.get(n).can_discover) for n in missing), (
        missing
    )


@pytest.mark.parametrize("harness", support.generated_home_params())
def test_generated_home_first_run_no_change_run_extends_and_diverges(
    harness: str, tmp_path: Path, count_reads: list[str]
) -> None:
    full = rebuilt(support.growing_snapshot(), len(support.growing_snapshot().records))
    prefix = rebuilt(full, support.first_turn_end(full))
    # Other sessions in other projects, or with other id prefixes: Gemini CLI names a session
    # file by the first 8 characters of its id and keeps one such name per project. A
    # harness with no home has no id either but what its file holds: Aider's is the first
    # run's start, to the second, whatever the project.
    by_start = not registry.get(harness).homes
    names = {(full.session.cwd, full.session.id[:8])}
    starts = {full.session.created_at}
    others = []
    for snap in support.fixture_snapshots():
        name, start = (snap.session.cwd, snap.session.id[:8]), snap.session.created_at
        if name not in names and not (by_start and start in starts):
            names.add(name)
            starts.add(start)
            others.append(snap)
    others = others[:2]  # Aider's fixtures give one: the other two started in one second
    assert others
    sessions = 1 + len(others)
    homes = {name: tmp_path / name for name in ("pre", "full", "rewound")}
    for name, user_home in homes.items():
        user_home.mkdir()
        for snap in others:  # the same other sessions everywhere (a database is shared)
            # a cwd the target cannot hold is replaced, as a user would with --cwd
            cwd = {} if support.writable(snap, harness) else {"cwd": "/srv/explore"}
            support.install(snap, harness, tmp_path / name, user_home, **cwd)
    manifest = support.install(prefix, harness, tmp_path / "p", homes["pre"])
    support.install(full, harness, tmp_path / "f", homes["full"])
    support.install(prefix, harness, tmp_path / "r", homes["rewound"])
    native = {name: support.find_native_home(harness, h) for name, h in homes.items()}
    codec = registry.get(harness)
    refs = codec.discover(native["pre"])
    sid = manifest["session_id"]  # the id the target gave it (some derive their own)
    ref = next(r for r in refs if r.session_id == sid)
    store = tmp_path / "store"

    count_reads.clear()  # setting the homes up read the fixtures
    first = archive(store, harness=harness, home=native["pre"])
    assert first.ok and first.counts["first"] == len(refs) == sessions
    assert len(count_reads) == sessions
    count_reads.clear()
    again = archive(store, harness=harness, home=native["pre"])
    assert again.counts["skipped"] == sessions and count_reads == []

    def target(summary: Summary) -> Outcome:
        """The grown or rewound session's outcome; the others stay as they were, unless
        they share the replaced file (a database target lists no session_paths)."""
        if manifest["session_paths"]:
            others = [o for o in summary.outcomes if o.session_id != sid]
            assert {o.status for o in others} == {"skipped"}
        return next(o for o in summary.outcomes if o.session_id == sid)

    # the harness grows the session: its files become those of the full session
    pre = (homes["pre"], native["pre"])
    support.replace_session(manifest, ref.path, (homes["full"], native["full"]), pre)
    grown = target(archive(store, harness=harness, home=native["pre"]))
    assert grown.previous_id is not None and grown.snapshot_id is not None
    with Store.open(store) as st:
        old_doc, new_doc = st.document(grown.previous_id), st.document(grown.snapshot_id)
    old_bodies = [{k: v for k, v in r.items() if k != "hash"} for r in old_doc["records"]]
    new_bodies = [{k: v for k, v in r.items() if k != "hash"} for r in new_doc["records"]]
    is_prefix = len(old_bodies) < len(new_bodies) and new_bodies[: len(old_bodies)] == old_bodies
    assert grown.status == ("extends" if is_prefix else "diverged")
    if harness == "grok":
        assert grown.status == "extends"

    # the harness rewinds it to the first turn: never an extension of the grown one
    support.replace_session(manifest, ref.path, (homes["rewound"], native["rewound"]), pre)
    rewound = target(archive(store, harness=harness, home=native["pre"]))
    assert rewound.status == "diverged"
    report = verify_store(store)
    assert report.ok, report.problems
    assert report.sessions == sessions


@pytest.mark.parametrize(
    "harness",
    [n for n in registry.names() if registry.get(n).can_read and registry.get(n).can_discover],
)
def test_fixture_homes_first_run_and_no_change_run(
    harness: str, tmp_path: Path, count_reads: list[str]
) -> None:
    """Every codec, on a copy of the first of its fixture folders that discover lists."""
    found = support.fixture_home(harness, tmp_path / "user")
    if found is None:
        pytest.skip(f"{harness}: no fixtures/{harness}/<case> folder is a home discover lists")
    refs = registry.get(harness).discover(found)
    store = tmp_path / "store"
    count_reads.clear()
    first = archive(store, harness=harness, home=found)
    assert first.counts["first"] == len(refs) > 0 and len(count_reads) == len(refs)
    count_reads.clear()
    assert archive(store, harness=harness, home=found).counts["skipped"] == len(refs)
    assert count_reads == [] and verify_store(store).ok


def test_binary_artifacts_round_trip_through_the_store(tmp_path: Path) -> None:
    from trajconv.snapshot.builder import SnapshotBuilder, evidence
    from trajconv.snapshot.models import Source

    b = SnapshotBuilder(Source(harness="x", harness_version=None, session_id="s", locator="s"), "t")
    b.add_artifact("blob.bin", "application/octet-stream", bytes(range(256)) * 3)
    b.add_artifact("notes.txt", "text/plain", "héllo\n".encode())
    ev = evidence(artifact="notes.txt", line=1, native="line")
    b.add_text("user", "x:L1", "hello", time=None, turn=None, evidence=ev)
    snap = b.build()
    assert {a.encoding for a in snap.artifacts} == {"base64", "utf8"}
    with Store.open(tmp_path / "store", create=True, write=True) as st:
        added = st.add(snap, harness="x", session_id="s", fingerprint="fp")
        assert added.row.relation == "first" and added.artifacts_written == 2
        assert io.dumps(st.load(snap.id)) == io.dumps(snap)
        again = st.add(snap, harness="x", session_id="s", fingerprint="fp2")
        assert again.row.relation == "unchanged" and again.bytes_written == 0
    assert verify_store(tmp_path / "store").ok


def test_stored_snapshots_are_checked_a_record_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adding a grown session and verifying the store read no stored document whole
    (verify once held every document of the store at once), and verify reads each
    once; an index row that gives the wrong count is named, and the relation of the
    next row is still checked."""
    from trajconv.store import local as store_module

    full = support.growing_snapshot()
    prefix = rebuilt(full, support.first_turn_end(full))
    store = tmp_path / "store"
    whole: list[str] = []
    real = io.parse_document

    def counted(data: bytes, name: str) -> dict[str, object]:
        whole.append(name)
        return real(data, name)

    monkeypatch.setattr(io, "parse_document", counted)
    with Store.open(store, create=True, write=True) as st:
        sid = full.source.session_id  # a row is bound to its Snapshot's own session
        st.add(prefix, harness="grok", session_id=sid, fingerprint="1")
        grown = st.add(full, harness="grok", session_id=sid, fingerprint="2")
    assert grown.row.relation == "extends"
    streamed: list[str] = []
    check = store_module.verify_streamed

    def reads(path: Path, **kw: Any) -> Any:
        streamed.append(path.name)
        return check(path, **kw)

    monkeypatch.setattr(store_module, "verify_streamed", reads)
    report = verify_store(store)
    assert report.ok, report.problems
    assert report.snapshots == 2 and report.index_rows == 2
    assert whole == []
    assert sorted(streamed) == sorted(p.name for p in (store / SNAPSHOTS).iterdir())
    # loaded back (convert STORE --session, convert FILE) the same way, artifacts and all
    with Store.open(store) as st:
        loaded = st.load(full.id)
    doc = store / SNAPSHOTS / f"{full.id[7:]}.json"
    assert io.dumps(loaded) == io.dumps(load_input(doc)) == io.dumps(full)
    assert full.artifacts and whole == []

    import sqlite3

    con = sqlite3.connect(store / "index.sqlite")
    con.execute("UPDATE archived SET records = records + 1 WHERE row = 1")
    con.commit()
    con.close()
    report = verify_store(store)
    assert report.problems == [
        f"index.sqlite row 1 (grok {sid}): records/last hash differ from the Snapshot"
    ]
    con = sqlite3.connect(store / "index.sqlite")
    con.execute("UPDATE archived SET records = 'many' WHERE row = 1")  # SQLite keeps it
    con.commit()
    con.close()
    assert verify_store(store).problems == report.problems
    # a stored Snapshot whose artifact is damaged, its size kept: the whole-document
    # path names it
    art = next((store / ARTIFACTS).iterdir())
    data = art.read_bytes()
    art.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    result = CliRunner().invoke(cli, ["verify", str(doc)])
    assert result.exit_code == 1 and "bytes do not match" in result.output + result.stderr
    assert whole == [str(doc)]
    with Store.open(store) as st, pytest.raises(VerifyError, match="bytes do not match"):
        st.load(full.id)
    # one that is not a regular file is not read at all (/dev/zero or a FIFO never ends)
    art.unlink()
    art.symlink_to("/dev/zero")  # POSIX, as the store lock is

    def never(path: Path) -> tuple[str, int]:
        raise AssertionError(f"{path} read")

    monkeypatch.setattr(store_module, "_sha256_file", never)
    with Store.open(store) as st, pytest.raises(VerifyError, match="bytes do not match"):
        st.load(full.id)


@pytest.mark.parametrize("broken", [False, True])
def test_a_stored_snapshot_under_another_name_is_named(tmp_path: Path, broken: bool) -> None:
    snap = support.growing_snapshot()
    store = tmp_path / "store"
    with Store.open(store, create=True, write=True) as st:
        st.add(snap, harness="grok", session_id=snap.source.session_id, fingerprint="1")
    doc = store / SNAPSHOTS / f"{snap.id[7:]}.json"
    moved = doc.with_name("0" * 64 + ".json")
    data = doc.read_bytes()
    if broken:  # whole-document path: what is broken, and the name, are both reported
        first = snap.records[0]
        assert first.kind == "user"
        data = data.replace(orjson.dumps(first.text), orjson.dumps(first.text + "!"), 1)
    moved.write_bytes(data)
    doc.unlink()
    problems = verify_store(store).problems
    assert f"{SNAPSHOTS}/{moved.name}: holds {snap.id}" in problems
    assert any("hash does not match" in p for p in problems) == broken


def test_two_runs_on_one_store_do_not_interleave(home: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with (
        Store.open(store, create=True, write=True),
        pytest.raises(RefusedError, match="in use"),
    ):
        archive(store, harness="grok", home=home)
    assert archive(store, harness="grok", home=home).counts["first"] == 8


def test_a_folder_that_is_not_a_store_is_never_written_into(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "documents"
    other.mkdir()
    (other / "thesis.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["archive", str(other), "--home", str(home)])
    assert result.exit_code == 3
    assert sorted(p.name for p in other.iterdir()) == ["thesis.txt"]
