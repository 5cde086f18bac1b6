"""add_artifact's bytes, offsets and encoding verdicts (held bytes go to the pack directly)."""

from __future__ import annotations

import json

import orjson

from trajconv.snapshot.builder import SnapshotBuilder
from trajconv.snapshot.models import Source
from trajconv.snapshot.secrets import UNPARSED


def _builder() -> SnapshotBuilder:
    return SnapshotBuilder(
        Source(harness="t", harness_version=None, session_id="s", locator="x"), "t"
    )


def test_held_artifacts_of_parent_and_child_read_back_with_their_encodings() -> None:
    b = _builder()
    kid = b.child(Source(harness="t", harness_version=None, session_id="k", locator="x"), None)
    kept = {
        "a.txt": b"plain ascii\n",
        "b.txt": "h\u00e9llo \U0001f680\n".encode(),
        "c.bin": bytes(range(256)) * 3,
        "d.txt": b"",
        "e.txt": "caf\u00e9".encode()[:-1],  # a cut sequence: not UTF-8
    }
    for i, (name, data) in enumerate(kept.items()):
        (kid if i % 2 else b).add_artifact(name, "text/plain", data)
    snap = b.build()
    got = {a.name: (a.read(), a.encoding) for a in snap.artifacts}
    assert got == {
        "a.txt": (kept["a.txt"], "utf8"),
        "b.txt": (kept["b.txt"], "utf8"),
        "c.bin": (kept["c.bin"], "base64"),
        "d.txt": (b"", "utf8"),
        "e.txt": (kept["e.txt"], "base64"),
    }


def test_json_artifact_utf8_verdict_and_parsed_value() -> None:
    utf16 = '{"a": 1}'.encode("utf-16")
    ok = '{"t": "\u00e9", "api_key": "x"}'.encode()
    b = _builder()
    b.add_artifact("orjson.json", "application/json", ok, parsed=orjson.loads(ok))
    b.add_artifact("json.json", "application/json", ok, parsed=json.loads(ok), utf8=True)
    b.add_artifact("utf16.json", "application/json", utf16, parsed=json.loads(utf16), utf8=False)
    b.add_artifact("unparsed.json", "application/json", utf16, parsed=UNPARSED)
    snap = b.build()
    arts = {a.name: a for a in snap.artifacts}
    stripped = json.dumps({"t": "\u00e9"}, indent=2, ensure_ascii=False).encode()
    assert arts["orjson.json"].read() == arts["json.json"].read() == stripped
    assert arts["orjson.json"].encoding == arts["json.json"].encoding == "utf8"
    assert arts["utf16.json"].read() == arts["unparsed.json"].read() == utf16
    assert arts["utf16.json"].encoding == arts["unparsed.json"].encoding == "base64"
    dropped = next(d for d in snap.diagnostics if d.code == "secret-dropped")
    assert dropped.count == 2
