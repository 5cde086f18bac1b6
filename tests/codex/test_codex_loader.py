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
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import codex as loader
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from trajconv.codecs.codex import native

PROMPT = "Please continue from here."


def _says_failed(text: str) -> bool:
    """The output's head tells the model the call failed (either tool's exit line)."""
    return any(
        native.output_failed(kind, text)
        for kind in ("function_call_output", "custom_tool_call_output")
    )


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
    # Two cases keep the default provider (Codex's built-in ``openai``, pointed at loopback by
    # ``openai_base_url``; the CLI first tries a WebSocket there, gets a 426), the others name
    # their own, which the loopback config then defines.
    default = case.startswith(("codex/shell-patch", "grok/"))
    provider = None if default else "local-proxy"
    export = trajconv.write(
        source, "codex", tmp_path / "out", allow_lossy=True, model_provider=provider
    )
    meta = json.loads(
        next((export.out_dir / "home").glob(".codex/sessions/*/*/*/*")).open().readline()
    )
    own = loader.session_provider(path) if harness == "codex" else "openai"
    assert meta["payload"]["model_provider"] == (provider or own)
    # the user's home configures the provider the session is resumed with
    home = _home(tmp_path / "home", provider or "openai")
    installed = subprocess.run(
        [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    written = trajconv.read("codex", home, session=export.session_id)
    rollout = next(home.glob(f".codex/sessions/*/*/*/rollout-*-{export.session_id}.jsonl"))
    assert loader.session_provider(rollout) == (provider or "openai")  # bound to the home's

    # what was written is the source's conversation, in order, less what a lossy write names
    # (reasoning and observations are not conversation items here)
    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        return (item["kind"], item.get("text") if item["kind"] in ("user", "assistant") else (
            item.get("id") or item.get("call_id")
        ))  # fmt: skip

    src = [key(i) for i in loader.snapshot_items(source)]
    kept = [key(i) for i in loader.snapshot_items(written)]
    dropped = sum(
        d.count
        for d in export.diagnostics
        if d.code in ("untranslated-pending-call", "untranslated-orphan-result")
    )
    rest = iter(src)
    assert all(k in rest for k in kept), "written items are not the source's, in order"
    assert len(src) - len(kept) == dropped
    outputs = {r.result.call_id: r.result.output for r in source.records if r.kind == "tool-result"}
    for r in written.records:
        if r.kind == "tool-result":
            assert r.result.output.endswith(outputs[r.result.call_id])

    bodies = loader.continue_session(
        codex_bin, home, export.session_id, written.session.cwd or "", PROMPT, tmp_path / "run"
    )
    assert len(bodies) == 1, f"{len(bodies)} model requests"
    seen = loader.request_items(bodies[0])
    want = loader.snapshot_items(written)
    assert loader.conversation(seen) == [*want, {"kind": "user", "text": PROMPT}]
    # every failure the source knew is visible to the model (request error = written ok)
    failed = {
        r.result.call_id for r in source.records if r.kind == "tool-result" and r.result.ok is False
    }
    shown = {i["call_id"] for i in seen if i["kind"] == "tool-result" and _says_failed(i["text"])}
    assert failed & {i["call_id"] for i in want if i["kind"] == "tool-result"} <= shown
    # the written file was never touched: the CLI appended to its own copy
    assert trajconv.read("codex", home, session=export.session_id).id == written.id


def test_codex_recognises_written_rollouts_as_legacy(tmp_path: Path, codex_bin: Path) -> None:
    """``codex migrate-rollouts --json`` (model-free) lists each written rollout as a legacy
    rollout it could migrate: the shape the writer chose is the one the CLI knows."""
    home = tmp_path / "home"
    ids = []
    for case, harness, path, session in SOURCES[:3]:
        snap = trajconv.read(harness, path, session=session)
        export = trajconv.write(snap, "codex", tmp_path / case.replace("/", "-"), allow_lossy=True)
        done = subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        ids.append(export.session_id)
    listed = loader.legacy_rollouts(codex_bin, home, tmp_path / "run")
    assert sorted((o["thread_id"], o["status"]) for o in listed) == sorted(
        (i, "eligible") for i in ids
    )


def test_request_items_reads_a_responses_body() -> None:
    """The mapping the continuation check relies on (no CLI needed)."""
    body = {
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "rules"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>x</environment_context>"}
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
                "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["unknown"]},
            },
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "think"}],
                "encrypted_content": None,
            },
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"ls"}',
                "call_id": "c1",
            },
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Process exited with code 2\nOutput:\nno",
            },
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": "*** Begin Patch",
                "call_id": "c2",
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": "Tool call failed\nOutput:\nbad",
            },
            {"type": "function_call", "name": "f", "arguments": "{not json", "call_id": "c3"},
            {"type": "function_call_output", "call_id": "c3", "output": "plain"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
            },
        ]
    }
    items = loader.request_items(body)
    assert [i["kind"] for i in items] == [
        "system", "system", "user", "reasoning", "tool-call", "tool-result",
        "tool-call", "tool-result", "tool-call", "tool-result", "assistant",
    ]  # fmt: skip
    assert items[4] == {
        "kind": "tool-call",
        "name": "exec_command",
        "arguments": {"cmd": "ls"},
        "id": "c1",
    }
    results = [i for i in items if i["kind"] == "tool-result"]
    # the Responses API has no error field: the text alone says a call failed
    assert [i["error"] for i in results] == [None, None, None]
    assert [_says_failed(i["text"]) for i in results] == [True, True, False]
    assert items[6]["arguments"] == {"input": "*** Begin Patch"}
    assert items[8]["arguments"] == {"_raw": "{not json"}


