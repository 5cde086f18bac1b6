"""Offline native-loader check for Cursor AgentKv stores via npm ``@cursor/sdk``.

The Cursor CLI (``agent`` / ``cursor-agent``) is not published to any package
registry, but Cursor's SDK is, and its local runtime opens the same
``store.db`` format (``SqliteLocalAgentStore`` over the AgentKv blob store).
This module installs a pinned SDK plus a pinned Node 22 (the SDK needs
``node:sqlite``, node >= 22.13) into ``<tools>/npm-cursor`` and asks the SDK to
read a **copy** of a store back with ``Agent.messages.list`` (runtime
``local``). No API key is set and nothing points at a network address; when
``unshare`` allows it the driver also runs without a network namespace.

Facts used (``codecs/cursor/README.md``, "Offline reader check via
@cursor/sdk", and observed with @cursor/sdk 1.0.32 / node 22.23.3):

* the SDK finds a store at ``<stateRoot>/agents/agent-<sha256hex(agentId)>/store.db``
  and lists agents from ``<stateRoot>/index.db``, so the copy is registered
  with ``agents.create`` and a checkpoint ref ``{schemaVersion: 1, rootBlobId}``;
* ``Agent.messages.list`` returns one item per root field-8 turn (protobuf JSON
  of ``ConversationTurnStructure`` with hydrated user message and steps); the
  field-1 JSON model messages are not read by any public SDK call;
* opening rewrites ``meta["0"]`` (normalised, plus a fresh ``blobEncryptionKey``);
* failures are silent: a missing blob drops its turn, an undecodable root gives ``[]``.

Library code: never prints, never exits; errors come back as
:class:`CursorLoaderError` or in the result. The value of ``blobEncryptionKey``
(a credential) never enters a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import tools_dir as _tools
from proof.npm import npm_install

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@cursor/sdk"
VERSION = "1.0.32"
NODE_PACKAGE = "node"
NODE_VERSION = "22.23.3"
INSTALL_DIRNAME = "npm-cursor"
DRIVER = Path(__file__).with_name("cursor_sdk_read.mjs")
INSTALL_HINT = (
    "Cursor SDK not installed: run "
    "`python -c 'from pathlib import Path; from proof.loaders.cursor import install; "
    'install(Path(".tools"))\'` (npm install --prefix .tools/npm-cursor '
    f"{NODE_PACKAGE}@{NODE_VERSION} {PACKAGE}@{VERSION})"
)
#: meta["0"] keys that are credentials: compared only for presence, never returned
SECRET_META_KEYS = frozenset({"blobEncryptionKey"})
_DEFAULT_TIMEOUT = 120.0

JsonObj = dict[str, Any]


class CursorLoaderError(RuntimeError):
    """The SDK could not be installed or started, or the store could not be staged."""


@dataclass(frozen=True)
class CursorTurn:
    """One item of ``Agent.messages.list``, reduced to what a test compares."""

    kind: str
    """``agent`` or ``shell`` (which ``ConversationTurnStructure`` oneof was set), else ``?``."""
    user_text: str | None
    steps: tuple[tuple[str, str], ...]
    """``(step kind, text)`` per step: ``assistant``/``thinking`` text, ``tool_call`` -> ``""``."""
    shell_command: str | None = None


@dataclass(frozen=True)
class CursorLoadResult:
    """What Cursor's SDK read from a copy of one store."""

    sdk_version: str
    node_version: str
    agent_id: str
    root_blob_id: str
    ok: bool
    """The driver ran and ``Agent.messages.list`` returned (it may still be empty)."""
    error: str | None
    messages: tuple[JsonObj, ...]
    """The raw ``AgentMessage`` items (``type``, ``uuid``, ``agent_id``, ``message``)."""
    turns: tuple[CursorTurn, ...]
    network_isolated: bool
    """The driver ran inside ``unshare -rn`` (no network interface but loopback)."""
    meta_changed_keys: tuple[str, ...] = ()
    """Keys of meta["0"] whose value the SDK changed on open (credential keys excluded)."""
    encryption_key_added: bool = False
    """The SDK wrote a ``blobEncryptionKey`` the source did not have (value withheld)."""
    stderr_tail: str = ""
    argv: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- install / find


def _install_root(tools_dir: Path) -> Path:
    return tools_dir / INSTALL_DIRNAME


def _sdk_dir(tools_dir: Path) -> Path:
    return _install_root(tools_dir) / "node_modules" / "@cursor" / "sdk"


