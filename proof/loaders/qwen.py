"""Qwen Code (npm ``@qwen-code/qwen-code``) as a native loader: install it pinned, list a
session, and resume it for one turn against the loopback model server.

Facts used here (read in the 0.24.4 bundle and observed in runs of this module):

* the CLI keeps its state in ``$QWEN_HOME`` (else ``~/.qwen``; ``Storage.getGlobalQwenDir``) and
  its sessions under the runtime folder (``$QWEN_RUNTIME_DIR``, else the same), in
  ``projects/<cwd with every non [A-Za-z0-9] as "-">/chats/<session id>.jsonl``; so every run
  gets a throw-away HOME with a ``.qwen/settings.json`` choosing OpenAI auth and turning off
  the background memory extractor (its side requests would take script steps) and usage
  statistics;
* ``OPENAI_API_KEY`` (a dummy), ``OPENAI_BASE_URL`` (the loopback server's ``/v1``) and
  ``OPENAI_MODEL`` choose the OpenAI-compatible provider: Chat Completions with streaming;
* ``qwen -p PROMPT --output-format json --yolo`` runs one headless turn; ``--resume <id>``
  continues the session whose file ``chats/<id>.jsonl`` lies in the current directory's
  project folder; ``qwen sessions list`` lists those sessions;
* the resumed request carries the stored records' ``message`` contents along the ``parentUuid``
  chain (``SessionApiHistoryAccumulator``), the CLI's start-up context (``<system-reminder>``
  text parts) prepended to the first user message, reasoning (``thought`` parts) sent again as
  ``reasoning_content``.

This module never prints and never exits; failures raise :class:`QwenLoaderError`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@qwen-code/qwen-code"
VERSION = "0.24.4"

#: folder under the tools dir that holds the npm prefix
NPM_DIR = "npm-qwen"

INSTALL_HINT = (
    "Qwen Code not installed: run `python -m proof install qwen` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)

JsonObj = dict[str, Any]


class QwenLoaderError(RuntimeError):
    """The Qwen Code CLI could not be installed, started, or did not do what was asked."""


def _root(tools: Path) -> Path:
    return tools / NPM_DIR


def installed_version(tools: Path) -> str | None:
    return npm.package_version(_root(tools), PACKAGE)


def find(tools: Path) -> Path | None:
    """The installed ``qwen`` launcher of the pinned VERSION, or None."""
    exe = _root(tools) / "node_modules" / ".bin" / "qwen"
    if exe.exists() and installed_version(tools) == VERSION:
        return exe
    return None


def install(tools: Path, *, timeout: float = 600.0) -> Path:
    """Install the pinned CLI under ``tools/npm-qwen`` (idempotent); return the launcher."""
    tools = tools.resolve()
    return npm.install_pinned(
        find, tools, NPM_DIR, f"{PACKAGE}@{VERSION}", QwenLoaderError, timeout
    )


# --------------------------------------------------------------------------- running

#: settings for a scratch home: OpenAI-compatible auth, no telemetry, no memory extraction
SETTINGS: JsonObj = {
    "security": {"auth": {"selectedType": "openai"}},
    "privacy": {"usageStatisticsEnabled": False},
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
}

#: the model named to the CLI (``OPENAI_MODEL``)
MODEL = "qwen3-coder-plus"

RUN_TIMEOUT = 240.0


def write_settings(home: Path) -> None:
    """``<home>/.qwen/settings.json`` for an offline run, unless the home has one."""
    path = home / ".qwen" / "settings.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(SETTINGS, indent=2) + "\n", encoding="utf-8")


def scratch_env(home: Path, base_url: str | None = None) -> dict[str, str]:
    """A minimal environment around a scratch HOME (nothing of the caller's, no real key)."""
    own = {
        "OPENAI_API_KEY": "trajconv-offline-dummy",
        "OPENAI_MODEL": MODEL,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    # a loopback address where nothing listens when no server is given
    own["OPENAI_BASE_URL"] = base_url or "http://127.0.0.1:9/v1"
    return npm.scratch_env(home, own)


def run(exe: Path, home: Path, cwd: Path, args: list[str], base_url: str | None = None) -> Any:
    """One ``qwen ARGS`` process in ``cwd`` with the scratch ``home``."""
    if not cwd.is_dir():
        raise QwenLoaderError(f"the session's project directory {cwd} does not exist here")
    write_settings(home)
    argv: list[str | Path] = [Path(os.path.abspath(exe)), *args]
    return npm.run(argv, cwd, scratch_env(home, base_url), RUN_TIMEOUT, QwenLoaderError)


def list_sessions(exe: Path, home: Path, cwd: Path) -> str:
    """``qwen sessions list`` output for the project at ``cwd``."""
    proc = run(exe, home, cwd, ["sessions", "list"])
    if proc.returncode != 0:
        raise QwenLoaderError(f"qwen sessions list exited {proc.returncode}: {proc.stderr[-1000:]}")
    return str(proc.stdout) + str(proc.stderr)


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed session (already under ``home``) in the real CLI for one turn
    with ``prompt`` against :func:`proof.continuation.scripted_server` (its log in
    ``workdir``); return the bodies of the model requests it answered, in order.

    ``cwd`` must exist: the CLI finds the session in the current directory's project."""
    from proof.continuation import main_bodies, scripted_server

    with scripted_server(workdir, model=MODEL) as srv:
        proc = run(
            exe,
            home,
            Path(cwd),
            ["--resume", session_id, "-p", prompt, "--output-format", "json"],
            base_url=srv.base_url,
        )
    (workdir / "qwen-stdout.json").write_text(proc.stdout, encoding="utf-8")
    (workdir / "qwen-stderr.txt").write_text(proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise QwenLoaderError(
            f"qwen --resume {session_id} exited {proc.returncode}: "
            f"{(proc.stderr or proc.stdout)[-1500:]}"
        )
    return [b for b in main_bodies(workdir / "requests.jsonl") if b.get("tools")]


#: a text part the CLI adds itself: its start-up context, the date, a hook's context
_CONTEXT_PART = re.compile(
    r"\A\s*(<system-reminder>.*</system-reminder>|<qwen:user-prompt-submit-context>.*"
    r"</qwen:user-prompt-submit-context>)\s*\Z",
    re.S,
)


def is_context_part(text: str) -> bool:
    """Whether a user text part is the CLI's own context (a whole ``<system-reminder>``)."""
    return bool(_CONTEXT_PART.match(text))


def _context_parts(texts: list[str], first: bool, last: bool) -> set[int]:
    """Which text parts of a user message are the CLI's own context, by where it puts them:
    ``getInitialChatHistory`` (0.24.4) opens the history with one user Content of
    ``<system-reminder>`` parts (MCP instructions, skills, start-up context, deferred tools),
    which ``extractCuratedHistory`` joins with the session's first user Content, so they are
    the leading whole-reminder parts of the first user message; a turn's reminders (the date)
    are prepended to the new prompt's text, so they are the whole-reminder parts right before
    the last part of the last user message. A session's own ``<system-reminder>`` text
    anywhere else is the session's."""
    ctx: set[int] = set()
    if first:
        for i, t in enumerate(texts):
            if not is_context_part(t):
                break
            ctx.add(i)
    if last and texts:
        for i in range(len(texts) - 2, -1, -1):
            if not is_context_part(texts[i]):
                break
            ctx.add(i)
    return ctx


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request, as conversation items in order.

    :func:`proof.continuation.openai_items` for everything but user messages, whose text
    parts are items of their own (``extractCuratedHistory`` joins consecutive user Contents
    into one, keeping each record's parts, and the converter sends them as the message's
    content parts): the CLI's own context parts (:func:`_context_parts`) ``system`` items,
    the rest ``user`` items."""
    from proof.continuation import openai_items

    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    items: list[JsonObj] = []
    for n, m in enumerate(messages):
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, list):
            texts = [
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
            ctx = _context_parts(texts, n == users[0], n == users[-1])
            for i, t in enumerate(texts):
                items.append({"kind": "system" if i in ctx else "user", "text": t})
            if not texts:
                items.append({"kind": "user", "text": ""})
            continue
        items += openai_items({"messages": [m]})
    return items


# --------------------------------------------------------------------------- continuation

#: the continuation fixture: reasoning, a failing ``read_file``, a shell command that exits 2,
#: a resumed turn
CONTINUATION_CASE = ("recorded-tool-failures", None)

#: ``--resume`` looks for ``<id>.jsonl`` in the project folder of the current directory
NEEDS_PROJECT_DIR = True

#: what its conversation still differs in when continued in the targets that pin it
#: (PINS_DIFFERENCES), besides the failures the model saw flagged: nothing (the CLI's
#: start-up context is system text of its own, never a record)
STILL_DIFFERENT: dict[str, int] = {}


def install_fixture(case_dir: Path, home: Path, project: Path) -> None:
    """Place a recorded fixture (a user home holding ``.qwen/projects/<project>/``) into
    ``home`` for the scratch folder ``project`` (:func:`install_for`)."""
    install_for(case_dir / ".qwen", home, project)


def install_for(qwen_dir: Path, home: Path, project: Path) -> None:
    """Copy the one project folder of ``qwen_dir/projects`` into ``home/.qwen`` for the folder
    ``project``: renamed for it and the records' ``cwd`` rewritten (the CLI takes a session
    only when its first record's cwd is the current project, and runs its tools there)."""
    from trajconv.codecs.qwen.layout import encode_cwd

    projects = sorted((qwen_dir / "projects").iterdir())
    if len(projects) != 1:
        raise QwenLoaderError(f"{qwen_dir}: expected one project folder, found {len(projects)}")
    target = home / ".qwen" / "projects" / encode_cwd(str(project))
    shutil.copytree(projects[0], target, symlinks=True)
    old = _recorded_cwd(projects[0])
    for path in target.rglob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line) if line.strip() else None
            if isinstance(obj, dict) and obj.get("cwd") == old:
                obj["cwd"] = str(project)
                line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            lines.append(line)
        path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")


def _recorded_cwd(project_dir: Path) -> str | None:
    for path in sorted(project_dir.glob("chats/*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            first = json.loads(fh.readline())
        if isinstance(first, dict) and isinstance(first.get("cwd"), str):
            return str(first["cwd"])
    return None


# --------------------------------------------------------------------------- export check


def expected_items(records: Iterable[Any], prompt: str) -> list[tuple[Any, ...]]:
    """What a resumed model must see of a session's records (``Snapshot.records``), then
    ``prompt``: from the last compression summary on (the CLI sends that history instead of
    what came before: README "What a resumed CLI sends its model"), every user text,
    reasoning, answer, call (non-object arguments as the writer wraps them) and result text, a
    background task's notification as the user message it is; other system text is not
    written.

    An answer between two user-role messages (a prompt, a result, a notification) is one
    ``model`` Content, which the CLI's OpenAI converter (``processContent``, 0.24.4) sends as
    one assistant message: its reasoning parts joined (``reasoningParts.join("")``), then its
    text parts joined (``join("")``), then its calls; the writer names each answer or
    reasoning so joined (``untranslated-message-boundary``)."""
    from trajconv.codecs.genai import SNAPSHOT
    from trajconv.codecs.qwen.writer import NOTIFICATION

    out: list[tuple[Any, ...]] = []
    thoughts: list[str] = []
    texts: list[str] = []
    calls: list[tuple[Any, ...]] = []

    def answer() -> None:
        if thoughts:
            out.append(("reasoning", "".join(thoughts)))
        if texts:
            out.append(("assistant", "".join(texts)))
        out.extend(calls)
        thoughts.clear()
        texts.clear()
        calls.clear()

    for r in records:
        if r.kind == "system" and r.text.startswith(SNAPSHOT):
            answer()
            out = [("user", r.text)]  # the summary, a user message, replaces what came before
        elif r.kind == "system" and r.text.startswith(NOTIFICATION):
            answer()
            out.append(("user", r.text))  # the CLI's own user message, which its model reads
        elif r.kind == "user" and r.text:
            answer()
            out.append(("user", r.text))
        elif r.kind == "reasoning" and r.text:
            thoughts.append(r.text)
        elif r.kind == "assistant" and r.text:
            texts.append(r.text)
        elif r.kind == "tool-call":
            args = r.call.arguments
            calls.append(
                ("tool-call", r.call.name, args if isinstance(args, dict) else {"input": args})
            )
        elif r.kind == "tool-result":
            answer()
            out.append(("tool-result", r.result.output))
    answer()
    return [*out, ("user", prompt)]


def seen_items(items: list[JsonObj]) -> list[tuple[Any, ...]]:
    """:func:`request_items` in the shape of :func:`expected_items` (system text aside)."""
    out: list[tuple[Any, ...]] = []
    for it in items:
        if it["kind"] in ("user", "assistant", "reasoning"):
            out.append((it["kind"], it["text"]))
        elif it["kind"] == "tool-call":
            out.append(("tool-call", it["name"], it["arguments"]))
        elif it["kind"] == "tool-result":
            out.append(("tool-result", it["text"]))
    return out


def verify_export(export: Export, written: Snapshot) -> JsonObj | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``): the
    export's session installed for a scratch folder, listed by ``qwen sessions list`` and
    resumed for one turn; ``None`` when the CLI is not installed here, else ``{"ok",
    "version", "detail"}``."""
    from proof import tools_dir

    exe = find(tools_dir())
    if exe is None:
        return None
    prompt = "Continue."
    with tempfile.TemporaryDirectory(prefix="trajconv-qwen-") as scratch_name:
        scratch = Path(scratch_name)
        home, project = scratch / "home", scratch / "project"
        project.mkdir()
        install_for(export.out_dir / "home" / ".qwen", home, project)
        listed = export.session_id in list_sessions(exe, home, project)
        requests = continue_session(exe, home, export.session_id, str(project), prompt, scratch)
    same = bool(requests) and seen_items(request_items(requests[-1])) == expected_items(
        written.records, prompt
    )
    return {
        "ok": listed and len(requests) == 1 and same,
        "version": VERSION,
        "detail": f"listed={listed} requests={len(requests)} history_matches={same}",
    }
