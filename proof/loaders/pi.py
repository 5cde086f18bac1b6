"""The Pi coding agent's real CLI (npm ``@mariozechner/pi-coding-agent``) as a native loader.

Facts used (read from the installed 0.73.1 package's ``dist/``; ``codecs/pi/README.md``):

* ``dist/config.js``: everything lives under the agent folder, ``$PI_CODING_AGENT_DIR`` or
  ``~/.pi/agent`` (``models.json``, ``auth.json``, ``settings.json``, ``sessions/``); every
  start, even ``--help``, creates ``auth.json`` and ``sessions/`` there, so every run here gets
  a scratch HOME;
* ``models.json`` ``{"providers": {NAME: {"baseUrl", "api", "apiKey", "models": [{"id"}]}}}``
  declares a custom provider (``docs/models.md``); ``api: "openai-completions"`` speaks
  Chat Completions, so the loopback :class:`~fixtures.record.modelserver.ModelServer` answers;
* ``--offline`` / ``PI_OFFLINE=1`` turns off the startup network operations;
* ``pi -p --provider P --model M PROMPT`` runs one turn and exits; ``--session <id>`` opens the
  session whose id starts with ``<id>`` in the cwd's folder (``main.js``
  ``resolveSessionPath``), a path when the argument holds ``/`` or ends in ``.jsonl``; a
  session found only in another cwd's folder makes it ask "Fork this session into current
  directory? [y/N]" on stdin; with stdin closed it exits 0 without an answer and without a
  model request (seen with 0.73.1); a session whose stored ``cwd`` does not exist makes
  ``-p`` exit 1 (``MissingSessionCwdError``). So a continuation runs in the session's own cwd;
* ``pi --mode rpc`` reads one JSON command a line (``prompt``, ``bash``, ``compact``,
  ``fork``, ...) and answers ``{"type": "response", "command", "success"}`` lines between its
  events (``docs/rpc.md``); the recorder drives compaction and forks through it.

This module never prints and never exits; failures are :class:`PiLoaderError`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from proof import npm
from trajconv.codecs.pi.layout import folder_for_cwd

PACKAGE = "@mariozechner/pi-coding-agent"
VERSION = "0.73.1"
NPM_DIR = "npm-pi"

#: the provider and model the loopback ``models.json`` declares when a session names none
PROVIDER = "trajconv"
MODEL = "scripted"

#: a loopback address where nothing listens (port 9 = discard), for runs that make no request
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"

RUN_TIMEOUT = 300.0

JsonObj = dict[str, Any]

INSTALL_HINT = (
    "Pi not installed: run `python -m proof install pi` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)


class PiLoaderError(RuntimeError):
    """The Pi CLI could not be installed, started, or did not do what was asked."""


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "pi"


def installed_version(tools_dir: Path) -> str | None:
    return npm.package_version(tools_dir.absolute() / NPM_DIR, PACKAGE)


def find(tools_dir: Path) -> Path | None:
    """The pinned ``pi`` under ``tools_dir`` when its package is VERSION, else None."""
    exe = binary_path(tools_dir)
    if exe.exists() and installed_version(tools_dir) == VERSION:
        return exe
    return None


def install(tools_dir: Path, timeout: float = 900.0) -> Path:
    """Install PACKAGE@VERSION into ``<tools_dir>/npm-pi`` (idempotent); return the CLI."""
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, PiLoaderError, timeout)


# --------------------------------------------------------------------------- environment


def agent_dir(home: Path) -> Path:
    """``~/.pi/agent`` of a scratch home (the CLI's own folder)."""
    return home / ".pi" / "agent"


def models_config(
    base_url: str = OFFLINE_BASE_URL, provider: str = PROVIDER, model: str = MODEL
) -> JsonObj:
    """A ``models.json`` whose only provider is the loopback server (``docs/models.md``).

    ``reasoning: true`` makes pi ask for reasoning and send it back (``reasoning_content``) like
    any reasoning model; the key only has to exist and is sent to ``base_url`` only.
    """
    return {
        "providers": {
            provider: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "dummy-not-a-key",
                "models": [{"id": model, "name": "Scripted model", "reasoning": True}],
            }
        }
    }


