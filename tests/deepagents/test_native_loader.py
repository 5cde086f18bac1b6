"""The real `dcode` (deepagents-code 0.1.57, pinned) lists and loads what we write.

Each export's prepare.py runs with the dcode venv's python under a scratch HOME;
then `dcode threads list --json -v` must show the thread with the Snapshot's
message count, first prompt and cwd, and `dcode --acp` (offline fake model, no
inference) must replay it on `session/load` with the Snapshot's user text,
agent text, thoughts, tool calls and results; our reader must read the written
database back unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from proof import tools_dir
from proof.loaders import deepagents as loader
from tests.conftest import require_loader
from tests.deepagents.support import DA, THREAD_IDS, THREADS, hand_snapshot
from tests.helpers import FIXTURES, projection
from trajconv.codecs import export, registry
from trajconv.codecs.deepagents import CODEC
from trajconv.codecs.deepagents.reader import EXIT_RE
from trajconv.snapshot.models import Snapshot


@pytest.fixture(scope="module")
def venv_python() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "deepagents")
    assert found is not None
    return found


def replay_projection(replay: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The ACP replay in the shape of ``projection`` (tool calls and results by id)."""
    roles = {
        "user_message_chunk": "user",
        "agent_message_chunk": "assistant",
        "agent_thought_chunk": "reasoning",
    }
    out: list[tuple[Any, ...]] = []
    for update in replay:
        kind = update.get("sessionUpdate")
        if kind in roles:
            out.append((roles[kind], update["content"]["text"]))
        elif kind == "tool_call":
            out.append(("tool-call", update["toolCallId"], update.get("rawInput")))
        elif kind == "tool_call_update":
            text = "".join(c["content"]["text"] for c in update.get("content", []))
            out.append(("tool-result", update["toolCallId"], update["status"] != "failed", text))
    return out


def expected_replay(snap: Snapshot) -> list[tuple[Any, ...]]:
    """What deepagents-acp 0.0.13 `_replay_session` shows for the Snapshot's records."""
    names = {r.call.id: r.call.name for r in snap.records if r.kind == "tool-call"}
    out: list[tuple[Any, ...]] = []
    for item in projection(snap):
        if item[0] == "tool-call":
            out.append(("tool-call", item[1], item[3]))
        elif item[0] == "tool-result":
            if names.get(item[1]) == "edit_file":
                continue  # the ACP server does not replay edit_file results
            out.append(("tool-result", item[1], item[2] is not False, item[3]))
        elif item[0] in ("user", "assistant", "reasoning"):
            out.append(item)
    return out


def same_replay(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want, strict=True):
        if g[0] == "tool-result":
            # execute results are re-rendered as "**Command:** ... **Output:** ...
            # **Status:**", the exit line moving into the status.
            assert g[:3] == w[:3] and EXIT_RE.sub("", w[3]).strip() in g[3], (g, w)
        else:
            assert g == w


def check_export(snap: Snapshot, tmp_path: Path, *, continue_turn: bool = False) -> None:
    exp = export.emit(CODEC.plan(snap, allow_lossy=True), tmp_path / "out")
    home = tmp_path / "home"
    result = loader.check(
        tmp_path / "out", tools_dir(), continue_turn=continue_turn, keep_home=home
    )
    assert result.ok, result.outcomes
    written = CODEC.read(tmp_path / "out")  # the seed, as the thread was written
    assert result.listing is not None
    assert result.listing["message_count"] == len(
        [r for r in written.records if r.evidence.units == 1 and r.kind != "system"]
    )
    assert result.listing["initial_prompt"] == next(
        r.text for r in written.records if r.kind == "user"
    )
    assert result.listing["cwd"] == written.session.cwd
    same_replay(replay_projection(result.notifications), expected_replay(written))
    if continue_turn:
        assert result.listing_after_turn is not None
        assert result.listing_after_turn["message_count"] == result.listing["message_count"] + 2
    else:
        back = CODEC.read(home, session=exp.session_id)
        assert projection(back) == projection(written)
        assert [r.id for r in back.records] == [r.id for r in written.records]


@pytest.mark.parametrize(("case", "tid"), THREADS, ids=THREAD_IDS)
def test_dcode_lists_and_loads_every_fixture_thread(
    venv_python: Path, case: str, tid: str, tmp_path: Path
) -> None:
    snap = CODEC.read(DA / case / "sessions.db", session=tid)
    check_export(snap, tmp_path, continue_turn=case == "failed-tool")


def test_dcode_loads_the_seed_fixture(venv_python: Path, tmp_path: Path) -> None:
    result = loader.check(DA / "seed", tools_dir(), keep_home=tmp_path / "home")
    assert result.ok, result.outcomes
    assert result.listing is not None and result.listing["message_count"] == 7


def test_dcode_loads_a_hand_snapshot(venv_python: Path, tmp_path: Path) -> None:
    check_export(hand_snapshot(), tmp_path)


def test_dcode_loads_a_converted_grok_session(venv_python: Path, tmp_path: Path) -> None:
    sdir = next(
        p
        for p in sorted((FIXTURES / "grok").glob("*/sessions/*/*"))
        if (p / "summary.json").is_file()
    )
    check_export(registry.get("grok").read(sdir), tmp_path)


def test_prepare_refuses_an_existing_thread_and_dry_run_writes_nothing(
    venv_python: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    export.emit(CODEC.plan(hand_snapshot()), out)
    home = tmp_path / "home"
    env = loader.dcode_env(home)
    dry = subprocess.run(
        [str(venv_python), str(out / "prepare.py"), "--home", str(home), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert dry.returncode == 0 and not (home / ".deepagents").exists()
    first = subprocess.run(
        [str(venv_python), str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    again = subprocess.run(
        [str(venv_python), str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert again.returncode == 3 and "refusing" in again.stderr
    (out / "checkpoint.json").write_text("{}")
    tampered = subprocess.run(
        [str(venv_python), str(out / "prepare.py"), "--home", str(tmp_path / "other")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert tampered.returncode == 1 and "sha256" in tampered.stderr


def test_prepare_run_by_another_python_uses_dcodes(venv_python: Path, tmp_path: Path) -> None:
    """`python OUT/prepare.py` in trajconv's own environment (no deepagents packages) finds
    the installed dcode on PATH and installs with its python (issue 24)."""
    import os
    import sys

    snap = trajconv_read_grok()
    out = tmp_path / "out"
    export.emit(CODEC.plan(snap), out)
    home = tmp_path / "home"
    env = {**os.environ, "PATH": f"{venv_python.parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"using the python of dcode, which has the deepagents packages: {venv_python}" in (
        done.stdout
    )
    (listed,) = loader.list_threads(venv_python, home)
    assert listed["thread_id"] == snap.source.session_id


def trajconv_read_grok() -> Snapshot:
    import trajconv

    grok = next((FIXTURES / "grok" / "multi-turn").glob("sessions/*/*"))
    return trajconv.read("grok", grok)
