"""``benchmarks/run.py`` keeps one report: a run carries the ``## Earlier runs`` section
(figures at sizes it did not measure) over, and ``--startup`` replaces only its section."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _run_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_run", module)
    spec.loader.exec_module(module)
    return module


REPORT = """# Benchmarks

## Per dataset

| a | b |

## Start-up

old start-up

## Notes and skipped rows

- a note

## Earlier runs

| grok-100MB | 1.0 |
"""


def test_the_earlier_runs_section_is_found_and_kept_by_a_startup_update(tmp_path: Path) -> None:
    run = _run_module()
    report = tmp_path / "benchmarks.md"
    report.write_text(REPORT, encoding="utf-8")
    assert run.earlier_section(report) == ["## Earlier runs", "", "| grok-100MB | 1.0 |"]
    updated = run.update_startup(report, ["## Start-up", "", "new start-up"])
    assert "new start-up" in updated and "old start-up" not in updated
    assert updated.endswith("## Earlier runs\n\n| grok-100MB | 1.0 |\n")
    assert run.earlier_section(tmp_path / "missing.md") == []
