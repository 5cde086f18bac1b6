"""Native loader check for GitHub Copilot CLI (npm ``@github/copilot``).

Installs a pinned CLI into a project-local tools folder and asks the real CLI to
list and load a session over ACP (``copilot --acp``, JSON-RPC 2.0 as one JSON
object per line on stdio). Nothing here talks to a network address other than
loopback: the CLI runs with ``COPILOT_OFFLINE=true`` and a model provider URL on
127.0.0.1 where nothing listens (loading a session makes no model request).

Facts used (observed with 1.0.102; ``trajconv/codecs/copilot/README.md`` has the format):

* the npm package is a loader; the platform package ``@github/copilot-<os>-<arch>``
  holds one binary that extracts the real package on first run to
  ``$XDG_CACHE_HOME/copilot/pkg/<platform>/<version>/``; that folder holds
  ``schemas/session-events.schema.json`` (licence forbids committing it);
* ``session/list`` works without credentials; ``session/load`` needs
  ``COPILOT_OFFLINE=true`` and ``COPILOT_PROVIDER_BASE_URL``;
* sessions live in ``$COPILOT_HOME/session-state/<id>/``.

This module never prints and never exits; failures come back in the result or as
:class:`CopilotLoaderError`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools
from proof.jsonrpc import StdioRpc
from proof.trees import hash_tree

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@github/copilot"
VERSION = "1.0.102"
INSTALL_DIRNAME = "npm-copilot"
CACHE_DIRNAME = "cache"
# Loopback address with nothing listening (port 9 = discard); load makes no request.
DUMMY_PROVIDER_URL = "http://127.0.0.1:9/v1"
DUMMY_MODEL = "gpt-4o"
INSTALL_HINT = (
    "GitHub Copilot CLI not installed: run `python -m proof install copilot` "
    f"(npm install --prefix .tools/{INSTALL_DIRNAME} {PACKAGE}@{VERSION})"
)

_ACP_PROTOCOL_VERSION = 1
_DEFAULT_TIMEOUT = 60.0


class CopilotLoaderError(RuntimeError):
    """The CLI could not be installed, started or driven."""


@dataclass(frozen=True)
class CopilotLoadResult:
    """What the real CLI said about one session."""

    version: str | None
    """CLI version from ``initialize`` (agentInfo) or ``--version``."""
    listed: bool
    """``session/list`` (for ``cwd``) returned the session id."""
    title: str | None
    cwd: str | None
    list_entry: dict[str, Any] | None
    loaded: bool
    """``session/load`` returned a result (no JSON-RPC error)."""
    load_error: str | None
    updates: tuple[dict[str, Any], ...]
    """``params.update`` of every ``session/update`` for the session, in arrival order."""
    files_before: dict[str, str]
    """sha256 of each file of the session directory (relative path) before starting the CLI."""
    files_after: dict[str, str]
    load_cwd: str
    """The ``cwd`` sent with ``session/load`` (the session's, or a scratch stand-in)."""
    stderr_tail: str = ""
    initialize: dict[str, Any] = field(default_factory=dict)

    @property
    def load_ok(self) -> bool:
        return self.loaded

    @property
    def replay(self) -> list[dict[str, Any]]:
        """The replayed conversation: ``updates`` without ``available_commands_update``."""
        return [u for u in self.updates if u.get("sessionUpdate") != "available_commands_update"]

    @property
    def files_added(self) -> list[str]:
        return sorted(set(self.files_after) - set(self.files_before))

    @property
    def files_removed(self) -> list[str]:
        return sorted(set(self.files_before) - set(self.files_after))

    @property
    def files_modified(self) -> list[str]:
        return sorted(
            name
            for name, digest in self.files_before.items()
            if name in self.files_after and self.files_after[name] != digest
        )

    @property
    def files_unchanged(self) -> bool:
        """Every file present before is present after with the same bytes."""
        return not self.files_removed and not self.files_modified

    @property
    def files_changed(self) -> bool:
        return self.files_before != self.files_after

    @property
    def ok(self) -> bool:
        return self.listed and self.loaded and self.files_unchanged


# --------------------------------------------------------------------------- install


def _install_root(tools_dir: Path) -> Path:
    return tools_dir / INSTALL_DIRNAME


def find(tools_dir: Path) -> Path | None:
    """Path of the installed ``copilot`` launcher of the pinned VERSION, or None."""
    candidate = _install_root(tools_dir) / "node_modules" / ".bin" / "copilot"
    if candidate.exists() and installed_version(tools_dir) == VERSION:
        return candidate
    return None


def cache_dir_for(tools_dir: Path) -> Path:
    """``XDG_CACHE_HOME`` used for the CLI's first-run extraction."""
    return _install_root(tools_dir) / CACHE_DIRNAME


def _cache_for_bin(copilot_bin: Path) -> Path | None:
    # <tools>/npm-copilot/node_modules/.bin/copilot -> <tools>/npm-copilot/cache
    parts = copilot_bin.parts
    if len(parts) >= 3 and parts[-2] == ".bin" and parts[-3] == "node_modules":
        return copilot_bin.parent.parent.parent / CACHE_DIRNAME
    return None


def _scratch_env(home: Path, cache: Path | None) -> dict[str, str]:
    """A minimal environment around a scratch HOME: nothing of the caller's (no tokens)."""
    own = {"COPILOT_AUTO_UPDATE": "false", "LANG": "C.UTF-8"}
    if cache is not None:
        own["XDG_CACHE_HOME"] = str(cache)
    return npm.scratch_env(home, own, passed=("PATH",))


def install(tools_dir: Path, *, timeout: float = 600.0) -> Path:
    """Install the pinned CLI under ``tools_dir/npm-copilot`` (idempotent).

    Also runs ``copilot --version`` once so the package is extracted into
    ``tools_dir/npm-copilot/cache`` (where :func:`schema_path` looks).
    Returns the launcher path.
    """
    tools_dir = tools_dir.resolve()
    spec = f"{PACKAGE}@{VERSION}"
    launcher = npm.install_pinned(
        find, tools_dir, INSTALL_DIRNAME, spec, CopilotLoaderError, timeout
    )
    if schema_path(tools_dir) is None:
        cli_version(launcher, timeout=timeout)  # first run extracts into the cache
    return launcher


def installed_version(tools_dir: Path) -> str | None:
    return npm.package_version(_install_root(tools_dir), "@github/copilot")


def schema_path(tools_dir: Path) -> Path | None:
    """``session-events.schema.json`` of the installed CLI version, or None.

    It lives in the extracted package (``<cache>/copilot/pkg/<platform>/<version>/schemas``).
    """
    pkg_root = cache_dir_for(tools_dir) / "copilot" / "pkg"
    if not pkg_root.is_dir():
        return None
    found = sorted(pkg_root.glob(f"*/{VERSION}/schemas/session-events.schema.json"))
    if not found:
        found = sorted(pkg_root.glob("*/*/schemas/session-events.schema.json"))
    return found[0] if found else None


def cli_version(copilot_bin: Path, *, timeout: float = _DEFAULT_TIMEOUT) -> str | None:
    """``copilot --version`` → ``"1.0.102"`` (scratch HOME, tools cache)."""
    cache = _cache_for_bin(copilot_bin)
    out = npm.cli_version(
        copilot_bin, lambda home: _scratch_env(home, cache), CopilotLoaderError, timeout
    )
    match = re.search(r"(\d+\.\d+\.\d+\S*?)\.?(?:\s|$)", out)
    return match.group(1) if match else None


# --------------------------------------------------------------------------- check


def _iter_sessions(conn: StdioRpc, cwd: str | None, timeout: float) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    for _ in range(100):  # bounded pagination
        params: dict[str, Any] = {} if cwd is None else {"cwd": cwd}
        if cursor is not None:
            params["cursor"] = cursor
        response = conn.request("session/list", params, timeout)
        if "error" in response:
            raise CopilotLoaderError(f"session/list failed: {response['error']}")
        result = response.get("result") or {}
        for entry in result.get("sessions") or []:
            if isinstance(entry, dict):
                yield entry
        next_cursor = result.get("nextCursor")
        if not isinstance(next_cursor, str) or not next_cursor:
            return
        cursor = next_cursor


def check(
    copilot_bin: Path,
    home_dir: Path,
    session_id: str,
    cwd: str,
    *,
    timeout: float = _DEFAULT_TIMEOUT,
    cache_dir: Path | None = None,
) -> CopilotLoadResult:
    """List and load ``session_id`` with the real CLI.

    ``home_dir`` is an export's ``home/`` folder (it holds ``.copilot/session-state/<id>/``).
    Its ``.copilot`` tree is copied into a scratch HOME; the export itself is never touched.
    """
    copilot_bin = Path(os.path.abspath(copilot_bin))  # the child runs in a scratch cwd
    source = home_dir / ".copilot"
    if not (source / "session-state" / session_id).is_dir():
        raise CopilotLoaderError(f"no session-state/{session_id} under {source}")
    cache = cache_dir if cache_dir is not None else _cache_for_bin(copilot_bin)
    with tempfile.TemporaryDirectory(prefix="trajconv-copilot-") as scratch_name:
        scratch = Path(scratch_name)
        home = scratch / "home"
        home.mkdir()
        copilot_home = home / ".copilot"
        shutil.copytree(source, copilot_home, symlinks=True)
        session_dir = copilot_home / "session-state" / session_id
        before = hash_tree(session_dir)
        workdir = scratch / "work"
        workdir.mkdir()
        env = _scratch_env(home, cache)
        env.update(
            {
                "COPILOT_HOME": str(copilot_home),
                "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_BASE_URL": DUMMY_PROVIDER_URL,
                "COPILOT_MODEL": DUMMY_MODEL,
            }
        )
        conn = StdioRpc([str(copilot_bin), "--acp"], cwd=workdir, env=env, error=CopilotLoaderError)
        try:
            init = conn.request(
                "initialize",
                {
                    "protocolVersion": _ACP_PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": False, "writeTextFile": False},
                        "terminal": False,
                    },
                    "clientInfo": {"name": "trajconv", "version": "0"},
                },
                timeout,
            )
            if "error" in init:
                raise CopilotLoaderError(f"initialize failed: {init['error']}")
            init_result: dict[str, Any] = init.get("result") or {}
            agent_info = init_result.get("agentInfo") or {}
            version = agent_info.get("version") if isinstance(agent_info, dict) else None

            entry: dict[str, Any] | None = None
            for candidate in _iter_sessions(conn, cwd, timeout):
                if candidate.get("sessionId") == session_id:
                    entry = candidate
                    break

            # 1.0.102 refuses a load whose cwd does not exist on this machine
            # ("Directory does not exist or cannot be accessed"); the session's own cwd
            # is used for the listing (which filters on it exactly), and a scratch
            # directory stands in for the load when that cwd is absent here.
            load_cwd = cwd if Path(cwd).is_dir() else str(workdir)
            load = conn.request(
                "session/load",
                {"sessionId": session_id, "cwd": load_cwd, "mcpServers": []},
                timeout,
            )
            # Late notifications (e.g. available_commands_update) follow the response.
            conn.drain(quiet=1.0)
            load_error: str | None = None
            if "error" in load:
                load_error = json.dumps(load["error"], sort_keys=True)
            updates = tuple(
                note["params"]["update"]
                for note in conn.notifications
                if note.get("method") == "session/update"
                and isinstance(note.get("params"), dict)
                and note["params"].get("sessionId") == session_id
                and isinstance(note["params"].get("update"), dict)
            )
        finally:
            conn.close()
        after = hash_tree(session_dir)
        stderr_tail = conn.stderr_tail
    if not isinstance(version, str):
        version = cli_version(copilot_bin, timeout=timeout)
    title = entry.get("title") if entry else None
    listed_cwd = entry.get("cwd") if entry else None
    return CopilotLoadResult(
        version=version,
        listed=entry is not None,
        title=title if isinstance(title, str) else None,
        cwd=listed_cwd if isinstance(listed_cwd, str) else None,
        list_entry=entry,
        loaded=load_error is None,
        load_error=load_error,
        updates=updates,
        files_before=before,
        files_after=after,
        load_cwd=load_cwd,
        stderr_tail=stderr_tail,
        initialize=init_result,
    )


