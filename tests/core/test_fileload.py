"""Loading a Snapshot file a record and a chunk at a time (``snapshot/fileload.py``).

What the streamed load returns must be what the whole-document path returns, and
anything it does not take (another layout, a broken hash, a stored Snapshot's
``data: null``) must come back ``None``, so the whole-document path decides.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trajconv
from tests.helpers import FIXTURES
from trajconv.errors import FormatError
from trajconv.snapshot import hashing, io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.fileload import (
    _base64_bytes,
    _NotTheLayout,
    _string_bytes,
    load_streamed,
    verify_streamed,
)
from trajconv.snapshot.models import FORMAT, Snapshot, Source
from trajconv.snapshot.spool import CHUNK, PREFIX, RecordLog

CASES = (
    [
        ("grok", p)
        for p in sorted(FIXTURES.glob("grok/*/sessions/*/*"))
        if (p / "updates.jsonl").is_file()
    ]
    + [("copilot", p) for p in sorted(FIXTURES.glob("copilot/*/session-state/*")) if p.is_dir()]
    + [("cursor", p) for p in sorted(FIXTURES.glob("cursor/*/store.db"))]
)


def _whole(path: Path) -> Snapshot:
    return io.validate_document(io.parse_document(path.read_bytes(), str(path)), str(path))


def _built() -> Snapshot:
    """Records of every kind, one the models must order and hash (a float, an integer
    past 2^53), and artifacts of both encodings larger than a 1 MiB piece."""
    b = SnapshotBuilder(Source(harness="x", harness_version="1", session_id="s", locator="s"), "x")
    ev = evidence("log.jsonl", native="line", line=1)
    b.add_text("user", "u", 'hi "there"\n\u2028 \U0001f680', time=None, turn=0, evidence=ev)
    b.add_text("assistant", "a", "ok", time="2026-01-02T03:04:05.678Z", turn=0, evidence=ev)
    b.add_call(
        "c", "call", "tool", {"x": 1.5, "n": 2**60, "s": "é"}, time=None, turn=0, evidence=ev
    )
    b.add_result("r", "call", False, "boom", time=None, turn=0, evidence=ev, exit_code=2)
    text = ('é\U0001f680\x00\x1f"\\/ line\n' * 70_000).encode()  # escapes, 4-byte characters
    b.add_artifact("a.txt", "text/plain", text)
    b.add_artifact("b.bin", "application/octet-stream", bytes(range(256)) * 9000)
    b.add_artifact("c.txt", "text/plain", b"")
    b.diagnostics.add("unknown-kind", "log.jsonl:3", name="x.y")
    return b.build()


def _check_same(path: Path) -> Snapshot:
    streamed = load_streamed(path)
    assert streamed is not None
    assert isinstance(streamed.records, RecordLog)  # spooled, not held
    whole = _whole(path)
    assert streamed == whole
    assert io.verify(streamed).ok
    checked = verify_streamed(path)  # the check alone finds the same
    assert checked is not None
    assert (checked.id, checked.records, checked.artifacts) == (
        whole.id,
        len(whole.records),
        len(whole.artifacts),
    )
    assert checked.last_hash == (whole.records[-1].hash if whole.records else None)
    assert checked.digests == tuple(a.sha256 for a in whole.artifacts)
    return streamed


@pytest.mark.parametrize(("harness", "path"), CASES, ids=lambda v: getattr(v, "name", v))
def test_a_snapshot_file_of_each_fixture_loads_streamed_as_it_loads_whole(
    harness: str, path: Path, tmp_path: Path
) -> None:
    file = tmp_path / "snap.json"
    io.dump(trajconv.read(harness, path), file)
    streamed = _check_same(file)
    assert io.dumps(streamed) == file.read_bytes()


def test_large_artifacts_and_records_the_models_order_load_streamed(tmp_path: Path) -> None:
    file = tmp_path / "snap.json"
    snap = _built()
    io.dump(snap, file)
    assert file.stat().st_size > 3 * CHUNK
    streamed = _check_same(file)
    assert streamed == snap and streamed.id == snap.id
    assert [a.encoding for a in streamed.artifacts] == ["utf8", "base64", "utf8"]
    assert io.dumps(streamed) == file.read_bytes()
    assert io.load(file) == snap  # the public loader takes the streamed path


def _relaid(data: bytes, change: Any) -> bytes:
    """The document parsed, changed, and written back in the same layout."""
    doc = orjson.loads(data)
    change(doc)
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def test_escaped_characters_and_reordered_members_still_load_streamed(tmp_path: Path) -> None:
    # Another writer may escape every non-ASCII character (surrogate pairs for 4-byte
    # ones, which may straddle a piece) and order a record's members otherwise.
    snap = _built()
    data = io.dumps(snap)
    doc = orjson.loads(data)
    for i in (0, 2):  # a record plain_record passes, and one only the models take
        doc["records"][i] = dict(reversed(doc["records"][i].items()))
    file = tmp_path / "ascii.json"
    file.write_text(json.dumps(doc, indent=2, ensure_ascii=True) + "\n")
    assert file.read_bytes() != data and b"\\ud83d\\ude80" in file.read_bytes()
    streamed = _check_same(file)
    assert io.dumps(streamed) == data  # written back in trajconv's own layout


def test_a_record_laid_out_as_orjson_writes_it_with_its_hash_elsewhere_is_spooled_in_order(
    tmp_path: Path,
) -> None:
    # A record whose text is the spool's (trajconv's layout) is spooled as it is; one in
    # orjson's layout with its hash moved (or with members in another order) is not.
    snap = _built()
    data = io.dumps(snap)
    doc = orjson.loads(data)
    for i in (0, 1):
        doc["records"][i]["hash"] = doc["records"][i].pop("hash")  # last, not after evidence
    doc["records"][3] = {"hash": doc["records"][3].pop("hash"), **doc["records"][3]}
    file = tmp_path / "moved.json"
    file.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    assert file.read_bytes() != data
    streamed = _check_same(file)
    assert io.dumps(streamed) == data  # every record spooled in the models' order


def test_small_artifacts_of_both_encodings_load_streamed_whole_on_their_line(
    tmp_path: Path,
) -> None:
    # A data string on one line is decoded at once; escapes, 4-byte characters, base64
    # with and without padding, and an empty one, all as the piecewise decoding gives.
    b = SnapshotBuilder(Source(harness="x", harness_version="1", session_id="s", locator="s"), "x")
    b.add_text("user", "u", "hi", time=None, turn=0, evidence=evidence("a", native="line"))
    for i, data in enumerate([b"", b"\xff", b"\xff\x00", b"\xff\x00\x01", bytes(range(256))]):
        b.add_artifact(f"bin{i}", "application/octet-stream", data)
    b.add_artifact("t", "text/plain", 'é\U0001f680\x00"\\/\n\u2028'.encode())
    b.add_artifact("u", "text/plain", b"")
    snap = b.build()
    file = tmp_path / "small.json"
    io.dump(snap, file)
    streamed = _check_same(file)
    assert streamed == snap and io.dumps(streamed) == file.read_bytes()
    assert [a.read() for a in streamed.artifacts] == [a.read() for a in snap.artifacts]
    # padding in the middle of a string, or a size the bytes do not have: the whole path
    data = file.read_bytes()
    for old, new in ((b'"/w==', b'"/w==AAAA'), (b'"size": 1,', b'"size": 2,')):
        assert old in data
        (tmp_path / "bad.json").write_bytes(data.replace(old, new, 1))
        assert verify_streamed(tmp_path / "bad.json") is None


def _rehash(doc: dict[str, Any]) -> None:
    """Chain hashes and id made again for the changed content (for the format trajconv
    reads), in the document's own order, as a careful hand-editor would: only the
    check under test can refuse it."""
    digest = hashing.header_digest(FORMAT, doc["source"])
    for rec in doc["records"]:
        rec.pop("hash")
        digest = hashing.record_digest(digest, rec)
        rec["hash"] = hashing.tag(digest)
    arts = [{k: a[k] for k in ("name", "sha256", "size")} for a in doc["artifacts"]]
    doc["id"] = hashing.snapshot_id(FORMAT, doc["source"], doc["session"], digest, arts)


def _rehashed(change: Any) -> Any:
    def both(doc: dict[str, Any]) -> None:
        change(doc)
        _rehash(doc)

    return both


def _swap_artifacts(doc: dict[str, Any]) -> None:
    arts = doc["artifacts"]
    arts[0], arts[1] = arts[1], arts[0]


def _repeat_artifact(doc: dict[str, Any]) -> None:
    doc["artifacts"].insert(1, doc["artifacts"][0])


def _other_format(doc: dict[str, Any]) -> None:
    doc["format"] = "x/1"


def _break_hash(doc: dict[str, Any]) -> None:
    doc["records"][1]["text"] = "changed"


def _null_data(doc: dict[str, Any]) -> None:
    doc["artifacts"][2]["data"] = None


def _wrong_size(doc: dict[str, Any]) -> None:
    doc["artifacts"][2]["size"] = 1


def _extra_member(doc: dict[str, Any]) -> None:
    doc["records"][0]["extra"] = 1


# A member left out that the models default: they would fill it in and the hash would
# match again, but the hash is over the members the file holds.
def _defaulted_record_member(doc: dict[str, Any]) -> None:
    del doc["records"][3]["result"]["truncated"]


def _defaulted_session_member(doc: dict[str, Any]) -> None:
    del doc["session"]["cwd"]


def _session_changed(doc: dict[str, Any]) -> None:
    doc["session"]["title"] = "changed"


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda d: _relaid(d, _break_hash), id="a record changed"),
        pytest.param(lambda d: _relaid(d, _null_data), id="data beside the document"),
        pytest.param(lambda d: _relaid(d, _wrong_size), id="an artifact's size"),
        pytest.param(
            lambda d: _relaid(d, _rehashed(_extra_member)), id="a member the models refuse"
        ),
        pytest.param(lambda d: _relaid(d, _rehashed(_other_format)), id="another format"),
        pytest.param(lambda d: _relaid(d, _defaulted_record_member), id="a record's default"),
        pytest.param(lambda d: _relaid(d, _defaulted_session_member), id="a session default"),
        pytest.param(lambda d: _relaid(d, _session_changed), id="a session fact changed"),
        # The id is over the artifacts in name order: out of order or twice, the id left
        # as it was would still match once they were sorted and put in a table.
        pytest.param(lambda d: _relaid(d, _swap_artifacts), id="artifacts out of order"),
        pytest.param(lambda d: _relaid(d, _repeat_artifact), id="an artifact twice"),
        pytest.param(lambda d: orjson.dumps(orjson.loads(d)), id="another layout"),
        pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
        pytest.param(lambda d: d[:-1], id="no final newline"),
    ],
)
def test_what_the_streamed_load_does_not_take_goes_to_the_whole_document_path(
    make: Any, tmp_path: Path
) -> None:
    file = tmp_path / "snap.json"
    file.write_bytes(make(io.dumps(_built())))
    assert load_streamed(file) is None
    assert verify_streamed(file) is None


def test_the_rehashed_cases_are_refused_only_by_the_check_under_test(tmp_path: Path) -> None:
    # Without the change, the rehash alone leaves a file the streamed load takes.
    file = tmp_path / "snap.json"
    file.write_bytes(_relaid(io.dumps(_built()), _rehashed(lambda doc: None)))
    assert load_streamed(file) == _built()


def test_the_check_alone_makes_no_spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = _built()
    file = tmp_path / "snap.json"
    io.dump(built, file)  # artifacts of several MiB
    made: list[str] = []  # a spool is removed once unused, so its making is what is seen
    mkdtemp = tempfile.mkdtemp

    def spy(prefix: str = "", **kw: Any) -> str:
        made.append(prefix)
        return mkdtemp(prefix=prefix, **kw)

    monkeypatch.setattr("tempfile.mkdtemp", spy)
    checked = verify_streamed(file)
    assert checked is not None and (checked.id, checked.records) == (built.id, 4)
    assert made == []
    assert load_streamed(file) == built
    assert made == [PREFIX]


def test_base64_padding_is_only_taken_at_the_very_end() -> None:
    assert b"".join(_base64_bytes(iter([b"/wAA", b"AA=="]))) == b"\xff\x00\x00\x00"
    with pytest.raises(_NotTheLayout):  # decoded whole, "/w==AAAA" stops at the padding
        list(_base64_bytes(iter([b"/w==", b"AAAA"])))


def test_a_missing_file_is_the_whole_document_paths_to_report(tmp_path: Path) -> None:
    assert load_streamed(tmp_path / "nothing.json") is None
    with pytest.raises(FormatError, match="cannot read"):
        io.load(tmp_path / "nothing.json")


def test_verify_names_a_file_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli

    file = tmp_path / "snap.json"
    io.dump(_built(), file)
    real = Path.open

    def refused(self: Path, *a: Any, **k: Any) -> Any:
        if self == file:
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "open", refused)  # read_bytes opens it too
    result = CliRunner().invoke(cli, ["verify", str(file)])
    assert result.exit_code == 1
    assert f"{file}: cannot read: Permission denied" in result.output + result.stderr


def test_a_broken_record_is_still_named_by_verify(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli

    file = tmp_path / "snap.json"
    file.write_bytes(_relaid(io.dumps(_built()), _break_hash))
    result = CliRunner().invoke(cli, ["verify", str(file)])
    assert result.exit_code == 1
    assert "record 1 (a): hash does not match its content" in result.output
    good = tmp_path / "good.json"
    io.dump(_built(), good)
    result = CliRunner().invoke(cli, ["verify", "--json", str(good)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["records"] == 4


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)
    | st.text(st.sampled_from('\\"\n\x00e\u00e9\U0001f680'), max_size=300),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=10),
)
def test_string_pieces_decode_wherever_the_body_is_cut(
    text: str, ascii_only: bool, cuts: list[int]
) -> None:
    # A piece is decoded only where no escape (surrogate pairs included) and no UTF-8
    # character straddles its end, whatever the parts it came in.
    body = json.dumps(text, ensure_ascii=ascii_only).encode()[1:-1]
    edges = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    parts = [body[a:b] for a, b in itertools.pairwise(edges)]
    assert b"".join(_string_bytes(iter(parts))) == text.encode()


@pytest.mark.parametrize(("piece", "scan"), [(1, 1 << 30), (7, 1 << 30), (64, 200), (4096, 0)])
def test_records_found_in_pieces_of_any_size_load_as_line_by_line(
    piece: int, scan: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A record's end is searched for in pieces of the file (a closing line may straddle
    # two), and a record longer than the scan limit is read line by line; either way
    # the same Snapshot, and a cut or changed closing line is still refused.
    from trajconv.snapshot import fileload

    monkeypatch.setattr(fileload, "_PIECE", piece)
    monkeypatch.setattr(fileload, "_SCAN", scan)
    file = tmp_path / "snap.json"
    snap = _built()
    io.dump(snap, file)
    streamed = _check_same(file)
    assert streamed == snap and io.dumps(streamed) == file.read_bytes()
    data = file.read_bytes()
    for old, new in (
        (b"\n    },\n    {\n", b"\n    },\n    },\n"),
        (b"\n    }\n  ],\n", b"\n    }\n"),
    ):
        assert old in data
        (tmp_path / "bad.json").write_bytes(data.replace(old, new, 1))
        assert verify_streamed(tmp_path / "bad.json") is None


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.lists(
            st.sampled_from(
                [b'      "a": 1,\n', b"    }}\n", b"    }, \n", b"      },\n", b"  }\n", b"x\n"]
            ),
            max_size=6,
        ),
        min_size=1,
        max_size=5,
    ),
    ends=st.lists(st.sampled_from([b"    },\n", b"    }\n", b"    }", b"    },"]), max_size=5),
    piece=st.integers(min_value=1, max_value=40),
    scan=st.integers(min_value=0, max_value=200),
)
def test_the_items_found_in_pieces_are_the_ones_read_line_by_line(
    items: list[list[bytes]], ends: list[bytes], piece: int, scan: int
) -> None:
    import io as stdio

    from trajconv.snapshot import fileload

    ends = ends + [b"    },\n"] * len(items)
    data = b"".join(
        b"    {\n" + b"".join(lines) + end for lines, end in zip(items, ends, strict=False)
    )
    data += b"  ],\n"

    def line_by_line() -> tuple[list[tuple[bytes, bool]], int | None]:
        loader = fileload._Loader(stdio.BytesIO(data), keep=False)
        found: list[tuple[bytes, bool]] = []
        try:
            while not (found and found[-1][1]):
                found.append(loader._item_lines(b"    {\n", b"    "))
        except _NotTheLayout:
            return found, None
        return found, loader._fh.tell()

    def in_pieces() -> tuple[list[tuple[bytes, bool]], int | None]:
        loader = fileload._Loader(stdio.BytesIO(data), keep=False)
        found: list[tuple[bytes, bool]] = []
        try:
            found.extend(loader._items(b"    "))
        except _NotTheLayout:
            return found, None
        return found, loader._fh.tell()

    saved = fileload._PIECE, fileload._SCAN
    fileload._PIECE, fileload._SCAN = piece, scan
    try:
        expected, got = line_by_line(), in_pieces()
    finally:
        fileload._PIECE, fileload._SCAN = saved
    if expected[1] is None:
        assert got[1] is None  # refused either way (items before may be found or not)
    else:
        assert got == expected
