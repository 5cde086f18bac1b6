"""Where Gemini CLI keeps sessions and how it names projects.

Facts from ``@google/gemini-cli`` 0.61.0 (``bundle/chunk-5FZXKDXH.js``: ``ProjectRegistry``,
``getProjectHash``, ``chatRecordingService``) and the CLI's own runs here:

* state dir ``$GEMINI_CLI_HOME/.gemini`` (else ``~/.gemini``);
* ``projects.json`` = ``{"projects": {"<absolute cwd>": "<slug>"}}``; the slug is the lower-cased
  basename with every run of non ``[a-z0-9]`` turned into ``-`` (``project`` when empty),
  ``-1``, ``-2`` … on collision; ``tmp/<slug>/.project_root`` holds the owning path, and the
  CLI also finds a project by scanning those markers when ``projects.json`` lacks it;
* older CLIs used ``tmp/<sha256 hex of the cwd>/`` (the ``projectHash`` of every session);
* sessions: ``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of id>.jsonl`` (older:
  ``.json`` documents); a ``--resume`` in a later minute writes a second file for the same id.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import orjson

from trajconv.codecs.base import CERTAIN, LIKELY, Claim, safe_component
from trajconv.codecs.common import first_json, several_sessions
from trajconv.codecs.layouts import listing
from trajconv.errors import FormatError

DIR = ".gemini"
TMP = "tmp"
CHATS = "chats"
PROJECTS = "projects.json"
MARKER = ".project_root"
_HASH = re.compile(r"[0-9a-f]{64}")


def default_home() -> Path:
    env = os.environ.get("GEMINI_CLI_HOME")
    return (Path(env) if env else Path.home()) / DIR


def gemini_dir(home: Path) -> Path:
    """The ``.gemini`` folder from a user home or the folder itself."""
    if (home / DIR).is_dir() and not (home / TMP).is_dir():
        return home / DIR
    return home


def project_hash(cwd: str) -> str:
    """``projectHash`` as the CLI computes it: sha256 hex of the project root path."""
    return hashlib.sha256(cwd.encode()).hexdigest()


def slugify(cwd: str) -> str:
    base = Path(cwd).name.lower()
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", base)).strip("-")
    return slug or "project"


def registry(gdir: Path) -> dict[str, str]:
    """``projects.json`` as ``{cwd: slug}`` (empty when absent or unreadable)."""
    try:
        data = orjson.loads((gdir / PROJECTS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)}


def project_cwd(project_dir: Path, hints: dict[str, str] | None = None) -> str | None:
    """The cwd a ``tmp/<project>`` folder stands for: its marker, the registry, or (for a
    legacy hash folder) the registry path whose hash it is."""
    try:
        text = (project_dir / MARKER).read_text("utf-8").strip()
        if text:
            return text
    except (OSError, UnicodeDecodeError):
        pass
    reg = hints if hints is not None else registry(project_dir.parent.parent)
    for cwd, slug in reg.items():
        if slug == project_dir.name:
            return cwd
    if _HASH.fullmatch(project_dir.name):
        for cwd in reg:
            if project_hash(cwd) == project_dir.name:
                return cwd
    return None


def session_files(gdir: Path) -> list[Path]:
    """Every ``tmp/*/chats/session-*.json[l]`` file, sorted."""
    return [
        p
        for p in listing(gdir / TMP, f"*/{CHATS}/session-*")
        if p.suffix in (".json", ".jsonl") and p.is_file() and not p.is_symlink()
    ]


def header_id(path: Path) -> str | None:
    """The ``sessionId`` of a session file's first line (legacy documents: the document's)."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(1 << 20)
            if path.suffix == ".json":
                first += fh.read(64 * 1024**2)
        obj = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return None
    sid = obj.get("sessionId") if isinstance(obj, dict) else None
    return sid if isinstance(sid, str) else None


def files_of(path: Path, sid: str) -> list[Path]:
    """The files of session ``sid`` beside ``path`` (one per resume minute), oldest first."""
    chats = path.parent
    return sorted(
        p
        for p in chats.glob(f"session-*-{sid[:8]}.json*")
        if p.suffix in (".json", ".jsonl") and header_id(p) == sid
    ) or [path]


def resolve(path: Path, session: str | None) -> list[Path]:
    """A session's files from one of them, or from a home / ``.gemini`` plus ``--session``."""
    if path.is_file():
        sid = header_id(path)
        if sid is None:
            raise FormatError(path, "not a Gemini CLI session: no sessionId on the first line")
        return files_of(path, sid)
    chats = path if path.name == CHATS else path / CHATS
    if chats.is_dir() and not (path / TMP).is_dir():
        return _in_chats(path, chats, session)
    gdir = gemini_dir(path)
    if not (gdir / TMP).is_dir():
        raise FormatError(path, f"not a Gemini CLI session file or home (no {TMP}/ folder)")
    if session is None:
        ids = sorted({sid for p in session_files(gdir) if (sid := header_id(p)) is not None})
        if len(ids) != 1:
            raise several_sessions(path, "Gemini CLI", ids)
        session = ids[0]
    safe_component(session, "session id", path)
    for p in session_files(gdir):
        if (
            p.name.endswith((f"-{session[:8]}.jsonl", f"-{session[:8]}.json"))
            and header_id(p) == session
        ):
            return files_of(p, session)
    raise FormatError(path, f"no session {session!r} under {gdir / TMP}")


def _in_chats(path: Path, chats: Path, session: str | None) -> list[Path]:
    """The session in a project's ``chats/`` folder: the one there, or ``session``."""
    found: dict[str, Path] = {}
    for p in sorted(chats.glob("session-*")):
        if p.suffix in (".json", ".jsonl") and p.is_file() and not p.is_symlink():
            sid = header_id(p)
            if sid is not None and (session is None or sid == session):
                found.setdefault(sid, p)
    if len(found) == 1:
        sid, first = next(iter(found.items()))
        return files_of(first, sid)
    if not found:
        raise FormatError(
            path, f"no {'session ' + repr(session) if session else 'session'} in {chats}"
        )
    raise FormatError(path, "this folder holds several sessions; pick one with --session ID")


def _is_session_name(path: Path) -> bool:
    return path.name.startswith("session-") and path.suffix in (".json", ".jsonl")


def claims(path: Path) -> Claim | None:
    """A session file (``chats/session-*.jsonl``, or one whose first line has ``sessionId``
    and ``projectHash``), a project's ``chats/`` folder, a ``.gemini`` folder holding
    ``tmp/`` or a user home holding one."""
    if path.is_file():
        if _is_session_name(path) and path.parent.name == CHATS:
            return Claim(CERTAIN, "session")
        first = first_json(path) if path.suffix == ".jsonl" else None
        if first is not None and "sessionId" in first and "projectHash" in first:
            return Claim(LIKELY, "session")
        return None
    chats = path if path.name == CHATS else path / CHATS
    if chats.is_dir() and any(_is_session_name(p) for p in chats.iterdir()):
        return Claim(CERTAIN, "session")
    gdir = gemini_dir(path)
    if (gdir / TMP).is_dir() and (gdir.name == DIR or (gdir / PROJECTS).is_file()):
        return Claim(CERTAIN, "home")
    return None
