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


def test_trajconv_is_timed_as_the_script_beside_the_interpreter(tmp_path, monkeypatch):
    """A version manager's shim found first on PATH is not what is timed: the floor runs as
    ``sys.executable`` and trajconv as the console script of that same environment."""
    run = _run_module()
    shims, scripts = tmp_path / "shims", tmp_path / "bin"
    for folder in (shims, scripts):
        folder.mkdir()
        (folder / "trajconv").write_text("#!/bin/sh\n")
        (folder / "trajconv").chmod(0o755)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setattr(run.sysconfig, "get_path", lambda name: str(scripts))
    assert run._trajconv() == str(scripts / "trajconv")
    (scripts / "trajconv").unlink()  # an interpreter without it: what PATH finds
    assert run._trajconv() == str(shims / "trajconv")
