"""Gemini CLI itself (npm @google/gemini-cli, pinned) resumes what we write, and its model
request carries every earlier turn, call and result in order, nothing invented.

Every gemini fixture and a Grok, Copilot and Deep Agents fixture converted to gemini are
installed with the export's own prepare.py into a scratch home, then resumed for one turn
(``gemini --resume ID -p PROMPT``) against the loopback model server. The CLI runs are
started together (each takes ~15 s of mostly Node start-up here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import gemini as loader
from tests.conftest import require_loader
from tests.gemini.test_gemini import FILES, IDS
from tests.helpers import FIXTURES

PROMPT = "Continue from where we stopped."
FOREIGN = {
    "grok": next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl")).parent,
    "copilot": next(FIXTURES.glob("copilot/recorded-tool-failures/session-state/*")),
    "deepagents": FIXTURES / "deepagents" / "failed-tool" / "sessions.db",
}
LEGACY = next(FIXTURES.glob("gemini/legacy/.gemini/tmp/*/chats/session-*"))
CASES = [("gemini", p) for p in FILES] + list(FOREIGN.items())
CASE_IDS = [f"gemini-{i}" for i in IDS] + [f"{h}-to-gemini" for h in FOREIGN]


def _resume(exe: Path, harness: str, src: Path, scratch: Path, listing: bool) -> dict[str, Any]:
    project = scratch / "project"
    home = scratch / "home"
    project.mkdir(parents=True)
    snap = trajconv.read(harness, src)
    export = trajconv.write(snap, "gemini", scratch / "out", cwd=str(project))
    loader.write_settings(home)
    prep = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert prep.returncode == 0, prep.stderr
    listed = loader.list_sessions(exe, home, project) if listing else None
    bodies = loader.continue_session(exe, home, export.session_id, str(project), PROMPT, scratch)
    return {"snap": snap, "export": export, "listing": listed, "bodies": bodies}


def _cleanup(exe: Path, scratch: Path, touch: bool) -> dict[str, Any]:
    """Install the legacy fixture (lastUpdated 2025-06-01) into a home whose settings leave
    the CLI's session cleanup at its default, then start the CLI once."""
    project = scratch / "project"
    home = scratch / "home"
    project.mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    _snap, export = trajconv.convert("gemini", "gemini", LEGACY, scratch / "out", cwd=str(project))
    # without --touch prepare refuses; the raw copy stands for an install that ignored that
    if touch:
        argv = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home), "--touch"]
        assert subprocess.run(argv, capture_output=True, check=False).returncode == 0
    else:
        shutil.copytree(export.out_dir / "home" / ".gemini", home / ".gemini", dirs_exist_ok=True)
    listing = loader.list_sessions(exe, home, project)
    return {"listing": listing, "files": sorted(home.glob(".gemini/tmp/*/chats/session-*"))}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    exe = loader.find(tools_dir())
    require_loader(exe, "gemini")
    assert exe is not None
    root = tmp_path_factory.mktemp("gemini-resume")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            # one case also asks for the listing (another CLI start: ~15 s)
            cid: pool.submit(_resume, exe, harness, src, root / cid, i == 0)
            for i, (cid, (harness, src)) in enumerate(zip(CASE_IDS, CASES, strict=True))
        }
        futures["cleanup-touch"] = pool.submit(_cleanup, exe, root / "cleanup-touch", True)
        futures["cleanup-raw"] = pool.submit(_cleanup, exe, root / "cleanup-raw", False)
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("cid", CASE_IDS)
def test_resumed_request_carries_the_whole_history(
    cid: str, resumed: dict[str, dict[str, Any]]
) -> None:
    run = resumed[cid]
    sid = run["export"].session_id
    if run["listing"] is not None:
        assert f"[{sid}]" in run["listing"]  # gemini --list-sessions shows it
    assert len(run["bodies"]) == 1  # one main request: the new prompt
    items = loader.request_items(run["bodies"][0])
    assert loader.seen_items(items) == loader.expected_items(run["snap"].records, PROMPT)
    # each result answers the call sent just before it (the CLI sends the bare model id)
    calls = [it for it in items if it["kind"] == "tool-call"]
    results = [it for it in items if it["kind"] == "tool-result"]
    assert [r["call_id"] for r in results] == [c["id"] for c in calls]
    snap_calls = [r.call.id for r in run["snap"].records if r.kind == "tool-call"]
    assert all(
        native == sent or native.endswith(f"__{sent}")
        for native, sent in zip(snap_calls, [c["id"] for c in calls], strict=True)
    )


def test_the_cli_cleanup_deletes_an_old_session_unless_prepare_touched_it(
    resumed: dict[str, dict[str, Any]],
) -> None:
    raw, touched = resumed["cleanup-raw"], resumed["cleanup-touch"]
    # the CLI lists sessions while its cleanup runs, so under load the listing may still
    # name the file the cleanup then deletes (seen in a full run): the files are the verdict
    assert raw["files"] == []
    assert len(touched["files"]) == 1
    assert "[7d3e9a10-1111-4222-8333-944455556666]" in touched["listing"]