def test_offline_config_points_every_provider_at_loopback() -> None:
    builtin = loader.offline_config("http://127.0.0.1:1/v1", "openai", "m")
    assert 'openai_base_url = "http://127.0.0.1:1/v1"' in builtin
    assert "[model_providers" not in builtin
    custom = loader.offline_config("http://127.0.0.1:1/v1", "my-proxy", "m")
    assert '[model_providers."my-proxy"]' in custom and 'wire_api = "responses"' in custom


def _message(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def test_context_of_the_session_and_of_the_new_turn() -> None:
    """The session's own ``<environment_context>`` is context the model saw (compared as
    such); the one the CLI adds before the new prompt belongs to this run (system)."""
    env = "<environment_context>\n  <cwd>/work/demo</cwd>\n</environment_context>"
    body = {
        "input": [
            _message("developer", "rules"),
            _message("user", env),
            _message("user", "first"),
            _message("assistant", "done"),
            _message("developer", "rules again"),
            _message("user", env.replace("/work/demo", "/tmp/x")),
            _message("user", PROMPT),
        ]
    }
    items = loader.request_items(body)
    assert [i["kind"] for i in items] == [
        "system", "user", "user", "assistant", "system", "system", "user",
    ]  # fmt: skip
    assert loader.unwrap_user(items[1]["text"]) == ("", env)
    assert loader.unwrap_user("first") == ("first", None)
    assert loader.conversation(items) == [
        {"kind": "user", "text": "first"},
        {"kind": "assistant", "text": "done"},
        {"kind": "user", "text": PROMPT},
    ]


def test_the_session_context_goes_back_as_user_role(tmp_path: Path) -> None:
    """A Codex session's ``<environment_context>`` (a system record of the reader) is written
    back as the user-role message the CLI sent; other system text as developer text."""
    source = trajconv.read("codex", FIXTURES / "codex" / "resumed")
    export = trajconv.write(source, "codex", tmp_path / "out")
    rollout = next((export.out_dir / "home").rglob("rollout-*.jsonl"))
    roles = [
        (p["role"], native.content_text(p["content"], ("input_text",))[0] or "")
        for p in (json.loads(line)["payload"] for line in rollout.read_text().splitlines())
        if p.get("type") == "message" and p.get("role") in ("user", "developer")
    ]
    assert [r for r, text in roles if text.startswith("<environment_context>")] == ["user"]
    assert [r for r, text in roles if text.startswith("<skills_instructions>")] == ["developer"]


# --------------------------------------------------------------------------- provider binding


def _resume(codex_bin: Path, home: Path, sid: str, provider: str, work: Path) -> dict[str, Any]:
    """``codex exec resume`` in ``home`` whose config.toml configures ``provider`` (pointed at
    the loopback model server): the run and the model requests it made."""
    work.mkdir(parents=True)
    job = {
        "exe": str(codex_bin.absolute()),
        "home": str(home),
        "cwd": str(work),
        "log": str(work / "requests.jsonl"),
        "steps": [{"text": "Continued."}],
        "model": "gpt-5.5",
        "provider": provider,
        "runs": [["exec", "resume", "--skip-git-repo-check", sid, PROMPT]],
        "timeout": 180,
    }
    answer = loader.run_offline(job)
    log = work / "requests.jsonl"
    lines = log.read_text("utf-8").splitlines() if log.is_file() else []
    posts = [json.loads(x) for x in lines if json.loads(x).get("method") == "POST"]
    return {"run": answer["runs"][0], "requests": posts}


def _prepare(export_dir: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(export_dir / "prepare.py"), "--home", str(home)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _home(root: Path, provider: str) -> Path:
    """A scratch home whose config.toml names ``provider`` (as a user's would)."""
    (root / ".codex").mkdir(parents=True)
    (root / ".codex" / "config.toml").write_text(f'model_provider = "{provider}"\n')
    return root


def test_prepare_binds_the_homes_provider_so_the_real_cli_resumes(
    tmp_path: Path, codex_bin: Path
) -> None:
    """Issue 33: a session installed into a home whose config.toml names another provider
    could not be resumed ("Cannot change this thread's model provider"). prepare.py binds
    the home's provider and says so; the real CLI then resumes it with the whole history.
    The unbound rollout, installed as written, is refused by the same CLI (the control)."""
    grok = next(FIXTURES.glob("grok/recorded-tool-failures/sessions/*/*/updates.jsonl"))
    source = trajconv.read("grok", grok)
    export = trajconv.write(source, "codex", tmp_path / "out", allow_lossy=True)
    rel = next((export.out_dir / "home").glob(".codex/sessions/*/*/*/*")).relative_to(
        export.out_dir / "home"
    )
    # the control: the rollout as written (provider openai) in a home configured otherwise
    control = _home(tmp_path / "control", "other-local")
    (control / rel).parent.mkdir(parents=True)
    (control / rel).write_bytes((export.out_dir / "home" / rel).read_bytes())
    refused = _resume(codex_bin, control, export.session_id, "other-local", tmp_path / "c")
    assert refused["run"]["rc"] != 0 and not refused["requests"]
    assert "model provider" in refused["run"]["stderr"].lower()
    # prepared: bound to the home's provider, and the CLI resumes it
    home = _home(tmp_path / "home", "other-local")
    done = _prepare(export.out_dir, home)
    assert done.returncode == 0, done.stderr
    assert "binds model_provider 'other-local'" in done.stdout
    assert loader.session_provider(home / rel) == "other-local"
    written = trajconv.read("codex", home, session=export.session_id)
    ran = _resume(codex_bin, home, export.session_id, "other-local", tmp_path / "r")
    assert ran["run"]["rc"] == 0, ran["run"]["stderr"][-2000:]
    assert len(ran["requests"]) == 1
    seen = loader.request_items(ran["requests"][0]["body"])
    assert loader.conversation(seen) == [
        *loader.snapshot_items(written),
        {"kind": "user", "text": PROMPT},
    ]


def test_a_codex_round_trip_keeps_its_provider_and_resumes(tmp_path: Path, codex_bin: Path) -> None:
    """Issue 33: Codex -> Codex replaced the source's model_provider with openai, so the
    user's own home (configured with the source's provider) refused to resume it."""
    rollout = next(FIXTURES.glob("codex/resumed/.codex/sessions/*/*/*/rollout-*.jsonl"))
    own = loader.session_provider(rollout)
    assert own == loader.PROVIDER_ID  # recorded with the loopback provider
    source = trajconv.read("codex", rollout)
    export = trajconv.write(source, "codex", tmp_path / "out")
    home = _home(tmp_path / "home", own)
    done = _prepare(export.out_dir, home)
    assert done.returncode == 0, done.stderr
    assert f"model_provider {own!r} kept" in done.stdout
    installed = next(home.glob(f".codex/sessions/*/*/*/rollout-*-{export.session_id}.jsonl"))
    assert loader.session_provider(installed) == own
    ran = _resume(codex_bin, home, export.session_id, own, tmp_path / "r")
    assert ran["run"]["rc"] == 0, ran["run"]["stderr"][-2000:]
    assert len(ran["requests"]) == 1
    # a provider the user named is kept, and a home configured otherwise is refused by name
    named = trajconv.write(source, "codex", tmp_path / "named", model_provider="openai")
    refused = _prepare(named.out_dir, _home(tmp_path / "other", own))
    assert refused.returncode == 3
    assert f"the home's is {own!r}" in refused.stderr and "--codex-model-provider" in refused.stderr
