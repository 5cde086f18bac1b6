"""Gemini CLI (npm ``@google/gemini-cli``) as a native loader: install it pinned, list a
session, and resume it for one turn against the loopback model server.

Facts used here (observed with 0.61.0 in runs of this module, and read in its bundle):

* the CLI keeps its state in ``$GEMINI_CLI_HOME/.gemini`` (default the OS home), so every run
  gets a throw-away HOME with a ``settings.json`` choosing API-key auth, no usage statistics and
  **no session retention** (the CLI's cleanup deletes sessions it cannot list, and after a
  ``--resume`` also the resumed one);
* headless runs need a trusted workspace (``GEMINI_CLI_TRUST_WORKSPACE=true``) and an API key
  (a dummy is enough); ``GOOGLE_GEMINI_BASE_URL`` points the model client at 127.0.0.1;
* ``gemini --list-sessions`` lists the sessions of the current directory's project;
  ``gemini --resume <id> -p PROMPT -o json`` resumes one for one turn;
* the resumed request (``…:streamGenerateContent?alt=sse``) carries the history as Gemini
  ``contents``; a ``…flash-lite…:generateContent`` routing request precedes it.

This module never prints and never exits; failures raise :class:`GeminiLoaderError`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@google/gemini-cli"
VERSION = "0.61.0"

#: folder under the tools dir that holds the npm prefix
NPM_DIR = "npm-gemini"

INSTALL_HINT = (
    "Gemini CLI not installed: run `python -m proof install gemini` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)


class GeminiLoaderError(RuntimeError):
    """The Gemini CLI could not be installed, started, or did not do what was asked."""


def _root(tools: Path) -> Path:
    return tools / NPM_DIR


def installed_version(tools: Path) -> str | None:
    return npm.package_version(_root(tools), "@google/gemini-cli")


def find(tools: Path) -> Path | None:
    """The installed ``gemini`` launcher of the pinned VERSION, or None."""
    exe = _root(tools) / "node_modules" / ".bin" / "gemini"
    if exe.exists() and installed_version(tools) == VERSION:
        return exe
    return None


def install(tools: Path, *, timeout: float = 600.0) -> Path:
    """Install the pinned CLI under ``tools/npm-gemini`` (idempotent); return the launcher."""
    tools = tools.resolve()
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools, NPM_DIR, spec, GeminiLoaderError, timeout)


# --------------------------------------------------------------------------- running

#: settings for a scratch home: API-key auth, no telemetry, and no session cleanup
#: (the CLI's cleanup deletes sessions it cannot list, and after ``--resume`` also the
#: resumed one: see the gemini codec README)
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"sessionRetention": {"enabled": False}},
}

#: user-role text the CLI writes itself (its context; a compression's summary)
CLI_CONTEXT = ("<session_context>", "<hook_context>", "<state_snapshot>")

#: the model named on the command line; naming one skips the CLI's routing request
MODEL = "gemini-2.5-pro"

RUN_TIMEOUT = 180.0


def write_settings(home: Path) -> None:
    """``<home>/.gemini/settings.json`` for an offline run, unless the home has one."""
    path = home / ".gemini" / "settings.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(SETTINGS, indent=2) + "\n", encoding="utf-8")


#: the continuation rig writes the settings before prepare.py, which refuses a session the
#: CLI's retention would delete (a converted session keeps its source's times, or has none)
before_install = write_settings


def scratch_env(home: Path, base_url: str | None = None) -> dict[str, str]:
    """A minimal environment around a scratch HOME (nothing of the caller's, no real key)."""
    own = {
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": "trajconv-offline-dummy",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "LANG": "C.UTF-8",
    }
    if base_url is not None:
        own["GOOGLE_GEMINI_BASE_URL"] = base_url
    return npm.scratch_env(home, own, passed=("PATH",))


def run(
    exe: Path, home: Path, cwd: Path, args: list[str], base_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One ``gemini ARGS`` process in ``cwd`` with the scratch ``home``."""
    if not cwd.is_dir():
        raise GeminiLoaderError(f"the session's project directory {cwd} does not exist here")
    write_settings(home)
    argv: list[str | Path] = [Path(os.path.abspath(exe)), *args]
    return npm.run(argv, cwd, scratch_env(home, base_url), RUN_TIMEOUT, GeminiLoaderError)


def list_sessions(exe: Path, home: Path, cwd: Path) -> str:
    """``gemini --list-sessions`` output for the project at ``cwd``."""
    proc = run(exe, home, cwd, ["--list-sessions"])
    if proc.returncode != 0:
        raise GeminiLoaderError(
            f"gemini --list-sessions exited {proc.returncode}: {proc.stderr[-1000:]}"
        )
    return proc.stdout


def is_main_request(entry: dict[str, Any]) -> bool:
    """A logged request of the main conversation: a Gemini call with the tool declarations
    (the CLI's side requests, such as session summaries, carry none) and not a side answer."""
    body = entry.get("body")
    return (
        isinstance(body, dict)
        and ":" in str(entry.get("path", ""))
        and isinstance(body.get("contents"), list)
        and bool(body.get("tools"))
        and not str(entry.get("answer", "")).startswith("side:")
    )


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[dict[str, Any]]:
    """Resume the installed session (already under ``home``) in the real CLI for one turn
    with ``prompt``, against a ModelServer on 127.0.0.1 started here (its request log in
    ``workdir``); return the JSON bodies of the main-conversation model requests, in order.

    ``home`` must be a scratch home: its ``.gemini/settings.json`` is written when absent
    (:data:`SETTINGS`, session retention off). ``cwd`` must exist (the CLI finds the session
    by the project of the directory it runs in)."""
    from fixtures.record.modelserver import ModelServer

    log = workdir / "gemini-requests.jsonl"
    steps = [{"text": "Continued from the converted session."}]
    with ModelServer(steps, log, model=MODEL) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        proc = run(
            exe,
            home,
            Path(cwd),
            ["--resume", session_id, "-p", prompt, "-o", "json", "-m", MODEL],
            base_url=base,
        )
    (workdir / "gemini-stdout.json").write_text(proc.stdout, encoding="utf-8")
    (workdir / "gemini-stderr.txt").write_text(proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise GeminiLoaderError(
            f"gemini --resume {session_id} exited {proc.returncode}: "
            f"{(proc.stderr or proc.stdout)[-1500:]}"
        )
    bodies = []
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if is_main_request(entry):
            bodies.append(entry["body"])
    return bodies


def _response_text(response: Any) -> tuple[str, bool | None]:
    """A ``functionResponse.response`` as the text the model reads and whether it is marked an
    error: ``True`` for an ``error`` key, else ``None``: an ``output`` is no success flag (the
    CLI sends a failing shell command's as ``output``; its text speaks, as a Chat Completions
    tool message's does)."""
    if isinstance(response, dict):
        if isinstance(response.get("output"), str) and len(response) == 1:
            return response["output"], None
        if isinstance(response.get("error"), str) and len(response) == 1:
            return response["error"], True
        return json.dumps(response, ensure_ascii=False, sort_keys=True), (
            True if "error" in response else None
        )
    return json.dumps(response, ensure_ascii=False), None


def sent_call_id(call_id: str, name: str) -> str:
    """The id the CLI sends the model for a stored call id: 0.61.0 records the calls it makes
    as ``<tool name>__<id>`` and sends them without that prefix (``stripToolCallIdPrefixes``)."""
    prefix = f"{name.strip() or 'generic_tool'}__"
    return call_id[len(prefix) :] if call_id.startswith(prefix) else call_id


def request_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model saw in one Gemini request body, as conversation items in order.

    ``systemInstruction`` and the CLI's own user-role text (:data:`CLI_CONTEXT`) are
    ``system`` items; ``thought: true`` parts are ``reasoning``; call ids as sent
    (:func:`sent_call_id`).
    """
    items: list[dict[str, Any]] = []
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        text = "".join(
            str(p.get("text", "")) for p in system.get("parts") or [] if isinstance(p, dict)
        )
        items.append({"kind": "system", "text": text})
    elif isinstance(system, str):
        items.append({"kind": "system", "text": system})
    for content in body.get("contents") or []:
        if not isinstance(content, dict):
            continue
        model = content.get("role") == "model"
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                text = part["text"]
                if part.get("thought") is True:
                    kind = "reasoning"
                elif model:
                    kind = "assistant"
                elif text.startswith(CLI_CONTEXT):
                    kind = "system"
                else:
                    kind = "user"
                items.append({"kind": kind, "text": text})
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                args = call.get("args")
                items.append(
                    {
                        "kind": "tool-call",
                        "name": str(call.get("name", "")),
                        "arguments": args if args is not None else {},
                        "id": call.get("id") if isinstance(call.get("id"), str) else None,
                    }
                )
            elif isinstance(part.get("functionResponse"), dict):
                resp = part["functionResponse"]
                text, error = _response_text(resp.get("response"))
                items.append(
                    {
                        "kind": "tool-result",
                        "call_id": resp.get("id") if isinstance(resp.get("id"), str) else None,
                        "text": text,
                        "error": error,
                    }
                )
    return items


INTERRUPTED = "[The previous response was interrupted before it completed.]"
"""The CLI's own closing model turn (``INTERRUPTED_RESPONSE_PLACEHOLDER``, 0.61.0)."""


def expected_items(records: Any, prompt: str) -> list[tuple[Any, ...]]:
    """What a resumed model must see of a session's records (``Snapshot.records``), in order,
    then ``prompt``: reasoning and system text aside (the CLI sends no thoughts, and the format
    has no system message) but for a compression summary, an empty assistant text aside, a
    call's non-object arguments as the writer wraps them, a result's failure as the writer
    shows it (a failing shell command's as its output)."""
    from trajconv.codecs.gemini.writer import shown_as_error

    out: list[tuple[Any, ...]] = []
    names: dict[str, str] = {}
    for r in records:
        if r.kind == "user":
            out.append(("user", r.text))
        elif r.kind == "system" and r.text.startswith("<state_snapshot>"):
            out.append(("system", r.text))  # a compression summary is replayed
        elif r.kind == "assistant" and r.text:
            out.append(("assistant", r.text))
        elif r.kind == "tool-call":
            names[r.call.id] = r.call.name
            args = r.call.arguments
            out.append(
                ("tool-call", r.call.name, args if isinstance(args, dict) else {"input": args})
            )
        elif r.kind == "tool-result":
            shown = shown_as_error(names.get(r.result.call_id, ""), r.result)
            out.append(("tool-result", r.result.output, shown))
    if out and out[-1][0] == "tool-result":
        # geminiChat.ts closeUnansweredToolResponseTurn: history that ends with an unanswered
        # tool response gets a closing model turn, so the next prompt stays a turn of its own
        out.append(("assistant", INTERRUPTED))
    return [*out, ("user", prompt)]


def seen_items(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """:func:`request_items` in the shape of :func:`expected_items` (system text aside)."""
    out: list[tuple[Any, ...]] = []
    for it in items:
        if it["kind"] in ("user", "assistant"):
            out.append((it["kind"], it["text"]))
        elif it["kind"] == "system" and it["text"].startswith("<state_snapshot>"):
            out.append(("system", it["text"]))
        elif it["kind"] == "tool-call":
            out.append(("tool-call", it["name"], it["arguments"]))
        elif it["kind"] == "tool-result":
            out.append(("tool-result", it["text"], bool(it["error"])))
    return out


# --------------------------------------------------------------------------- continuation

#: the continuation fixture: one prompt answered over three model turns, with thought
#: summaries, a failing ``read_file`` (``status: error``) beside a succeeding call, and a shell
#: command that exits 2
CONTINUATION_CASE = ("recorded-tool-failures", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: Gemini CLI sends its
#: model a second copy of the results it replays
STILL_DIFFERENT: dict[str, int] = {"repeated-result-replayed": 3}

#: the CLI resumes a session only from inside its project folder (``--resume`` looks the id
#: up among the sessions of the current directory's project)
NEEDS_PROJECT_DIR = True

#: 0.61.0 sends no thoughts of its own sessions back to the model on resume: the resumed
#: history holds them as ``thought`` parts, but ``getHistoryTurns`` strips them for Gemini 2
#: and later models (``stripThoughts2``; the stored baseline's request carries none)
REPLAYS_REASONING = False


def install_fixture(case_dir: Path, home: Path, project: Path) -> None:
    """Place a recorded fixture (a user home holding ``.gemini/`` with one project) into
    ``home``, its project marker pointed at the scratch project folder ``project`` (the recorded
    one does not exist here; the CLI finds a project by its marker)."""
    shutil.copytree(case_dir / ".gemini", home / ".gemini", symlinks=True)
    markers = list((home / ".gemini" / "tmp").glob("*/.project_root"))
    if len(markers) != 1:
        raise GeminiLoaderError(f"{case_dir}: expected one project marker, found {len(markers)}")
    markers[0].write_text(str(project), encoding="utf-8")


# --------------------------------------------------------------------------- export check


@dataclass(frozen=True)
class GeminiCheck:
    """What the real CLI made of a written session (run on a copy of the export's home)."""

    version: str
    listed: bool
    listing: str
    requests: list[dict[str, Any]]

    @property
    def items(self) -> list[dict[str, Any]]:
        return request_items(self.requests[-1]) if self.requests else []


def _bind_project(gemini_dir: Path, session_id: str, project: Path) -> None:
    """Point the project folder holding the session at ``project`` (a copy's marker only)."""
    for chats in (gemini_dir / "tmp").glob("*/chats"):
        if any(chats.glob(f"session-*-{session_id[:8]}.json*")):
            (chats.parent / ".project_root").write_text(str(project), encoding="utf-8")
            return
    raise GeminiLoaderError(f"no session file for {session_id} under {gemini_dir / 'tmp'}")


def check(exe: Path, home_dir: Path, session_id: str, prompt: str = "Continue.") -> GeminiCheck:
    """List and resume ``session_id`` from an export's ``home/`` with the real CLI.

    The ``.gemini`` tree is copied into a scratch home and its project marker pointed at a
    scratch project folder (the session's own cwd need not exist here); the export itself is
    never touched.
    """
    source = home_dir / ".gemini"
    with tempfile.TemporaryDirectory(prefix="trajconv-gemini-") as scratch_name:
        scratch = Path(scratch_name)
        home = scratch / "home"
        project = scratch / "project"
        project.mkdir()
        shutil.copytree(source, home / ".gemini", symlinks=True)
        _bind_project(home / ".gemini", session_id, project)
        listing = list_sessions(exe, home, project)
        requests = continue_session(exe, home, session_id, str(project), prompt, scratch)
    return GeminiCheck(
        version=installed_version(exe.parents[3]) or VERSION,
        listed=f"[{session_id}]" in listing,
        listing=listing,
        requests=requests,
    )


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    prompt = "Continue."
    r = check(exe, export.out_dir / "home", export.session_id, prompt)
    same = seen_items(r.items) == expected_items(written.records, prompt)
    return {
        "ok": r.listed and len(r.requests) == 1 and same,
        "version": r.version,
        "detail": f"listed={r.listed} requests={len(r.requests)} history_matches={same}",
    }
