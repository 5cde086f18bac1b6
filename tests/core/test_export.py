"""The shared export writer and prepare.py: atomic, checked, never replacing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import trajconv
from tests.helpers import FIXTURES, fingerprint
from trajconv.codecs import export as export_mod
from trajconv.codecs.base import ExportFile
from trajconv.errors import RefusedError

SESSION = (
    FIXTURES
    / "grok"
    / "rewind"
    / "sessions"
    / "%2Fsrv%2Fdemo"
    / "019c0000-2222-7000-8000-00000000beef"
)


@pytest.fixture()
def exported(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    trajconv.convert("grok", "grok", SESSION, out)
    return out


def _prepare(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(out / "prepare.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_prepare_installs_with_modes_then_refuses_to_replace(
    exported: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = _prepare(exported, "--home", str(home))
    assert first.returncode == 0, first.stderr
    session = next((home / ".grok" / "sessions").glob("*/*"))
    assert (session / "summary.json").is_file()
    assert oct(session.stat().st_mode & 0o777) == "0o700"
    assert oct((session / "updates.jsonl").stat().st_mode & 0o777) == "0o600"
    assert "resume with: grok --resume" in first.stdout
    before = fingerprint(home)
    second = _prepare(exported, "--home", str(home))
    assert second.returncode == 3 and "refusing to replace existing session" in second.stderr
    assert fingerprint(home) == before


def test_dry_run_writes_nothing(exported: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = _prepare(exported, "--home", str(home), "--dry-run")
    assert result.returncode == 0 and "would install" in result.stdout
    assert list(home.iterdir()) == []


def test_prepare_checks_every_sha256(exported: Path, tmp_path: Path) -> None:
    journal = next(exported.glob("home/.grok/sessions/*/*/updates.jsonl"))
    journal.write_bytes(journal.read_bytes() + b"\n")
    result = _prepare(exported, "--home", str(tmp_path))
    assert result.returncode == 1 and "do not match the manifest" in result.stderr
    assert not (tmp_path / ".grok").exists()


def test_prepare_refuses_symlinks_out_of_the_home(exported: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, home / ".grok")
    result = _prepare(exported, "--home", str(home))
    assert result.returncode == 1 and "symlink" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_manifest_lists_every_file_with_digest(exported: Path) -> None:
    import hashlib
    import json

    manifest = json.loads((exported / "trajconv-export.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    on_disk = {
        p.relative_to(exported).as_posix()
        for p in exported.rglob("*")
        if p.is_file() and p.name != "trajconv-export.json"
    }
    assert listed == on_disk
    for f in manifest["files"]:
        assert hashlib.sha256((exported / f["path"]).read_bytes()).hexdigest() == f["sha256"]
    assert manifest["resume"]["argv"][:2] == ["grok", "--resume"]


def test_existing_out_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(RefusedError):
        trajconv.convert("grok", "grok", SESSION, out)
    assert (out / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("fail_at", ["mid-file", "chmod", "rename"])
def test_a_failure_at_any_step_leaves_no_output(tmp_path: Path, monkeypatch, fail_at: str) -> None:
    out = tmp_path / "out"
    calls = {"n": 0}

    def boom(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        raise OSError("injected failure")

    def half_then_boom(self: ExportFile) -> Iterator[bytes]:
        yield b"half a file"
        boom()

    if fail_at == "mid-file":  # a streamed file fails after its first piece is written
        monkeypatch.setattr(ExportFile, "chunks", half_then_boom)
    else:
        monkeypatch.setattr(export_mod.os, fail_at, boom)
    with pytest.raises(OSError, match="injected"):
        trajconv.convert("grok", "grok", SESSION, out)
    assert calls["n"] == 1
    assert list(tmp_path.iterdir()) == []
