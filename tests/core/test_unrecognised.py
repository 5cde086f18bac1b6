"""A reader that recognises nothing of its input refuses it (issue 33): a Codex rollout read
``--from claude`` was written as an empty session with exit 0. The check is one, in the
codec protocol (``trajconv.codecs.base.refuse_unrecognised``), so it holds for every
reader: here every fixture session file of one harness is read as every other harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import trajconv
from tests.helpers import FIXTURES
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.codecs.base import UNRECOGNISED
from trajconv.errors import TrajconvError

ROLLOUT = next((FIXTURES / "codex" / "resumed").rglob("rollout-*.jsonl"))


def _one_file_per_harness() -> dict[str, Path]:
    """A session journal of each harness whose fixtures hold one (JSON lines)."""
    found: dict[str, Path] = {}
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "record"):
        files = sorted(
            p
            for p in folder.rglob("*.jsonl")
            if p.stat().st_size
            and "baseline" not in p.name
            and "subagents" not in p.parts
            and not p.name.startswith("requests-")  # a recorder's model-server log
        )
        if files:
            found[folder.name] = files[0]
    return found


FILES = _one_file_per_harness()
PAIRS = [
    (src, h)
    for src in sorted(FILES)
    for h in registry.names()
    if h != src and registry.get(h).can_read
]


def test_a_codex_rollout_read_as_claude_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["convert", "--from", "claude", "--to", "codex", str(ROLLOUT), "-o", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert "not a claude session: the claude reader recognised none of it" in result.stderr
    assert "--from" in result.stderr and not out.exists()


@pytest.mark.parametrize(("source", "reader"), PAIRS, ids=[f"{s}-as-{r}" for s, r in PAIRS])
def test_another_harness_file_is_refused_or_read_for_what_it_holds(
    source: str, reader: str
) -> None:
    try:
        snap = trajconv.read(reader, FILES[source])
    except TrajconvError as exc:
        assert exc.exit_code == 1
        return
    # read: then the reader recognised something of it (a record, or a unit it names)
    units = {d.code for d in snap.diagnostics if d.code not in UNRECOGNISED}
    assert len(snap.records) or snap.children or units


def test_a_harness_file_read_by_its_own_reader_still_reads() -> None:
    for harness, path in FILES.items():
        if registry.get(harness).can_read:
            assert len(trajconv.read(harness, path).records), harness
