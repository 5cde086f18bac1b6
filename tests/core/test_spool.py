"""Snapshots that keep records and artifact bytes on disk (issue 10): same bytes, same hashes."""

from __future__ import annotations

import base64
import gc
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajconv.codecs.jsonl import read_bounded
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot import io
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence
from trajconv.snapshot.jsonstream import Members, json_chunks
from trajconv.snapshot.models import Snapshot, Source
from trajconv.snapshot.spool import (
    CHUNK,
    SWEEP_AFTER,
    SWEEP_UNOWNED_AFTER,
    Blob,
    RecordLog,
    records_value,
    sweep,
)

SOURCE = Source(harness="grok", harness_version=None, session_id="s1", locator="s1")


def _builder() -> SnapshotBuilder:
    return SnapshotBuilder(SOURCE, "test")


def _ev(line: int) -> EvidenceFields:
    return evidence(artifact="log.jsonl", line=line, native="line")


def _reference(snap: object) -> bytes:
    """The Snapshot file as one dict dumped whole (what io.write must equal)."""
    doc = snap.model_dump(mode="json")  # type: ignore[attr-defined]
    for art, model in zip(doc["artifacts"], snap.artifacts, strict=True):  # type: ignore[attr-defined]
        data = model.read()
        art["data"] = (
            base64.b64encode(data).decode() if art["encoding"] == "base64" else data.decode()
        )
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def test_many_records_spool_and_read_back_in_order() -> None:
    b = _builder()
    for i in range(1000):
        b.add_text(
            "user" if i % 2 else "assistant",
            f"r{i}",
            f"text {i}",
            time=None,
            turn=i,
            evidence=_ev(i + 1),
        )
    assert len(b._tail) <= 2 * SnapshotBuilder._TAIL  # older records left memory
    snap = b.build()
    assert isinstance(snap.records, RecordLog)
    assert len(snap.records) == 1000
    assert [r.seq for r in snap.records] == list(range(1000))
    assert snap.records[-1].id == "r999" and snap.records[10].id == "r10"
    assert [r.id for r in reversed(snap.records)][:2] == ["r999", "r998"]
    assert [r.id for r in snap.records[3:6]] == ["r3", "r4", "r5"]
    assert tuple(snap.records) == snap.records  # equal to the same records in memory
    assert io.verify(snap).ok
    loaded = io.loads(io.dumps(snap))
    assert not isinstance(loaded.records, RecordLog) and loaded == snap


def test_spooled_records_come_back_as_the_models_validating_them_makes() -> None:
    # RecordLog makes its models without validating again (every spooled record was
    # checked): they must be what validation makes, of every kind and nested model.
    from trajconv.snapshot.spool import _record_adapter, _record_model

    b = _builder()
    t = "2026-11-30T03:43:25.244Z"
    b.add_text("user", "u", "hi", time=t, turn=0, evidence=_ev(1))
    for kind in ("assistant", "reasoning"):
        b.add_text(kind, kind, "x", time=None, turn=0, evidence=_ev(2), model="m")
    b.add_text("system", "s", "y", time=None, turn=None, evidence=_ev(3))
    b.add_text("observation", "o", "z", time=None, turn=None, evidence=_ev(4))
    b.add_call(
        "c", "call", "tool", {"a": [1, 2.5, None, {"b": True}]}, time=t, turn=0, evidence=_ev(5)
    )
    b.add_call("big", "call2", "tool", {"n": 2**70}, time=None, turn=0, evidence=_ev(6))
    b.add_result("r", "call", False, "out", time=t, turn=0, evidence=_ev(7), exit_code=3)
    snap = b.build()
    adapter = _record_adapter()
    for record, text in zip(snap.records, snap.records._texts(), strict=True):
        validated = adapter.validate_python(orjson.loads(text))
        assert type(record) is type(validated) and record == validated
        assert record.model_fields_set == validated.model_fields_set
        assert record.evidence.model_fields_set == validated.evidence.model_fields_set
        assert adapter.dump_json(record) == adapter.dump_json(validated)
        assert hash(record.evidence) == hash(validated.evidence)
        with pytest.raises(ValueError, match="frozen"):
            record.id = "other"  # type: ignore[misc]
    assert len(snap.records) == 8 and io.verify(snap).ok
    # a text without exactly its model's members is validated (and refused) as before
    for bad in (
        b'{"kind": "user"}',
        b'{"seq": 0, "id": "u", "time": null, "turn": null, "evidence": {}, "hash": "x",'
        b' "kind": "user", "text": "hi"}',
        b'{"kind": ["user"]}',
    ):
        with pytest.raises(ValueError):
            _record_model(bad)


