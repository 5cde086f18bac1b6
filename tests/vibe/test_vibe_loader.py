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


PROMPT = "Please go on from here."


def _continue(exe: Path, export: object, tmp: Path) -> list[dict[str, object]]:
    """Install an export with its prepare.py into a scratch home and resume it in vibe."""
    import subprocess
    import sys

    out_dir = export.out_dir  # type: ignore[attr-defined]
    sid = export.session_id  # type: ignore[attr-defined]
    home = tmp / "home"
    subprocess.run(
        [sys.executable, str(out_dir / "prepare.py"), "--home", str(home)],
        check=True,
        capture_output=True,
    )
    return loader.continue_session(exe, home, sid, "", PROMPT, tmp / "work")


def _expected(snap: object) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for r in snap.records:  # type: ignore[attr-defined]
        if r.kind in ("user", "assistant"):
            out.append((r.kind, r.text))
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
        elif kind in ("user", "assistant", "tool-result"):
            out.append((kind, it["text"]))
    return out


@pytest.mark.parametrize("harness", ["vibe", "claude", "pi"])
def test_real_vibe_resumes_a_written_session(exe: Path, harness: str, tmp_path: Path) -> None:
    import trajconv
    from proof import continuation as cont
    from proof.continuation import conversation

    snap = cont.read_fixture(harness)
    export = trajconv.write(snap, "vibe", tmp_path / "out", allow_lossy=True)
    bodies = _continue(exe, export, tmp_path)
    assert len(bodies) == 1, "exactly one model request for the resumed turn"
    earlier, found = conversation(loader.request_items(bodies[0]), PROMPT)
    assert found
    assert _seen(earlier) == _expected(snap)
