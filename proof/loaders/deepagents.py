"""Native loader for Deep Agents Code (``deepagents-code`` 0.1.57, CLI ``dcode``).

Installs the real CLI into its own venv (it pins ``pydantic<2.14``, so it is
kept apart from trajconv's environment) and checks an export folder with it,
offline and with zero inference:

1. ``prepare.py`` from the export runs with the venv's python under a scratch
   HOME and writes the thread into ``~/.deepagents/.state/sessions.db``;
2. ``dcode threads list --json -v`` must list it (message count, cwd, first
   prompt);
3. ``dcode --acp`` with an offline fake chat model shipped by this project
   (``deepagents_fake.py``, loaded through ``config.toml`` ``class_path``)
   must answer ACP ``session/load`` and replay the conversation; optionally one
   more prompt is sent (the fake model answers a fixed text) and the listing
   must then count every earlier message plus the new turn.

Format and CLI facts: ``trajconv/codecs/deepagents/README.md`` ("Input contract",
"Writer") and
what this module sets up (env vars, ``class_path`` config, ACP
over stdio). The graph runs in a LangGraph server subprocess that does not see
``PYTHONPATH``, so the fake model module is copied into the venv's
site-packages as ``trajconv_deepagents_fake``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import installed_version
from proof import tools_dir as _tools
from proof.jsonrpc import StdioRpc

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "deepagents-code"
VERSION = "0.1.57"
#: Exact pins resolved for deepagents-code 0.1.57 (pip's resolution when the pin was made).
PINS: tuple[str, ...] = (
    f"{PACKAGE}=={VERSION}",
    "deepagents==0.7.6",
    "deepagents-acp==0.0.13",
    "agent-client-protocol==0.12.1",
    "langgraph==1.2.24",
    "langgraph-checkpoint==4.3.2",
    "langgraph-checkpoint-sqlite==3.1.2",
    "langchain-core==1.8.3",
    "ormsgpack==1.13.1",
    "pydantic==2.13.5",
)
VENV_NAME = "deepagents-venv"
FAKE_MODULE = "trajconv_deepagents_fake"
FAKE_PROVIDER = "trajconv"
#: ``-M`` value selecting the offline model configured by :func:`write_fake_config`.
FAKE_MODEL_SPEC = f"{FAKE_PROVIDER}:offline"
INSTALL_HINT = (
    "the Deep Agents loader is not installed; run "
    "`python -m proof install deepagents` "
    f"(creates .tools/{VENV_NAME} with {PACKAGE}=={VERSION})"
)
#: Environment that keeps dcode offline and quiet (its telemetry, update and tracing switches).
OFFLINE_ENV: dict[str, str] = {
    "DEEPAGENTS_CODE_OFFLINE": "1",
    "DEEPAGENTS_CODE_NO_UPDATE_CHECK": "1",
    "DEEPAGENTS_CODE_ONBOARDING": "0",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
_FAKE_SOURCE = Path(__file__).resolve().parents[1] / "deepagents_fake.py"


class LoaderError(RuntimeError):
    """The native loader is missing, failed to install or could not run."""


@dataclass
class DeepagentsCheck:
    """What the real ``dcode`` reported for one exported thread."""

    thread_id: str
    cwd: str
    listing: dict[str, Any] | None = None
    """The ``threads list --json -v`` row for the thread, if listed."""
    notifications: list[dict[str, Any]] = field(default_factory=list)
    """The ``update`` objects of every ``session/update`` sent during ``session/load``."""
    listing_after_turn: dict[str, Any] | None = None
    """The listing row after one more (offline) prompt, when requested."""
    outcomes: dict[str, str] = field(default_factory=dict)
    """Step name -> ``"ok"`` or the failure text (``prepare``, ``list``, ``load``, ...)."""

    @property
    def ok(self) -> bool:
        return bool(self.outcomes) and all(v == "ok" for v in self.outcomes.values())


def venv_dir(tools_dir: Path) -> Path:
    return tools_dir / VENV_NAME


def _bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


def _site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(out.stdout.strip())


def _sync_fake_module(python: Path) -> None:
    """Copy our fake model into the venv when missing or out of date."""
    target = _site_packages(python) / f"{FAKE_MODULE}.py"
    data = _FAKE_SOURCE.read_bytes()
    if not target.exists() or target.read_bytes() != data:
        target.write_bytes(data)


def find(tools_dir: Path) -> Path | None:
    """The venv's python when the pinned ``deepagents-code`` is installed there, else None."""
    python = _bin(venv_dir(tools_dir), "python")
    dcode = _bin(venv_dir(tools_dir), "dcode")
    if not python.exists() or not dcode.exists():
        return None
    if installed_version(python, PACKAGE) != VERSION:
        return None
    return python


