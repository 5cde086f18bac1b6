"""Reading every session of a Grok home walks the sub-agent registries at most once.

A child's parent is named by the parent's ``subagents/<child>/meta.json``; looking for it
by walking every session folder, for every session read, made reading a home quadratic in
its sessions (``trajconv search`` took 1,234 s to index 10,000). The walk is counted here
as listings of the ``sessions/`` folder, whatever does the listing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES
from trajconv.codecs import registry

GROK = FIXTURES / "grok"
PARENT = "019c0000-3333-7000-8000-000000000001"
CHILD = "019c0000-3333-7000-8000-000000000002"


def _home(tmp: Path, copies: int) -> Path:
    """The sub-agent fixture plus ``copies`` of two plain sessions under new ids."""
    home = tmp / ".grok"
    shutil.copytree(GROK / "subagent", home)
    for case in ("multi-turn", "rewind"):
        (src,) = (GROK / case / "sessions").glob("*/*")
        for i in range(copies):
            new = f"{src.name[:-4]}{i:04d}"
            dst = home / "sessions" / src.parent.name / new
            dst.mkdir(parents=True)
            for f in src.iterdir():
                (dst / f.name).write_bytes(f.read_bytes().replace(src.name.encode(), new.encode()))
    return home


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every folder listed (``os.scandir``, ``os.listdir``), by path."""
    seen: list[str] = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, (str, os.PathLike)):
            seen.append(os.fspath(path))
        return real_scandir(path)

    def listdir(path: Any = ".") -> list[str]:
        if isinstance(path, (str, os.PathLike)):
            seen.append(os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    yield seen


def _read_all(home: Path) -> dict[str, Any]:
    codec = registry.get("grok")
    refs = codec.discover(home)
    return {r.session_id: codec.read(r.path, session=r.session_id) for r in refs}


def test_reading_a_home_walks_the_registries_once_not_once_per_session(
    tmp_path: Path, listings: list[str]
) -> None:
    home = _home(tmp_path, copies=6)
    root = str(home / "sessions")
    del listings[:]
    snaps = _read_all(home)
    assert len(snaps) == 14
    # discover lists the folder once; one walk finds the one sub-agent child's parent and
    # the plain sessions (no subagent session_kind) look for none
    assert listings.count(root) <= 2
    del listings[:]
    snaps = _read_all(home)
    assert listings.count(root) <= 1  # discover again; the walk is kept
    assert snaps[CHILD].session.parent_session_id == PARENT
    assert {s.session.parent_session_id for k, s in snaps.items() if k != CHILD} == {None}


def test_a_parent_registry_written_after_the_walk_is_found(tmp_path: Path) -> None:
    home = _home(tmp_path, copies=0)
    meta = next(home.rglob(f"subagents/{CHILD}/meta.json"))
    held = tmp_path / "meta.json"
    shutil.move(meta, held)
    assert _read_all(home)[CHILD].session.parent_session_id is None
    shutil.move(held, meta)  # the parent names its child now: the kept walk is stale
    assert _read_all(home)[CHILD].session.parent_session_id == PARENT
