"""The recorded Mistral Vibe stores have the layout their README describes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "vibe"
CASES = sorted(p.name for p in FIXTURES.glob("recorded-*"))


def test_there_are_recorded_cases() -> None:
    assert CASES == ["recorded-resumed", "recorded-tools"]


@pytest.mark.parametrize("case", CASES)
def test_current_names_a_kept_generation_and_chained_journal(case: str) -> None:
    (store,) = (FIXTURES / case / "store").iterdir()
    current = json.loads((store / "CURRENT").read_text(encoding="utf-8"))
    assert current["session_id"] == store.name
    assert current["store_format"] == "mistral.vibe.unified-session-store/v1"
    generations = sorted(p.name for p in (store / "generations").iterdir())
    assert current["generation"] == generations[-1]
    assert len(generations) >= 2
    previous = None
    for segment in sorted((store / "journal").glob("*.jsonl")):
        for line in segment.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if previous is not None:
                assert record["previous_record_sha256"] == previous
            previous = record["record_sha256"]
    for chunk in (store / "chunks").iterdir():
        assert len(chunk.stem) == 64
