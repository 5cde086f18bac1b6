"""Claude Code's real CLI as a native loader: install it pinned, resume a session offline.

Facts used (``codecs/claude/README.md`` "Offline loader check", observed with 2.1.332,
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

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools
from trajconv.codecs.claude import layout, native
from trajconv.snapshot.models import Snapshot

if TYPE_CHECKING:
    from trajconv.codecs.base import Export

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


#: the switches that keep a run offline and quiet
_OFFLINE = {
    "TERM": "dumb",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def scratch_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment around the scratch ``home``: offline switches on, no real keys."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    own = {"TMPDIR": str(home / "tmp"), **_OFFLINE}
    return npm.scratch_env(home, {**own, **(extra or {})})


def run(
    exe: Path, argv: list[str], home: Path, cwd: Path, extra: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with ``argv`` in ``cwd`` around the scratch ``home``.

    Stdin is an empty pipe, not ``/dev/null``: with ``-p`` the CLI appends what stdin holds
    to the prompt, so the prompt is exactly what it was given whatever ``/dev/null`` is (on
    this machine it once was a regular file others wrote to, and a continued prompt arrived
    as ``"Please go on from here.\\n\\x00\\x00..."``)."""
    env = scratch_env(home, extra)
    return npm.run([exe, *argv], cwd, env, timeout, ClaudeLoaderError, stdin="")


def version(exe: Path, timeout: float = 60.0) -> str:
    """``claude --version`` with a throw-away home, e.g. ``"2.1.332 (Claude Code)"``."""
    return npm.cli_version(exe, scratch_env, ClaudeLoaderError, timeout)


def find(tools_dir: Path) -> Path | None:
    """The pinned ``claude`` under ``tools_dir`` if it runs and reports VERSION, else None."""
    exe = binary_path(tools_dir)
    with contextlib.suppress(ClaudeLoaderError):
        if exe.exists() and version(exe).split()[0] == VERSION:
            return exe
    return None


def install(tools_dir: Path, timeout: float = 600.0) -> Path:
    """Install PACKAGE@VERSION (and its platform binary package) into ``<tools_dir>/npm-claude``.

    Idempotent; npm runs with a scratch HOME (see :mod:`proof.npm`).
    """
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, ClaudeLoaderError, timeout)


# --------------------------------------------------------------------------- continuation


#: the scripted answer to the continued turn
REPLY = "Continued by the scripted model."

