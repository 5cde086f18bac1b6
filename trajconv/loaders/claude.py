"""Claude Code's real CLI as a native loader: install it pinned, resume a session offline.

Facts used (``shared/formats/claude-code.md`` "Offline loader check", observed with 2.1.332,
re-checked here against the installed package):

* ``@anthropic-ai/claude-code`` is a thin package whose ``bin/claude.exe`` comes from the
  platform package ``@anthropic-ai/claude-code-<os>-<arch>`` (an optional dependency of the
  same version); it runs on node 20 although the package asks for >= 22 (the binary is native);
* ``claude --resume <id> -p PROMPT`` finds ``~/.claude/projects/<any key>/<id>.jsonl``, sends the
  chain from the resumed leaf plus the new prompt as ``POST /v1/messages`` (SSE streaming) to
  ``ANTHROPIC_BASE_URL``, and appends the new turn to the same file;
* with ``ANTHROPIC_API_KEY`` set to a dummy, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``,
  ``DISABLE_AUTOUPDATER=1``, ``DISABLE_TELEMETRY=1`` and ``DISABLE_ERROR_REPORTING=1`` nothing
  but the model endpoint is contacted.

Every run gets a scratch HOME (the CLI writes ``~/.claude.json``, backups and the resumed
turn into it); the export is copied there first and never touched. This module never prints.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trajconv.loaders.npm import npm_install

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.332"

#: folder under the tools dir that holds the npm prefix
NPM_DIR = "npm-claude"

#: the dummy credential the CLI sends to the loopback server (never a real key)
DUMMY_KEY = "sk-ant-dummy-trajconv"

JsonObj = dict[str, Any]


class ClaudeLoaderError(RuntimeError):
    """The Claude Code CLI could not be installed, started, or did not finish in time."""


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    """Where the pinned install puts the ``claude`` launcher."""
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "claude"


#: variables passed through from the caller: search path, locale, TLS trust. Nothing else
#: (no API keys, no real HOME, no proxy: the CLI only talks to loopback).
_PASS_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def scratch_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment around the scratch ``home``: offline switches on, no real keys."""
    env = {k: v for k, v in os.environ.items() if k in _PASS_ENV}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TMPDIR": str(home / "tmp"),
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    if extra:
        env.update(extra)
    return env


def version(exe: Path, timeout: float = 60.0) -> str:
    """``claude --version`` with a throw-away home, e.g. ``"2.1.332 (Claude Code)"``."""
    with tempfile.TemporaryDirectory(prefix="trajconv-claude-ver-") as tmp:
        try:
            proc = subprocess.run(
                [str(exe), "--version"],
                cwd=tmp,
                env=scratch_env(Path(tmp)),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClaudeLoaderError(f"cannot run {exe} --version: {exc}") from exc
    out = proc.stdout.strip()
    if proc.returncode != 0 or not out:
        raise ClaudeLoaderError(
            f"{exe} --version failed (rc {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-500:]}"
        )
    return out


def find(tools_dir: Path) -> Path | None:
    """The pinned ``claude`` under ``tools_dir`` if it runs and reports VERSION, else None."""
    exe = binary_path(tools_dir)
    if not exe.exists():
        return None
    try:
        ver = version(exe)
    except ClaudeLoaderError:
        return None
    return exe if ver.split()[:1] == [VERSION] else None


def install(tools_dir: Path, timeout: float = 600.0) -> Path:
    """Install PACKAGE@VERSION (and its platform binary package) into ``<tools_dir>/npm-claude``.

    Idempotent; npm runs with a scratch HOME (see :mod:`trajconv.loaders.npm`).
    """
    found = find(tools_dir)
    if found is not None:
        return found
    npm_install(
        tools_dir.absolute() / NPM_DIR,
        [f"{PACKAGE}@{VERSION}"],
        error=ClaudeLoaderError,
        timeout=timeout,
    )
    found = find(tools_dir)
    if found is None:
        raise ClaudeLoaderError(
            f"{binary_path(tools_dir)} does not report {VERSION} after npm install"
        )
    return found
