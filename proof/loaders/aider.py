"""Aider (``aider-chat`` on PyPI) as a native loader: it continues a written history.

Installed pinned into its own venv (``<tools>/aider-venv``). Runs offline against the
project's loopback model server as an OpenAI-compatible model (``--model openai/scripted
--openai-api-base URL``), with a scratch HOME, no git (``--no-git``), no update check, no
analytics, no repo map and its own chat history summarising out of reach
(``--max-chat-history-tokens``), so the request carries the history as written. Aider
fetches its model price list from the network at start; here that fails at once (no
network) and it goes on with defaults, as it says.

Continuation: ``aider --restore-chat-history --message PROMPT`` in the project folder,
which holds ``.aider.chat.history.md``: Aider sends its system prompt, its own example
exchange (ending with "I switched to a new code base..."), the restored history, the files
context (user "I am not sharing..." / assistant "Ok.") and the prompt.
:func:`request_items` keeps the restored history and the prompt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from proof import installed_version

PACKAGE = "aider-chat"
VERSION = "0.86.2"
VENV_NAME = "aider-venv"
MODEL = "openai/scripted"
CONTINUATION_CASE = ("recorded-edits", None)
NEEDS_PROJECT_DIR = True
"""Aider reads the history of the folder it runs in."""
REPLAYS_REASONING = False
"""Aider sends the model no reasoning again (its history holds none as such)."""
CONTINUE_CPU_SECONDS = 8
STILL_DIFFERENT: dict[str, int] = {}
#: Grok Build holds two answers with nothing between them (Aider's own output is not kept) as
#: one message: the recorded session's failed edit and its reflection
STILL_DIFFERENT_IN: dict[str, dict[str, int]] = {"grok": {"untranslated-message-boundary": 1}}
HISTORY = ".aider.chat.history.md"
#: how the messages Aider adds around the history begin (``aider/coders/base_prompts.py``,
#: ``ask_prompts.py``, ``editblock_prompts.py`` of 0.86.2): files and repository context
_CONTEXT_HEADS = (
    "I have *added these files to the chat*",
    "I am not sharing",
    "Don't try and edit any existing code without asking me",
    "Here are summaries of some files present in my git repository",
    "I am working with you on code in a git repository",
    "Here are some READ ONLY files",
)
_EXAMPLES_END = "I switched to a new code base."


class AiderLoaderError(RuntimeError):
    """Aider could not be installed or run."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def find(tools_dir: Path) -> Path | None:
    """The ``aider`` executable of the pinned venv, else None."""
    venv = tools_dir / VENV_NAME
    exe = venv / "bin" / "aider"
    if not exe.exists():
        return None
    return exe if installed_version(_python(venv), PACKAGE) == VERSION else None


def install(tools_dir: Path, timeout: float = 1800.0) -> Path:
    found = find(tools_dir)
    if found is not None:
        return found
    venv = tools_dir / VENV_NAME
    if venv.exists():
        shutil.rmtree(venv)
    tools_dir.mkdir(parents=True, exist_ok=True)
    for argv in (
        [sys.executable, "-m", "venv", str(venv)],
        [str(_python(venv)), "-m", "pip", "install", "-q", f"{PACKAGE}=={VERSION}"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise AiderLoaderError(f"{' '.join(argv[:4])} failed: {done.stderr[-2000:]}")
    found = find(tools_dir)
    if found is None:
        raise AiderLoaderError(f"{PACKAGE}=={VERSION} installed but no aider found in {venv}")
    return found


def env(home: Path) -> dict[str, str]:
    """A scratch environment: no key of the user's, no proxy, Aider's cost map kept local."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def argv(exe: Path, base_url: str, *extra: str) -> list[str]:
    return [
        str(exe),
        "--model",
        MODEL,
        "--openai-api-base",
        base_url,
        "--openai-api-key",
        "sk-trajconv-offline",
        "--no-git",
        "--yes-always",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-release-notes",
        "--no-show-model-warnings",
        "--no-pretty",
        "--no-stream",
        "--map-tokens",
        "0",
        "--max-chat-history-tokens",
        "1000000",
        *extra,
    ]


def run(
    exe: Path, home: Path, cwd: Path, base_url: str, *extra: str, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv(exe, base_url, *extra),
            cwd=cwd,
            env=env(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AiderLoaderError(f"cannot run aider: {exc}") from exc


def install_fixture(case_dir: Path, home: Path, project: Path) -> None:
    """Put a fixture's history into the scratch project folder Aider runs in."""
    found = sorted(case_dir.rglob(HISTORY))
    if len(found) != 1:
        raise AiderLoaderError(f"{case_dir}: expected one {HISTORY}, found {len(found)}")
    shutil.copyfile(found[0], project / HISTORY)


def install_export(export_dir: Path, home: Path) -> None:
    """The export's own prepare.py, into the project folder it names (its default)."""
    done = subprocess.run(
        [sys.executable, str(export_dir / "prepare.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AiderLoaderError(f"{export_dir}/prepare.py exited {done.returncode}: {done.stderr}")


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[dict[str, Any]]:
    """``aider --restore-chat-history --message PROMPT`` in ``cwd``; the model requests."""
    from proof.continuation import main_bodies, scripted_server

    with scripted_server(workdir) as srv:
        done = run(
            exe, home, Path(cwd), srv.base_url, "--restore-chat-history", "--message", prompt
        )
    if done.returncode != 0:
        raise AiderLoaderError(f"aider exited {done.returncode}: {done.stderr[-2000:]}")
    return main_bodies(workdir / "requests.jsonl")


def _history_part(messages: list[Any]) -> list[Any]:
    """The messages of a request that are the restored history and the new prompt: after
    Aider's example exchange, without its files context."""
    body = [m for m in messages if isinstance(m, dict) and m.get("role") != "system"]
    for i, m in enumerate(body):
        if m.get("role") == "user" and str(m.get("content", "")).startswith(_EXAMPLES_END):
            body = body[i + 2 :]  # the example's closing user line and the "Ok." after it
            break
    out: list[Any] = []
    skip_reply = False
    for m in body:
        text = str(m.get("content", ""))
        if skip_reply and m.get("role") == "assistant":
            skip_reply = False
            continue
        skip_reply = False
        if m.get("role") == "user" and text.startswith(_CONTEXT_HEADS):
            skip_reply = True
            continue
        out.append(m)
    return out


def request_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    from proof.continuation import openai_items

    messages = body.get("messages")
    if not isinstance(messages, list):
        return openai_items(body)
    system = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    items = openai_items({"messages": [*system, *_history_part(messages)]})
    for item in items:  # Aider's history keeps a Markdown hard break on every typed line
        if item.get("kind") == "user":
            lines = item["text"].rstrip("\n").split("\n")
            item["text"] = "\n".join(line.removesuffix("  ") for line in lines)
        if item.get("kind") == "assistant":
            item["text"] = item["text"].strip()
    return items