def write_models(
    home: Path, base_url: str = OFFLINE_BASE_URL, provider: str = PROVIDER, model: str = MODEL
) -> None:
    folder = agent_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.json").write_text(
        json.dumps(models_config(base_url, provider, model), indent=2), encoding="utf-8"
    )


def scratch_env(home: Path) -> dict[str, str]:
    """A minimal environment whose HOME is ``home``, offline (``PI_OFFLINE``), no key."""
    return npm.scratch_env(home, {"PI_OFFLINE": "1"})


def version(exe: Path, timeout: float = 60.0) -> str:
    """``pi --version`` in a throw-away home, e.g. ``"0.73.1"`` (0.73.1 prints it on stderr)."""
    with tempfile.TemporaryDirectory(prefix="trajconv-version-") as tmp:
        proc = npm.run([exe, "--version"], tmp, scratch_env(Path(tmp)), timeout, PiLoaderError)
    out = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    if proc.returncode != 0 or not out:
        raise PiLoaderError(f"{exe} --version failed (rc {proc.returncode})")
    return out[-1].strip()


def run(
    exe: Path,
    home: Path,
    args: Sequence[str],
    cwd: Path,
    *,
    timeout: float = RUN_TIMEOUT,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``pi ARGS`` in ``cwd`` with the scratch ``home``; raises when it exits non-zero."""
    proc = npm.run([exe, *args], cwd, scratch_env(home), timeout, PiLoaderError)
    if check and proc.returncode != 0:
        raise PiLoaderError(
            f"pi {' '.join(args[:3])} exited {proc.returncode}: "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    return proc


def print_turn(
    exe: Path,
    home: Path,
    prompt: str,
    cwd: Path,
    *,
    session: str | None = None,
    provider: str = PROVIDER,
    model: str = MODEL,
    timeout: float = RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """One ``pi -p`` turn (``--session`` when given) with the ``models.json`` already in
    ``home``."""
    args = ["-p", "--offline", "--provider", provider, "--model", model]
    if session is not None:
        args += ["--session", session]
    return run(exe, home, [*args, prompt], cwd, timeout=timeout)


# --------------------------------------------------------------------------- RPC mode


class Rpc:
    """``pi --mode rpc``: one JSON command a line on stdin, responses and events on stdout."""

    def __init__(
        self,
        exe: Path,
        home: Path,
        cwd: Path,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        argv = [str(exe), "--mode", "rpc", "--offline", *args]
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env or scratch_env(home)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError as exc:
            self._stderr.close()
            raise PiLoaderError(f"cannot start {exe}: {exc}") from exc
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        self.events: list[JsonObj] = []
        self._next = 0

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _read(self, timeout: float) -> JsonObj:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty as exc:
            tail = self.stderr_tail()
            raise PiLoaderError(f"pi rpc: nothing within {timeout} s; {tail}") from exc
        if line is None:
            raise PiLoaderError(f"pi rpc ended early; {self.stderr_tail()}")
        try:
            value = json.loads(line)
        except ValueError:
            return {"type": "_unparsed", "line": line.decode("utf-8", "replace")}
        return value if isinstance(value, dict) else {"type": "_unparsed", "value": value}

    def send(self, command: JsonObj) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(command) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def call(self, command: JsonObj, timeout: float = RUN_TIMEOUT) -> JsonObj:
        """Send ``command`` and return its response (events before it go to ``events``);
        raises when pi answers ``success: false``."""
        self._next += 1
        rid = f"r{self._next}"
        self.send({"id": rid, **command})
        while True:
            msg = self._read(timeout)
            if msg.get("type") == "response" and msg.get("id") == rid:
                if not msg.get("success"):
                    raise PiLoaderError(f"pi rpc {command.get('type')} failed: {msg}")
                return msg
            self.events.append(msg)

    def wait_event(self, kind: str, timeout: float = RUN_TIMEOUT) -> JsonObj:
        """The next event of type ``kind`` (a prompt's ``agent_end``)."""
        while True:
            msg = self._read(timeout)
            self.events.append(msg)
            if msg.get("type") == kind:
                return msg

    def prompt(self, text: str, timeout: float = RUN_TIMEOUT) -> None:
        """A prompt, waited for to the end of the agent's run."""
        self.call({"type": "prompt", "message": text}, timeout)
        self.wait_event("agent_end", timeout)

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-3000:].decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


# --------------------------------------------------------------------------- sessions


def sessions_dir(home: Path) -> Path:
    return agent_dir(home) / "sessions"


def session_files(home: Path) -> list[Path]:
    """Every session file under ``home``'s agent folder, by path."""
    root = sessions_dir(home)
    return sorted(root.glob("*/*.jsonl")) if root.is_dir() else []


def locate(home: Path, session_id: str) -> Path | None:
    """The session file whose name ends in ``_<session_id>.jsonl``."""
    for path in session_files(home):
        if path.stem.endswith(f"_{session_id}"):
            return path
    return None


def _session_model(path: Path) -> tuple[str, str]:
    """The provider and model pi takes for a session: the last ``model_change`` or assistant
    message on the file's last entry's chain (``buildSessionContext``); a plain approximation
    here: the last one in the file."""
    provider, model = PROVIDER, MODEL
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "model_change":
            provider = str(entry.get("provider") or provider)
            model = str(entry.get("modelId") or model)
        msg = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(msg, dict)
            and msg.get("role") == "assistant"
            and msg.get("provider")
            and msg.get("model")
        ):
            provider, model = str(msg["provider"]), str(msg["model"])
    return provider, model