def _package_version(package_json: Path) -> str | None:
    try:
        value = json.loads(package_json.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


def find(tools_dir: Path) -> Path | None:
    """The pinned Node 22 binary next to an installed ``@cursor/sdk``, or None."""
    node = _install_root(tools_dir) / "node_modules" / ".bin" / "node"
    if not node.exists():
        return None
    if _package_version(_sdk_dir(tools_dir) / "package.json") != VERSION:
        return None
    return node


def _scratch_env(home: Path) -> dict[str, str]:
    # Only what node/npm need; no CURSOR_API_KEY, no proxy settings from the caller.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def install(tools_dir: Path, *, timeout: float = 600.0) -> Path:
    """Install pinned ``node`` and ``@cursor/sdk`` into ``tools_dir/npm-cursor``.

    Idempotent; npm runs with a scratch HOME. Returns the Node binary path.
    """
    tools_dir = tools_dir.resolve()
    existing = find(tools_dir)
    if existing is not None:
        return existing
    root = _install_root(tools_dir)
    npm_install(
        root,
        [f"{NODE_PACKAGE}@{NODE_VERSION}", f"{PACKAGE}@{VERSION}"],
        error=CursorLoaderError,
        timeout=timeout,
    )
    node = find(tools_dir)
    if node is None:
        raise CursorLoaderError(f"npm install finished but no node/@cursor/sdk under {root}")
    return node


def node_version(node: Path, *, timeout: float = 30.0) -> str:
    proc = subprocess.run(
        [str(node), "--version"], capture_output=True, text=True, timeout=timeout, check=False
    )
    return proc.stdout.strip().lstrip("v")


# --------------------------------------------------------------------------- staging


def workspace_hash(cwd: str) -> str:
    """``<workspace-hash>`` of the CLI layout: lowercase hex MD5 of the absolute cwd."""
    return hashlib.md5(cwd.encode("utf-8"), usedforsecurity=False).hexdigest()


def locate_store(store_or_home: Path, agent_id: str, cwd: str) -> Path:
    """A ``store.db`` path, or the CLI location of ``agent_id`` under a home folder.

    Accepts the store file itself, its ``<agentId>`` folder, a home (holding
    ``.cursor/chats/...``) or a ``.cursor`` folder.
    """
    if store_or_home.is_file():
        return store_or_home
    candidates = [
        store_or_home / "store.db",
        store_or_home / ".cursor" / "chats" / workspace_hash(cwd) / agent_id / "store.db",
        store_or_home / "chats" / workspace_hash(cwd) / agent_id / "store.db",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise CursorLoaderError(f"no store.db for agent {agent_id} (cwd {cwd!r}) under {store_or_home}")


def _read_meta(db_path: Path) -> JsonObj:
    uri = f"file:{db_path}?mode=ro"
    con = sqlite3.connect(uri, uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
    finally:
        con.close()
    if row is None or not isinstance(row[0], str):
        raise CursorLoaderError(f"{db_path}: no meta row '0'")
    try:
        value = json.loads(bytes.fromhex(row[0]).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CursorLoaderError(f"{db_path}: meta row '0' is not hex JSON ({exc})") from None
    if not isinstance(value, dict):
        raise CursorLoaderError(f"{db_path}: meta row '0' is not a JSON object")
    return value


def _copy_store(src: Path, dest_dir: Path) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    # WAL mode: the database is db + -wal + -shm together.
    for suffix in ("", "-wal", "-shm"):
        part = src.with_name(src.name + suffix)
        if part.is_file():
            shutil.copyfile(part, dest_dir / ("store.db" + suffix))
    return dest_dir / "store.db"


def _unshare_prefix() -> list[str]:
    tool = shutil.which("unshare")
    if tool is None:
        return []
    try:
        probe = subprocess.run([tool, "-rn", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [tool, "-rn"] if probe.returncode == 0 else []


# --------------------------------------------------------------------------- reduce


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def reduce_turn(item: JsonObj) -> CursorTurn:
    """Summarise one ``AgentMessage`` (protobuf JSON, camelCase) for comparison."""
    message = item.get("message")
    if not isinstance(message, dict):
        return CursorTurn(kind="?", user_text=None, steps=())
    agent = message.get("agentConversationTurn")
    if isinstance(agent, dict):
        user = agent.get("userMessage")
        steps: list[tuple[str, str]] = []
        for step in agent.get("steps") or []:
            if not isinstance(step, dict):
                continue
            if isinstance(step.get("assistantMessage"), dict):
                steps.append(("assistant", _text(step["assistantMessage"].get("text")) or ""))
            elif isinstance(step.get("thinkingMessage"), dict):
                steps.append(("thinking", _text(step["thinkingMessage"].get("text")) or ""))
            elif "toolCall" in step:
                steps.append(("tool_call", ""))
            else:
                steps.append(("?", ""))
        return CursorTurn(
            kind="agent",
            user_text=_text(user.get("text")) if isinstance(user, dict) else None,
            steps=tuple(steps),
        )
    shell = message.get("shellConversationTurn")
    if isinstance(shell, dict):
        command = shell.get("shellCommand")
        return CursorTurn(
            kind="shell",
            user_text=None,
            steps=(),
            shell_command=_text(command.get("command")) if isinstance(command, dict) else None,
        )
    return CursorTurn(kind="?", user_text=None, steps=())


# --------------------------------------------------------------------------- check


def check(
    store_or_home: Path,
    agent_id: str,
    cwd: str,
    *,
    tools_dir: Path | None = None,
    node: Path | None = None,
    timeout: float = _DEFAULT_TIMEOUT,
    isolate_network: bool = True,
) -> CursorLoadResult:
    """Read a copy of the store with ``@cursor/sdk`` and list the turns it sees.

    ``store_or_home`` is a ``store.db``, its folder, or a home holding
    ``.cursor/chats/<md5(cwd)>/<agent_id>/store.db``. The original files are
    never opened for writing.
    """
    if tools_dir is None:
        from proof import tools_dir as default_tools

        tools_dir = default_tools()
    node_bin = node if node is not None else find(tools_dir)
    if node_bin is None:
        raise CursorLoaderError(INSTALL_HINT)
    sdk_dir = _sdk_dir(tools_dir)
    src = locate_store(store_or_home, agent_id, cwd)
    with tempfile.TemporaryDirectory(prefix="trajconv-cursor-sdk-") as scratch_name:
        scratch = Path(scratch_name)
        home = scratch / "home"
        home.mkdir()
        state_root = scratch / "state"
        digest = hashlib.sha256(agent_id.encode("utf-8")).hexdigest()
        copy = _copy_store(src, state_root / "agents" / f"agent-{digest}")
        before = _read_meta(copy)
        root_id = before.get("latestRootBlobId")
        if not isinstance(root_id, str) or not root_id:
            raise CursorLoaderError(f"{src}: meta has no latestRootBlobId")
        payload = {
            "sdkDir": str(sdk_dir),
            "stateRoot": str(state_root),
            "agentId": agent_id,
            "rootBlobId": root_id,
            "cwd": cwd,
        }
        prefix = _unshare_prefix() if isolate_network else []
        argv = [*prefix, str(node_bin), "--no-warnings", str(DRIVER), json.dumps(payload)]
        try:
            proc = subprocess.run(
                argv,
                env=_scratch_env(home),
                cwd=str(scratch),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CursorLoaderError(f"SDK driver timed out after {timeout}s") from exc
        answer: JsonObj = {}
        for line in reversed(proc.stdout.splitlines()):
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                answer = parsed
                break
        after = _read_meta(copy) if copy.exists() else {}
    changed = tuple(
        sorted(
            key
            for key in set(before) | set(after)
            if key not in SECRET_META_KEYS and before.get(key) != after.get(key)
        )
    )
    raw = answer.get("messages")
    messages = tuple(m for m in raw if isinstance(m, dict)) if isinstance(raw, list) else ()
    ok = bool(answer.get("ok")) and proc.returncode == 0
    error = answer.get("error") if isinstance(answer.get("error"), str) else None
    if not answer and proc.returncode != 0:
        error = f"driver exited {proc.returncode}: {proc.stderr[-2000:]}"
    return CursorLoadResult(
        sdk_version=_package_version(sdk_dir / "package.json") or "?",
        node_version=node_version(node_bin),
        agent_id=agent_id,
        root_blob_id=root_id,
        ok=ok,
        error=error,
        messages=messages,
        turns=tuple(reduce_turn(m) for m in messages),
        network_isolated=bool(prefix),
        meta_changed_keys=changed,
        encryption_key_added="blobEncryptionKey" in after and "blobEncryptionKey" not in before,
        stderr_tail=proc.stderr[-4000:],
        argv=tuple(argv[:-1]),
    )


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    if find(_tools()) is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trajconv-cursor-home-") as home:
        # The export is a readout; its prepare.py builds the store Cursor opens, filed under
        # the session's cwd (a scratch project when the source kept none, as ATIF does).
        cwd = written.session.cwd or str(Path(home) / "project")
        subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", home]
            + ([] if written.session.cwd else ["--cwd", cwd]),
            check=True,
            capture_output=True,
            timeout=120,
        )
        r = check(Path(home), export.session_id, cwd, tools_dir=_tools())
    return {
        "ok": r.ok and r.error is None,
        "version": r.sdk_version,
        "detail": f"messages={len(r.messages)} turns={len(r.turns)}"
        + (f" error={r.error}" if r.error else ""),
    }
