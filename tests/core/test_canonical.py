"""The fast paths of the hot loop give exactly the reference bytes.

``hashing.canonical`` takes ``orjson`` for plain values and ``rfc8785`` for the rest;
``builder.time_from_ms`` splits whole milliseconds instead of formatting a float.
Both must be byte-equal to the reference, or every Snapshot id would change.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from trajconv.snapshot import hashing
from trajconv.snapshot.builder import iso_ms, time_from_ms

# RFC 8785 §3.2.2 (the sample input and its canonical form).
RFC_INPUT = (
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
    ' "literals": [null, true, false]}'
)
RFC_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)

# RFC 8785 §3.2.3: property sorting by UTF-16 code units (U+FB33 after U+1F600).
RFC_SORT_INPUT = {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\U0001f600": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis",
}
RFC_SORT_ORDER = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]

# RFC 8785 Appendix B: numbers and their canonical text.
RFC_NUMBERS = [
    (0.0, "0"),
    (-0.0, "0"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (9007199254740992.0, "9007199254740992"),
    (295147905179352830000.0, "295147905179352830000"),
    (1e21, "1e+21"),
    (1e23, "1e+23"),
    (0.000001, "0.000001"),
    (1e-7, "1e-7"),
    (333333333.3333332, "333333333.3333332"),
]


def test_rfc_sample() -> None:
    assert hashing.canonical(json.loads(RFC_INPUT)) == RFC_OUTPUT.encode()


def test_rfc_property_order() -> None:
    out = hashing.canonical(RFC_SORT_INPUT).decode()
    assert list(json.loads(out)) == RFC_SORT_ORDER
    assert out == rfc8785.dumps(RFC_SORT_INPUT).decode()


@pytest.mark.parametrize(("number", "text"), RFC_NUMBERS)
def test_rfc_numbers(number: float, text: str) -> None:
    assert hashing.canonical([number]) == f"[{text}]".encode()


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1, 2, {"c": None}], "d": True, "é": "naïve 🚀", "\u007f": "\x00\x1f"},
        {"z": {"y": {"x": "\u2028\u2029\ue000\U0010ffff"}}},
        [9007199254740991, -9007199254740991, 0, "", {}, []],
        '\b\f\n\r\t"\\/',
    ],
)
def test_fast_path_matches_reference(value: Any) -> None:
    assert hashing.plain_json(value)
    assert hashing.canonical(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "\U0001f600": 2},  # sorts differently in UTF-8 and UTF-16
        [1.5],
        [2**53],
        {1: "non-string key"},
        ("tuple",),
    ],
)
def test_fast_path_declines(value: Any) -> None:
    assert not hashing.plain_json(value)


def _same_outcome(value: Any) -> None:
    try:
        expected: bytes | type[BaseException] = rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        # an integer beyond 2^53 keeps its digits (issue 25): JCS's bytes with that number
        # written exactly, so they parse back to the same value
        expected = hashing.canonical(value)
        stack, big = [value], []
        while stack:
            item = stack.pop()
            if isinstance(item, dict | list):
                stack.extend(item.values() if isinstance(item, dict) else item)
            elif type(item) is int and abs(item) > hashing.MAX_SAFE_INTEGER:
                big.append(item)
        assert big and all(str(n).encode() in expected for n in big)
    except Exception as exc:
        expected = type(exc)
    try:
        got: bytes | type[BaseException] = hashing.canonical(value)
    except Exception as exc:
        got = type(exc)
    assert got == expected


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_generated_values_match_reference(value: Any) -> None:
    _same_outcome(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"n": 2**53 + 1}, b'{"n":9007199254740993}'),  # not the double 2^53 it reads as
        ({"n": -(2**64)}, b'{"n":-18446744073709551616}'),
        ([2**70, 1.5, "\u00e9"], b'[1180591620717411303424,1.5,"\xc3\xa9"]'),
        ({"b": 2**60, "a": {"\ue000": 1, "\U0001f600": 2}}, None),
    ],
)
def test_integers_beyond_2_53_keep_their_digits(value: Any, text: bytes | None) -> None:
    """A tampered large integer must not hash as the untampered one (issue 25)."""
    got = hashing.canonical(value)
    if text is not None:
        assert got == text
    assert json.loads(got) == value
    if isinstance(value, dict) and "b" in value:  # keys in UTF-16 order, as JCS sorts them
        assert got == b'{"a":{"\xf0\x9f\x98\x80":2,"\xee\x80\x80":1},"b":1152921504606846976}'
    assert hashing.canonical({"n": 2**53 + 1}) != hashing.canonical({"n": 2**53})


@pytest.mark.parametrize("value", [[float("nan")], {"x": [float("inf")]}])
def test_numbers_jcs_cannot_hold_are_a_value_error(value: Any) -> None:
    with pytest.raises(ValueError):
        hashing.canonical(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(alphabet=st.characters(), min_size=1, max_size=4), st.integers()))
def test_generated_keys_sort_like_reference(value: dict[str, int]) -> None:
    _same_outcome(value)


def _reference_time(ms: int | float) -> str:
    return iso_ms(datetime.fromtimestamp(ms / 1000, tz=UTC))


@pytest.mark.parametrize(
    "ms", [0, 999, 1000, 1_788_249_600_150, 2**32 * 1000 - 1, 2**32 * 1000, 1.5, 1e12 + 0.5]
)
def test_time_from_ms_edges(ms: int | float) -> None:
    assert time_from_ms(ms) == _reference_time(ms)


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 * 1000 + 10_000))
def test_time_from_ms_matches_reference(ms: int) -> None:
    assert time_from_ms(ms) == _reference_time(ms)


def _reference_file(snap: Any) -> bytes:
    """The Snapshot as one dict, each artifact's bytes encoded whole into its ``data``."""
    import base64

    import orjson

    doc = snap.model_dump(mode="json")
    for art, model in zip(doc["artifacts"], snap.artifacts, strict=True):
        data = model.read()
        art["data"] = (
            base64.b64encode(data).decode() if art["encoding"] == "base64" else data.decode()
        )
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SESSIONS = [
    ("grok", p)
    for p in sorted(FIXTURES.glob("grok/*/sessions/*/*"))
    if (p / "updates.jsonl").is_file()
] + [("cursor", p) for p in sorted(FIXTURES.glob("cursor/*/store.db"))]


