"""The Mistral Vibe loader drives the real CLI offline against the loopback model server:
a prompt writes the unified store, and ``--resume`` sends the earlier turn to the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.record.modelserver import ModelServer
from proof import tools_dir
from proof.loaders import vibe as loader
from tests.conftest import require_loader


@pytest.fixture(scope="module")
def exe() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "vibe")
    assert found is not None
    return found


def _session_id(stdout: str) -> str:
    entries = json.loads(stdout)
    (sid,) = {entry["sessionId"] for entry in entries}
    return str(sid)


def test_prompt_then_resume_carries_history(exe: Path, tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    with ModelServer([{"text": "First answer."}], tmp_path / "log1.jsonl") as srv:
        loader.write_config(home / ".vibe", srv.base_url)
        done = loader.run_prompt(exe, home, cwd, "first question")
    assert done.returncode == 0, done.stderr
    sid = _session_id(done.stdout)
    store = home / ".vibe" / "logs" / "session" / "unified" / sid
    current = json.loads((store / "CURRENT").read_text(encoding="utf-8"))
    assert current["session_id"] == sid
    assert (store / "generations" / current["generation"] / "manifest.json").is_file()
    assert sorted((store / "journal").glob("*.jsonl"))

    log2 = tmp_path / "log2.jsonl"
    with ModelServer([{"text": "Second answer."}], log2) as srv:
        loader.write_config(home / ".vibe", srv.base_url)
        again = loader.run_prompt(exe, home, cwd, "second question", resume=sid)
    assert again.returncode == 0, again.stderr
    assert _session_id(again.stdout) == sid
    bodies = [json.loads(line)["body"] for line in log2.read_text().splitlines()]
    sent = [(m["role"], m.get("content")) for m in bodies[-1]["messages"] if m["role"] != "system"]
    assert sent == [
        ("user", "first question"),
        ("assistant", "First answer."),
        ("user", "second question"),
    ]
    later = json.loads((store / "CURRENT").read_text(encoding="utf-8"))
    assert later["generation"] != current["generation"]
