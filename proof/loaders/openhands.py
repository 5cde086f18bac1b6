"""The OpenHands CLI (PyPI ``openhands``) as a native loader.

Facts used (read from the installed 1.16.0 package and its ``openhands-sdk``; see
``trajconv/codecs/openhands/README.md``):

* it needs Python 3.12 exactly (``Requires-Python: ==3.12.*``), so it gets its own venv made
  from a 3.12 found on PATH or under pyenv (:func:`proof.base_python`);
* conversations live under ``~/.openhands/conversations/<hex id>/`` (``events/event-*.json``,
  ``base_state.json``);
* ``openhands --headless --json --override-with-envs -t PROMPT`` runs one task and exits;
  ``--resume <id>`` continues a stored conversation; ``LLM_MODEL``, ``LLM_BASE_URL`` and
  ``LLM_API_KEY`` configure the model when ``--override-with-envs`` is given.

This module never prints and never exits; failures are :class:`OpenHandsLoaderError`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from proof import NoPythonError, base_python, installed_version

HARNESS = "openhands"
PACKAGE = "openhands"
VERSION = "1.16.0"
VENV_NAME = "openhands-venv"

#: the model the loopback server answers as (``LLM_MODEL=openai/<MODEL>``)
MODEL = "scripted"
RUN_TIMEOUT = 300.0

JsonObj = dict[str, Any]


class OpenHandsLoaderError(RuntimeError):
    """The OpenHands CLI could not be installed, started, or did not do what was asked."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def binary_path(tools_dir: Path) -> Path:
    return tools_dir.absolute() / VENV_NAME / "bin" / "openhands"


def find(tools_dir: Path) -> Path | None:
    """The pinned ``openhands`` under ``tools_dir``, else None."""
    exe = binary_path(tools_dir)
    python = _python(tools_dir.absolute() / VENV_NAME)
    if exe.exists() and installed_version(python, PACKAGE) == VERSION:
        return exe
    return None


def install(tools_dir: Path, *, timeout: float = 1800.0) -> Path:
    """Create ``tools_dir/openhands-venv`` with ``openhands==VERSION``; return the CLI."""
    found = find(tools_dir)
    if found is not None:
        return found
    try:
        base = base_python((3, 12), below=(3, 13))  # openhands' Requires-Python: ==3.12.*
    except NoPythonError as exc:
        raise OpenHandsLoaderError(f"{PACKAGE}=={VERSION}: {exc}") from exc
    venv = tools_dir.absolute() / VENV_NAME
    tools_dir.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="trajconv-openhands-install-")
    env = {**os.environ, "HOME": scratch, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        if not _python(venv).exists():
            subprocess.run(
                [base, "-m", "venv", str(venv)],
                check=True,
                capture_output=True,
                timeout=300,
                env=env,
            )
        done = subprocess.run(
            [str(_python(venv)), "-m", "pip", "install", "-q", f"{PACKAGE}=={VERSION}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        if done.returncode != 0:
            raise OpenHandsLoaderError(f"pip install failed: {done.stderr.strip()[-2000:]}")
    except (OSError, subprocess.SubprocessError) as exc:
        raise OpenHandsLoaderError(f"could not install {PACKAGE}=={VERSION}: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    exe = find(tools_dir)
    if exe is None:
        raise OpenHandsLoaderError(f"{PACKAGE}=={VERSION} not found after install in {venv}")
    return exe


def conversations_dir(home: Path) -> Path:
    return home / ".openhands" / "conversations"


def scratch_env(home: Path, base_url: str, model: str = MODEL) -> dict[str, str]:
    """A minimal environment: HOME is ``home``, the model is the loopback server, no key."""
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "LLM_MODEL": f"openai/{model}",
        "LLM_BASE_URL": base_url,
        "LLM_API_KEY": "dummy-not-a-key",
        # LiteLLM (which the SDK calls the model through) fetches its model cost map from the
        # network at start unless told to use the copy it ships
        # (``litellm/litellm_core_utils/get_model_cost_map.py``): only loopback is reached
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def run(
    exe: Path,
    home: Path,
    cwd: Path,
    args: Sequence[str],
    base_url: str,
    *,
    model: str = MODEL,
    timeout: float = RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``openhands ARGS`` in ``cwd`` with the scratch ``home`` and the loopback model."""
    try:
        return subprocess.run(
            [str(exe), *args],
            cwd=cwd,
            env=scratch_env(home, base_url, model),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise OpenHandsLoaderError(f"cannot run {exe}: {exc}") from exc


def task_args(prompt: str, resume: str | None = None) -> list[str]:
    args = ["--headless", "--json", "--override-with-envs"]
    if resume is not None:
        args += ["--resume", resume]
    return [*args, "-t", prompt]


# -- continuation (proof/continuation.py's loader protocol) --------------------------------

CONTINUATION_CASE = ("recorded-tool-failures", None)
#: as a continuation source, what the conversation still differs in, in the other targets
#: (besides the failures the model saw flagged): nothing seen yet
STILL_DIFFERENT: dict[str, int] = {}
#: the SDK sends a message's ``reasoning_content`` back only to the models it lists
#: (``SEND_REASONING_CONTENT_MODELS`` in ``openhands/sdk/llm/utils/model_features.py``: Kimi,
#: DeepSeek reasoners, MiniMax-M2), so the scripted model is never sent reasoning again
REPLAYS_REASONING = False


def install_fixture(case_dir: Path, home: Path, project: Path | None = None) -> None:
    """Copy a recorded case's ``.openhands/conversations/<id>/`` folders into ``home``."""
    dest = conversations_dir(home)
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sorted((case_dir / ".openhands" / "conversations").iterdir()):
        if folder.is_dir():
            shutil.copytree(folder, dest / folder.name, ignore=shutil.ignore_patterns(".*.lock"))


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed conversation for one ``openhands --headless --resume ID -t
    PROMPT`` turn against a loopback ModelServer (its log in ``workdir``); the JSON bodies of
    the model requests. Without ``events/`` the CLI silently starts an empty conversation and
    exits 0, so the folder is checked first and the caller compares the request, not the exit
    code. A recorded cwd that is not on this machine is replaced by ``workdir``."""
    from proof.continuation import main_bodies, scripted_server

    events = conversations_dir(home) / session_id / "events"
    if not any(events.glob("event-*.json")):
        raise OpenHandsLoaderError(f"no conversation {session_id} with events under {home}")
    workdir.mkdir(parents=True, exist_ok=True)
    run_cwd = Path(cwd) if cwd and Path(cwd).is_dir() else workdir
    with scripted_server(workdir, model=MODEL) as srv:
        done = run(exe, home, run_cwd, task_args(prompt, resume=session_id), srv.base_url)
    if done.returncode != 0:
        raise OpenHandsLoaderError(
            f"openhands --resume exited {done.returncode}: {done.stderr[-2000:]}"
        )
    return main_bodies(workdir / "requests.jsonl")


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request (``openai_items``)."""
    from proof.continuation import openai_items

    return openai_items(body)
