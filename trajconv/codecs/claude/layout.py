"""Where Claude Code keeps sessions (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``).

Facts (``codecs/claude/README.md``, observed with 2.1.332): transcripts are
``<config>/projects/<key>/<sessionId>.jsonl``, where ``<key>`` is the cwd with every character
that is not an ASCII letter or digit replaced by ``-``; sub-agents are
``<key>/<sessionId>/subagents/agent-<agentId>.jsonl`` (+ ``.meta.json``); ``--resume <id>``
finds the file in any project folder.
"""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim, safe_component
from trajconv.codecs.common import first_json
from trajconv.codecs.common import is_uuid as is_uuid
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError

CONFIG = ".claude"
PROJECTS = "projects"
SUFFIX = ".jsonl"
SUBAGENTS = "subagents"
AGENT_PREFIX = "agent-"
META_SUFFIX = ".meta.json"


#: longest project key kept whole; a longer one is cut here and given a hash suffix
MAX_KEY = 200


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def project_key(cwd: str) -> str:
    """The project folder name the CLI computes from a cwd (``/srv/a.b`` -> ``-srv-a-b``).

    As the pinned 2.1.332 bundle does it (read in the installed package): every UTF-16 code
    unit that is not an ASCII letter or digit becomes ``-``; a result over 200 units is cut
    to 200 and gets ``-`` + base 36 of the absolute 32-bit string hash (``h = h*31 + unit``).
    """
    units = memoryview(cwd.encode("utf-16-le", "surrogatepass")).cast("H")
    key = "".join(chr(u) if chr(u).isascii() and chr(u).isalnum() else "-" for u in units)
    if len(key) <= MAX_KEY:
        return key
    h = 0
    for u in units:
        h = (h * 31 + u) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return f"{key[:MAX_KEY]}-{_base36(abs(signed))}"


def config_dir(home: Path) -> Path:
    """``home`` may be a user home (holding ``.claude``) or the config folder itself."""
    if (home / PROJECTS).is_dir() or home.name == CONFIG:
        return home
    if (home / CONFIG).is_dir():
        return home / CONFIG
    return home


def transcripts(config: Path) -> list[Path]:
    """Every main transcript ``projects/<key>/<uuid>.jsonl`` under a config folder."""
    found = []
    for project in listing(config / PROJECTS):
        if not project.is_dir() or project.is_symlink():
            continue
        for path in sorted(project.glob(f"*{SUFFIX}")):
            if path.is_file() and not path.is_symlink() and is_uuid(path.stem):
                found.append(path)
    return found


def subagent_files(transcript: Path, links: list[Path] | None = None) -> list[Path]:
    """``<id>/subagents/agent-*.jsonl`` beside a main transcript (the 2.1.x layout).

    As for main transcripts, a symbolic link is not followed (issue 34: one to a
    credentials file was copied into the Snapshot): a linked folder or file is left out
    and added to ``links``, for the reader to name."""
    folder = transcript.parent / transcript.stem / SUBAGENTS
    linked = [f for f in (folder.parent, folder) if f.is_symlink()]
    if linked:
        if links is not None:
            links.append(linked[0])
        return []
    found = []
    for path in listing(folder, f"{AGENT_PREFIX}*{SUFFIX}"):
        if path.is_symlink():
            if links is not None:
                links.append(path)
        elif path.is_file():
            found.append(path)
    return found


def sidecar(path: Path, links: list[Path] | None = None) -> Path | None:
    """A sidecar file beside a transcript when it is a regular file; a symbolic link is
    not followed (added to ``links``)."""
    if path.is_symlink():
        if links is not None:
            links.append(path)
        return None
    return path if path.is_file() else None


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


def claims(path: Path) -> Claim | None:
    """A transcript (``<uuid>.jsonl`` in ``projects/<key>/``, or one whose first line is a
    Claude Code line), a sub-agent's ``agent-*.jsonl``, a project folder, a config folder
    (``.claude`` holding ``projects/``) or a user home holding one."""
    if path.is_file():
        if path.suffix != SUFFIX:
            return None
        placed = path.parent.parent.name == PROJECTS or path.parent.name == SUBAGENTS
        if placed and (is_uuid(path.stem) or is_subagent(path)):
            return Claim(CERTAIN, "session", (path.stem,))
        first = first_json(path) if is_uuid(path.stem) else None
        if first is not None and "sessionId" in first and "type" in first:
            return Claim(LIKELY, "session", (path.stem,))
        return None
    if path.parent.name == PROJECTS and any(is_uuid(p.stem) for p in path.glob(f"*{SUFFIX}")):
        return Claim(CERTAIN, "home")
    config = config_dir(path)
    if (config / PROJECTS).is_dir() and (config.name == CONFIG or transcripts(config)):
        return Claim(CERTAIN, "home")
    return None
