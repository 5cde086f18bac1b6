"""The real CLIs resume exports that carry sub-agents, offline against the loopback model
server: the parent in Claude Code, Codex and OpenCode, and each child where the CLI resumes
a child on its own (a Codex spawned thread, an OpenCode child session). Claude Code resumes
only the parent (a sub-agent transcript is no session of its own); its child is read back
from the home the CLI resumed in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import claude as claude_loader
from proof.loaders import codex as codex_loader
from proof.loaders import opencode as opencode_loader
from tests.conftest import require_loader
from tests.subagents.support import IDS, SOURCES, carried, read
from trajconv.snapshot.models import Child, Snapshot

PROMPT = "Please go on from here."
LOADERS = {"claude": claude_loader, "codex": codex_loader, "opencode": opencode_loader}


@pytest.fixture(scope="module", params=list(LOADERS))
def target(request: pytest.FixtureRequest) -> tuple[str, Path]:
    name = str(request.param)
    found = LOADERS[name].find(tools_dir())
    require_loader(found, name)
    assert found is not None
    return name, found


def _first_prompt(records: Snapshot | Child) -> str:
    return next(r.text for r in records.records if r.kind == "user")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _asked(bodies: list[dict[str, object]], text: str) -> bool:
    """Whether the first model request of the resumed turn holds ``text`` and the prompt."""
    sent = "\n".join(_strings(bodies[0])) if bodies else ""
    return text in sent and PROMPT in sent


@pytest.mark.parametrize(("label", "harness", "path", "session"), SOURCES, ids=IDS)
def test_the_real_cli_resumes_the_export_with_its_children(
    label: str,
    harness: str,
    path: Path,
    session: str | None,
    target: tuple[str, Path],
    tmp_path: Path,
) -> None:
    name, exe = target
    snap = read(harness, path, session)
    project = tmp_path / "project"
    project.mkdir()
    options: dict[str, str] = {"cwd": str(project)}
    if name == "codex":
        options["model_provider"] = "local-proxy"  # the loopback config defines it
    export = trajconv.write(snap, name, tmp_path / "out", allow_lossy=True, **options)
    assert len(export.manifest.get("files", [])) > 2  # the session, its child, prepare.py
    assert not [d for d in export.diagnostics if d.code == "untranslated-subagent"]
    home = tmp_path / "home"
    home.mkdir()
    if name == "codex":  # the user's config names the provider (continue_session serves it)
        (home / ".codex").mkdir()
        config = codex_loader.offline_config("http://127.0.0.1:9/v1", "local-proxy")
        (home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
    cmd = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)]
    env = None
    if name == "opencode":
        cmd += ["--opencode", str(exe)]
        env = opencode_loader.scratch_env(home)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    loader = LOADERS[name]
    bodies = loader.continue_session(
        exe, home, export.session_id, str(project), PROMPT, tmp_path / "parent"
    )
    assert _asked(bodies, _first_prompt(snap))
    if name == "opencode":
        installed = trajconv.read(
            name, opencode_loader.data_dir(home) / "opencode.db", session=export.session_id
        )
    else:
        installed = trajconv.read(name, home, session=export.session_id)
    # the children are in the home the CLI resumed in, as they were written
    assert [carried(c) for c in installed.children] == [
        carried(c) for c in trajconv.read(name, _written(name, export), session=None).children
    ]
    assert len(installed.children) == len(snap.children)
    if name == "claude":
        return
    for i, child in enumerate(installed.children):
        kid = loader.continue_session(
            exe, home, child.session.id, str(project), PROMPT, tmp_path / f"child-{i}"
        )
        assert _asked(kid, _first_prompt(child)), f"child {child.session.id}"


def _written(name: str, export: trajconv.Export) -> Path:
    """The session file of an export, for the re-read of what was written."""
    if name == "opencode":
        return export.out_dir / "opencode-export.json"
    rel = export.manifest["session_paths"][0]
    return export.out_dir / "home" / rel
