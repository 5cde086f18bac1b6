"""Other harnesses -> cursor -> Snapshot, and cursor -> other harnesses (both ways).

Every record is kept or named by a writer diagnostic; codecs not yet in the tree skip.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cursor_support import CASES, fixture_store

from tests.helpers import FIXTURES, projection
from trajconv.codecs.cursor import CODEC
from trajconv.codecs.export import emit
from trajconv.parity import fixture_sessions
from trajconv.snapshot.models import Snapshot

OTHERS = ("fx", "grok", "copilot", "deepagents")
DROPPED = ("untranslated-pending-call", "untranslated-orphan-result")


def _codec(name: str) -> Any:
    try:
        codec = importlib.import_module(f"trajconv.codecs.{name}").CODEC
    except (ImportError, AttributeError):
        pytest.skip(f"codec {name} not in the tree yet")
    return codec


def _cases(name: str) -> list[Path]:
    folder = FIXTURES / name
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _no_exit(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # Cursor has no exit-code slot (untranslated-exit-code), so compare without it.
    return [r[:4] if r[0] == "tool-result" else r for r in rows]


def _via_cursor(snap: Snapshot, tmp: Path) -> tuple[Snapshot, dict[str, int]]:
    export = emit(CODEC.plan(snap, allow_lossy=True), tmp / "out")
    proc = subprocess.run(
        [sys.executable, str(tmp / "out" / "prepare.py"), "--home", str(tmp / "home")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (store,) = (tmp / "home").glob(".cursor/chats/*/*/store.db")
    return CODEC.read(store), {d.code: d.count for d in export.diagnostics}


@pytest.mark.parametrize("name", OTHERS)
def test_other_to_cursor_keeps_or_names_every_record(name: str, tmp_path: Path) -> None:
    codec = _codec(name)
    sessions = fixture_sessions(codec)
    assert sessions, f"no {name} fixtures"
    for i, fx in enumerate(sessions):
        snap = codec.read(fx.path, session=fx.session)
        case = fx.path
        back, codes = _via_cursor(snap, tmp_path / str(i))
        dropped = sum(codes.get(c, 0) for c in DROPPED)
        assert len(back.records) + dropped == len(snap.records), case.name
        if not dropped:
            assert _no_exit(projection(back)) == _no_exit(projection(snap)), case.name


@pytest.mark.parametrize("name", OTHERS)
@pytest.mark.parametrize("case", CASES)
def test_cursor_to_other(name: str, case: str, tmp_path: Path) -> None:
    codec = _codec(name)
    snap = CODEC.read(fixture_store(case))
    try:
        plan = codec.plan(snap, allow_lossy=True)
    except ModuleNotFoundError:
        pytest.skip(f"{name} writer not in the tree yet")
    export = emit(plan, tmp_path / "out")
    assert (tmp_path / "out" / "trajconv-export.json").is_file()
    held = {"user", "assistant", "tool-call", "tool-result"}
    for kind in {r.kind for r in snap.records} - held:
        # kinds a target may not hold must be named when they are left out
        named = any(d.code == f"untranslated-{kind}" for d in export.diagnostics)
        assert named or kind in _kinds_written(codec, export.out_dir, export.session_id), (
            name,
            kind,
        )


def _kinds_written(codec: Any, out: Path, session: str) -> set[str]:
    """Record kinds the target's own reader finds in the export (empty if it cannot read it)."""
    home = out / "home"
    candidates = [home, *sorted(home.iterdir())] if home.is_dir() else [out]
    for candidate in candidates:
        try:
            again = codec.read(candidate, session=session)
        except Exception:
            continue
        return {r.kind for r in again.records}
    return set()
