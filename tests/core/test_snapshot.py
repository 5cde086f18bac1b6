"""The Snapshot contract: schema, canonical hashing, verification, determinism."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
import rfc8785

import trajconv
from tests.helpers import FIXTURES
from trajconv.errors import FormatError
from trajconv.snapshot import hashing, io, schema_export
from trajconv.snapshot.diagnostics import REGISTRY, Diagnostics

GROK_CASE = FIXTURES / "grok" / "multi-turn"


@pytest.fixture(scope="module")
def snap() -> trajconv.snapshot.Snapshot:
    return trajconv.read("grok", GROK_CASE, session="019c0000-1111-7000-8000-00000000abcd")


def test_committed_schema_matches_models() -> None:
    committed = json.loads(
        io.resources.files("trajconv.snapshot").joinpath("schema.json").read_text()
    )
    assert committed == schema_export.generate(), (
        "schema.json drifted from the models; run python -m trajconv.snapshot.schema_export"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # RFC 8785 §3.2.2.3 numbers; §3.2.3 sorts keys by UTF-16 code units (€ before 😀)
        (
            {"numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001]},
            b'{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}',
        ),
        (
            {"\u20ac": "Euro Sign", "\r": "Carriage Return", "1": "One", "\U0001f600": "Emoji"},
            '{"\\r":"Carriage Return","1":"One","\u20ac":"Euro Sign",'
            '"\U0001f600":"Emoji"}'.encode(),
        ),
        ({"literals": [None, True, False]}, b'{"literals":[null,true,false]}'),
    ],
)
def test_canonical_json_follows_rfc8785(value: object, expected: bytes) -> None:
    assert hashing.canonical(value) == expected
    assert rfc8785.dumps(value) == expected


def test_snapshot_verifies_and_is_byte_identical_on_every_read(snap) -> None:
    assert io.verify(snap).ok
    again = trajconv.read("grok", GROK_CASE, session=snap.session.id)
    assert io.dumps(again) == io.dumps(snap)


def test_dump_load_round_trip_keeps_every_byte(snap, tmp_path) -> None:
    path = tmp_path / "s.json"
    io.dump(snap, path)
    loaded = io.load(path)
    assert loaded == snap
    assert io.dumps(loaded) == path.read_bytes()


def _doc(snap) -> dict:
    return orjson.loads(io.dumps(snap))


@pytest.mark.parametrize("index", [0, 3, -1])
def test_tampering_a_record_names_it(snap, index: int) -> None:
    doc = _doc(snap)
    rec = doc["records"][index]
    if "text" in rec:
        rec["text"] += "!"
    else:
        rec["time"] = "1999-01-01T00:00:00.000Z"
    report = io.verify_document(doc)
    assert not report.ok
    pos = index % len(doc["records"])
    assert report.problems[0].startswith(f"record {pos} ({rec['id']})")


def test_tampering_an_artifact_byte_names_it(snap) -> None:
    doc = _doc(snap)
    art = doc["artifacts"][0]
    art["data"] = ("X" + art["data"][1:]) if art["data"][0] != "X" else ("Y" + art["data"][1:])
    report = io.verify_document(doc)
    assert report.problems == [f"artifact {art['name']}: bytes do not match sha256/size"]


def test_tampering_session_facts_breaks_the_id(snap) -> None:
    doc = _doc(snap)
    doc["session"]["title"] = "other"
    report = io.verify_document(doc)
    assert len(report.problems) == 1 and report.problems[0].startswith("id is")


def test_tampering_source_changes_every_hash(snap) -> None:
    doc = _doc(snap)
    doc["source"]["session_id"] = "other"
    report = io.verify_document(doc)
    assert report.problems and report.problems[0].startswith("record 0")


def test_id_covers_artifact_list(snap) -> None:
    doc = _doc(snap)
    doc["artifacts"] = doc["artifacts"][:-1]
    report = io.verify_document(doc)
    assert any(p.startswith("id is") for p in report.problems)


def test_chain_prefix_is_shared_by_a_grown_session(tmp_path) -> None:
    """A session that grew, with its facts updated as harnesses do, extends the old chain."""
    import shutil

    src = GROK_CASE / "sessions" / "%2Fsrv%2Fdemo" / "019c0000-1111-7000-8000-00000000abcd"
    sdir = tmp_path / src.name
    shutil.copytree(src, sdir)
    old = trajconv.read("grok", sdir)
    journal = (src / "updates.jsonl").read_bytes()
    cut = journal.index(b'"promptIndex":1')
    (sdir / "updates.jsonl").write_bytes(journal[: journal.rindex(b"\n", 0, cut) + 1])
    short = trajconv.read("grok", sdir)
    summary = (src / "summary.json").read_text().replace("08:09:30.48", "09:00:00.00")
    (sdir / "summary.json").write_text(summary.replace("List the demo", "Renamed"))
    (sdir / "updates.jsonl").write_bytes(journal)
    grown = trajconv.read("grok", sdir)
    assert grown.session != short.session and grown.id != old.id
    n = len(short.records)
    assert 0 < n < len(grown.records)
    assert grown.records[n - 1].hash == short.records[n - 1].hash


def test_load_rejects_other_formats_and_schema_violations(snap, tmp_path) -> None:
    doc = _doc(snap)
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps({**doc, "format": "trajconv.snapshot/9"}))
    with pytest.raises(FormatError, match=r"expected 'trajconv\.snapshot/1'"):
        io.load(bad)
    broken = copy.deepcopy(doc)
    broken["records"][0]["kind"] = "monologue"
    bad.write_bytes(orjson.dumps(broken))
    with pytest.raises(FormatError, match="schema: at records/0"):
        io.load(bad)


def test_registry_codes_are_kebab_case_and_writer_codes_say_so() -> None:
    for code, c in REGISTRY.items():
        assert code == c.code and code.islower() and " " not in code and "_" not in code
        if code.startswith("untranslated-"):
            assert c.side == "writer" and not c.units


def test_diagnostics_are_bounded_and_refuse_unknown_codes() -> None:
    d = Diagnostics()
    for i in range(50):
        d.add("torn-line", f"f:{i}")
    (model,) = d.to_models()
    assert model.count == 50 and len(model.samples) == 5
    with pytest.raises(KeyError):
        d.add("no-such-code")


def test_yaml_credentials_are_dropped_with_their_block() -> None:
    from trajconv.snapshot.secrets import strip_yaml_bytes

    text = (
        b"id: x\ngithub_token: ghp_PLANTED\nauth:\n  password: PLANTED2\n  user: me\n"
        b"api_key:\n  - PLANTED3\nname: keep\n"
    )
    clean, dropped = strip_yaml_bytes(text)
    assert b"PLANTED" not in clean
    assert clean == b"id: x\nauth:\n  user: me\nname: keep\n"
    assert dropped == ["line 2: github_token", "line 4: password", "line 6: api_key"]
