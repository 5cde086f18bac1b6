"""OpenCode's real CLI (npm ``opencode-ai``) as a native loader: import, export, continue.

Facts used (``trajconv/codecs/opencode/README.md``, "Input contract" and "What the model
sees on resume"; checked with 1.18.33 here):

* the npm package's postinstall puts the platform binary (``opencode-linux-x64`` …) in
  place of ``bin/opencode.exe``; ``node_modules/.bin/opencode`` runs it;
* everything lives under the XDG folders: the database ``$XDG_DATA_HOME/opencode/opencode.db``,
  config ``$XDG_CONFIG_HOME/opencode/``, locks ``$XDG_STATE_HOME/opencode/``, so every run here
  gets HOME and all four XDG folders inside one scratch home;
* ``opencode session list --format json``, ``opencode import FILE`` and ``opencode export ID``
  run offline; ``import`` and ``session list`` are scoped to the current directory's project,
  so they run in the session's cwd;
* ``opencode run --session ID --format json PROMPT`` continues a session; the model is an
  ``@ai-sdk/openai-compatible`` provider (bundled in the binary) whose ``baseURL`` is the
  loopback :class:`~fixtures.record.modelserver.ModelServer`, given through
  ``OPENCODE_CONFIG_CONTENT`` so nothing is written into the home; ``--title`` on a new
  session avoids the title-generator side request.

This module never prints and never exits; failures are :class:`OpenCodeLoaderError`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import lineage, npm
from proof import tools_dir as _tools

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "opencode-ai"
VERSION = "1.18.33"
NPM_DIR = "npm-opencode"

#: provider and model names the loopback config declares
PROVIDER = lineage.PROVIDER
MODEL = lineage.MODEL
#: a loopback address where nothing listens, for runs that make no request
OFFLINE_BASE_URL = lineage.OFFLINE_BASE_URL
RUN_TIMEOUT = lineage.RUN_TIMEOUT

JsonObj = dict[str, Any]

INSTALL_HINT = (
    "OpenCode not installed: run `python -m proof install opencode` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)


class OpenCodeLoaderError(RuntimeError):
    """The OpenCode CLI could not be installed, started, or did not do what was asked."""


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "opencode"


def installed_version(tools_dir: Path) -> str | None:
    return npm.package_version(tools_dir.absolute() / NPM_DIR, PACKAGE)


def find(tools_dir: Path) -> Path | None:
    """The pinned ``opencode`` under ``tools_dir`` when its package is VERSION, else None."""
    exe = binary_path(tools_dir)
    if exe.exists() and installed_version(tools_dir) == VERSION:
        return exe
    return None


def install(tools_dir: Path, timeout: float = 900.0) -> Path:
    """Install PACKAGE@VERSION into ``<tools_dir>/npm-opencode`` (idempotent); return the CLI."""
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, OpenCodeLoaderError, timeout)


# --------------------------------------------------------------------------- environment

#: switches that keep a run offline and quiet (names read from the 1.18.33 binary)
_QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_AUTOCOMPACT": "1",
    "OPENCODE_DISABLE_PRUNE": "1",
    "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
}


def config(base_url: str = OFFLINE_BASE_URL) -> JsonObj:
    """An OpenCode config whose only model is the loopback server (OpenCode's ``provider`` config, https://opencode.ai/docs/config/)."""
    return {
        "autoupdate": False,
        "share": "disabled",
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "provider": lineage.provider_config(base_url),
    }


def scratch_env(home: Path, base_url: str = OFFLINE_BASE_URL) -> dict[str, str]:
    """A minimal environment whose HOME and XDG folders are inside ``home``."""
    own = {"OPENCODE_CONFIG_CONTENT": json.dumps(config(base_url)), **_QUIET}
    return npm.scratch_env(home, own)


#: the commands OpenCode shares with its fork Kilo (``proof/lineage.py``)
CLI = lineage.LineageCLI("opencode", OpenCodeLoaderError, scratch_env, "opencode", "opencode.db")
run = CLI.run
data_dir = CLI.data_dir


def version(exe: Path) -> str:
    return npm.cli_version(exe, scratch_env, OpenCodeLoaderError)


# --------------------------------------------------------------------------- list/import/export

session_list = CLI.session_list
import_file = CLI.import_file
export_session = CLI.export_session


# --------------------------------------------------------------------------- continuation

RunResult = lineage.RunResult
run_turn = CLI.run_turn


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed session (already under ``home``) in the real CLI for one turn
    with ``prompt``, against a ModelServer on 127.0.0.1 started here (its request log in
    ``workdir``); return the JSON bodies of the main-conversation model requests, in order."""
    result = run_turn(
        exe,
        home,
        prompt,
        Path(cwd),
        workdir,
        [{"text": "Continued."}],
        session_id=session_id,
    )
    return result.requests


#: the fixture session continued for the baseline: two turns, reasoning, three calls in one
#: step (one a ``read`` in the ``error`` state, one ``ls`` that exits 2), a resumed turn
CONTINUATION_CASE = ("recorded-tools", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: nothing
STILL_DIFFERENT: dict[str, int] = {}
#: an export's prepare.py runs this CLI (``opencode import``)
#: (tests that install exports need the loader)
PREPARE_NEEDS_LOADER = True
#: CPU seconds one continued turn costs (measured, /usr/bin/time)
CONTINUE_CPU_SECONDS = 16
#: ``opencode run --session`` opens the session's own directory (``session.directory``), not
#: the one it runs in, and fails there when that folder does not exist (seen with 1.18.33:
#: "creating instance directory=<session directory>", then ``UnknownError``)
NEEDS_PROJECT_DIR = True
#: OpenCode sends the reasoning parts of its own sessions back (``reasoning_content`` of the
#: assistant message, when the message's provider/model is the one answering)
REPLAYS_REASONING = True


#: the fixture's ``opencode.db`` into a scratch home (for ``project``, when given)
install_fixture = CLI.install_fixture


def install_export(export_dir: Path, home: Path) -> None:
    """Run the export's ``prepare.py`` into ``home`` with the pinned CLI (``--opencode``)."""
    CLI.install_export(find(_tools()), INSTALL_HINT, export_dir, home)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return {"_raw": raw}


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request body, as conversation items.

    OpenCode sends an assistant message as ``reasoning_content`` (reasoning), ``content``
    (text) and ``tool_calls``; a tool result as a ``tool`` message whose content is the
    output or, for an ``error`` state, the error text. Chat Completions has no error flag,
    so ``error`` is ``None``.
    """
    items: list[JsonObj] = []
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role in ("system", "developer"):
            items.append({"kind": "system", "text": _content_text(msg.get("content"))})
        elif role == "user":
            items.append({"kind": "user", "text": _content_text(msg.get("content"))})
        elif role == "assistant":
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                items.append({"kind": "reasoning", "text": reasoning})
            text = _content_text(msg.get("content"))
            if text:
                items.append({"kind": "assistant", "text": text})
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") or {}
                items.append(
                    {
                        "kind": "tool-call",
                        "name": fn.get("name"),
                        "arguments": _arguments(fn.get("arguments")),
                        "id": call.get("id"),
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "kind": "tool-result",
                    "call_id": msg.get("tool_call_id"),
                    "text": _content_text(msg.get("content")),
                    "error": None,
                }
            )
    return items


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trajconv-opencode-home-") as scratch:
        home, cwd = Path(scratch) / "home", Path(scratch) / "project"
        home.mkdir()
        cwd.mkdir()
        # prepare.py runs the real `opencode import` and checks it with `opencode export`
        subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home),
             "--cwd", str(cwd), "--opencode", str(exe)],
            check=True, capture_output=True, timeout=600, env=scratch_env(home),
        )  # fmt: skip
        listed = any(s.get("id") == export.session_id for s in session_list(exe, home, cwd))
        requests = continue_session(
            exe, home, export.session_id, str(cwd), "Continue.", Path(scratch) / "work"
        )
    seen = request_items(requests[0]) if requests else []
    held = sum(r.kind in ("user", "tool-call", "tool-result") for r in written.records)
    replayed = sum(i["kind"] in ("user", "tool-call", "tool-result") for i in seen) - 1
    return {
        "ok": listed and replayed == held,
        "version": VERSION,
        "detail": f"listed={listed} requests={len(requests)} replayed={replayed} held={held}",
    }
