"""fx's own CLI lists and shows the fixtures and what the writer produced.

fx is not distributed through npm or PyPI (see ``proof/loaders/fx.py``), so these tests run
only where an fx binary was built from source (``.tools/fx/bin/fx`` or ``$FX_BIN``) and skip
elsewhere, CI included: there is no pinned registry install for CI to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proof import tools_dir
from proof.loaders import fx as fx_loader
from tests.fx.test_fx import SESSIONS
from tests.helpers import FIXTURES
from trajconv.codecs.export import emit
from trajconv.codecs.fx import CODEC
from trajconv.codecs.grok import CODEC as GROK
from trajconv.codecs.grok import layout as grok_layout
from trajconv.snapshot.models import Snapshot, UserRecord

#: fx skips rather than calls require_loader (no registry install, even under CI): say so
pytestmark = pytest.mark.loader


@pytest.fixture(scope="module")
def fx_bin() -> Path:
    found = fx_loader.find(tools_dir())
    if found is None:
        pytest.skip(f"fx not available: {fx_loader.INSTALL_HINT}")
    return found


def _version(fx_bin: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in fx_loader.version(fx_bin).split(".")[:3])


def _native_view(detail: dict[str, Any]) -> list[tuple[str, Any]]:
    """User texts, call ids and outputs of ``fx session --json`` history, in order."""
    out: list[tuple[str, Any]] = []
    for turn in detail["history"]:
        if "user" not in turn:
            continue
        out.append(("user", turn["user"]["text"]))
        for step in (turn.get("execution") or {}).get("tool_steps", []):
            out += [("call", c["id"]) for c in step["tool_calls"]]
            out += [("result", r["output"]) for r in step["tool_results"]]
        if turn.get("tool_call"):
            out.append(("call", turn["tool_call"]["id"]))
    return out


def _our_view(snap: Snapshot) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for r in snap.records:
        if r.kind == "user" and r.evidence.native != "steering":
            out.append(("user", r.text))
        elif r.kind == "tool-call":
            out.append(("call", r.call.id))
        elif r.kind == "tool-result":
            out.append(("result", r.result.output))
    return out


def _home(sdir: Path) -> Path:
    return sdir.parents[2]


@pytest.mark.parametrize("sdir", SESSIONS, ids=[p.parents[2].name for p in SESSIONS])
def test_fx_reads_the_fixtures(fx_bin: Path, sdir: Path) -> None:
    res = fx_loader.check(fx_bin, _home(sdir), sdir.name)
    schema4 = '"schema_version":4' in (sdir / "session.json").read_text()[:40]
    if schema4 and _version(fx_bin) < (0, 0, 8):
        assert res.detail is not None and res.detail.get("code") == "UnsupportedSessionSchema"
        return
    assert res.ok, (res.listing, res.detail)
    assert _native_view(res.detail or {}) == _our_view(CODEC.read(sdir))


@pytest.mark.parametrize("sdir", SESSIONS, ids=[p.parents[2].name for p in SESSIONS])
def test_fx_lists_and_shows_the_legacy_export(fx_bin: Path, sdir: Path, tmp_path: Path) -> None:
    snap = CODEC.read(sdir)
    export = emit(CODEC.plan(snap, allow_lossy=True), tmp_path / "out")
    res = fx_loader.check(fx_bin, tmp_path / "out" / "home", export.session_id)
    assert res.ok, (res.listing, res.detail)
    assert res.listed is not None and res.listed["workspace_root"] == snap.session.cwd
    assert _native_view(res.detail or {}) == _our_view(snap)


GROK_SESSIONS = sorted(
    sdir
    for case in sorted((FIXTURES / "grok").iterdir())
    if case.is_dir()
    for sdir in grok_layout.session_dirs(case)
)


@pytest.mark.parametrize(
    "sdir", GROK_SESSIONS, ids=[f"{p.parents[2].name}/{p.name[:13]}" for p in GROK_SESSIONS]
)
def test_fx_reads_grok_converted_to_fx(fx_bin: Path, sdir: Path, tmp_path: Path) -> None:
    snap = GROK.read(sdir)
    export = emit(CODEC.plan(snap, allow_lossy=True), tmp_path / "out")
    res = fx_loader.check(fx_bin, tmp_path / "out" / "home", export.session_id)
    assert res.ok, (res.listing, res.detail)
    assert _native_view(res.detail or {}) == _our_view(CODEC.read(tmp_path / "out" / "home"))
    users = [r.text for r in snap.records if isinstance(r, UserRecord)]
    assert [t for k, t in _native_view(res.detail or {}) if k == "user"] == users
