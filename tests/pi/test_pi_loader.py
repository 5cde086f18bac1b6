"""The real ``pi`` (npm @mariozechner/pi-coding-agent, pinned) continues what trajconv writes,
offline against the loopback model server, and its model request carries the earlier
conversation; the request is what is proven, not the exit code (pi exits 0 without one when it
only offers a fork)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.continuation import conversation
from proof.loaders import pi as loader
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from trajconv.codecs.base import Export

PROMPT = "Please go on from here."
TOOLS = next((FIXTURES / "pi").glob("recorded-tools/sessions/*/*.jsonl"))


@pytest.fixture(scope="session")
def pi_bin() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "pi")
    assert found is not None
    return found


def _expected(snap: trajconv.Snapshot) -> list[tuple[str, object]]:
    """The conversation a Chat Completions request shows for the records pi holds."""
    out: list[tuple[str, object]] = []
    for r in snap.records:
        if r.kind in ("user", "assistant", "reasoning"):
            out.append((r.kind, r.text))  # type: ignore[union-attr]
        elif r.kind == "tool-call":
            out.append(("tool-call", r.call.name))
        elif r.kind == "tool-result":
            out.append(("tool-result", r.result.output))
    return out


def _seen(items: list[dict[str, object]]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for it in items:
        kind = str(it["kind"])
        if kind == "tool-call":
            out.append((kind, it["name"]))
        elif kind in ("user", "assistant", "reasoning", "tool-result"):
            out.append((kind, it["text"]))
    return out


def _continue(pi_bin: Path, export: Export, project: Path, tmp: Path) -> list[Any]:
    """Install ``export`` with its prepare.py into a scratch home and continue it in pi."""
    home = tmp / "home"
    subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        check=True,
        capture_output=True,
    )
    sid = export.session_id
    return loader.continue_session(pi_bin, home, sid, str(project), PROMPT, tmp / "work")


def test_the_pinned_cli_runs(pi_bin: Path) -> None:
    assert loader.version(pi_bin) == loader.VERSION


def test_real_pi_continues_its_own_round_trip(pi_bin: Path, tmp_path: Path) -> None:
    snap = trajconv.read("pi", TOOLS)
    project = tmp_path / "project"
    project.mkdir()
    export = trajconv.write(snap, "pi", tmp_path / "out", cwd=str(project))
    bodies = _continue(pi_bin, export, project, tmp_path)
    assert len(bodies) == 1, "exactly one model request for the continued turn"
    items = loader.request_items(bodies[0])
    earlier, found = conversation(items, PROMPT)
    assert found
    assert _seen(earlier) == _expected(snap)
    # pi sent the reasoning back as reasoning (same provider, api and model)
    assert any(m.get("reasoning_content") for m in bodies[0]["messages"])
    # and appended the new turn to the written file, on the chain from its last line
    written = next((tmp_path / "home").glob(".pi/agent/sessions/*/*.jsonl"))
    lines = [json.loads(x) for x in written.read_text().splitlines()]
    assert lines[-1]["message"]["content"][0]["text"] == "We went through the earlier steps."


#: the other harnesses' continuation fixtures (the sessions the pair check converts)
OTHERS = ("claude", "codex", "copilot", "deepagents", "gemini", "grok", "opencode")


@pytest.mark.parametrize("harness", OTHERS)
def test_real_pi_continues_other_harnesses(pi_bin: Path, harness: str, tmp_path: Path) -> None:
    from proof import continuation as cont

    snap = cont.read_fixture(harness)
    project = tmp_path / "project"
    project.mkdir()
    export = trajconv.write(snap, "pi", tmp_path / "out", allow_lossy=True, cwd=str(project))
    bodies = _continue(pi_bin, export, project, tmp_path)
    assert len(bodies) == 1
    earlier, found = conversation(loader.request_items(bodies[0]), PROMPT)
    assert found
    held = [x for x in _expected(snap) if x[0] != "reasoning"]
    assert [x for x in _seen(earlier) if x[0] != "reasoning"] == held


def test_a_session_of_another_cwd_is_not_continued(pi_bin: Path, tmp_path: Path) -> None:
    """pi finds the id only in another cwd's folder, asks on stdin whether to fork it, gets no
    answer (stdin closed) and exits 0: no model request (why the checks count requests)."""
    home = tmp_path / "home"
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    loader.install_fixture(TOOLS.parents[2], home, project)
    sid = str(trajconv.read("pi", TOOLS).session.id)
    from proof.continuation import main_bodies, scripted_server

    with scripted_server(tmp_path / "work") as srv:
        loader.write_models(home, srv.base_url, "trajconv", "scripted")
        proc = loader.print_turn(pi_bin, home, PROMPT, elsewhere, session=sid)
    assert proc.returncode == 0
    said = proc.stdout + proc.stderr  # 0.73.1's output guard sends it to stderr in -p mode
    assert "Session found in different project" in said
    assert "Fork this session into current directory?" in said
    assert main_bodies(tmp_path / "work" / "requests.jsonl") == []
