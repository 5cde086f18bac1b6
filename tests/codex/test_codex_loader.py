"""The real Codex CLI (npm @openai/codex, pinned) resumes what we write, offline.

Each written session is installed with its ``prepare.py`` into a scratch home and continued
with ``codex exec resume <id> PROMPT`` against the loopback model server; the request the
CLI sends must carry every earlier user message, assistant text, tool call (name, arguments)
and tool result (text, failure) of the written session in order, then the new prompt, and
nothing else but the harness's own system text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import trajconv
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from trajconv.codecs.codex import native
from trajconv.loaders import codex as loader
from trajconv.loaders import tools_dir

PROMPT = "Please continue from here."


def _deepagents_source() -> tuple[Path, str]:
    row = json.loads((FIXTURES / "deepagents" / "tool-calls" / "listing.json").read_text())[0]
    return FIXTURES / "deepagents" / "tool-calls" / "sessions.db", str(row["thread_id"])


def _sources() -> list[tuple[str, str, Path, str | None]]:
    """(case id, source harness, path, session) of everything the test writes to Codex."""
    out: list[tuple[str, str, Path, str | None]] = []
    for rollout in sorted(FIXTURES.glob("codex/*/.codex/**/rollout-*.jsonl")):
        case = rollout.parts[len(FIXTURES.parts) + 1]
        out.append((f"codex/{case}/{rollout.name[-42:-34]}", "codex", rollout, None))
    grok = next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl"))
    out.append(("grok/recorded-tool-failures", "grok", grok, None))
    copilot = next(FIXTURES.glob("copilot/recorded-tool-failures/session-state/*/events.jsonl"))
    out.append(("copilot/recorded-tool-failures", "copilot", copilot.parent, None))
    db, thread = _deepagents_source()
    out.append(("deepagents/tool-calls", "deepagents", db, thread))
    return out


SOURCES = _sources()


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "codex")
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("case", "harness", "path", "session"), SOURCES, ids=[s[0] for s in SOURCES]
)
def test_codex_resumes_written_session_with_full_history(
    case: str, harness: str, path: Path, session: str | None, tmp_path: Path, codex_bin: Path
) -> None:
    source = trajconv.read(harness, path, session=session)
    # Half the cases keep the default provider (Codex's built-in ``openai``, pointed at
    # loopback by ``openai_base_url``; the CLI first tries a WebSocket there, ~7 s), half
    # name their own, which the loopback config then defines.
    provider = None if SOURCES.index((case, harness, path, session)) % 2 == 0 else "local-proxy"
    export = trajconv.write(
        source, "codex", tmp_path / "out", allow_lossy=True, model_provider=provider
    )
    meta = json.loads(
        next((export.out_dir / "home").glob(".codex/sessions/*/*/*/*")).open().readline()
    )
    assert meta["payload"]["model_provider"] == (provider or "openai")
    home = tmp_path / "home"
    home.mkdir()
    installed = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    written = trajconv.read("codex", home)
    # what was written is the source's conversation (reasoning and observations aside)
    keep = ("user", "assistant", "tool-call", "tool-result")
    src_calls = {r.call.id for r in source.records if r.kind == "tool-call"}
    assert [r.id for r in written.records if r.kind == "user"]  # a prompt at least
    assert {r.call.id for r in written.records if r.kind == "tool-call"} <= src_calls
    assert sum(r.kind in keep for r in written.records) >= 2

    bodies = loader.continue_session(
        codex_bin, home, export.session_id, written.session.cwd or "", PROMPT, tmp_path / "run"
    )
    assert len(bodies) == 1, f"{len(bodies)} model requests"
    seen = loader.request_items(bodies[0])
    want = loader.snapshot_items(written)
    assert loader.conversation(seen) == [*want, {"kind": "user", "text": PROMPT}]
    # every failure the source knew is visible to the model
    for item, rec in zip(
        [i for i in want if i["kind"] == "tool-result"],
        [r for r in source.records if r.kind == "tool-result" and r.result.call_id in src_calls],
        strict=False,
    ):
        if rec.result.ok is False:
            assert native.output_failed("function_call_output", item["text"]) or item["error"]
    # the written file was never touched: the CLI appended to its own copy
    assert trajconv.read("codex", home).id == written.id
