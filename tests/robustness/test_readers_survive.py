"""Every reader turns mutated input into a valid Snapshot or a named FormatError.

CI runs a fixed, seeded number of cases per codec; `python -m tests.robustness.run`
runs more on demand and writes evidence/robustness.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.robustness.cases import TARGETS, mutations, run_case

CASES_PER_CODEC = 60


@pytest.mark.parametrize("harness", sorted(TARGETS))
def test_reader_survives_mutations(harness: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    target = TARGETS[harness]

    @settings(
        max_examples=CASES_PER_CODEC,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(mutation=st.sampled_from(mutations(target)), seed=st.integers(0, 2**32 - 1))
    def case(mutation: str, seed: int) -> None:
        run_case(target, mutation, seed, tmp_path_factory.mktemp(harness))

    case()


def test_every_registered_reader_has_a_robustness_target() -> None:
    from trajconv.codecs import registry

    readers = {c.name for c in registry.all_codecs() if c.can_read}
    assert readers <= set(TARGETS), f"no robustness target for {sorted(readers - set(TARGETS))}"


def test_cases_are_reproducible(tmp_path: Path) -> None:
    target = TARGETS["grok"]
    a = run_case(target, "flip-bytes", 1234, tmp_path / "a")
    b = run_case(target, "flip-bytes", 1234, tmp_path / "b")
    assert a == b
