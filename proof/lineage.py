"""What the loaders of OpenCode's lineage share (``proof/loaders/opencode.py`` and its fork's,
``proof/loaders/kilo.py``): the CLIs take the same commands (``import``, ``export``,
``session list --format json``, ``session delete``, ``run --format json --session``), keep the
same database tables and send the same Chat Completions requests, so one :class:`LineageCLI`
drives either, given the harness's names and its scratch environment.

Facts (checked with OpenCode 1.18.33 and Kilo 7.7.7): stdout goes to a file, not a pipe (the
Bun binary can exit before a pipe has taken all of a long output: ``opencode export`` was cut
at 64 KiB); ``import`` prints ``Imported session: <id>``; ``session list`` prints nothing when
there is no session; the agent loop's requests carry ``tools``, side requests (titles) none;
``run --session`` opens the session's own directory, so a fixture is installed for a scratch
project folder (``session.directory``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JsonObj = dict[str, Any]

#: provider and model names the loopback configs declare
PROVIDER = "trajconv"
MODEL = "scripted"
#: a loopback address where nothing listens (port 9 = discard), for runs that make no request
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"
RUN_TIMEOUT = 600.0


def provider_config(base_url: str) -> JsonObj:
    """The ``provider`` entry whose only model is the loopback server
    (``@ai-sdk/openai-compatible``, bundled in both binaries)."""
    return {
        PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "trajconv loopback",
            "options": {"baseURL": base_url, "apiKey": "dummy-not-a-key"},
            "models": {MODEL: {"name": "Scripted model"}},
        }
    }


@dataclass(frozen=True)
class RunResult:
    events: list[JsonObj]
    """``<cli> run --format json`` events, one per line."""
    requests: list[JsonObj]
    """JSON bodies of the main-conversation model requests, in order."""


def main_requests(log: Path) -> list[JsonObj]:
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


@dataclass(frozen=True)
class LineageCLI:
    """One CLI of the lineage, by its names."""

    cli: str
    """The command's name, for messages (``opencode``)."""
    error: type[Exception]
    """What every failure raises (the loader's own error)."""
    env: Callable[[Path, str], dict[str, str]]
    """The scratch environment around a home, for a model server's base URL."""
    data: str
    """The data folder's name under ``$XDG_DATA_HOME`` (``opencode``)."""
    db: str
    """The database file in it (``opencode.db``)."""
    run_flags: tuple[str, ...] = ()
    """Flags every ``run`` gets besides ``--format json -m <model>`` (Kilo: ``--auto``)."""

    def data_dir(self, home: Path) -> Path:
        """``$XDG_DATA_HOME/<data>`` of a scratch home (where the database lives)."""
        return home / ".local" / "share" / self.data

    def run(
        self,
        exe: Path,
        home: Path,
        args: Sequence[str],
        cwd: Path,
        *,
        base_url: str = OFFLINE_BASE_URL,
        extra_env: Mapping[str, str] | None = None,
        timeout: float = RUN_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        """``<cli> ARGS`` in ``cwd`` with the scratch ``home``; raises when it exits non-zero."""
        env = self.env(home, base_url)
        if extra_env:
            env.update(extra_env)
        try:
            with tempfile.TemporaryFile() as out:
                proc = subprocess.run(
                    [str(exe), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.PIPE, text=True, timeout=timeout, check=False,
                )  # fmt: skip
                out.seek(0)
                proc.stdout = out.read().decode("utf-8", "replace")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise self.error(f"cannot run {self.cli} {args[0]}: {exc}") from exc
        if proc.returncode != 0:
            raise self.error(
                f"{self.cli} {' '.join(args[:2])} exited {proc.returncode}: "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
            )
        return proc

    def session_list(self, exe: Path, home: Path, cwd: Path) -> list[JsonObj]:
        """``<cli> session list --format json`` (root sessions of ``cwd``'s project)."""
        out = self.run(exe, home, ["session", "list", "--format", "json"], cwd).stdout.strip()
        if not out:
            return []
        value = json.loads(out)
        if not isinstance(value, list):
            raise self.error(f"session list printed {type(value).__name__}, not a list")
        return [v for v in value if isinstance(v, dict)]

    def import_file(self, exe: Path, home: Path, document: Path, cwd: Path) -> str:
        """``<cli> import DOCUMENT`` in ``cwd``; the imported session id it printed."""
        out = self.run(exe, home, ["import", str(document.absolute())], cwd).stdout
        for line in out.splitlines():
            if line.startswith("Imported session: "):
                return line.split(": ", 1)[1].strip()
        raise self.error(f"{self.cli} import printed no session id: {out[-500:]}")

    def export_session(self, exe: Path, home: Path, session_id: str, cwd: Path) -> JsonObj:
        """``<cli> export ID``: the ``{"info", "messages"}`` document."""
        out = self.run(exe, home, ["export", session_id], cwd).stdout
        value = json.loads(out)
        if not isinstance(value, dict):
            raise self.error(f"{self.cli} export printed no JSON object")
        return value

    def run_turn(
        self,
        exe: Path,
        home: Path,
        prompt: str,
        cwd: Path,
        workdir: Path,
        steps: list[JsonObj],
        *,
        session_id: str | None = None,
        title: str | None = None,
        timeout: float = RUN_TIMEOUT,
    ) -> RunResult:
        """One ``<cli> run`` turn against a scripted loopback model server."""
        from fixtures.record.modelserver import ModelServer

        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "requests.jsonl"
        args = ["run", "--format", "json", *self.run_flags, "-m", f"{PROVIDER}/{MODEL}"]
        if session_id is not None:
            args += ["--session", session_id]
        if title is not None:
            args += ["--title", title]
        with ModelServer(steps, log, model=MODEL) as srv:
            proc = self.run(exe, home, [*args, prompt], cwd, base_url=srv.base_url, timeout=timeout)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        errors = [e for e in events if e.get("type") == "error"]
        if errors:
            raise self.error(f"{self.cli} run reported an error: {errors[0]}")
        return RunResult(events=events, requests=main_requests(log))

    def install_fixture(self, case_dir: Path, home: Path, project: Path | None = None) -> None:
        """Copy a recorded fixture's database into ``home``'s data folder; with ``project``,
        its sessions are filed under that (scratch) project folder instead of the recorded
        one."""
        db = self.data_dir(home) / self.db
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(case_dir / self.db, db)
        if project is not None:
            con = sqlite3.connect(db)
            try:
                with con:
                    con.execute("update session set directory = ?", (str(project),))
            finally:
                con.close()

    def prepare(
        self, exe: Path, export_dir: Path, home: Path, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The export's ``prepare.py --home HOME [--cwd DIR] --<cli> EXE`` (the real import)."""
        argv = [sys.executable, str(export_dir / "prepare.py"), "--home", str(home)]
        if cwd is not None:
            argv += ["--cwd", str(cwd)]
        return subprocess.run(
            [*argv, f"--{self.cli}", str(exe)], capture_output=True, text=True,
            timeout=RUN_TIMEOUT, env=self.env(home, OFFLINE_BASE_URL), check=False,
        )  # fmt: skip

    def install_export(self, exe: Path | None, hint: str, export_dir: Path, home: Path) -> None:
        """Run the export's ``prepare.py`` into ``home`` with the pinned CLI ``exe``."""
        if exe is None:
            raise self.error(hint)
        done = self.prepare(exe, export_dir, home)
        if done.returncode != 0:
            raise self.error(f"prepare.py exited {done.returncode}: {done.stderr[-2000:]}")