# --------------------------------------------------------------------------- continuation

#: the fixture session continued for the baseline (reasoning, three calls, one a failed read and
#: one a shell command exiting 2, a resumed second turn)
CONTINUATION_CASE = ("recorded-tools", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: nothing (Grok, Copilot and
#: Deep Agents each saw all of it, seen with their pinned CLIs)
STILL_DIFFERENT: dict[str, int] = {}
#: ``pi -p --session ID`` looks the id up in the folder of the cwd it runs in (elsewhere it
#: offers a fork and exits 0 without a request), and refuses a session whose cwd is missing
NEEDS_PROJECT_DIR = True
#: pi sends the reasoning of its own sessions back (``reasoning_content``), when the message's
#: provider, api and model are the ones answering and the block has its ``thinkingSignature``
REPLAYS_REASONING = True


def _rehome(text: str, project: Path) -> str:
    """A session file's text with its header's ``cwd`` set to ``project``."""
    lines = text.splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = str(project)
    return json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:])


def install_fixture(case_dir: Path, home: Path, project: Path | None = None) -> None:
    """Place a recorded fixture's ``sessions/`` tree into ``home/.pi/agent``; with
    ``project``, every session is filed under that (scratch) cwd's folder with its header's
    ``cwd`` set to it."""
    src = case_dir / "sessions"
    dest = sessions_dir(home)
    if project is None:
        shutil.copytree(src, dest, dirs_exist_ok=True)
        return
    folder = dest / folder_for_cwd(str(project))
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.glob("*/*.jsonl")):
        text = path.read_text(encoding="utf-8")
        (folder / path.name).write_text(_rehome(text, project), encoding="utf-8")


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed session (under ``home/.pi/agent``) for one ``pi -p --session`` turn
    in its own ``cwd``, against a loopback ModelServer (its log in ``workdir``) declared in
    ``models.json`` as the provider and model the session last used; the JSON bodies of the
    model requests, in order. No request means pi did not resume it (it exits 0 when it only
    offers a fork), so the caller's comparison fails on an empty list."""
    from proof.continuation import main_bodies, scripted_server

    path = locate(home, session_id)
    if path is None:
        raise PiLoaderError(f"no session {session_id} under {sessions_dir(home)}")
    provider, model = _session_model(path)
    with scripted_server(workdir, model=model) as srv:
        write_models(home, srv.base_url, provider, model)
        print_turn(exe, home, prompt, Path(cwd), session=session_id, provider=provider, model=model)
    return main_bodies(workdir / "requests.jsonl")


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request (``openai_items``); a tool result
    carries no error flag there (pi's ``isError`` is not sent)."""
    from proof.continuation import openai_items

    return openai_items(body)
