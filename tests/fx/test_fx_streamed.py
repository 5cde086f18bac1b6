"""A large legacy ``session.json`` is streamed, and reads exactly as it does parsed whole.

``Limits(stream_json_bytes=0)`` streams every document, so the fixtures and their
mutations compare the two paths directly.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fx.test_fx import FX, SESSIONS
from tests.helpers import fingerprint
from tests.robustness import mutate
from trajconv.codecs.base import Limits
from trajconv.codecs.fx import CODEC, streamed
from trajconv.errors import FormatError
from trajconv.snapshot import io

STREAM = Limits(stream_json_bytes=0)
LEGACY = [s for s in SESSIONS if s.parents[2].name.startswith(("schema1", "schema2"))]


@pytest.fixture
def streamed_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The turn counts of the histories read by streaming, in order."""
    seen: list[int] = []
    history = streamed.Outline.history

    def spy(self: streamed.Outline, copy: Path) -> streamed.History:
        seen.append(self.count)
        return history(self, copy)

    monkeypatch.setattr(streamed.Outline, "history", spy)
    return seen


def _outcome(sdir: Path, limits: Limits | None = None) -> tuple[str, Any]:
    try:
        snap = CODEC.read(sdir, limits=limits)
    except FormatError as exc:
        return "format-error", str(exc)
    return "snapshot", io.dumps(snap)


def _copy(tmp_path: Path, case: str = "schema2-rich") -> tuple[Path, Path]:
    """A copy of a legacy fixture session: its folder and its ``session.json``."""
    home = tmp_path / case
    shutil.copytree(FX / case, home)
    sdir = next((home / ".fx" / "sessions").iterdir())
    return sdir, sdir / "session.json"


@pytest.mark.parametrize("sdir", LEGACY, ids=[s.parents[2].name for s in LEGACY])
def test_streamed_legacy_session_is_the_same_snapshot(
    sdir: Path, streamed_reads: list[int]
) -> None:
    whole = CODEC.read(sdir)
    before = fingerprint(sdir)
    streamed_snap = CODEC.read(sdir, limits=STREAM)
    assert fingerprint(sdir) == before
    assert streamed_reads and streamed_reads[0] > 0  # the streamed path ran
    assert streamed_snap.id == whole.id
    assert io.dumps(streamed_snap) == io.dumps(whole)
    assert io.verify(streamed_snap).ok


def test_default_limit_parses_small_documents_whole(streamed_reads: list[int]) -> None:
    for sdir in LEGACY:
        CODEC.read(sdir)
    assert streamed_reads == []


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


# Each edit makes a document the streamed path could read differently: it must go whole.
_WHOLE = {
    "secret member in a turn": (b'"kind":"assistant"', b'"api_key":"k","kind":"assistant"'),
    "secret top-level member": (b'{"schema_version"', b'{"password":"p","schema_version"'),
    "lone surrogate escape": (b'"text":"', b'"text":"\\ud800'),
    "lone low surrogate escape": (b'"text":"', b'"text":"\\udc00\\ud800'),
    "repeated top-level member": (b'{"schema_version"', b'{"id":"x","schema_version"'),
    "dotted top-level name": (b'{"schema_version"', b'{"history.item":1,"schema_version"'),
    "integer beyond 64 bits": (b'"history_len":', b'"big":123456789012345678901234,"history_len":'),
    "history not an array": (b'"history":[', b'"history":{"a":['),
    "trailing garbage": (b'"history":[', b'"history":[]}x{"h":['),
    # whitespace to ijson's yajl between tokens, not JSON to orjson
    "form feed between tokens": (b'{"schema_version"', b'{\x0c"schema_version"'),
    "vertical tab between tokens": (b'{"schema_version"', b'{\x0b"schema_version"'),
}


@pytest.mark.parametrize("edit", list(_WHOLE))
def test_documents_streaming_could_misread_go_whole(
    edit: str, tmp_path: Path, streamed_reads: list[int]
) -> None:
    sdir, session_json = _copy(tmp_path)
    _edit(session_json, *_WHOLE[edit])
    assert _outcome(sdir, STREAM) == _outcome(sdir)
    assert streamed_reads == []


def test_secret_in_a_streamed_document_is_stripped_as_when_whole(tmp_path: Path) -> None:
    sdir, session_json = _copy(tmp_path)
    _edit(session_json, *_WHOLE["secret member in a turn"])
    snap = CODEC.read(sdir, limits=STREAM)
    kept = next(a for a in snap.artifacts if a.name == "session.json").read()
    assert kept is not None and b"api_key" not in kept
    assert snap.diagnostic_count("secret-dropped") == 1
    assert snap.id == CODEC.read(sdir).id


def test_surrogate_pairs_and_escaped_backslashes_still_stream(
    tmp_path: Path, streamed_reads: list[int]
) -> None:
    sdir, session_json = _copy(tmp_path)
    # a pair is one character for both parsers; "\\ud800" is a backslash and text
    _edit(session_json, b'"text":"', b'"text":"\\ud83d\\ude80 \\\\ud800 ')
    snap = CODEC.read(sdir, limits=STREAM)
    assert streamed_reads
    assert io.dumps(snap) == io.dumps(CODEC.read(sdir))
    assert any("\U0001f680 \\ud800" in getattr(r, "text", "") for r in snap.records)


@pytest.mark.parametrize("cut", range(0, 17))
@pytest.mark.parametrize(
    ("escape", "lone"),
    [
        (b"\\\\\\ud83d\\ude80", False),  # an escaped backslash, then a pair
        (b"\\\\\\ud83d\\\\ude80", True),  # a high escape, then a backslash and text
        (b"\\\\\\\\ud83d", False),  # two escaped backslashes and text
    ],
)
def test_lone_surrogates_are_found_across_chunk_boundaries(
    cut: int, escape: bytes, lone: bool
) -> None:
    text = b'{"history":["' + escape + b'"]}'
    outline = streamed.Outline("s.json", 8)
    at = len(b'{"history":["') + cut
    outline.feed(text[:at])
    outline.feed(text[at:])
    outline.close()
    assert outline.streamable is not lone
    assert outline.count == 1 or lone


def _mutated_outcomes(work: Path, mutation: str, seed: int) -> Iterator[tuple[str, Any]]:
    r = random.Random(seed)
    case = r.choice(LEGACY).parents[2].name
    sdir, session_json = _copy(work, case)
    session_json.write_bytes(mutate.TEXT_MUTATIONS[mutation](r, session_json.read_bytes()))
    yield _outcome(sdir)
    yield _outcome(sdir, STREAM)


def test_mutated_legacy_documents_read_the_same_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    @settings(
        max_examples=60,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(mutation=st.sampled_from(list(mutate.TEXT_MUTATIONS)), seed=st.integers(0, 2**32 - 1))
    def case(mutation: str, seed: int) -> None:
        whole, stream = _mutated_outcomes(tmp_path_factory.mktemp("fx"), mutation, seed)
        assert stream == whole, f"{mutation} seed {seed}"

    case()
