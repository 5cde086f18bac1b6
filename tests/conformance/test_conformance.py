"""What every registered codec does, checked on its own fixtures with no codec-specific code
(in the manner of meshio's one round-trip helper for every format): a codec that registers
and puts case folders under ``fixtures/<name>/`` is covered without a line here.

For each fixture case of each codec: the case folder (a native home, a session folder or a
store) and every session ``discover`` lists there are told to be this codec's from their
files; ``discover`` and ``read`` agree on the session; reading twice gives the same bytes;
what the writer writes its own reader reads back with every record kept or named by a
diagnostic; hostile input (a file cut short, bytes that are not UTF-8, JSON that does not
parse, a session id that climbs out of the home) is a valid Snapshot or a typed error.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES
from trajconv import api, find
from trajconv.codecs import registry
from trajconv.codecs.base import Codec
from trajconv.errors import TrajconvError
from trajconv.parity import FixtureSession, compare, fixture_sessions, write_options
from trajconv.snapshot import io as snapio
from trajconv.snapshot.models import Snapshot

CODECS = [c for c in registry.all_codecs() if c.can_read]


def _cases() -> list[tuple[Codec, Path]]:
    return [
        (c, case)
        for c in CODECS
        for case in sorted(p for p in (FIXTURES / c.name).glob("*") if p.is_dir())
    ]


def _sessions() -> list[tuple[Codec, FixtureSession]]:
    return [(c, fx) for c in CODECS for fx in fixture_sessions(c)]


CASES = _cases()
SESSIONS = _sessions()


def _case_id(item: tuple[Codec, Path]) -> str:
    return f"{item[0].name}/{item[1].name}"


def _session_id(item: tuple[Codec, FixtureSession]) -> str:
    return item[1].label


def _bytes(snap: Snapshot) -> bytes:
    out = io.BytesIO()
    snapio.write(snap, out)
    return out.getvalue()


def test_every_reading_codec_has_fixtures() -> None:
    bare = [c.name for c in CODECS if not any(c is cc for cc, _ in CASES)]
    assert not bare, f"codecs without a fixtures/<name>/<case>/ folder: {bare}"


@pytest.mark.parametrize("item", CASES, ids=[_case_id(i) for i in CASES])
def test_a_case_folder_is_told_from_its_files(item: tuple[Codec, Path]) -> None:
    codec, case = item
    assert find.detect(case) == codec.name


@pytest.mark.parametrize("item", SESSIONS, ids=[_session_id(i) for i in SESSIONS])
def test_a_discovered_session_is_told_from_its_path(item: tuple[Codec, FixtureSession]) -> None:
    codec, fx = item
    assert find.detect(fx.path) == codec.name


@pytest.mark.parametrize("item", SESSIONS, ids=[_session_id(i) for i in SESSIONS])
def test_discover_and_read_agree_and_reading_twice_is_the_same(
    item: tuple[Codec, FixtureSession],
) -> None:
    codec, fx = item
    snap = api.read(codec.name, fx.path, session=fx.session)
    assert snap.source.harness == codec.name
    refs = codec.discover(FIXTURES / codec.name / fx.case) if codec.can_discover else []
    if refs:
        (ref,) = [r for r in refs if r.path == fx.path and (fx.session in (None, r.session_id))]
        assert snap.source.session_id == ref.session_id
        assert ref.harness == codec.name
    assert _bytes(api.read(codec.name, fx.path, session=fx.session)) == _bytes(snap)


WRITERS = [(c, fx) for c, fx in SESSIONS if c.can_write]


@pytest.mark.parametrize("item", WRITERS, ids=[_session_id(i) for i in WRITERS])
def test_what_the_writer_writes_its_reader_reads_back(
    item: tuple[Codec, FixtureSession], tmp_path: Path
) -> None:
    codec, fx = item
    snap = api.read(codec.name, fx.path, session=fx.session)
    export = api.write(snap, codec.name, tmp_path / "out", allow_lossy=True, **write_options(snap))
    back = api.reread(export.out_dir)
    assert back.source.harness == codec.name
    codes = {d.code: d.count for d in export.diagnostics}
    rows = compare(snap, back, codes)
    lost = {kind: row["lost"] for kind, row in rows.items() if row["lost"]}
    assert not lost, f"records lost without a writer diagnostic: {lost}"


# -- hostile input -------------------------------------------------------------------------


#: files of a fixture case that no reader reads (how it was made, what a loader saw)
NOT_READ = ("README.md", "continuation-baseline.json", "listing.json", "prepare.py")


def _victim(where: Path) -> Path:
    """The file a mutation goes into: the session file itself, else the largest file the
    session's folder holds (its journal or its database)."""
    if where.is_file():
        return where
    files = [p for p in where.rglob("*") if p.is_file() and p.name not in NOT_READ]
    return max(files, key=lambda p: (p.stat().st_size, str(p)))


def _truncate(data: bytes) -> bytes:
    return data[: max(1, len(data) // 2)]


def _not_utf8(data: bytes) -> bytes:
    cut = len(data) // 3
    return data[:cut] + b"\xff\xfe\xc3(" + data[cut:]


def _malformed(data: bytes) -> bytes:
    # every '{' after the first line's start becomes '[': objects that no longer parse
    head, sep, tail = data.partition(b"\n")
    return head.replace(b"{", b"[", 2) + sep + tail.replace(b'{"', b'["', 3)


MUTATIONS = {"truncated": _truncate, "invalid-utf8": _not_utf8, "malformed-json": _malformed}
HOSTILE = [(c, fx, m) for c, fx in SESSIONS for m in MUTATIONS]


def _read_or_typed_error(codec: Codec, path: Path, session: str | None) -> None:
    try:
        snap = api.read(codec.name, path, session=session)
    except TrajconvError:
        return  # a typed error: named file and reason
    snapio.validate_document(snapio.parse_document(_bytes(snap), str(path)), str(path))


@pytest.mark.parametrize("item", HOSTILE, ids=[f"{fx.label}-{m}" for _c, fx, m in HOSTILE])
def test_hostile_input_is_a_snapshot_or_a_typed_error(
    item: tuple[Codec, FixtureSession, str], tmp_path: Path
) -> None:
    codec, fx, mutation = item
    case = FIXTURES / codec.name / fx.case
    copy = tmp_path / "case"
    shutil.copytree(case, copy, symlinks=True)
    path = copy / fx.path.relative_to(case) if fx.path.is_relative_to(case) else copy
    victim = _victim(path)
    victim.write_bytes(MUTATIONS[mutation](victim.read_bytes()))
    _read_or_typed_error(codec, path, fx.session)


@pytest.mark.parametrize("codec", CODECS, ids=[c.name for c in CODECS])
def test_a_session_id_that_climbs_out_of_the_home_is_refused(codec: Codec) -> None:
    case = next(p for p in sorted((FIXTURES / codec.name).glob("*")) if p.is_dir())
    with pytest.raises(TrajconvError):
        api.read(codec.name, case, session="../../x")
