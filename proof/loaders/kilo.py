"""Kilo Code CLI (npm ``@kilocode/cli``) as a native loader: import, export, continue.

Facts used (``trajconv/codecs/kilo/README.md``, checked with 7.7.7 here):

* ``@kilocode/cli`` has one optional dependency per platform (``@kilocode/cli-linux-x64`` …)
  at its own version; npm installs the one for this machine and ``node_modules/.bin/kilo``
  (a Node launcher) runs its binary ``bin/.kilo``. 7.7.7 is pinned: 7.8.1's
  ``@kilocode/cli-linux-x64`` is not on the registry, so 7.8.1 does not install here;
* everything lives under the XDG folders: the database ``$XDG_DATA_HOME/kilo/kilo.db``,
  config ``$XDG_CONFIG_HOME/kilo/``, locks ``$XDG_STATE_HOME/kilo/``, so every run gets HOME
  and all four XDG folders inside one scratch home;
* ``kilo import FILE``, ``kilo export ID`` and ``kilo session list --format json`` run
  offline, scoped to the current directory's project (they run in the session's cwd);
* ``kilo run --format json --session ID PROMPT`` continues a session; the model is an
  ``@ai-sdk/openai-compatible`` provider (bundled) whose ``baseURL`` is the loopback
  :class:`~fixtures.record.modelserver.ModelServer`, given through ``KILO_CONFIG_CONTENT``;
  ``--auto`` approves the tools a recording calls (Kilo asks before ``bash`` otherwise);
* its glob/grep tools run ``rg``: the Debian package ``ripgrep`` must be on PATH
  (:data:`SYSTEM_DEPENDENCIES`; CI installs it with ``apt-get install -y ripgrep`` before
  ``python -m proof install``, and :func:`install` refuses without it);
* a start takes seconds (about 5 s for ``--version`` here, tens of seconds for a run on two
  busy cores): tests share one install and keep the number of runs small.

This module never prints and never exits; failures are :class:`KiloLoaderError`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@kilocode/cli"
VERSION = "7.7.7"
NPM_DIR = "npm-kilo"
#: the platform package npm picks for Linux x86-64 (an optional dependency at VERSION)
PLATFORM_PACKAGE = "@kilocode/cli-linux-x64"
#: programs the CLI needs on PATH besides itself: Debian package -> program
SYSTEM_DEPENDENCIES = {"ripgrep": "rg"}

PROVIDER = "trajconv"
MODEL = "scripted"
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"
RUN_TIMEOUT = 600.0

JsonObj = dict[str, Any]

INSTALL_HINT = (
    "Kilo Code CLI not installed: run `apt-get install -y ripgrep` and "
    "`python -m proof install kilo` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)


class KiloLoaderError(RuntimeError):
    """The Kilo CLI could not be installed, started, or did not do what was asked."""


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "kilo"


def installed_version(tools_dir: Path) -> str | None:
    return npm.package_version(tools_dir.absolute() / NPM_DIR, PACKAGE)


def find(tools_dir: Path) -> Path | None:
    """The pinned ``kilo`` under ``tools_dir`` when both packages are VERSION, else None."""
    exe = binary_path(tools_dir)
    prefix = tools_dir.absolute() / NPM_DIR
    if (
        exe.exists()
        and installed_version(tools_dir) == VERSION
        and npm.package_version(prefix, PLATFORM_PACKAGE) == VERSION
    ):
        return exe
    return None


def missing_programs() -> list[str]:
    """Debian packages whose program is not on PATH (``apt-get install -y`` them)."""
    return [pkg for pkg, prog in SYSTEM_DEPENDENCIES.items() if shutil.which(prog) is None]


def install(tools_dir: Path, timeout: float = 900.0) -> Path:
    """Install PACKAGE@VERSION (with its platform package) into ``<tools_dir>/npm-kilo``
    (idempotent); return the CLI. Refuses when ``rg`` is not on PATH: the CLI's glob tool
    fails without it (``apt-get install -y ripgrep``)."""
    missing = missing_programs()
    if missing:
        raise KiloLoaderError(
            f"Kilo needs {', '.join(missing)} on PATH: apt-get install -y {' '.join(missing)}"
        )
    specs = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, specs, KiloLoaderError, timeout)


# --------------------------------------------------------------------------- environment

#: switches that keep a run offline and quiet (names read from the 7.7.7 binary; the CLI's own
#: test harness sets the same ones)
_QUIET = {
    "KILO_NO_DAEMON": "1",
    "KILO_TELEMETRY_LEVEL": "off",
    "KILO_DISABLE_MODELS_FETCH": "1",
    "KILO_DISABLE_AUTOUPDATE": "1",
    "KILO_DISABLE_SHARE": "1",
    "KILO_DISABLE_SESSION_INGEST": "1",
    "KILO_DISABLE_LSP_DOWNLOAD": "1",
    "KILO_DISABLE_DEFAULT_PLUGINS": "1",
    "KILO_DISABLE_CLAUDE_CODE": "1",
    "KILO_DISABLE_EXTERNAL_SKILLS": "1",
    "KILO_DISABLE_CODEBASE_INDEXING": "1",
    "KILO_DISABLE_PRESENCE": "1",
    "KILO_DISABLE_AUTOCOMPACT": "1",
    "KILO_DISABLE_PRUNE": "1",
    "KILO_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
    "KILO_AUTH_CONTENT": "{}",
}


def data_dir(home: Path) -> Path:
    """``$XDG_DATA_HOME/kilo`` of a scratch home (where ``kilo.db`` lives)."""
    return home / ".local" / "share" / "kilo"


def config(base_url: str = OFFLINE_BASE_URL) -> JsonObj:
    """A Kilo config whose only model is the loopback server."""
    return {
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "experimental": {"openTelemetry": False},
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "trajconv loopback",
                "options": {"baseURL": base_url, "apiKey": "dummy-not-a-key"},
                "models": {MODEL: {"name": "Scripted model"}},
            }
        },
    }


def scratch_env(home: Path, base_url: str = OFFLINE_BASE_URL) -> dict[str, str]:
    """A minimal environment whose HOME and XDG folders are inside ``home``."""
    own = {"KILO_CONFIG_CONTENT": json.dumps(config(base_url)), **_QUIET}
    return npm.scratch_env(home, own)


def run(
    exe: Path,
    home: Path,
    args: Sequence[str],
    cwd: Path,
    *,
    base_url: str = OFFLINE_BASE_URL,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``kilo ARGS`` in ``cwd`` with the scratch ``home``; raises when it exits non-zero."""
    env = scratch_env(home, base_url)
    if extra_env:
        env.update(extra_env)
    try:
        # stdout to a file, not a pipe (a Bun binary can exit before a pipe took all output)
        with tempfile.TemporaryFile() as out:
            proc = subprocess.run(
                [str(exe), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.PIPE, text=True, timeout=timeout, check=False,
            )  # fmt: skip
            out.seek(0)
            proc.stdout = out.read().decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KiloLoaderError(f"cannot run kilo {args[0]}: {exc}") from exc
    if proc.returncode != 0:
        raise KiloLoaderError(
            f"kilo {' '.join(args[:2])} exited {proc.returncode}: "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    return proc


def version(exe: Path) -> str:
    return npm.cli_version(exe, scratch_env, KiloLoaderError)


# --------------------------------------------------------------------------- list/import/export


def session_list(exe: Path, home: Path, cwd: Path) -> list[JsonObj]:
    """``kilo session list --format json`` (root sessions of ``cwd``'s project)."""
    out = run(exe, home, ["session", "list", "--format", "json"], cwd).stdout.strip()
    if not out:
        return []
    value = json.loads(out)
    if not isinstance(value, list):
        raise KiloLoaderError(f"session list printed {type(value).__name__}, not a list")
    return [v for v in value if isinstance(v, dict)]


def import_file(exe: Path, home: Path, document: Path, cwd: Path) -> str:
    """``kilo import DOCUMENT`` in ``cwd``; the imported session id it printed."""
    out = run(exe, home, ["import", str(document.absolute())], cwd).stdout
    for line in out.splitlines():
        if line.startswith("Imported session: "):
            return line.split(": ", 1)[1].strip()
    raise KiloLoaderError(f"kilo import printed no session id: {out[-500:]}")


def export_session(exe: Path, home: Path, session_id: str, cwd: Path) -> JsonObj:
    """``kilo export ID``: the ``{"info", "messages"}`` document."""
    out = run(exe, home, ["export", session_id], cwd).stdout
    start = out.find("{")
    value = json.loads(out[start:]) if start >= 0 else None
    if not isinstance(value, dict):
        raise KiloLoaderError("kilo export printed no JSON object")
    return value


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class RunResult:
    events: list[JsonObj]
    """``kilo run --format json`` events, one per line."""
    requests: list[JsonObj]
    """JSON bodies of the main-conversation model requests, in order."""


def _main_requests(log: Path) -> list[JsonObj]:
    """Request bodies of the agent loop: side requests (titles) carry no ``tools``."""
    bodies: list[JsonObj] = []
    if not log.is_file():
        return bodies
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        body = entry.get("body")
        if isinstance(body, dict) and body.get("tools") and entry.get("method") == "POST":
            bodies.append(body)
    return bodies


def run_turn(
    exe: Path,
    home: Path,
    prompt: str,
    cwd: Path,
    workdir: Path,
    steps: list[JsonObj],
    *,
    session_id: str | None = None,
    title: str | None = None,
    side: list[JsonObj] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> RunResult:
    """One ``kilo run`` turn against a scripted loopback model server."""
    from fixtures.record.modelserver import ModelServer

    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "requests.jsonl"
    args = ["run", "--format", "json", "--auto", "-m", f"{PROVIDER}/{MODEL}"]
    if session_id is not None:
        args += ["--session", session_id]
    if title is not None:
        args += ["--title", title]
    with ModelServer(steps, log, model=MODEL, side=side) as srv:
        proc = run(exe, home, [*args, prompt], cwd, base_url=srv.base_url, timeout=timeout)
    events = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    errors = [e for e in events if e.get("type") == "error"]
    if errors:
        raise KiloLoaderError(f"kilo run reported an error: {errors[0]}")
    return RunResult(events=events, requests=_main_requests(log))


# --------------------------------------------------------------------------- continuation


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed session (already under ``home``) in the real CLI for one turn
    with ``prompt``, against a ModelServer on 127.0.0.1 started here (its request log in
    ``workdir``); return the JSON bodies of the main-conversation model requests, in order."""
    from proof.continuation import REPLY

    result = run_turn(
        exe, home, prompt, Path(cwd), workdir, [{"text": REPLY}], session_id=session_id
    )
    return result.requests


#: the fixture session continued for the baseline: two turns, reasoning, three calls in one
#: step (a ``read`` in the ``error`` state, an ``ls`` that exits 2), a resumed turn with a glob
CONTINUATION_CASE = ("recorded-tools", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: the <environment_details>
#: block Kilo adds to each of its two user messages (its message time), which the others do
#: not send
STILL_DIFFERENT: dict[str, int] = {"context-not-projected": 2}
#: CPU seconds one continued turn costs (measured, /usr/bin/time: kilo run --session)
CONTINUE_CPU_SECONDS = 12
#: ``kilo run --session`` opens the session's own directory (``session.directory``), as
#: OpenCode does: the session is installed (and written) for a scratch project folder
NEEDS_PROJECT_DIR = True
#: Kilo sends the reasoning parts of its own sessions back (``reasoning_content``)
REPLAYS_REASONING = True


def install_fixture(case_dir: Path, home: Path, project: Path | None = None) -> None:
    """Copy a recorded fixture's ``kilo.db`` into ``home``'s data folder; with ``project``,
    its sessions are filed under that (scratch) project folder instead of the recorded one."""
    db = data_dir(home) / "kilo.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(case_dir / "kilo.db", db)
    if project is not None:
        con = sqlite3.connect(db)
        try:
            with con:
                con.execute("update session set directory = ?", (str(project),))
        finally:
            con.close()


def install_export(export_dir: Path, home: Path) -> None:
    """Run the export's ``prepare.py`` into ``home`` with the pinned CLI (``--kilo``)."""
    exe = find(_tools())
    if exe is None:
        raise KiloLoaderError(INSTALL_HINT)
    done = subprocess.run(
        [sys.executable, str(export_dir / "prepare.py"), "--home", str(home), "--kilo", str(exe)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, env=scratch_env(home), check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise KiloLoaderError(f"prepare.py exited {done.returncode}: {done.stderr[-2000:]}")


#: what Kilo adds to every user message it sends (7.7.7: a second text part, computed for
#: each request from the message's time and the directory the CLI runs in)
ENV_OPEN = "\n\n<environment_details>\n"
ENV_CLOSE = "</environment_details>"
#: lines of the block that describe the run, not the session
RUN_LINES = ("Working directory:", "Workspace root folder:")


def unwrap_user(text: str) -> tuple[str, str | None]:
    """A user message as Kilo sends it -> (what the session holds, the context Kilo added).

    The ``<environment_details>`` block Kilo appends to every user message is split off; of it
    the context keeps the message time (the stored message's own time), not the lines naming
    the directory this run happens in (a scratch folder, different for every run)."""
    at = text.rfind(ENV_OPEN)
    if at < 0 or not text.rstrip().endswith(ENV_CLOSE):
        return text, None
    block = text[at + len(ENV_OPEN) : text.rstrip().rfind(ENV_CLOSE)]
    kept = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith(RUN_LINES)]
    return text[:at], "\n".join(kept) or None


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request body, as conversation items (Kilo
    sends reasoning as ``reasoning_content``, a tool's error text as the tool message)."""
    from proof.continuation import openai_items

    return openai_items(body)


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``): the real
    ``kilo import`` (``prepare.py``, which checks it with ``kilo export``) and ``kilo session
    list``; no model turn (the continuation pairs continue sessions). ``None`` when the CLI is
    not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trajconv-kilo-home-") as scratch:
        home, cwd = Path(scratch) / "home", Path(scratch) / "project"
        home.mkdir()
        cwd.mkdir()
        done = subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home),
             "--cwd", str(cwd), "--kilo", str(exe)],
            capture_output=True, text=True, timeout=RUN_TIMEOUT, env=scratch_env(home),
            check=False,
        )  # fmt: skip
        imported = done.returncode == 0
        listed = imported and any(
            s.get("id") == export.session_id for s in session_list(exe, home, cwd)
        )
    root = written.session.parent_session_id is None
    return {
        "ok": imported and (listed or not root),  # the list shows root sessions only
        "version": VERSION,
        "detail": f"imported={imported} listed={listed}"
        + ("" if imported else f" prepare: {done.stderr.strip()[-300:]}"),
    }
