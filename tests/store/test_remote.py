"""The store on object storage, against a real S3 server on loopback (``conftest.py``).

Each failure case is named by ``trajconv verify`` and recovered by the next archive run:
two concurrent runs into one bucket, a run killed mid-upload, a damaged object, a
missing index object. Unchanged sessions re-archived make no uploads (request count).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

import pytest
from click.testing import CliRunner

from tests.archive import support
from tests.helpers import rebuilt
from tests.store.conftest import S3Server
from trajconv.cli.main import cli
from trajconv.errors import VerifyError
from trajconv.harvest import archive
from trajconv.snapshot.models import Snapshot
from trajconv.store import load_input, verify_store
from trajconv.store.remote import ObjectStore, index_key

UPLOADS = ("PUT", "POST")


def _home(tmp_path: Path, name: str = "user") -> Path:
    return support.grok_home(tmp_path / name, ["multi-turn", "recorded-tool-failures"])


def _as_session(snap: Snapshot, session_id: str) -> Snapshot:
    """``snap`` read as session ``session_id`` (a row is bound to its Snapshot's own)."""
    source = snap.source.model_copy(update={"session_id": session_id})
    return rebuilt(snap.model_copy(update={"source": source}), len(snap.records))


def _s3fs() -> object:
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trajconv.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_archive_log_convert_export_import_on_s3_and_no_uploads_when_unchanged(
    s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    home = _home(tmp_path)
    runner = CliRunner()
    start = len(s3.requests)
    first = runner.invoke(cli, ["archive", bucket, "--home", str(home), "--json"])
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output)
    assert summary["counts"]["first"] == summary["sessions"] >= 2
    assert summary["snapshots_written"] == summary["sessions"]
    # one upload per object: the marker, each artifact, each document, each index object
    objects = 1 + summary["artifacts_written"] + 2 * summary["sessions"]
    print(
        f"first archive of {summary['sessions']} sessions: {s3.count(start)} requests, "
        f"{s3.count(start, UPLOADS)} uploads for {objects} objects"
    )
    assert s3.count(start, UPLOADS) == objects

    before = len(s3.requests)
    again = runner.invoke(cli, ["archive", bucket, "--home", str(home), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["counts"]["skipped"] == summary["sessions"]
    uploads = s3.count(before, UPLOADS)
    total = s3.count(before)
    print(
        f"re-archive of {summary['sessions']} unchanged sessions: {total} requests, "
        f"{uploads} uploads"
    )
    assert uploads == 0
    assert total <= 4  # the marker, one listing of index/ (objects seen are cached)

    result = runner.invoke(cli, ["verify", bucket, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ok"] and report["index_rows"] == summary["sessions"]

    log = json.loads(runner.invoke(cli, ["archive", "log", bucket, "--json"]).output)
    sid = log[0]["session_id"]
    snap = load_input(bucket, sid)
    assert snap.id == log[0]["latest_id"]
    out = tmp_path / "out"
    converted = runner.invoke(
        cli, ["convert", bucket, "--session", sid, "--to", "grok", "-o", str(out)]
    )
    assert converted.exit_code == 0, converted.output
    assert (out / "prepare.py").is_file()

    tar = tmp_path / "team.tar.gz"
    assert runner.invoke(cli, ["archive", "export", bucket, str(tar)]).exit_code == 0
    copy = bucket.rsplit("/", 1)[0] + "/copy"
    imported = runner.invoke(cli, ["archive", "import", str(tar), copy, "--json"])
    assert imported.exit_code == 0, imported.output
    assert verify_store(copy).ok
    with ObjectStore.open(copy) as st:
        assert st.load(snap.id).id == snap.id
        assert [r.snapshot_id for r in st.rows()] == [r["latest_id"] for r in log]


def test_two_concurrent_runs_into_one_bucket(s3: S3Server, bucket: str, tmp_path: Path) -> None:
    """Two members archive the same sessions at once (two processes), and two writers
    race for one index row in this process: every row lands once, in one chain."""
    homes = [_home(tmp_path, "alice"), _home(tmp_path, "bob")]
    env = s3.env(tmp_path / "cache-runs")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trajconv.cli.main",
                "archive",
                bucket,
                "--home",
                str(h),
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "TRAJCONV_CACHE": str(tmp_path / f"cache-{h.parent.name}")},
        )
        for h in homes
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    sessions = json.loads(outs[0][0])["sessions"]
    report = verify_store(bucket)
    assert report.ok, report.problems
    assert report.index_rows == 2 * sessions and report.sessions == sessions
    with ObjectStore.open(bucket) as st:
        for s in st.sessions():
            rows = st.rows(session=s["session_id"])
            assert [r.relation for r in rows] == ["first", "unchanged"]

    # the race itself, made certain: both writers read the index before either writes
    snap = _as_session(support.growing_snapshot(), "raced")
    a = ObjectStore.open(bucket, write=True)
    b = ObjectStore.open(bucket, write=True)
    a.add(snap, harness="grok", session_id="raced", fingerprint="a")
    b.add(snap, harness="grok", session_id="raced", fingerprint="b")  # loses row 1, takes 2
    a.close()
    b.close()
    fs = _s3fs()
    bucket_path = bucket.removeprefix("s3://")
    assert fs.exists(f"{bucket_path}/{index_key('grok', 'raced', 2)}")  # type: ignore[attr-defined]
    with ObjectStore.open(bucket) as st:
        rows = st.rows(session="raced")
    assert [(r.fingerprint, r.relation) for r in rows] == [("a", "first"), ("b", "unchanged")]
    assert verify_store(bucket).ok


def test_run_killed_mid_upload_leaves_a_store_that_verifies(
    s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    home = _home(tmp_path)
    s3.hold_path = "/snapshots/"  # the first Snapshot document upload is held
    proc = subprocess.Popen(
        [sys.executable, "-m", "trajconv.cli.main", "archive", bucket, "--home", str(home)],
        env=s3.env(tmp_path / "cache-killed"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert s3.arrived.wait(120), "the run never uploaded a Snapshot"
        os.kill(proc.pid, signal.SIGKILL)  # killed while the document is half sent
        proc.wait(30)
    finally:
        s3.hold_path = None
        s3.release.set()
    report = verify_store(bucket)
    assert report.ok, report.problems
    assert report.index_rows == 0 and report.snapshots == 0
    rerun = CliRunner().invoke(cli, ["archive", bucket, "--home", str(home), "--json"])
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.output)
    report = verify_store(bucket)
    assert report.ok and report.index_rows == summary["sessions"] == summary["counts"]["first"]


def test_damaged_object_is_named_and_rewritten(s3: S3Server, bucket: str, tmp_path: Path) -> None:
    home = _home(tmp_path)
    archive(bucket, home=home)
    fs = _s3fs()
    root = bucket.removeprefix("s3://")
    art = sorted(fs.find(f"{root}/artifacts"))[0]  # type: ignore[attr-defined]
    sha = art.rsplit("/", 1)[1]
    fs.pipe_file(art, fs.cat_file(art)[:-5])  # type: ignore[attr-defined]  # a torn upload
    report = verify_store(bucket)
    assert not report.ok
    assert any(f"artifacts/{sha}" in p for p in report.problems), report.problems
    # another member (or a copy of the home) archives the same sessions: the object is
    # written again from the bytes its digest names
    copy = tmp_path / "copy"
    shutil.copytree(home.parent, copy)
    archive(bucket, home=copy / home.name)
    assert verify_store(bucket).ok

    # a byte changed in a stored document (same size): named by verify, refused by load
    with ObjectStore.open(bucket) as st:
        row = st.rows()[0]
    doc = f"{root}/snapshots/{row.snapshot_id[7:]}.json"
    data = fs.cat_file(doc)  # type: ignore[attr-defined]
    at = data.index(b'"text": "') + len(b'"text": "')
    flipped = b"Q" if data[at : at + 1] != b"Q" else b"R"
    fs.pipe_file(doc, data[:at] + flipped + data[at + 1 :])  # type: ignore[attr-defined]
    report = verify_store(bucket)
    assert any(f"snapshots/{row.snapshot_id[7:]}.json" in p for p in report.problems)
    os.environ["TRAJCONV_CACHE"] = str(tmp_path / "another-member")  # (undone by s3's setenv)
    with pytest.raises(VerifyError):  # a member whose cache does not hold it already
        load_input(bucket, row.session_id)
    assert not list((tmp_path / "another-member").rglob(f"{row.snapshot_id[7:]}.json"))

    # a damaged index object is named by its key and left out of the index
    key = index_key(row.harness, row.session_id, 1)
    fs.pipe_file(f"{root}/{key}", b"{not json")  # type: ignore[attr-defined]
    report = verify_store(bucket)
    assert any(key in p and "damaged index object" in p for p in report.problems)


def test_missing_index_object_is_named_and_restored(
    s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    home = _home(tmp_path)
    archive(bucket, home=home)
    with ObjectStore.open(bucket) as st:
        row = st.rows()[0]
    fs = _s3fs()
    root = bucket.removeprefix("s3://")
    fs.rm_file(f"{root}/{index_key(row.harness, row.session_id, 1)}")  # type: ignore[attr-defined]
    report = verify_store(bucket)
    assert any("not in the index" in n for n in report.notes), report.notes
    with ObjectStore.open(bucket) as st:
        assert not st.rows(session=row.session_id)
    before = len(s3.requests)
    summary = archive(bucket, home=home)  # its fingerprint is gone: read, and re-indexed
    assert summary.snapshots_written == 0 and summary.artifacts_written == 0
    assert s3.count(before, UPLOADS) == 1  # the index object alone
    with ObjectStore.open(bucket) as st:
        assert [r.snapshot_id for r in st.rows(session=row.session_id)] == [row.snapshot_id]
    assert verify_store(bucket).ok

    # a gap in a session's rows is named by its key
    snap = _as_session(support.growing_snapshot(), "gap")
    with ObjectStore.open(bucket, write=True) as st:
        st.add(snap, harness="grok", session_id="gap", fingerprint="1")
        st.add(snap, harness="grok", session_id="gap", fingerprint="2")
    fs.rm_file(f"{root}/{index_key('grok', 'gap', 1)}")  # type: ignore[attr-defined]
    report = verify_store(bucket)
    assert any(index_key("grok", "gap", 1) in p for p in report.problems), report.problems


def test_failed_write_abandons_the_upload(bucket: str, tmp_path: Path) -> None:
    """A writer that raises part-way (an artifact whose bytes do not match its digest)
    leaves no object, on S3 and in a folder: nothing half-written becomes visible."""
    from trajconv.store.backend import FsspecBackend, LocalBackend

    def torn(handle: BinaryIO) -> None:
        handle.write(b"x" * 1000)
        raise VerifyError("bytes do not match sha256/size")

    for backend in (FsspecBackend(bucket), LocalBackend(tmp_path / "folder")):
        with pytest.raises(VerifyError):
            backend.put_if_absent("artifacts/" + "0" * 64, torn)
        assert backend.stat("artifacts/" + "0" * 64) is None
        assert backend.put_if_absent("artifacts/" + "0" * 64, lambda h: h.write(b"ok"))
        assert not backend.put_if_absent("artifacts/" + "0" * 64, lambda h: h.write(b"no"))
        assert backend.get("artifacts/" + "0" * 64) == b"ok"


def test_missing_bucket_is_a_clear_error(s3: S3Server, tmp_path: Path) -> None:
    home = _home(tmp_path)
    url = "s3://no-such-bucket-trajconv/team"
    result = CliRunner().invoke(cli, ["archive", url, "--home", str(home)])
    assert result.exit_code == 1, result.output
    assert f"{url}/trajconv-store.json: cannot reach the store" in result.output
    assert "Traceback" not in result.output


def test_object_store_on_a_local_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same store through the local-folder backend (``file://``)."""
    monkeypatch.setenv("TRAJCONV_CACHE", str(tmp_path / "cache"))
    home = _home(tmp_path)
    url = f"file://{tmp_path / 'store'}"
    first = archive(url, home=home)
    assert first.ok and first.counts["first"] == len(first.outcomes) >= 2
    assert archive(url, home=home).counts["skipped"] == len(first.outcomes)
    assert verify_store(url).ok