def test_hold_keeps_a_record_amendable_and_amend_refuses_written_ones() -> None:
    b = _builder()
    first = b.add_text("user", "u0", "hi", time=None, turn=None, evidence=_ev(1))
    b.hold(first)
    for i in range(500):
        b.add_text("assistant", f"a{i}", "x", time=None, turn=None, evidence=_ev(i + 2))
    b.amend(first, turn=7)
    b.release()
    for i in range(500):
        b.add_text("assistant", f"b{i}", "y", time=None, turn=None, evidence=_ev(i + 600))
    with pytest.raises(ValueError, match="already written"):
        b.amend(first, turn=8)
    snap = b.build()
    assert snap.records[0].turn == 7
    assert io.verify(snap).ok


def test_a_source_completed_after_records_were_spooled_chains_them_again() -> None:
    late, early = _builder(), _builder()
    early.source = SOURCE.model_copy(update={"harness_version": "1.0"})
    for b in (late, early):
        for i in range(300):
            b.add_text("user", f"u{i}", f"hi {i}", time=None, turn=None, evidence=_ev(i + 1))
        b.add_call("c", "call", "tool", {"n": 2**70}, time=None, turn=0, evidence=_ev(301))
    late.source = SOURCE.model_copy(update={"harness_version": "1.0"})
    snap = late.build()
    assert snap.source.harness_version == "1.0"
    assert io.dumps(snap) == io.dumps(early.build())
    assert io.verify(snap).ok and len(snap.records) == 301


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("count", [0, 1, 3000])
def test_the_spooled_records_array_is_what_orjson_writes_at_its_depth(
    depth: int, count: int
) -> None:
    # The spool holds the array's items laid out for a Snapshot file (depth 1); the
    # Cursor readout has them one level deeper. 3,000 records cross a 1 MiB slice.
    b = _builder()
    for i in range(count):
        text = f'line {i}\n  "quoted"\t{{not: json}}\n' * 20
        b.add_text("user", f"u{i}", text, time=None, turn=i, evidence=_ev(i + 1))
    if count:  # and one record through the models (numbers JCS and orjson write apart)
        args = {"n": 2**70, "x": [1.5]}
        b.add_call("c", "call", "tool", args, time=None, turn=0, evidence=_ev(0))
    snap = b.build()
    assert isinstance(snap.records, RecordLog) and len(snap.records) == count + bool(count)
    value: Any = records_value(snap.records, depth)
    reference: Any = [r.model_dump(mode="json") for r in snap.records]
    for _ in range(depth):
        value, reference = Members(records=value), {"records": reference}
    written = b"".join(json_chunks(value))
    assert written == orjson.dumps(reference, option=orjson.OPT_INDENT_2)
    assert [d["id"] for d in snap.records.dicts()] == [r.id for r in snap.records]


def test_numbers_beyond_doubles_keep_their_digits_and_nan_is_a_format_error() -> None:
    b = _builder()
    b.add_call("c1", "call", "tool", {"ns": 2**53 + 1}, time=None, turn=0, evidence=_ev(7))
    snap = b.build()
    data = io.dumps(snap)
    assert b'"ns": 9007199254740993' in data
    again = io.loads(data)
    assert again.id == snap.id and io.verify(again).ok
    b = _builder()
    b.add_call("c1", "call", "tool", {"x": float("nan")}, time=None, turn=0, evidence=_ev(7))
    with pytest.raises(FormatError, match=r"log\.jsonl.*7.*record c1.*nan") as caught:
        b.build()
    assert caught.value.line == 7


