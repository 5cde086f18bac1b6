"""Where Aider keeps a session and how its history file is laid out.

Facts from ``aider-chat`` 0.86.2 (``aider/io.py`` ``InputOutput``, ``aider/utils.py``
``split_chat_history_markdown``, ``aider/args.py``) and its runs here:

* the history is ``.aider.chat.history.md`` in the folder Aider runs in (the git root, or the
  current folder with ``--no-git``; ``--chat-history-file`` names another), appended to by
  every run; there is no session id and no home folder;
* each run appends ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (local time, no zone);
* what the user typed: every line as ``#### <line>`` with a Markdown hard break (two spaces)
  at its end; Aider's own output (warnings, "Applied edit to ...", token counts, answers to
  its questions): every line as ``> <line>`` with the hard break; the model's answer: its
  text as it is, after a blank line;
* ``--restore-chat-history`` sends the model every ``####`` run as a user message and every
  other run of lines as an assistant message; ``>`` lines and ``# `` lines are not sent.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from trajconv.codecs.base import CERTAIN, POSSIBLE, Claim
from trajconv.errors import UsageError

HISTORY = ".aider.chat.history.md"
HEADER = "# aider chat started at "
USER = "#### "
TOOL = "> "
STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
#: folders never searched for histories (large, or no repository's own)
SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".cache"})
MAX_DEPTH = 4


def session_id_of(stamp: str | None) -> str | None:
    """The session id trajconv gives a history: its first run's start, ``aider-YYYYMMDD-HHMMSS``
    (Aider has no session id; the stamp is the history's own first line)."""
    found = STAMP.fullmatch(stamp.strip()) if stamp else None
    if found is None:
        return None
    y, mo, d, h, mi, s = found.groups()
    return f"aider-{y}{mo}{d}-{h}{mi}{s}"


def stamp_of(session_id: str) -> str | None:
    """The run start a session id of :func:`session_id_of` stands for (for a round trip)."""
    found = re.fullmatch(r"aider-(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)", session_id)
    if found is None:
        return None
    y, mo, d, h, mi, s = found.groups()
    return f"{y}-{mo}-{d} {h}:{mi}:{s}"


def _first_line(path: Path) -> str | None:
    """The history's first line that is not blank (at most 4 KiB of it)."""
    try:
        with path.open("rb") as handle:
            for _ in range(64):
                line = handle.readline(4096)
                if not line:
                    break
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                if text.strip():
                    return text
    except OSError:
        return None
    return None


def first_stamp(path: Path) -> str | None:
    """The start time of the history's first run, from its first line."""
    line = _first_line(path)
    return line[len(HEADER) :].strip() if line and line.startswith(HEADER) else None


def session_id(path: Path) -> tuple[str, bool] | None:
    """The session id of a history and whether it is derived: its first run's start
    (:func:`session_id_of`), else (a history that opens without a header, as one trajconv
    wrote for a session with no start time) ``aider-`` and 12 hex digits of the sha256 of its
    first line, which an appending CLI never changes; ``None`` for an empty file."""
    line = _first_line(path)
    return None if line is None else id_of_first_line(line)


def id_of_first_line(line: str) -> tuple[str, bool]:
    """:func:`session_id` from a history's first line that is not blank."""
    stamped = session_id_of(line[len(HEADER) :]) if line.startswith(HEADER) else None
    if stamped is not None:
        return stamped, False
    return "aider-" + hashlib.sha256(line.encode("utf-8")).hexdigest()[:12], True


def histories(root: Path, depth: int = MAX_DEPTH) -> Iterator[Path]:
    """Every history file at or below ``root`` (``depth`` folders deep, links not followed)."""
    if root.is_file():
        if root.name == HISTORY:
            yield root
        return
    stack = [(root, 0)]
    while stack:
        folder, level = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == HISTORY and entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
            elif level < depth and entry.is_dir(follow_symlinks=False) and entry.name not in SKIP:
                stack.append((Path(entry.path), level + 1))


def claims(path: Path) -> Claim | None:
    if path.name == HISTORY and path.is_file():
        return Claim(CERTAIN, "session")
    if path.is_dir() and (path / HISTORY).is_file():
        return Claim(CERTAIN, "session")
    if path.is_dir() and next(histories(path, depth=2), None) is not None:
        return Claim(POSSIBLE, "home")
    return None


def resolve(path: Path, session: str | None) -> Path:
    """The history file ``path`` names (a history, a repository, or a folder holding several
    with ``session``); a usage error naming the choices otherwise."""
    if path.is_file():  # any file: Aider's --chat-history-file names another
        return path
    found = list(histories(path))
    if not found:
        raise UsageError(f"no {HISTORY} at or below {path}")
    if session is None:
        if len(found) == 1:
            return found[0]
        ids = [str((session_id(p) or (str(p),))[0]) for p in found[:5]]
        raise UsageError(
            f"{path} holds {len(found)} Aider histories; pick one with --session ({', '.join(ids)})"
        )
    for p in found:
        if (session_id(p) or ("",))[0] == session or str(p) == session:
            return p
    raise UsageError(f"no Aider session {session!r} at or below {path}")