@pytest.mark.parametrize(("harness", "path"), SESSIONS, ids=lambda v: getattr(v, "name", v))
def test_streamed_snapshot_file_is_the_reference_bytes(harness: str, path: Path) -> None:
    import trajconv
    from trajconv.snapshot import io

    snap = trajconv.read(harness, path)
    assert io.dumps(snap) == _reference_file(snap)


def test_streamed_snapshot_file_without_records_or_artifacts() -> None:
    from trajconv.snapshot import io
    from trajconv.snapshot.builder import SnapshotBuilder
    from trajconv.snapshot.models import Source

    b = SnapshotBuilder(Source(harness="x", harness_version=None, session_id="s", locator="s"), "x")
    snap = b.build()
    assert not snap.records and not snap.artifacts and not snap.diagnostics
    assert io.dumps(snap) == _reference_file(snap)


def test_streamed_large_artifacts_are_the_reference_bytes() -> None:
    # Over 64 KiB an artifact's data is encoded chunk by chunk (1 MiB): text whose
    # characters straddle the chunk boundary, every control character, and bytes.
    from trajconv.snapshot import io
    from trajconv.snapshot.builder import SnapshotBuilder
    from trajconv.snapshot.models import Source

    b = SnapshotBuilder(Source(harness="x", harness_version=None, session_id="s", locator="s"), "x")
    controls = "".join(map(chr, range(0x20))) + '"\\/\x7f\u2028'
    text = ("é" + "\U0001f680" * 3 + controls + "日本語") * 40_000
    b.add_artifact("a.txt", "text/plain", text.encode())
    b.add_artifact("b.bin", "application/octet-stream", bytes(range(256)) * 5000)
    snap = b.build()
    assert [a.encoding for a in snap.artifacts] == ["utf8", "base64"]
    assert io.dumps(snap) == _reference_file(snap)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=64))