def dcode_path(python: Path) -> Path:
    return python.parent / "dcode"


def install(tools_dir: Path, *, timeout: float = 900.0) -> Path:
    """Create ``tools_dir/deepagents-venv`` with the pins; return its python. Idempotent."""
    found = find(tools_dir)
    if found is not None:
        _sync_fake_module(found)
        return found
    venv = venv_dir(tools_dir)
    tools_dir.mkdir(parents=True, exist_ok=True)
    scratch_home = tempfile.mkdtemp(prefix="trajconv-dcode-install-")
    env = {**os.environ, "HOME": scratch_home, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        if not _bin(venv, "python").exists():
            subprocess.run(
                [sys.executable, "-m", "venv", str(venv)],
                check=True,
                timeout=300,
                capture_output=True,
                env=env,
            )
        pip = [str(_bin(venv, "python")), "-m", "pip", "install", "-q", *PINS]
        done = subprocess.run(pip, capture_output=True, text=True, timeout=timeout, env=env)
        if done.returncode != 0:
            raise LoaderError(f"pip install failed: {done.stderr.strip()[-2000:]}")
    except (OSError, subprocess.SubprocessError) as exc:
        raise LoaderError(f"could not install {PACKAGE}=={VERSION}: {exc}") from exc
    finally:
        shutil.rmtree(scratch_home, ignore_errors=True)
    python = find(tools_dir)
    if python is None:
        raise LoaderError(f"{PACKAGE}=={VERSION} not importable after install in {venv}")
    _sync_fake_module(python)
    return python


def write_fake_config(home: Path) -> Path:
    """Write ``~/.deepagents/config.toml`` naming our offline/scripted fake models."""
    cfg = home / ".deepagents" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    # dcode's config.toml: a provider whose class_path names a chat model class.
    cfg.write_text(
        f"[models.providers.{FAKE_PROVIDER}]\n"
        f'class_path = "{FAKE_MODULE}:TrajconvOfflineChatModel"\n'
        'models = ["offline"]\n'
        "\n[models.providers.trajconvscript]\n"
        f'class_path = "{FAKE_MODULE}:TrajconvScriptedChatModel"\n'
        'models = ["scripted"]\n'
        '\n[warnings]\nsuppress = ["tavily"]\n',
        encoding="utf-8",
    )
    return cfg


def dcode_env(home: Path) -> dict[str, str]:
    """Environment for running dcode offline under ``home``."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(OFFLINE_ENV)
    env["HOME"] = str(home)
    return env


def list_threads(python: Path, home: Path, *, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Run ``dcode threads list --json -v`` under ``home``; return the ``data`` rows."""
    done = subprocess.run(
        [str(dcode_path(python)), "threads", "list", "--json", "-v", "-n", "100000"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dcode_env(home),
        cwd=str(home),
    )
    if done.returncode != 0:
        raise LoaderError(f"dcode threads list exited {done.returncode}: {done.stderr[-2000:]}")
    doc = json.loads(done.stdout)
    rows = doc.get("data")
    if doc.get("command") != "threads list" or not isinstance(rows, list):
        raise LoaderError(f"unexpected threads list output: {done.stdout[:500]}")
    return [r for r in rows if isinstance(r, dict)]


def acp_session(
    python: Path,
    home: Path,
    *,
    thread_id: str,
    cwd: str,
    prompt: str | None = None,
    model_spec: str = FAKE_MODEL_SPEC,
    timeout: float = 120.0,
    select_model: bool = False,
    extra_env: dict[str, str] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """``session/load`` (and optionally one ``session/prompt``) through ``dcode --acp``.

    A loaded thread keeps the model it was made with (metadata ``acp_model``);
    ``select_model`` switches it to ``model_spec`` before the prompt. Returns the
    load response, the replayed ``update`` objects, and the prompt response (or None).
    """
    argv = [str(dcode_path(python)), "--acp", "-M", model_spec, "--no-mcp"]
    client = StdioRpc(
        argv, cwd=home, env={**dcode_env(home), **(extra_env or {})}, error=LoaderError
    )
    try:
        init = client.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
            },
            timeout=timeout,
        )
        if "error" in init:
            raise LoaderError(f"ACP initialize failed: {init['error']}")
        loaded = client.request(
            "session/load",
            {"sessionId": thread_id, "cwd": cwd, "mcpServers": []},
            timeout=timeout,
        )
        replay = [
            n.get("params", {}).get("update", {})
            for n in client.notifications
            if n.get("method") == "session/update"
        ]
        answered: dict[str, Any] | None = None
        if select_model and "error" not in loaded:
            chosen = client.request(
                "session/set_config_option",
                {"sessionId": thread_id, "configId": "model", "value": model_spec},
                timeout=timeout,
            )
            if "error" in chosen:
                raise LoaderError(f"selecting {model_spec} failed: {chosen['error']}")
        if prompt is not None and "error" not in loaded:
            answered = client.request(
                "session/prompt",
                {"sessionId": thread_id, "prompt": [{"type": "text", "text": prompt}]},
                timeout=timeout,
            )
        return loaded, replay, answered
    finally:
        client.close()


def _row(rows: list[dict[str, Any]], thread_id: str) -> dict[str, Any] | None:
    return next((r for r in rows if r.get("thread_id") == thread_id), None)


def check(
    export_dir: Path,
    tools_dir: Path,
    *,
    continue_turn: bool = False,
    timeout: float = 180.0,
    keep_home: Path | None = None,
) -> DeepagentsCheck:
    """Install ``export_dir`` into a scratch HOME with its prepare and load it with ``dcode``.

    The export must hold ``checkpoint.json`` (thread id and cwd are read from it)
    and ``prepare.py`` (run as ``prepare.py --home HOME``). With
    ``continue_turn``, one more prompt is sent through ACP and the listing is
    taken again. Raises :class:`LoaderError` when the loader is not installed.
    """
    python = find(tools_dir)
    if python is None:
        raise LoaderError(INSTALL_HINT)
    _sync_fake_module(python)
    seed = json.loads((export_dir / "checkpoint.json").read_text(encoding="utf-8"))
    thread_id = str(seed["thread_id"])
    cwd = str(seed["cwd"])
    result = DeepagentsCheck(thread_id=thread_id, cwd=cwd)
    home = keep_home or Path(tempfile.mkdtemp(prefix="trajconv-dcode-check-"))
    try:
        home.mkdir(parents=True, exist_ok=True)
        write_fake_config(home)
        done = subprocess.run(
            [str(python), str(export_dir / "prepare.py"), "--home", str(home)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dcode_env(home),
            cwd=str(home),
        )
        if done.returncode != 0:
            result.outcomes["prepare"] = f"exit {done.returncode}: {done.stderr[-2000:]}"
            return result
        result.outcomes["prepare"] = "ok"
        try:
            result.listing = _row(list_threads(python, home, timeout=timeout), thread_id)
            result.outcomes["list"] = "ok" if result.listing else "thread not listed"
        except (LoaderError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            result.outcomes["list"] = str(exc)
        try:
            loaded, replay, answered = acp_session(
                python,
                home,
                thread_id=thread_id,
                cwd=cwd,
                prompt="trajconv check: continue" if continue_turn else None,
                timeout=timeout,
            )
            result.notifications = replay
            result.outcomes["load"] = "ok" if "error" not in loaded else str(loaded["error"])
            if continue_turn:
                if answered is None or "error" in answered:
                    result.outcomes["continue"] = str(answered and answered.get("error"))
                else:
                    rows = list_threads(python, home, timeout=timeout)
                    result.listing_after_turn = _row(rows, thread_id)
                    result.outcomes["continue"] = "ok"
        except (LoaderError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            result.outcomes["load"] = str(exc)
        return result
    finally:
        if keep_home is None:
            shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------- continuation

#: the provider section pointing ``langchain_openai`` at the loopback model server
CONTINUE_PROVIDER = "openai"
CONTINUE_MODEL = "scripted"
#: a thread whose messages carry Responses-API content blocks is continued over the Responses
#: API, and its ``reasoning`` blocks go back to the model as reasoning items (observed with the
#: continuation check; over Chat Completions ``ChatOpenAI`` would drop ``reasoning_content``)
#: the continuation fixture and the thread continued: only ACP-created threads can be
#: resumed headless, through ``dcode --acp`` (``-n`` threads lack the ``acp_session`` metadata)
CONTINUATION_CASE = ("multi-thread", "923114f39b9644529e5503619d20a349")
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: nothing
STILL_DIFFERENT: dict[str, int] = {}
#: an export's prepare.py runs under this loader's Python (the deepagents packages)
#: (tests that install exports need the loader)
PREPARE_NEEDS_LOADER = True
#: the pair test holds every source's STILL_DIFFERENT into this target
PINS_DIFFERENCES = True
#: CPU seconds one continued turn costs (measured, /usr/bin/time): Python start-up
CONTINUE_CPU_SECONDS = 25
REPLAYS_REASONING = True


def install_fixture(case_dir: Path, home: Path) -> None:
    """Place a recorded fixture's ``sessions.db`` where dcode keeps it."""
    state = home / ".deepagents" / ".state"
    state.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(case_dir / "sessions.db", state / "sessions.db")


def install_export(export_dir: Path, home: Path) -> None:
    """Run the export's ``prepare.py`` with the loader venv's python (it needs langgraph)."""
    from proof import tools_dir

    python = find(tools_dir())
    if python is None:
        raise LoaderError(INSTALL_HINT)
    done = subprocess.run(
        [str(python), str(export_dir / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dcode_env(home),
        cwd=str(home),
        check=False,
    )
    if done.returncode != 0:
        raise LoaderError(f"prepare.py exited {done.returncode}: {done.stderr[-2000:]}")


def write_openai_config(home: Path, base_url: str) -> Path:
    """``config.toml`` with the fake models plus an ``openai`` provider on ``base_url``."""
    cfg = write_fake_config(home)
    with cfg.open("a", encoding="utf-8") as fh:
        fh.write(
            f"\n[models.providers.{CONTINUE_PROVIDER}]\n"
            f"base_url = {json.dumps(base_url)}\n"
            'api_key_env = "TRAJCONV_DUMMY_OPENAI_KEY"\n'
            f"models = [{json.dumps(CONTINUE_MODEL)}]\n"
        )
    return cfg


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[dict[str, Any]]:
    """``dcode --acp``: ``session/load`` the thread and send one ``session/prompt``.

    ``exe`` is the loader venv's python (what :func:`find` returns). The model is
    ``openai:scripted`` (``langchain_openai`` Chat Completions) pointed at a loopback
    ModelServer whose log is in ``workdir``, with a dummy key.
    """
    from proof.continuation import main_bodies, scripted_server

    _sync_fake_module(exe)
    with scripted_server(workdir, model=CONTINUE_MODEL) as srv:
        write_openai_config(home, srv.base_url)
        loaded, _replay, answered = acp_session(
            exe,
            home,
            thread_id=session_id,
            cwd=cwd,
            prompt=prompt,
            model_spec=f"{CONTINUE_PROVIDER}:{CONTINUE_MODEL}",
            timeout=180,
            select_model=True,
            extra_env={"TRAJCONV_DUMMY_OPENAI_KEY": "dummy-not-a-key"},
        )
    if "error" in loaded:
        raise LoaderError(f"session/load failed: {loaded['error']}")
    if answered is None or "error" in answered:
        raise LoaderError(f"session/prompt failed: {answered and answered.get('error')}")
    return main_bodies(workdir / "requests.jsonl")


def request_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model saw in one dcode request (``ChatOpenAI``: Chat Completions/Responses)."""
    from proof.continuation import openai_items

    return openai_items(body)


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    if find(_tools()) is None:
        return None
    r = check(export.out_dir, _tools())
    return {"ok": r.ok, "version": VERSION, "detail": str(r.outcomes)}