# --------------------------------------------------------------------------- continuation

#: Copilot 1.0.102 over Chat Completions does not send reasoning back to the model (its own
#: recorded sessions' requests carry no ``reasoning_content``)
#: the continuation fixture (``fixtures/copilot/<case>``) and its session (one per case)
CONTINUATION_CASE = ("recorded-tool-failures", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: its <current_datetime>
#: block is kept in artifacts, not records
STILL_DIFFERENT: dict[str, int] = {"context-not-projected": 1}
#: the pair test holds every source's STILL_DIFFERENT into this target
PINS_DIFFERENCES = True
#: a system record Copilot keeps but does not send is named system-not-sent
NAMES_INSTEAD = {"untranslated-system": "system-not-sent"}
REPLAYS_REASONING = False


def install_fixture(case_dir: Path, home: Path) -> None:
    """Place a recorded fixture (a COPILOT_HOME holding ``session-state/``) into ``home``."""
    shutil.copytree(case_dir / "session-state", home / ".copilot" / "session-state", symlinks=True)


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[dict[str, Any]]:
    """``copilot -p PROMPT --resume=<id>`` offline against a loopback ModelServer.

    The environment is the recorder's (``COPILOT_OFFLINE=true``, the BYOK provider URL on
    127.0.0.1, Chat Completions); the CLI runs in a scratch folder (the session's cwd need not
    exist here). Returns every model request of the turn (Copilot -p makes no side requests).
    """
    from fixtures.record.copilot import _env
    from proof.continuation import main_bodies, scripted_server

    exe = Path(os.path.abspath(exe))
    run_dir = workdir / "cwd"
    run_dir.mkdir(parents=True, exist_ok=True)
    with scripted_server(workdir, model=DUMMY_MODEL) as srv:
        env = _env(home, srv.base_url, DUMMY_MODEL, None)
        cache = _cache_for_bin(exe)
        if cache is not None:
            env["XDG_CACHE_HOME"] = str(cache)
        try:
            proc = subprocess.run(
                [str(exe), "-p", prompt, f"--resume={session_id}"],
                cwd=run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CopilotLoaderError(f"copilot -p --resume failed: {exc}") from exc
        if proc.returncode != 0:
            raise CopilotLoaderError(
                f"copilot -p --resume exited {proc.returncode}: "
                f"{(proc.stderr or proc.stdout)[-2000:]}"
            )
    return main_bodies(workdir / "requests.jsonl")


_DATETIME = re.compile(r"(<current_datetime>[^<]*</current_datetime>)\n\n", re.DOTALL)


def unwrap_user(text: str) -> tuple[str, str | None]:
    """Copilot sends ``transformedContent``: the prompt after a ``<current_datetime>`` block."""
    match = _DATETIME.match(text)
    if match is None:
        return text, None
    return text[match.end() :], match.group(1)


def request_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model saw in one Copilot request (Chat Completions or Responses)."""
    from proof.continuation import openai_items

    return openai_items(body)


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    r = check(exe, export.out_dir / "home", export.session_id, written.session.cwd or "")
    ok = r.listed and r.loaded and r.files_before == r.files_after
    return {
        "ok": ok,
        "version": r.version,
        "detail": f"listed={r.listed} loaded={r.loaded} replayed={len(r.updates)}"
        + (f" error={r.load_error}" if r.load_error else ""),
    }
