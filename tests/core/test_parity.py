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


CONTINUED = [
    {
        "source": "grok",
        "target": "copilot",
        "saw": 13,
        "of": 15,
        "prompt_found": True,
        "named": {"context-not-projected": 2},
        "unexplained": [],
        "ok": True,
    },
    {
        "source": "copilot",
        "target": "grok",
        "saw": 9,
        "of": 11,
        "prompt_found": True,
        "named": {},
        "unexplained": [{"kind": "assistant", "what": "extra"}],
        "ok": False,
    },
]


def test_continued_pairs_are_in_the_matrix_and_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from trajconv import parity
    from trajconv.codecs import registry

    data = {
        "format": parity.PARITY_FORMAT,
        "fingerprints": parity.fingerprints([c.name for c in registry.all_codecs()]),
        "harnesses": [],
        "pairs": [],
        "read_errors": [],
        "multi_hop": [],
        "continued": CONTINUED,
    }
    text = parity.render_markdown(data)
    assert "| grok → copilot | model saw 13/15 | context-not-projected x2 | 0 |" in text
    assert "| copilot → grok | model saw 9/11 | - | 1 |" in text
    (tmp_path / "parity.json").write_text(json.dumps(data))
    problems = parity.check(tmp_path)
    assert problems == ["continued copilot->grok: 1 differences that no diagnostic names"]
