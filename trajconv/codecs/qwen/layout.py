"""Where Qwen Code keeps sessions and how it names projects.

Facts from ``@qwen-code/qwen-code`` 0.24.4 (``chunks/chunk-EL2S73QY.js`` ``Storage``,
``chunks/chunk-JSVXABP6.js`` ``sanitizeCwd``) and the CLI's own runs here:

* the global folder is ``$QWEN_HOME`` (else ``~/.qwen``); sessions live under the runtime
  folder, ``$QWEN_RUNTIME_DIR`` when set, else the global folder;
* a project folder is ``projects/<cwd with every character outside [A-Za-z0-9] as "-">``
  (lower-cased first on Windows), sessions in its ``chats/<session id>.jsonl``;
* every record of a session file carries ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``,
  ``type`` (``user`` | ``assistant`` | ``tool_result`` | ``system``) and ``cwd``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import pick_session
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError, UsageError

DIR = ".qwen"
PROJECTS = "projects"
CHATS = "chats"
SUBAGENTS = "subagents"
SUFFIX = ".jsonl"
#: the longest file name; a longer project folder name cannot be made (the CLI does not
#: shorten it, and then keeps no session: observed with 0.24.4)
MAX_NAME = 255
RECORD_TYPES = ("user", "assistant", "tool_result", "system")


def default_home() -> Path:
    """The folder holding ``projects/``: ``$QWEN_RUNTIME_DIR``, ``$QWEN_HOME`` or ``~/.qwen``."""
    for var in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    return Path.home() / DIR


def encode_cwd(cwd: str) -> str:
    """The project folder name of ``cwd`` (``sanitizeCwd`` on POSIX)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def qwen_dir(home: Path) -> Path | None:
    """The folder holding ``projects/``: ``home`` itself, or its ``.qwen`` child."""
    if (home / PROJECTS).is_dir():
        return home
    if (home / DIR / PROJECTS).is_dir():
        return home / DIR
    return None


def first_record(path: Path) -> dict[str, object] | None:
    """The first line of a session file as an object, or None."""
    try:
        with path.open("rb") as fh:
            obj = orjson.loads(fh.readline(1 << 20))
    except (OSError, orjson.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def looks_like_session(path: Path) -> bool:
    first = first_record(path)
    return (
        first is not None
        and isinstance(first.get("sessionId"), str)
        and "parentUuid" in first
        and first.get("type") in RECORD_TYPES
    )


def session_files(home: Path) -> list[Path]:
    """Every ``projects/*/chats/*.jsonl`` under a home (user home or ``.qwen``), sorted."""
    qdir = qwen_dir(home)
    if qdir is None:
        return []
    return sorted(
        p
        for p in (qdir / PROJECTS).glob(f"*/{CHATS}/*{SUFFIX}")
        if p.is_file() and not p.is_symlink()
    )


def subagent_files(path: Path) -> list[Path]:
    """The sub-agent transcripts of the session file ``chats/<id>.jsonl``:
    ``subagents/<id>/agent-<agent id>.jsonl`` beside ``chats/``, sorted."""
    folder = path.parent.parent / SUBAGENTS / path.stem
    return [p for p in listing(folder, f"agent-*{SUFFIX}") if p.is_file() and not p.is_symlink()]


def session_id_of(path: Path) -> str:
    """The id trajconv gives a session file: its name (the CLI finds a session by it), or a
    sub-agent's agent id (``agent-<id>.jsonl``)."""
    return path.stem.removeprefix("agent-") if path.parent.parent.name == SUBAGENTS else path.stem


def claims(path: Path) -> Claim | None:
    """A session file in a ``chats/`` folder, a project's ``chats/``, or a home."""
    if path.is_file():
        if path.suffix != SUFFIX or not looks_like_session(path):
            return None
        sure = path.parent.name == CHATS and path.parent.parent.parent.name == PROJECTS
        return Claim(CERTAIN if sure else LIKELY, "session", (path.stem,))
    if path.is_dir():
        if path.name == CHATS and any(looks_like_session(p) for p in path.glob(f"*{SUFFIX}")):
            return Claim(CERTAIN, "session")
        files = session_files(path)
        if files and any(looks_like_session(p) for p in files[:5]):
            return Claim(CERTAIN, "home", tuple(p.stem for p in files))
    return None


def resolve(path: Path, session: str | None) -> Path:
    """A session file from itself, a ``chats/`` folder, or a home plus ``--session``."""
    if path.is_file():
        if not looks_like_session(path):
            raise FormatError(path, "not a Qwen Code session: no sessionId/parentUuid record")
        return path
    if path.name == CHATS and path.is_dir():
        files = sorted(p for p in path.glob(f"*{SUFFIX}") if p.is_file())
    else:
        if qwen_dir(path) is None:
            raise FormatError(path, f"not a Qwen Code session file or home (no {PROJECTS}/)")
        files = session_files(path)
    if session is not None:  # a sub-agent's transcript is a session too
        files += [sub for p in files for sub in subagent_files(p)]
    picked = pick_session(path, files, session, "Qwen Code home", session_id_of)
    if picked is None:
        raise UsageError(f"no session {session!r} under {path}")
    return picked
