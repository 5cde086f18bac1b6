"""Where Deep Agents Code keeps threads: ``~/.deepagents/.state/sessions.db``.

There is no ``DEEPAGENTS_HOME`` in deepagents-code 0.1.57; only ``HOME`` moves
the root (``deepagents_code/model_config.py``: ``DEFAULT_CONFIG_DIR =
Path.home() / ".deepagents"``). One database holds every thread.
The portable seed the writer emits is ``checkpoint.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trajconv.codecs.base import CERTAIN, LIKELY, Claim
from trajconv.codecs.common import head
from trajconv.errors import FormatError

ROOT = ".deepagents"
STATE = ".state"
DB = "sessions.db"
DB_REL = f"{STATE}/{DB}"
SEED = "checkpoint.json"
SEED_FORMAT = "trajconv.deepagents-seed/1"


@dataclass(frozen=True)
class Located:
    """A resolved input: a ``sessions.db`` (with its locator) or a portable seed file."""

    path: Path
    is_seed: bool
    locator: str


def find_db(path: Path) -> Path | None:
    """``sessions.db`` from the file itself, a ``.deepagents`` folder, or a user home."""
    if path.is_file():
        return path if path.name != SEED else None
    for candidate in (path / DB_REL, path / ROOT / DB_REL, path / DB):
        if candidate.is_file():
            return candidate
    return None


def resolve(path: Path) -> Located:
    if path.is_file() and path.name == SEED:
        return Located(path, True, SEED)
    if path.is_dir() and (path / SEED).is_file() and find_db(path) is None:
        return Located(path / SEED, True, SEED)
    db = find_db(path)
    if db is None:
        raise FormatError(
            path, f"not a Deep Agents store: no {DB_REL} (or {SEED}) here or under {ROOT}/"
        )
    locator = DB_REL if db.parent.name == STATE and db.parent.parent.name == ROOT else db.name
    return Located(db, False, locator)


def _is_seed(path: Path) -> bool:
    return SEED_FORMAT.encode() in head(path)


def claims(path: Path) -> Claim | None:
    """A ``sessions.db`` (certain in ``.deepagents/.state/``), a portable seed
    (``checkpoint.json`` naming its format) or the folder holding it, a ``.deepagents``
    folder or a user home holding one."""
    seed = path if path.is_file() else path / SEED
    if seed.name == SEED and seed.is_file() and _is_seed(seed):
        return Claim(CERTAIN, "session")
    db = find_db(path) if path.is_dir() or path.name == DB else None
    if db is None:
        return None
    placed = db.parent.name == STATE and db.parent.parent.name == ROOT
    return Claim(CERTAIN if placed else LIKELY, "home" if path.is_dir() else "store")
