"""Where the Pi coding agent keeps sessions, and how a session file is named.

Facts from the installed ``@mariozechner/pi-coding-agent`` 0.73.1 (``dist/config.js``,
``dist/core/session-manager.js``; README "Where sessions live"):

* the agent folder is ``$PI_CODING_AGENT_DIR`` (a leading ``~`` expanded) or
  ``~/.pi/agent``; sessions live in its ``sessions/`` folder;
* one folder per cwd: ``--`` + the cwd without its leading ``/`` (or ``\\``), every ``/``,
  ``\\`` and ``:`` replaced by ``-``, + ``--`` (``getDefaultSessionDir``); the mapping loses
  information (``/a-b`` and ``/a/b`` share a folder), so the cwd is read from the header;
* a file per session: ``<ISO time with : and . as ->_<session uuid>.jsonl``, whose first line
  is the header ``{"type": "session", "id": <uuid>, ...}`` (``newSession``); pi takes a file
  for a session when that first line (its first 512 bytes) parses with ``type == "session"``
  and a string ``id`` (``isValidSessionFile``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import pick_session
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError, UsageError

AGENT_DIR = Path(".pi") / "agent"
SESSIONS = "sessions"
ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"
MAX_NAME = 255

_FILE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)_(?P<id>[0-9A-Za-z][0-9A-Za-z-]*)\.jsonl$"
)


def default_home() -> Path:
    """The agent folder: ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent`` (``getAgentDir``)."""
    env = os.environ.get(ENV_AGENT_DIR)
    if env:
        return Path(env).expanduser()
    return Path.home() / AGENT_DIR


def folder_for_cwd(cwd: str) -> str:
    """The session folder name pi uses for ``cwd`` (``getDefaultSessionDir``)."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def short_folder(cwd: str) -> str:
    """A folder name of at most 255 bytes for a cwd whose own one is longer (pi cannot make
    that one): its first 200 characters and 16 hex digits of its sha256 (trajconv's, not pi's)."""
    import hashlib

    digest = hashlib.sha256(cwd.encode()).hexdigest()[:16]
    head = folder_for_cwd(cwd)[:-2].encode()[:200].decode("utf-8", "ignore")
    return f"{head}-{digest}--"


def file_name(time_iso: str, session_id: str) -> str:
    """``<time>_<id>.jsonl`` for an ISO time like ``2026-01-01T00:00:00.000Z``."""
    return f"{re.sub(r'[:.]', '-', time_iso)}_{session_id}.jsonl"


def id_of_file(path: Path) -> str | None:
    """The session id a file name carries, or None when it is not pi's pattern."""
    m = _FILE.match(path.name)
    return m.group("id") if m else None


def agent_dir_of(path: Path) -> Path | None:
    """``path`` when it is an agent folder (holds ``sessions/``), its ``.pi/agent`` when it is a
    user home, else None: ``--home`` takes either."""
    if (path / SESSIONS).is_dir() and not (path / AGENT_DIR / SESSIONS).is_dir():
        return path
    if (path / AGENT_DIR / SESSIONS).is_dir():
        return path / AGENT_DIR
    return None


def session_files(agent: Path) -> list[Path]:
    """The ``*.jsonl`` files one level below ``<agent>/sessions``, by path."""
    return [p for p in listing(agent / SESSIONS, "*/*.jsonl") if p.is_file()]


def header_of(path: Path) -> dict[str, object] | None:
    """The session header (first line) when it is pi's, as ``isValidSessionFile`` reads it."""
    try:
        with path.open("rb") as fh:
            first = fh.read(512).split(b"\n", 1)[0]
        value = json.loads(first)
    except (OSError, ValueError):
        return None
    if (
        isinstance(value, dict)
        and value.get("type") == "session"
        and isinstance(value.get("id"), str)
    ):
        return value
    return None


def _is_cwd_folder(path: Path) -> bool:
    """A folder named ``--<cwd>--`` holding at least one ``<time>_<id>.jsonl`` (names only)."""
    name = path.name
    if not (name.startswith("--") and name.endswith("--") and len(name) >= 4 and path.is_dir()):
        return False
    return any(id_of_file(p) is not None for p in path.glob("*.jsonl"))


def claims(path: Path) -> Claim | None:
    """A pi session file (its name and header), a cwd folder of ``sessions/``, an agent folder
    or a user home holding one."""
    if path.is_file():
        if path.suffix != ".jsonl":
            return None
        header = header_of(path)
        if header is None or "cwd" not in header:
            return None
        sid = str(header["id"])
        named = id_of_file(path) == sid
        return Claim(CERTAIN if named else LIKELY, "session", (sid,))
    if not path.is_dir():
        return None
    agent = agent_dir_of(path)
    if agent is not None:
        if agent.parts[-2:] == AGENT_DIR.parts:
            return Claim(CERTAIN, "home")
        # another harness's home may hold a sessions/ folder too (Grok's): pi's has cwd
        # folders named --<cwd>-- holding <time>_<id>.jsonl files
        if any(_is_cwd_folder(d) for d in (agent / SESSIONS).iterdir()):
            return Claim(LIKELY, "home")
        return None
    if _is_cwd_folder(path):
        ids = tuple(i for p in sorted(path.glob("*.jsonl")) if (i := id_of_file(p)) is not None)
        if ids:
            return Claim(CERTAIN if path.parent.name == SESSIONS else LIKELY, "store", ids)
    return None


def resolve(path: Path, session: str | None) -> Path:
    """A session file from the file itself, a cwd's session folder, an agent folder or a user
    home (with ``--session`` when it holds more than one)."""
    if path.is_file():
        if path.suffix != ".jsonl":
            raise FormatError(path, "not a Pi session: expected a .jsonl session file")
        return path
    agent = agent_dir_of(path)
    if agent is not None:
        files = session_files(agent)
        where = agent / SESSIONS
    elif path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        where = path
        if not files:
            raise FormatError(path, f"not a Pi session folder or home (no {SESSIONS}/)")
    else:
        raise FormatError(path, "no such file or folder")
    picked = pick_session(path, files, session, "Pi folder", id_of_file)
    if picked is not None:
        return picked
    for p in files:
        header = header_of(p)
        if header is not None and header.get("id") == session:
            return p
    raise UsageError(f"no session {session!r} under {where}")
