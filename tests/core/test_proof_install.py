"""``python -m proof install`` installs the loaders side by side and reports every one."""

from __future__ import annotations

import re
import threading
import types
from pathlib import Path

import pytest

import proof.__main__ as proof_main


def _loader(name: str, install: object) -> types.ModuleType:
    mod = types.ModuleType(f"proof.loaders.{name}")
    mod.PACKAGE, mod.VERSION = f"pkg-{name}", "1.0"  # type: ignore[attr-defined]
    mod.install = install  # type: ignore[attr-defined]
    mod.find = lambda tools: None  # type: ignore[attr-defined]
    return mod


def test_install_runs_loaders_at_once_and_reports_each_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two installs that each wait for the other: they finish only when they run at once
    both = threading.Barrier(2, timeout=120)

    def waits(tools: Path) -> Path:
        both.wait()
        return tools / "ok"

    def fails(tools: Path) -> Path:
        raise RuntimeError("registry said no")

    found = {"a": _loader("a", waits), "b": _loader("b", waits), "c": _loader("c", fails)}
    monkeypatch.setattr(proof_main, "all_loaders", lambda: found)
    monkeypatch.setattr(proof_main, "tools_dir", lambda: tmp_path)
    assert proof_main.main(["install", "-j", "3"]) == 1
    out, err = capsys.readouterr()
    where = re.escape(str(tmp_path / "ok"))
    for name in "ab":  # each with the seconds it took
        assert re.search(rf"  {name} \(pkg-{name}@1\.0, \d+ s\): {where}", out)
    assert "c (pkg-c@1.0): FAILED: registry said no" in err
