"""OpenCode itself (npm opencode-ai, pinned) imports, exports and continues what we write.

For every OpenCode fixture and a Grok, Copilot and Deep Agents fixture converted to
OpenCode: ``prepare.py`` installs the export with the real ``opencode import`` into one
scratch home, ``opencode export`` gives back the same messages and parts,
``opencode session list`` lists it, and ``opencode run --session`` continues it against the
loopback model server, whose request must carry the earlier conversation: every user
message, assistant text, tool call (name, arguments) and tool result (text) in order, then
the new prompt, and nothing else but the system prompt (reasoning arrives as reasoning, or
as assistant text when it was written by another model).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import opencode as loader
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from tests.opencode.support import LEGACY, SUB_DB, TOOLS_DB
from trajconv.codecs.opencode import writer
from trajconv.snapshot.models import Snapshot

PROMPT = "Summarise."  # one word: `opencode run` quotes a prompt that has spaces

SOURCES = {
    "opencode-recorded-tools": ("opencode", TOOLS_DB, None),
    "opencode-recorded-subagent": ("opencode", SUB_DB, "root"),
    "opencode-legacy-json": ("opencode", LEGACY, "ses_dd60ed7ffffeKy9Pf34qY6Nb3w"),
    "grok-recorded-tool-failures": ("grok", FIXTURES / "grok" / "recorded-tool-failures", "*"),
    "copilot-recorded-tool-failures": (
        "copilot",
        FIXTURES / "copilot" / "recorded-tool-failures",
        "*",
    ),
    "deepagents-failed-tool": (
        "deepagents",
        FIXTURES / "deepagents" / "failed-tool" / "sessions.db",
        "01a22a81-1cda-777b-84b1-d61aea482b70",
    ),
}


@dataclass
class Installed:
    exe: Path
    home: Path
    cwd: Path
    written: Snapshot
    document: dict[str, Any]
    session_id: str
    prepare_out: str


def _source(harness: str, path: Path, session: str | None) -> Snapshot:
    if session == "*":  # a harness home with one session folder
        journal = "updates.jsonl" if harness == "grok" else "events.jsonl"
        return trajconv.read(harness, sorted(path.rglob(journal))[0])
    if session == "root":
        roots = [r for r in trajconv.discover("opencode", path.parent) if "subagent)" not in
                 (r.title or "")]  # fmt: skip
        session = roots[0].session_id
    return trajconv.read(harness, path, session=session)


@pytest.fixture(scope="module")
def opencode_bin() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "opencode")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def installed(opencode_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Installed]:
    """Every source converted and installed with prepare.py into one scratch home."""
    root = tmp_path_factory.mktemp("opencode-loader")
    home, cwd = root / "home", root / "project"
    home.mkdir()
    cwd.mkdir()
    out: dict[str, Installed] = {}
    for name, (harness, path, session) in SOURCES.items():
        snap = _source(harness, path, session)
        export = trajconv.write(snap, "opencode", root / name, allow_lossy=True, cwd=str(cwd))
        proc = subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home),
             "--opencode", str(opencode_bin)],
            capture_output=True, text=True, env=loader.scratch_env(home), check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
        doc_path = export.out_dir / writer.DOCUMENT
        out[name] = Installed(
            exe=opencode_bin,
            home=home,
            cwd=cwd,
            written=trajconv.read("opencode", doc_path),
            document=json.loads(doc_path.read_text("utf-8")),
            session_id=export.session_id,
            prepare_out=proc.stdout,
        )
    return out


NAMES = list(SOURCES)


def test_session_list_shows_every_import(installed: dict[str, Installed]) -> None:
    first = next(iter(installed.values()))
    listed = {s["id"]: s for s in loader.session_list(first.exe, first.home, first.cwd)}
    for name, inst in installed.items():
        assert inst.session_id in listed, name
        assert listed[inst.session_id]["title"] == inst.document["info"]["title"]
        assert listed[inst.session_id]["directory"] == str(inst.cwd)
        assert f"resume in {inst.cwd} with: opencode --session {inst.session_id}" in (
            inst.prepare_out
        )


@pytest.mark.parametrize("name", NAMES)
def test_export_gives_back_the_messages_and_parts(
    name: str, installed: dict[str, Installed]
) -> None:
    inst = installed[name]
    back = loader.export_session(inst.exe, inst.home, inst.session_id, inst.cwd)
    assert back["messages"] == inst.document["messages"]
    assert back["info"]["id"] == inst.session_id
    assert back["info"]["directory"] == str(inst.cwd)


def expected_items(snap: Snapshot) -> Iterator[dict[str, Any]]:
    for r in snap.records:
        if r.kind == "user":
            yield {"kind": "user", "text": r.text}
        elif r.kind == "assistant":
            yield {"kind": "assistant", "text": r.text}
        elif r.kind == "reasoning":
            # OpenCode replays reasoning as reasoning to the model that wrote it and as plain
            # assistant text to any other model (observed with 1.18.33)
            same = r.model == f"{loader.PROVIDER}/{loader.MODEL}"
            yield {"kind": "reasoning" if same else "assistant", "text": r.text}
        elif r.kind == "tool-call":
            yield {"kind": "tool-call", "name": r.call.name, "arguments": r.call.arguments,
                   "id": r.call.id}  # fmt: skip
        elif r.kind == "tool-result":
            yield {"kind": "tool-result", "call_id": r.result.call_id, "text": r.result.output,
                   "error": None}  # fmt: skip


def merged(items: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive assistant texts of one step reach the model as one message's content."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item["kind"] == "assistant" and out and out[-1]["kind"] == "assistant":
            out[-1] = {"kind": "assistant", "text": out[-1]["text"] + item["text"]}
        else:
            out.append(dict(item))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_continued_turn_carries_the_conversation(
    name: str, installed: dict[str, Installed], tmp_path: Path
) -> None:
    inst = installed[name]
    requests = loader.continue_session(
        inst.exe, inst.home, inst.session_id, str(inst.cwd), PROMPT, tmp_path / "work"
    )
    assert len(requests) == 1
    seen = loader.request_items(requests[0])
    assert seen[0]["kind"] == "system"
    assert merged(seen[1:]) == [*merged(expected_items(inst.written)),
                                {"kind": "user", "text": PROMPT}]  # fmt: skip
    failures = [r.result.output for r in inst.written.records
                if r.kind == "tool-result" and r.result.ok is False]  # fmt: skip
    results = [i["text"] for i in seen if i["kind"] == "tool-result"]
    assert all(text in results for text in failures)


# --------------------------------------------------------------------------- model binding


def _user_home(root: Path, model: str | None, base_url: str = loader.OFFLINE_BASE_URL) -> Path:
    """A home whose ``~/.config/opencode/opencode.json`` is the loopback config (its model
    ``model``, or none), as a user's own config file, not the loader's environment."""
    cfg = loader.config(base_url)
    if model is None:
        del cfg["model"], cfg["small_model"]
    (root / ".config" / "opencode").mkdir(parents=True)
    (root / ".config" / "opencode" / "opencode.json").write_text(json.dumps(cfg))
    return root


def _env(home: Path) -> dict[str, str]:
    """The scratch environment without the loader's OPENCODE_CONFIG_CONTENT: the home's
    own config file is what OpenCode reads."""
    env = loader.scratch_env(home)
    del env["OPENCODE_CONFIG_CONTENT"]
    return env


def _prepare_into(
    export: Path, home: Path, cwd: Path, exe: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(export / "prepare.py"), "--home", str(home), "--cwd", str(cwd),
         "--opencode", str(exe)],
        capture_output=True, text=True, env=_env(home), check=False,
    )  # fmt: skip


def _continue(exe: Path, home: Path, sid: str, cwd: Path, work: Path) -> dict[str, Any]:
    """``opencode run --session SID PROMPT`` without ``-m``, the home's config pointed at a
    loopback model server: the run and the model requests."""
    from fixtures.record.modelserver import ModelServer

    work.mkdir(parents=True)
    log = work / "requests.jsonl"
    with ModelServer([{"text": "Continued."}], log, model=loader.MODEL) as srv:
        cfg_file = home / ".config" / "opencode" / "opencode.json"
        cfg = json.loads(cfg_file.read_text())
        cfg["provider"][loader.PROVIDER]["options"]["baseURL"] = srv.base_url
        cfg_file.write_text(json.dumps(cfg))
        proc = subprocess.run(
            [str(exe), "run", "--format", "json", "--session", sid, PROMPT],
            cwd=cwd, env=_env(home), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=loader.RUN_TIMEOUT, check=False,
        )  # fmt: skip
    bodies = (
        [json.loads(x).get("body") for x in log.read_text().splitlines()] if log.is_file() else []
    )
    return {"rc": proc.returncode, "out": proc.stdout, "bodies": [b for b in bodies if b]}


def test_prepare_binds_the_homes_model_so_run_session_continues(
    opencode_bin: Path, tmp_path: Path
) -> None:
    """Issue 33: an export named the source's model, so `opencode run --session` (no -m)
    failed with "Unexpected server error" (the session's model is not configured there).
    prepare.py binds the model the home configures and says so; the control, the document
    imported as written, fails as before."""
    grok = sorted((FIXTURES / "grok" / "recorded-tool-failures").rglob("updates.jsonl"))[0]
    snap = trajconv.read("grok", grok)
    cwd = tmp_path / "project"
    cwd.mkdir()
    export = trajconv.write(snap, "opencode", tmp_path / "out", allow_lossy=True, cwd=str(cwd))
    doc = json.loads((export.out_dir / writer.DOCUMENT).read_text())
    assert doc["info"]["model"]["providerID"] == "grok"
    model = f"{loader.PROVIDER}/{loader.MODEL}"
    # the control: imported as written
    control = _user_home(tmp_path / "control", model)
    subprocess.run(
        [str(opencode_bin), "import", str(export.out_dir / writer.DOCUMENT)],
        cwd=cwd, env=_env(control), capture_output=True, text=True, check=True,
    )  # fmt: skip
    failed = _continue(opencode_bin, control, export.session_id, cwd, tmp_path / "c")
    assert failed["rc"] != 0 or '"type":"error"' in failed["out"]
    assert "Unexpected server error" in failed["out"] and not failed["bodies"]
    # prepared: bound, and continued without -m, the history reaching the model
    home = _user_home(tmp_path / "home", model)
    done = _prepare_into(export.out_dir, home, cwd, opencode_bin)
    assert done.returncode == 0, done.stderr
    assert f"binds model {model}" in done.stdout and "the session named grok/" in done.stdout
    ran = _continue(opencode_bin, home, export.session_id, cwd, tmp_path / "r")
    assert ran["rc"] == 0 and '"type":"error"' not in ran["out"], ran["out"][-2000:]
    assert len(ran["bodies"]) == 1
    texts = json.dumps(ran["bodies"][0]["messages"])
    for r in snap.records:
        if r.kind == "user":
            assert json.dumps(r.text)[1:-1] in texts
    # the export itself is left as written
    assert json.loads((export.out_dir / writer.DOCUMENT).read_text()) == doc


def test_prepare_refuses_a_home_without_a_model_unless_a_round_trip(
    opencode_bin: Path, tmp_path: Path
) -> None:
    grok = sorted((FIXTURES / "grok" / "recorded-tool-failures").rglob("updates.jsonl"))[0]
    cwd = tmp_path / "project"
    cwd.mkdir()
    other = trajconv.write(
        trajconv.read("grok", grok), "opencode", tmp_path / "g", allow_lossy=True, cwd=str(cwd)
    )
    refused = _prepare_into(other.out_dir, _user_home(tmp_path / "h1", None), cwd, opencode_bin)
    assert refused.returncode == 3 and "configures no OpenCode model" in refused.stderr
    assert "--model PROVIDER/MODEL" in refused.stderr
    own = _source(*SOURCES["opencode-recorded-tools"])
    trip = trajconv.write(own, "opencode", tmp_path / "o", allow_lossy=True, cwd=str(cwd))
    kept = _prepare_into(trip.out_dir, _user_home(tmp_path / "h2", None), cwd, opencode_bin)
    assert kept.returncode == 0, kept.stderr
    assert "kept (the source session's" in kept.stdout
