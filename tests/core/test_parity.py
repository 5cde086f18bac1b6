"""The committed evidence is current: `trajconv parity --check` through the test command."""

from __future__ import annotations

from click.testing import CliRunner

from trajconv.cli.main import cli
from trajconv.parity import compare
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Source


def test_parity_evidence_is_current() -> None:
    result = CliRunner().invoke(cli, ["parity", "--check"])
    assert result.exit_code == 0, result.output


def _snap(kinds: list[str]):  # type: ignore[no-untyped-def]
    b = SnapshotBuilder(Source(harness="t", harness_version=None, session_id="s", locator="s"), "t")
    for i, kind in enumerate(kinds):
        b.add_text(
            kind,
            f"t:{i}",
            "x",
            time=None,
            turn=None,
            evidence=evidence(artifact="a", line=i + 1, native=kind),
        )
    return b.build()


def test_compare_counts_kept_named_and_lost() -> None:
    src = _snap(["user", "reasoning", "assistant", "system"])
    out = _snap(["user", "assistant"])
    rows = compare(src, out, {"untranslated-reasoning": 1})
    assert rows["user"] == {"source": 1, "kept": 1, "named": 0, "lost": 0, "extra": 0}
    assert rows["reasoning"]["named"] == 1 and rows["reasoning"]["lost"] == 0
    assert rows["system"]["lost"] == 1  # dropped with no diagnostic: a failure


def test_merged_messages_are_named_not_lost() -> None:
    src = _snap(["user", "assistant", "assistant"])
    out = _snap(["user", "assistant"])
    rows = compare(src, out, {"untranslated-message-boundary": 1})
    assert rows["assistant"] == {"source": 2, "kept": 1, "named": 1, "lost": 0, "extra": 0}