def test_utf8_string_body_is_what_orjson_writes_even_cut_inside_a_character(
    text: str, cut: int
) -> None:
    import orjson

    from trajconv.snapshot.jsonstream import utf8_string_body

    data = text.encode("utf-8", "surrogatepass")
    cut = min(cut, len(data))
    try:
        expected = orjson.dumps(text)[1:-1]
    except orjson.JSONEncodeError:  # a lone surrogate: not UTF-8, never given
        return
    assert utf8_string_body(data[:cut]) + utf8_string_body(data[cut:]) == expected


# -- builder.plain_record: a record it passes needs neither pydantic nor rfc8785 ---------------

_WILD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(["2026-11-30T12:00:00.000Z", "2026-11-30T12:00:00Z", "x", "\ud800"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


_opt_str = st.none() | st.text(max_size=8)
_evidence = st.fixed_dictionaries(
    {
        "artifact": st.text(max_size=8),
        "line": st.none() | st.integers(min_value=0, max_value=10**6),
        "json_path": _opt_str,
        "native": st.text(max_size=8),
        "native_id": _opt_str,
        "units": st.integers(min_value=0, max_value=3),
    }
)
_bodies = {
    "user": {"text": st.text(max_size=8)},
    "assistant": {"text": st.text(max_size=8), "model": _opt_str},
    "reasoning": {"text": st.text(max_size=8), "model": _opt_str},
    "system": {"text": st.text(max_size=8)},
    "observation": {"text": st.text(max_size=8)},
    "tool-call": {
        "call": st.fixed_dictionaries(
            {"id": st.text(max_size=8), "name": st.text(max_size=8), "arguments": json_values}
        )
    },
    "tool-result": {
        "result": st.fixed_dictionaries(
            {
                "call_id": st.text(max_size=8),
                "ok": st.none() | st.booleans(),
                "output": st.text(max_size=8),
                "truncated": st.booleans(),
                "exit_code": st.none() | st.integers(min_value=-(2**31), max_value=2**31),
            }
        )
    },
}


@st.composite
def _records(draw: st.DrawFn) -> dict[str, Any]:
    """A record the models accept, then up to two members changed, dropped or added."""
    kind = draw(st.sampled_from(sorted(_bodies)))
    rec = {
        "seq": draw(st.integers(min_value=0, max_value=10**6)),
        "id": draw(st.text(max_size=8)),
        "time": draw(st.none() | st.just("2026-11-30T12:00:00.123Z")),
        "turn": draw(st.none() | st.integers(min_value=0, max_value=99)),
        "evidence": draw(_evidence),
        "kind": kind,
    }
    for key, value in _bodies[kind].items():
        rec[key] = draw(value)
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        where = rec
        nested = [k for k in ("evidence", "call", "result") if isinstance(rec.get(k), dict)]
        if nested and draw(st.booleans()):
            where = rec[draw(st.sampled_from(nested))]
        action = draw(st.sampled_from(["change", "change", "drop", "add"]))
        if action == "add":
            where["extra"] = None
        elif where:
            key = draw(st.sampled_from(sorted(where)))
            if action == "drop":
                del where[key]
            else:
                where[key] = draw(_WILD)
    return rec


@settings(max_examples=1500, deadline=None)
@given(_records())
def test_a_plain_record_is_one_the_models_and_the_reference_accept(rec: dict[str, Any]) -> None:
    from trajconv.snapshot.builder import plain_record
    from trajconv.snapshot.spool import _record_adapter

    if not plain_record(rec):
        return
    _record_adapter().validate_python({**rec, "hash": "sha256:" + "0" * 64}, strict=True)
    try:
        expected = rfc8785.dumps(rec)
    except Exception:  # a lone surrogate in a string: the fallback path decides
        return
    assert hashing.canonical(rec, plain=True) == expected


def test_records_the_readers_make_are_plain() -> None:
    # Sound is not enough: if the common record fell back, every read would pay pydantic.
    import trajconv
    from trajconv.snapshot.builder import plain_record

    for harness, path in SESSIONS:
        snap = trajconv.read(harness, path)
        dicts = list(snap.records.dicts())  # type: ignore[attr-defined]
        assert dicts
        for rec in dicts:
            rec.pop("hash")
            assert plain_record(rec), (harness, path, rec["id"])


# -- secrets.strip_json_bytes: member names decide, as the full-text scan did ---------------

_KEYS = ["api_key", "apiKey", "name", "TOKEN", "a_token", "tokens", "passwd", "cookie", "x", "é"]
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(st.sampled_from("ak_ tokeny\n\u212a"), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


def _reference_strip(data: bytes) -> tuple[bytes, list[str]]:
    """Parse every document with json and strip it. (The first implementation scanned
    the text first and so kept a member named just "token": ``^token$`` never matches
    inside a document.)"""
    import json

    from trajconv.snapshot import secrets

    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return data, []
    clean, dropped = secrets.strip(value)
    if not dropped:
        return data, []
    return json.dumps(clean, indent=2, ensure_ascii=False).encode(), dropped


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_secret_stripping_matches_the_full_text_scan(value: Any) -> None:
    import json

    from trajconv.snapshot import secrets

    for data in (
        json.dumps(value).encode(),
        json.dumps(value, indent=1, ensure_ascii=False).encode(),
    ):
        assert secrets.strip_json_bytes(data) == _reference_strip(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json token",
        b'{"a": NaN, "token": 1}',
        b'{"x": "a token"}',
        b"\xff\xfe",
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_secret_stripping_examples(data: bytes) -> None:
    from trajconv.snapshot import secrets

    assert secrets.strip_json_bytes(data) == _reference_strip(data)


def test_secret_stripping_keeps_a_lone_surrogate_escape() -> None:
    """A document with a credential and a lone surrogate escape loses only the credential
    (it raised UnicodeEncodeError: the surrogate cannot be written as UTF-8, only escaped)."""
    from trajconv.snapshot import secrets

    data = b'{"api_key": "sk-1", "text": "\\ud800 \xc3\xa9"}'
    clean, dropped = secrets.strip_json_bytes(data)
    assert dropped == ["$.api_key"]
    assert json.loads(clean) == {"text": "\ud800 \u00e9"}


def _reference_line_starts(block: bytes) -> set[int]:
    """The journal scan as it was first written: every hit of every word checked on its own
    (``secrets.line_starts`` keeps each name's verdict and skips hits in the same name)."""
    import re

    from trajconv.snapshot import secrets

    def in_secret_name(at: int, length: int) -> bool:
        opened = block.rfind(b'"', max(0, at - 256), at)
        closed = block.find(b'"', at + length, at + length + 256)
        if opened == -1 or closed == -1:
            return False
        if not re.compile(rb"[ \t\r]*:").match(block, closed + 1):
            return False
        name = block[opened + 1 : closed]
        return b"\\" in name or secrets.is_secret_key(name.decode("utf-8", "replace"))

    low = block.lower()
    starts: set[int] = set()
    for word in secrets._LINE_WORDS:
        at = low.find(word)
        while at != -1:
            if word == b"\\u" or in_secret_name(at, len(word)):
                starts.add(low.rfind(b"\n", 0, at) + 1)
                end = low.find(b"\n", at)
                at = -1 if end == -1 else low.find(word, end)
            else:
                at = low.find(word, at + len(word))
    return starts


_PIECES = ['"', ":", " ", "\r", "\n", "\\", "u", "_", "x", "{", ",", "token", "TOKENS", "api_key"]
_JOURNAL = st.lists(
    st.sampled_from([*_PIECES, "Key", "secret", "cookie", "passw", "\u212a", "y" * 250]),
    max_size=60,
).map(lambda parts: "".join(parts).encode())


@settings(max_examples=1000, deadline=None)
@given(_JOURNAL | _JSON.map(lambda v: (json.dumps(v) + "\n").encode()))
def test_journal_scan_flags_the_lines_the_first_scan_did(block: bytes) -> None:
    from trajconv.snapshot import secrets

    names: dict[bytes, bool] = {}
    assert secrets.line_starts(block, names) == _reference_line_starts(block)
    assert secrets.line_starts(block, names) == _reference_line_starts(block)  # names kept


def test_journal_scan_reach_and_repeated_names() -> None:
    from trajconv.snapshot import secrets

    far = b'{"' + b"x" * 300 + b'token": 1}\n{"a_token" :2, "a_token": 3}\n'
    near = b'{"input_tokens": 1, "x": "token"}\n{"my_token"\r:1}\n"tokentoken":\n'
    for block in (far, near, far + near, b"token" * 100):
        assert secrets.line_starts(block) == _reference_line_starts(block)
    assert secrets.line_starts(near) == {near.index(b'{"my')}  # not input_tokens, tokentoken


def _reference_iso_ms(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    date = f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.")
    return date + f"{moment.microsecond // 1000:03d}Z"


@settings(max_examples=500, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(2, 1, 1),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone.min]),
    )
)
def test_iso_ms_matches_reference(moment: datetime) -> None:
    assert iso_ms(moment) == _reference_iso_ms(moment)


@pytest.mark.parametrize(
    "text",
    ["2026-11-30T03:43:25.244Z", "2026-11-30T03:43:25Z", "0999-01-01T00:00:00.5+01:00", "bad"],
)
def test_time_from_iso_examples(text: str) -> None:
    from trajconv.snapshot.builder import time_from_iso

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        assert time_from_iso(text) is None
        return
    assert time_from_iso(text) == _reference_iso_ms(moment)


@settings(max_examples=500, deadline=None)
@given(
    st.from_regex(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[Zz]", fullmatch=True
    )
    | st.datetimes(min_value=datetime(1, 1, 2)).map(
        lambda d: d.isoformat(timespec="milliseconds") + "Z"
    )
)
def test_time_from_iso_keeps_a_snapshot_time_exactly_when_the_general_path_would(
    text: str,
) -> None:
    from trajconv.snapshot.builder import time_from_iso

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        assert time_from_iso(text) is None
        return
    assert time_from_iso(text) == _reference_iso_ms(moment)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=8),
            st.text("0123456789abcdef", min_size=64, max_size=64),
            st.integers(min_value=0, max_value=2**40),
        ),
        max_size=5,
    ),
    st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3),
)
def test_streamed_snapshot_id_is_the_hash_of_the_whole_document(
    arts: list[tuple[str, str, int]], session: dict[str, str]
) -> None:
    import hashlib

    from trajconv.snapshot import hashing

    artifacts = [{"name": n, "sha256": h, "size": z} for n, h, z in arts]
    source = {"harness": "grok", "session_id": "s"}
    whole = hashing.canonical(
        {
            "format": "f",
            "source": source,
            "session": session,
            "last": "ab" * 32,
            "artifacts": artifacts,
        }
    )
    expected = hashing.PREFIX + hashlib.sha256(whole).hexdigest()
    assert (
        hashing.snapshot_id("f", source, session, bytes.fromhex("ab" * 32), artifacts) == expected
    )