def test_large_artifacts_stream_into_the_file_byte_for_byte(tmp_path: Path) -> None:
    # A UTF-8 file whose 4-byte characters straddle every chunk boundary, and binary
    # bytes longer than one base64 piece: the streamed file equals the whole-dict dump.
    text = ("ab\U0001f600" * (CHUNK // 3)).encode()
    native = tmp_path / "big.jsonl"
    native.write_bytes(text)
    binary = bytes(range(256)) * (CHUNK // 64) + b"\xff\xfe"
    b = _builder()
    copy = b.add_artifact_file("big.jsonl", "application/x-ndjson", native, 1 << 30, "max")
    assert copy.whole_file is not None and copy.whole_file.read_bytes() == text
    with b.artifact_writer("bin", "application/octet-stream") as w:
        for start in range(0, len(binary), 1000):
            w.write(binary[start : start + 1000])
    b.add_artifact("meta.json", "application/json", b'{"a": 1}')
    snap = b.build()
    arts = {a.name: a for a in snap.artifacts}
    assert arts["big.jsonl"].encoding == "utf8" and arts["bin"].encoding == "base64"
    assert arts["bin"].read() == binary and arts["meta.json"].read() == b'{"a": 1}'
    data = io.dumps(snap)
    assert data == _reference(snap)
    again = io.loads(data)
    assert again == snap and io.verify(again).ok


def test_add_artifact_file_refuses_a_file_over_the_limit(tmp_path: Path) -> None:
    native = tmp_path / "log.jsonl"
    native.write_bytes(b"x" * 100)
    with pytest.raises(LimitError, match=r"log\.jsonl"):
        _builder().add_artifact_file("log.jsonl", "application/x-ndjson", native, 99, "max_x")


def test_a_whole_file_read_sets_aside_its_size_not_the_limit(tmp_path: Path) -> None:
    """``read(limit)`` would ask for the limit first: 4 GiB by default, refused outright
    by a machine with less memory and swap (``ulimit -v`` showed it: MemoryError)."""
    native = tmp_path / "workspace.yaml"
    native.write_bytes(b"cwd: /w\n")
    assert read_bounded(native, 1 << 62) == b"cwd: /w\n"


class _Grown(type(Path())):
    """A file that was smaller when its size was looked at than when it is read."""

    def stat(self, **_: Any) -> Any:
        return os.stat_result((0, 0, 0, 0, 0, 0, 3, 0, 0, 0))


def test_a_file_that_grows_while_read_is_read_on_to_the_limit(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_bytes(b"x" * 100)
    grown = _Grown(tmp_path / "log.jsonl")
    assert read_bounded(grown, 100) == b"x" * 100
    with pytest.raises(LimitError, match=r"log\.jsonl.*max_x"):
        read_bounded(grown, 99, "max_x")


def test_artifacts_are_kept_in_name_order_and_a_name_added_again_replaces_its_entry(
    tmp_path: Path,
) -> None:
    native = tmp_path / "session.json"
    native.write_bytes(b'{"api_key": "k", "a": "\xc3\xa9"}')
    b = _builder()
    b.add_artifact("z.bin", "application/octet-stream", b"\xff")
    b.add_artifact_file("session.json", "application/json", native, 1 << 20, "max")
    b.add_artifact("a.txt", "text/plain", b"a")
    # a reader that finds a credential in a copied JSON file adds the stripped bytes
    kept = b.add_artifact("session.json", "application/json", native.read_bytes())
    snap = b.build()
    assert [a.name for a in snap.artifacts] == ["a.txt", "session.json", "z.bin"]
    assert [a.encoding for a in snap.artifacts] == ["utf8", "utf8", "base64"]
    stripped = snap.artifacts.get("session.json")  # type: ignore[attr-defined]
    assert stripped is not None and stripped.read() == kept.read()
    assert b"api_key" not in kept.read() and stripped.size == len(kept.read())
    assert stripped.sha256 == hashlib.sha256(kept.read()).hexdigest()
    assert snap.artifacts[-1].read() == b"\xff" and snap.artifacts[0:1][0].name == "a.txt"
    again = io.loads(io.dumps(snap))
    assert again == snap and io.verify(again).ok and again.id == snap.id


def test_small_and_large_artifacts_and_models_with_inline_data_write_the_same_bytes(
    tmp_path: Path,
) -> None:
    # a built Snapshot reads its small artifacts whole and streams large ones; a model
    # validated straight from the document holds its data inline instead of in a Blob
    b = _builder()
    b.add_artifact("small.bin", "application/octet-stream", b"\x00\xff" * 10)
    b.add_artifact("small.txt", "text/plain", "caf\u00e9 \U0001f680\n".encode())
    with b.artifact_writer("large.txt", "text/plain") as w:
        w.write(('\u00e9"\\\n' * (1 << 16)).encode())
    snap = b.build()
    data = io.dumps(snap)
    assert data == _reference(snap)
    inline = Snapshot.model_validate(orjson.loads(data))
    assert all(a.blob is None and a.data is not None for a in inline.artifacts)
    assert io.dumps(inline) == data
    assert io.verify(inline).ok


def test_blobs_compare_by_content() -> None:
    assert Blob.from_bytes(b"abc") == Blob.from_bytes(b"abc")
    assert Blob.from_bytes(b"abc") != Blob.from_bytes(b"abd")


def test_the_spool_folder_goes_when_the_snapshot_does() -> None:
    b = _builder()
    b.add_text("user", "u", "hi", time=None, turn=None, evidence=_ev(1))
    snap = b.build()
    folder = b._spool.dir
    assert folder.is_dir()
    del b, snap
    gc.collect()
    assert not folder.exists()


def test_pickling_hands_the_spool_over() -> None:
    # A worker process of `archive --jobs` pickles its Snapshot to the parent.
    import pickle

    b = _builder()
    b.add_text("user", "u", "hi", time=None, turn=None, evidence=_ev(1))
    b.add_artifact("meta.json", "application/json", b"{}")
    data = pickle.dumps(b.build())
    del b
    gc.collect()
    again = pickle.loads(data)
    assert [r.text for r in again.records] == ["hi"]
    assert again.artifacts[0].read() == b"{}"
    assert io.verify(again).ok


def test_a_reader_may_tell_the_encoding_instead_of_the_builder_decoding(tmp_path: Path) -> None:
    from trajconv.codecs.base import Limits
    from trajconv.codecs.jsonl import Utf8Tally, iter_file_objects
    from trajconv.snapshot.diagnostics import Diagnostics

    for data, expected in ((b'{"a": "\xc3\xa9"}\n\xff\n', "base64"), (b'{"a": 1}\nx\n', "utf8")):
        native = tmp_path / "log.jsonl"
        native.write_bytes(data)
        b = _builder()
        tally = Utf8Tally()
        copy = b.add_artifact_file(
            "log.jsonl", "application/x-ndjson", native, 99, "max", utf8=tally.verdict
        )
        assert copy.whole_file is not None
        lines = list(
            iter_file_objects(copy.whole_file, "log.jsonl", Diagnostics(), Limits(), tally)
        )
        assert len(lines) == 1
        assert b.build().artifacts[0].encoding == expected
    # a reader that stopped early cannot tell: the builder decodes the bytes itself
    b = _builder()
    b.add_artifact_file(
        "log.jsonl", "application/x-ndjson", native, 99, "max", utf8=Utf8Tally().verdict
    )
    assert b.build().artifacts[0].encoding == "utf8"


_HOLD_A_SPOOL = """
import os, sys
from trajconv.snapshot.spool import Spool
spool = Spool()
spool.new_file("records").write_bytes(b"x")
print(spool.dir, flush=True)
if sys.argv[1] == "kill":
    os._exit(9)  # as a killed run: no finalizer, no cleanup
sys.stdin.read()  # alive until the test closes stdin
"""


def _backdate(folder: Path) -> None:
    old = time.time() - SWEEP_AFTER - 60
    os.utime(folder, (old, old))


@pytest.mark.skipif(sys.platform == "win32", reason="owner locks are POSIX flock")
def test_a_killed_runs_spool_is_swept_once_old_and_a_living_ones_never(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    cmd = [sys.executable, "-c", _HOLD_A_SPOOL]
    killed = subprocess.run([*cmd, "kill"], env=env, capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    dead = Path(killed.stdout.strip())
    alive = subprocess.Popen(
        [*cmd, "live"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert alive.stdout is not None and alive.stdin is not None
        living = Path(alive.stdout.readline().strip())
        assert dead.is_dir() and living.is_dir() and dead.parent == tmp_path
        assert sweep(tmp_path) == []  # both too recent: a folder may be between owners
        _backdate(dead)
        _backdate(living)
        (tmp_path / "trajconv-spool-link").symlink_to(living, target_is_directory=True)
        unowned = tmp_path / "trajconv-spool-unowned"  # made before owner files
        unowned.mkdir()
        _backdate(unowned)
        assert sweep(tmp_path) == [dead]  # the living owner holds its lock
        old = time.time() - SWEEP_UNOWNED_AFTER - 60
        os.utime(unowned, (old, old))
        assert sweep(tmp_path) == [unowned]
        assert not dead.exists() and living.is_dir()
        alive.stdin.close()
        assert alive.wait(timeout=30) == 0
    finally:
        alive.kill()
    assert not living.exists()  # removed by its own process when it ended


@pytest.mark.skipif(sys.platform == "win32", reason="owner locks are POSIX flock")
def test_a_spool_handed_over_by_pickling_is_owned_by_the_side_that_unpickles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    b = _builder()
    b.add_text("user", "u", "hi", time=None, turn=None, evidence=_ev(1))
    snap = b.build()
    folder = b._spool.dir
    _backdate(folder)
    data = pickle.dumps(snap)  # the worker's side lets go of the folder, renewing its time
    assert time.time() - folder.stat().st_mtime < SWEEP_AFTER
    again = pickle.loads(data)
    del b, snap
    gc.collect()
    _backdate(folder)
    assert folder.parent == tmp_path
    assert sweep(tmp_path) == []  # the unpickled side holds it
    assert [r.text for r in again.records] == ["hi"]
    del again
    gc.collect()
    assert not folder.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="owner locks are POSIX flock")
def test_a_folder_handed_over_between_the_sweeps_look_and_its_lock_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from trajconv.snapshot import spool

    folder = tmp_path / "trajconv-spool-handed"
    folder.mkdir()
    (folder / spool.OWNER).touch()
    _backdate(folder)
    real = fcntl.flock

    def handed_over_meanwhile(fd: int, op: int) -> None:
        os.utime(folder)  # what pickling does before the worker lets go
        real(fd, op)

    monkeypatch.setattr(spool.fcntl, "flock", handed_over_meanwhile)
    assert sweep(tmp_path) == [] and folder.is_dir()


@pytest.mark.skipif(sys.platform == "win32", reason="owner locks are POSIX flock")
def test_a_file_system_without_locks_still_spools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from trajconv.snapshot import spool

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(spool.fcntl, "flock", no_locks)
    b = _builder()
    b.add_text("user", "u", "hi", time=None, turn=None, evidence=_ev(1))
    snap = b.build()
    assert [r.text for r in snap.records] == ["hi"]
    _backdate(b._spool.dir)
    assert sweep(tmp_path) == []  # it cannot lock the folder either, so it leaves it


@pytest.mark.parametrize("order", ["in name order", "reversed", "shuffled"])
def test_small_artifacts_read_ahead_come_back_byte_for_byte(order: str) -> None:
    """ArtifactLog.dicts reads small artifacts that follow each other in their spool file
    in growing spans: each comes back with its own bytes and members, whatever the order
    they were added in (out of order, each is read alone), large ones between them too."""
    import random

    names = [f"events/{i:05d}.json" for i in range(600)]
    added = {
        "in name order": names,
        "reversed": names[::-1],
        "shuffled": random.Random(7).sample(names, len(names)),
    }[order]
    b = _builder()
    for i, name in enumerate(added):
        size = 3 + (i * 37) % 900  # spans end inside artifacts and between them
        b.add_artifact(name, "application/json", (b'{"n":%d}' % i).ljust(size, b" "))
        if i % 150 == 75:
            b.add_artifact(f"{name}.big", "text/plain", b"x" * (CHUNK + 3))
    snap = b.build()
    got = list(snap.artifacts.dicts(1 << 16))  # type: ignore[attr-defined]
    assert [meta["name"] for meta, _ in got] == [a.name for a in snap.artifacts]
    for (meta, blob), art in zip(got, snap.artifacts, strict=True):
        data = blob.read()
        assert data == art.read()
        assert meta == {
            "name": art.name,
            "media_type": art.media_type,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "encoding": art.encoding,
        }
    assert io.dumps(snap) == _reference(snap)


def test_a_spool_file_cut_short_names_the_artifact_it_lacks() -> None:
    b = _builder()
    for i in range(20):
        b.add_artifact(f"a{i:02d}.txt", "text/plain", b"%02d" % i * 50)
    snap = b.build()
    paths = {Path(p) for p in snap.artifacts._paths}  # type: ignore[attr-defined]
    for path in paths:
        os.truncate(path, 1000)  # 10 of the 20 artifacts (100 bytes each) are whole
    with pytest.raises(OSError, match=r"ends short of artifact a10\.txt"):
        list(snap.artifacts.dicts(1 << 16))  # type: ignore[attr-defined]
