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
  ``--auto`` ("auto-approve permissions that are not explicitly denied", its help) lets a
  headless run call the tools a scenario asks for;
* its glob/grep tools run ``rg``: the Debian package ``ripgrep`` must be on PATH
  (:data:`SYSTEM_DEPENDENCIES`): :func:`install`, which ``python -m proof install`` (CI's
  install step) runs, installs it with ``apt-get install -y ripgrep`` as root, as the
  Chromium loader installs its browser, and refuses with that hint otherwise;
* a start is slow: ``kilo --version`` takes about 5 s here, one ``kilo run`` turn about
  11 s on an idle machine and minutes when the two cores are busy; tests share one install
  and keep the number of runs small.

This module never prints and never exits; failures are :class:`KiloLoaderError`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import lineage, npm
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

PROVIDER = lineage.PROVIDER
MODEL = lineage.MODEL
OFFLINE_BASE_URL = lineage.OFFLINE_BASE_URL
RUN_TIMEOUT = lineage.RUN_TIMEOUT

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
    """Debian packages whose program is not on PATH."""
    return [pkg for pkg, prog in SYSTEM_DEPENDENCIES.items() if shutil.which(prog) is None]


def ensure_programs() -> None:
    """Install the missing :data:`SYSTEM_DEPENDENCIES` with ``apt-get install -y`` (as root,
    as ``proof/loaders/chromium.py`` installs Chromium), else say how."""
    missing = missing_programs()
    if not missing:
        return
    hint = f"Kilo needs {', '.join(missing)} on PATH: apt-get install -y {' '.join(missing)}"
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise KiloLoaderError(f"{hint} (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update", "-q"], [apt, "install", "-y", "-q", *missing]):
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise KiloLoaderError(f"{' '.join(argv)} failed: {' / '.join(tail)}; {hint}")
    if missing_programs():
        raise KiloLoaderError(f"apt-get installed {' '.join(missing)}, but: {hint}")


def install(tools_dir: Path, timeout: float = 900.0) -> Path:
    """Install PACKAGE@VERSION (npm picks its platform package) into ``<tools_dir>/npm-kilo``
    (idempotent) and make sure ``rg`` is on PATH (:func:`ensure_programs`: the CLI's glob
    tool runs it; CI's ``python -m proof install`` installs Debian's ``ripgrep`` this way);
    return the CLI."""
    ensure_programs()
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, KiloLoaderError, timeout)


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


def config(base_url: str = OFFLINE_BASE_URL) -> JsonObj:
    """A Kilo config whose only model is the loopback server."""
    return {
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "experimental": {"openTelemetry": False},
        "provider": lineage.provider_config(base_url),
    }


def scratch_env(home: Path, base_url: str = OFFLINE_BASE_URL) -> dict[str, str]:
    """A minimal environment whose HOME and XDG folders are inside ``home``."""
    own = {"KILO_CONFIG_CONTENT": json.dumps(config(base_url)), **_QUIET}
    return npm.scratch_env(home, own)


#: the commands Kilo shares with OpenCode (``proof/lineage.py``); ``--auto`` ("auto-approve
#: permissions that are not explicitly denied", its help) lets a headless run call the tools
CLI = lineage.LineageCLI("kilo", KiloLoaderError, scratch_env, "kilo", "kilo.db", ("--auto",))
run = CLI.run
data_dir = CLI.data_dir


def version(exe: Path) -> str:
    return npm.cli_version(exe, scratch_env, KiloLoaderError)


# --------------------------------------------------------------------------- list/import/export

session_list = CLI.session_list
import_file = CLI.import_file
export_session = CLI.export_session
RunResult = lineage.RunResult
run_turn = CLI.run_turn


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
#: its prepare.py runs the real ``kilo import``: the archive tests that install a Kilo export
#: are loader tests
PREPARE_NEEDS_LOADER = True
#: CPU seconds one continued turn costs: 12 measured for the baseline's ``kilo run --session``
#: (``time``: 10.7 s user + 1.4 s sys), plus ``kilo import`` and ``kilo export`` of an export
CONTINUE_CPU_SECONDS = 16
#: ``kilo run --session`` opens the session's own directory (``session.directory``), as
#: OpenCode does: the session is installed (and written) for a scratch project folder
NEEDS_PROJECT_DIR = True
#: Kilo sends the reasoning parts of its own sessions back (``reasoning_content``)
REPLAYS_REASONING = True


#: the fixture's ``kilo.db`` into a scratch home (for ``project``, when given)
install_fixture = CLI.install_fixture


def install_export(export_dir: Path, home: Path) -> None:
    """Run the export's ``prepare.py`` into ``home`` with the pinned CLI (``--kilo``)."""
    CLI.install_export(find(_tools()), INSTALL_HINT, export_dir, home)


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
        done = CLI.prepare(exe, export.out_dir, home, cwd)
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