#: the fixture session whose stored baseline makes Claude Code a continuation source
#: (``fixtures/claude/recorded-continuation``: two turns, thinking, a failed Read, a shell
#: command exiting 2)
CONTINUATION_CASE = ("recorded-continuation", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: its environment
#: attachment is kept in artifacts, not records
STILL_DIFFERENT: dict[str, int] = {"context-not-projected": 1}


def install_fixture(case_dir: Path, home: Path) -> None:
    """Place a recorded fixture (a HOME holding ``.claude/projects/``) into ``home``."""
    shutil.copytree(case_dir / layout.CONFIG, home / layout.CONFIG, symlinks=True)


def continue_session(
    exe: Path,
    home: Path,
    session_id: str,
    cwd: str,
    prompt: str,
    workdir: Path,
    timeout: float = 180.0,
) -> list[JsonObj]:
    """Resume the installed session (already under ``home``) for one turn with ``prompt``.

    Runs ``claude --resume <id> -p PROMPT`` with ``HOME=home`` against a ModelServer on
    127.0.0.1 (request log ``workdir/requests.jsonl``), in ``cwd`` when it exists here, else in
    a scratch folder (``--resume`` finds the transcript in any project folder). Returns the
    JSON bodies of the main-conversation ``POST /v1/messages`` requests in order: those that
    offer tools (side requests such as title generation offer none); token counting is left
    out. The CLI appends the new turn to the transcript, as it does for a user.
    """
    from fixtures.record.modelserver import ModelServer

    workdir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(cwd) if cwd and Path(cwd).is_dir() else workdir / "cwd"
    run_dir.mkdir(parents=True, exist_ok=True)
    log = workdir / "requests.jsonl"
    with ModelServer([{"text": REPLY}], log) as srv:
        extra = {
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{srv.port}",
            "ANTHROPIC_API_KEY": DUMMY_KEY,
        }
        proc = run(exe, ["--resume", session_id, "-p", prompt], home, run_dir, extra, timeout)
    if proc.returncode != 0 or REPLY not in proc.stdout:
        raise ClaudeLoaderError(
            f"claude --resume {session_id} failed (rc {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    bodies: list[JsonObj] = []
    for raw in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        body = entry.get("body")
        path = str(entry.get("path", "")).split("?", 1)[0]
        if (
            entry.get("method") == "POST"
            and path.endswith("/messages")
            and isinstance(body, dict)
            and body.get("tools")
        ):
            bodies.append(body)
    return bodies


#: Claude Code 2.1.332 sends the thinking blocks of its own sessions back (with their
#: signatures) on every assistant message of a resumed conversation (the baseline request of
#: ``recorded-continuation`` carries both turns' thinking)
REPLAYS_REASONING = True

#: what the project's recorder puts in place of the CLI's own long texts in attachment lines
#: (``fixtures/record/claude.py``); a resumed fixture sends that placeholder where the CLI
#: would send its reminder
_LEFT_OUT = re.compile(r"^\[CLI text left out: \d+ chars, sha256 [0-9a-f]+\]\s*$")


def unwrap_user(text: str) -> tuple[str, str | None]:
    """A user text block the CLI added itself is all context (core ``""``): its
    ``<system-reminder>`` blocks (rendered attachments such as the commit attribution it
    replays on resume), command echoes, task notifications; the user's prompt is sent
    unwrapped, as typed."""
    if native.HARNESS_TEXT.match(text) or _LEFT_OUT.match(text):
        return "", text
    return text, None


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Messages API request body, as conversation items in order.

    ``system`` blocks and ``role: system`` messages (2.1.332 sends mid-conversation system
    turns) are system items; user text blocks are user items (the CLI's own context among
    them is told apart by :func:`unwrap_user`), except the CLI's context in the last user
    message, which belongs to the turn being asked (a system item); ``tool_result`` ->
    tool-result (``is_error`` absent = success); ``text`` / ``thinking`` / ``tool_use`` of
    assistant messages -> assistant / reasoning / tool-call. Images and redacted thinking are
    left out.
    """
    items: list[JsonObj] = []
    system = body.get("system")
    if isinstance(system, str):
        items.append({"kind": "system", "text": system})
    elif isinstance(system, list):
        text = native.text_of(system)
        if text:
            items.append({"kind": "system", "text": text})
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for n, msg in enumerate(messages):
        role = msg.get("role")
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                if role == "assistant":
                    items.append({"kind": "assistant", "text": block["text"]})
                elif role == "system":
                    items.append({"kind": "system", "text": block["text"]})
                elif n == last_user and not unwrap_user(block["text"])[0]:
                    # context the CLI sends beside the turn being asked (a reminder it has
                    # not sent in the session yet) belongs to that turn, like the system
                    # prompt
                    items.append({"kind": "system", "text": block["text"]})
                else:
                    items.append({"kind": "user", "text": block["text"]})
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                items.append({"kind": "reasoning", "text": block["thinking"]})
            elif btype == "tool_use":
                items.append(
                    {
                        "kind": "tool-call",
                        "name": str(block.get("name")),
                        "arguments": block.get("input"),
                        "id": block.get("id") if isinstance(block.get("id"), str) else None,
                    }
                )
            elif btype == "tool_result":
                call_id = block.get("tool_use_id")
                items.append(
                    {
                        "kind": "tool-result",
                        "call_id": call_id if isinstance(call_id, str) else None,
                        "text": native.text_of(block.get("content")) or "",
                        "error": block.get("is_error") is True,
                    }
                )
    return items


def _text(kind: str, text: str) -> str:
    """A user text as compared: the CLI merges consecutive user messages into one and ends
    each merged text but the last with a newline, which is no change to the conversation."""
    return text.rstrip("\n") if kind == "user" else text


def conversation(items: list[JsonObj]) -> list[tuple[Any, ...]]:
    """Request items without the CLI's system context, as comparable tuples."""
    out: list[tuple[Any, ...]] = []
    for it in items:
        kind = it["kind"]
        if kind == "user" and not unwrap_user(it["text"])[0]:
            continue  # the CLI's own context
        if kind in ("user", "assistant", "reasoning"):
            out.append((kind, _text(kind, it["text"])))
        elif kind == "tool-call":
            out.append((kind, it["name"], it["arguments"]))
        elif kind == "tool-result":
            out.append((kind, it["text"], it["error"]))
    return out


def snapshot_items(snap: Snapshot) -> list[tuple[Any, ...]]:
    """A Snapshot's conversation in the shape of :func:`conversation` (results: text and
    whether they failed)."""
    out: list[tuple[Any, ...]] = []
    for r in snap.records:
        if r.kind in ("user", "assistant", "reasoning"):
            out.append((r.kind, _text(r.kind, r.text)))
        elif r.kind == "tool-call":
            out.append((r.kind, r.call.name, r.call.arguments))
        elif r.kind == "tool-result":
            out.append((r.kind, r.result.output, r.result.ok is False))
    return out


def check(exe: Path, home_dir: Path, session_id: str, written: Snapshot) -> JsonObj:
    """Resume an export (``home_dir`` = its ``home/``, copied first) for one turn; ``ok`` when
    the first model request carries exactly the conversation ``written`` (the export read back
    by the claude reader) holds, in order, then the new prompt."""
    expected = snapshot_items(written)
    if expected and expected[-1][0] != "assistant":
        expected.append(("assistant", "No response requested."))  # the CLI's own placeholder
    prompt = "Please go on from here."
    with tempfile.TemporaryDirectory(prefix="trajconv-claude-check-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(home_dir, home, symlinks=True)
        bodies = continue_session(
            exe, home, session_id, written.session.cwd or "", prompt, Path(tmp) / "work"
        )
    seen = conversation(request_items(bodies[0])) if bodies else []
    return {
        "ok": seen == [*expected, ("user", prompt)],
        "requests": len(bodies),
        "items": len(seen),
        "expected": len(expected) + 1,
    }


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    r = check(exe, export.out_dir / "home", export.session_id, written)
    return {
        "ok": r["ok"],
        "version": VERSION,
        "detail": f"resumed; request items={r['items']} expected={r['expected']}",
    }
