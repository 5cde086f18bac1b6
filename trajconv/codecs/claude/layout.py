"""Where Claude Code keeps sessions (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``).

Facts (``shared/formats/claude-code.md`` §1, observed with 2.1.332): transcripts are
``<config>/projects/<key>/<sessionId>.jsonl``, where ``<key>`` is the cwd with every character
that is not an ASCII letter or digit replaced by ``-``; sub-agents are
``<key>/<sessionId>/subagents/agent-<agentId>.jsonl`` (+ ``.meta.json``); ``--resume <id>``
finds the file in any project folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from trajconv.codecs.base import safe_component
from trajconv.codecs.grok.layout import is_uuid as is_uuid
from trajconv.errors import FormatError

CONFIG = ".claude"
PROJECTS = "projects"
SUFFIX = ".jsonl"
SUBAGENTS = "subagents"
AGENT_PREFIX = "agent-"
META_SUFFIX = ".meta.json"

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def default_home() -> Path:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env) if env else Path.home() / CONFIG


def project_key(cwd: str) -> str:
    """The project folder name the CLI computes from a cwd (``/srv/a.b`` -> ``-srv-a-b``)."""
    return _NOT_ALNUM.sub("-", cwd)


def config_dir(home: Path) -> Path:
    """``home`` may be a user home (holding ``.claude``) or the config folder itself."""
    if (home / PROJECTS).is_dir() or home.name == CONFIG:
        return home
    if (home / CONFIG).is_dir():
        return home / CONFIG
    return home


def transcripts(config: Path) -> list[Path]:
    """Every main transcript ``projects/<key>/<uuid>.jsonl`` under a config folder."""
    root = config / PROJECTS
    if not root.is_dir():
        return []
    found = []
    for project in sorted(root.iterdir()):
        if not project.is_dir() or project.is_symlink():
            continue
        for path in sorted(project.glob(f"*{SUFFIX}")):
            if path.is_file() and not path.is_symlink() and is_uuid(path.stem):
                found.append(path)
    return found


def subagent_files(transcript: Path) -> list[Path]:
    """``<id>/subagents/agent-*.jsonl`` beside a main transcript (the 2.1.x layout)."""
    folder = transcript.parent / transcript.stem / SUBAGENTS
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"{AGENT_PREFIX}*{SUFFIX}") if p.is_file())


def is_subagent(path: Path) -> bool:
    return path.name.startswith(AGENT_PREFIX) and path.suffix == SUFFIX


def resolve(path: Path, session: str | None) -> Path:
    """A transcript from a ``.jsonl`` path, or a home / config / project folder + ``--session``."""
    if path.is_file():
        if path.suffix == SUFFIX:
            return path
        raise FormatError(path, f"not a Claude Code transcript: expected a {SUFFIX} file")
    if not path.is_dir():
        raise FormatError(path, "no such file or folder")
    if session is None:
        found = [p for p in path.glob(f"*{SUFFIX}") if is_uuid(p.stem)]
        found = found or transcripts(config_dir(path))
        if len(found) == 1:
            return found[0]
        raise FormatError(
            path,
            f"this folder holds {len(found)} Claude Code sessions; pick one with --session ID",
        )
    safe_component(session, "session id", path)
    candidates = [path / f"{session}{SUFFIX}"]
    candidates += [t for t in transcripts(config_dir(path)) if t.stem == session]
    for cand in candidates:
        if cand.is_file():
            return cand
    raise FormatError(path, f"no session {session!r} under {path}")