def test_a_time_before_year_1000_is_a_valid_snapshot_time() -> None:
    import re

    from trajconv.snapshot.builder import time_from_iso
    from trajconv.snapshot.models import TIME_PATTERN

    text = time_from_iso("0999-01-01T00:00:00.5+01:00")
    assert text == "0998-12-31T23:00:00.500Z" and re.fullmatch(TIME_PATTERN, text)


# -- secrets.JsonlStripper: the journal scan only skips lines the full parse keeps ------------

_LINE_KEYS = [
    "api_key", "apiKey", "TOKEN", "token", "a_token", "input_tokens", "tokens", "passwd",
    "Cookie", "authorization", "client_secret", "keys", "x", "é", "日本", "Grüße",
]  # fmt: skip
_LINE_VALUES = st.recursive(
    st.none() | st.integers() | st.text(st.sampled_from('ak_ token"\\\n\u212aé日'), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            # Gaps the journal scan had before issue 38 and keeps (reported there; not this
            # test's to hide or change): U+0130, U+0131, U+017F, U+212A unescaped in a name
            # (``is_secret_key``'s re.IGNORECASE folds them to i, i, s, k, ``bytes.lower``
            # does not) and a ``\"`` after the word in a name (``"api_key\"x":``).
            st.sampled_from(_LINE_KEYS)
            | st.text(
                # UTF-8 only: a journal line is bytes (a lone surrogate has none)
                st.characters(codec="utf-8", exclude_characters='"\u0130\u0131\u017f\u212a'),
                max_size=4,
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=10,
)


def _dump_line(value: Any, escapes: int, colon: str, ascii_only: bool) -> str:
    """One JSON line as a harness might write it: some name characters as ``\\u``
    escapes (chosen by the bits of ``escapes``), ``colon`` after each name."""
    if isinstance(value, dict):
        members = []
        for key, item in value.items():
            name = "".join(
                f"\\u{ord(c):04x}" if (escapes >> (i % 24)) & 1 and ord(c) < 0x10000 else
                json.dumps(c, ensure_ascii=ascii_only)[1:-1]
                for i, c in enumerate(key)
            )  # fmt: skip
            members.append(f'"{name}"{colon}{_dump_line(item, escapes, colon, ascii_only)}')
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump_line(v, escapes, colon, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def _reference_jsonl_strip(data: bytes) -> tuple[bytes, list[str]]:
    """Every line (ended by ``\\n`` only) parsed and its names checked (no scan first)."""
    import re

    import orjson

    from trajconv.snapshot import secrets

    out, dropped = [], []
    for number, line in enumerate(re.findall(rb"[^\n]*\n|[^\n]+", data), start=1):
        body = line.rstrip(b"\r\n")
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            out.append(line)
            continue
        clean, paths = secrets.strip(value)
        if not paths:
            out.append(line)
            continue
        dropped += [f"line {number}: {path}" for path in paths]
        out.append(orjson.dumps(clean) + line[len(body) :])
    return b"".join(out), dropped


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            _LINE_VALUES,
            st.integers(0, 2**24 - 1),
            st.sampled_from([":", ": ", " :", "\r:", "\t :", " " * 30 + ":"]),
            st.booleans(),
            st.sampled_from(["\n", "\r\n"]),
        ),
        max_size=6,
    ),
    st.integers(1, 64),
)
def test_journal_stripping_matches_parsing_every_line(lines: list[Any], chunk: int) -> None:
    from trajconv.snapshot import secrets

    data = "".join(
        _dump_line(value, escapes, colon, ascii_only) + end
        for value, escapes, colon, ascii_only, end in lines
    ).encode()
    expected = _reference_jsonl_strip(data)
    assert secrets.strip_jsonl_bytes(data) == expected
    stripper = secrets.JsonlStripper()  # fed in pieces, as a reader copies a journal
    pieces = [stripper.feed(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    assert (b"".join(pieces) + stripper.finish(), stripper.dropped) == expected
