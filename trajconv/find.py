"""Finding sessions: every codec's home listed newest first, one picked by id, prefix or
recency, and the harness a path belongs to told from its files.

Used by ``trajconv discover`` and by ``trajconv convert`` given only an id (or
``--latest``); listing reads only what each codec's ``discover`` reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from trajconv.codecs import registry
from trajconv.codecs.base import LIKELY, Claim, Codec, SessionRef
from trajconv.errors import TrajconvError, UsageError

#: Harness folders under a user home, by harness name, with the harness's own name. A
#: harness listed here whose codec is not registered is reported as found but not supported
#: yet (instead of "0 sessions"); once its codec is registered its sessions are listed.
KNOWN_HOMES: dict[str, tuple[str, str]] = {
    "claude": (".claude", "Claude Code"),
    "codex": (".codex", "Codex CLI"),
    "copilot": (".copilot", "GitHub Copilot CLI"),
    "cursor": (".cursor", "Cursor CLI"),
    "deepagents": (".deepagents", "Deep Agents"),
    "fx": (".fx", "fx"),
    "gemini": (".gemini", "Gemini CLI"),
    "grok": (".grok", "Grok Build"),
    "opencode": (".local/share/opencode", "opencode"),
}


@dataclass
class Listing:
    """Sessions of the homes looked at, newest first, and what was found at each home."""

    sessions: list[SessionRef] = field(default_factory=list)
    coverage: list[dict[str, Any]] = field(default_factory=list)


def _codecs(harnesses: Iterable[str] | None) -> list[Codec]:
    if not harnesses:
        return [c for c in registry.all_codecs() if c.can_discover]
    picked: list[Codec] = []
    for name in harnesses:
        c = registry.get(name)
        if c not in picked:
            picked.append(c)
    return picked


def newest_first(refs: Iterable[SessionRef]) -> list[SessionRef]:
    """Sessions ordered by their last update (or creation), undated ones last."""
    return sorted(refs, key=lambda r: r.updated_at or r.created_at or "", reverse=True)


def unsupported_homes(home: Path) -> list[dict[str, Any]]:
    """Harness folders under ``home`` (a user home), or ``home`` itself (a harness folder),
    whose harness has no registered codec."""
    registered = set(registry.names())
    rows = []
    for name, (folder, label) in KNOWN_HOMES.items():
        place = home if home.as_posix().endswith("/" + folder) else home / folder
        if name not in registered and place.is_dir():
            rows.append(
                {
                    "harness": name,
                    "home": str(place),
                    "status": f"{label} home found: not supported yet",
                }
            )
    return rows


def list_sessions(harnesses: Iterable[str] | None = None, home: Path | None = None) -> Listing:
    """Every session of the chosen codecs' homes (their default ones, or ``home``)."""
    listing = Listing()
    found: list[SessionRef] = []
    for c in _codecs(harnesses):
        if not c.can_discover:
            continue
        root = home if home is not None else c.default_home()
        row: dict[str, Any] = {"harness": c.name, "home": str(root)}
        if not root.exists():
            row["status"] = "missing root"
        else:
            try:
                refs = c.discover(root)
            except (OSError, TrajconvError) as exc:
                row["status"] = f"unreadable root: {exc}"
            else:
                row.update(status="listable", sessions=len(refs))
                found.extend(refs)
        listing.coverage.append(row)
    if not harnesses:
        listing.coverage.extend(unsupported_homes(home if home is not None else Path.home()))
    listing.sessions = newest_first(found)
    return listing


def parse_since(value: str) -> str:
    """``--since``: an ISO date or time, or an age such as ``3d``, ``12h``, ``30m``; the
    earliest time as the ISO text sessions carry (``...Z``)."""
    age = re.fullmatch(r"(\d+)([dhm])", value.strip())
    if age:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[age.group(2)]
        when = datetime.now(UTC) - timedelta(**{unit: int(age.group(1))})
    else:
        try:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"--since {value!r}: give a date (2026-09-01), a time (2026-09-01T08:00) "
                "or an age (3d, 12h, 30m)"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _same_dir(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def select(
    refs: Iterable[SessionRef],
    *,
    cwd: str | None = None,
    since: str | None = None,
) -> list[SessionRef]:
    """The sessions in ``cwd``, updated at or after ``since``."""
    out = []
    for r in refs:
        if cwd is not None and (r.cwd is None or not _same_dir(r.cwd, cwd)):
            continue
        if since is not None and (r.updated_at or r.created_at or "") < since:
            continue
        out.append(r)
    return out


def describe(ref: SessionRef) -> str:
    return (
        f"{ref.harness} {ref.session_id} ({ref.updated_at or ref.created_at or 'no date'}; "
        f"{ref.title or 'untitled'}) at {ref.path}"
    )


def pick(
    query: str | None,
    *,
    latest: bool = False,
    cwd: str | None = None,
    harnesses: Iterable[str] | None = None,
) -> SessionRef:
    """The one session of the default homes named by ``query`` (an id or a unique prefix of
    one), or the newest (``latest``); ``cwd`` narrows either. Ambiguity lists the candidates."""
    if query is None and not latest:
        raise UsageError("name a session (a path, an id or its prefix) or pass --latest")
    listing = list_sessions(harnesses)
    refs = select(listing.sessions, cwd=cwd)
    if query is not None:
        exact = [r for r in refs if r.session_id == query]
        refs = exact or [r for r in refs if r.session_id.startswith(query)]
    where = f" in {cwd}" if cwd is not None else ""
    if not refs:
        what = f"session {query!r}" if query is not None else "session"
        homes = ", ".join(f"{c['harness']} {c['home']}" for c in listing.coverage)
        raise UsageError(f"no {what}{where} in the homes looked at ({homes})")
    if latest or len(refs) == 1:
        return refs[0]  # newest first
    shown = "\n  ".join(describe(r) for r in refs[:20])
    more = f"\n  ... and {len(refs) - 20} more" if len(refs) > 20 else ""
    raise UsageError(
        f"{query!r} names {len(refs)} sessions{where}; give more of the id, --from, "
        f"--cwd or --latest:\n  {shown}{more}"
    )


# -- which harness a path belongs to ------------------------------------------------------


def _claims(name: str, path: Path) -> bool:
    """Whether ``path`` looks like a session, store or home of the built-in codec ``name``."""
    if name == "grok":
        from trajconv.codecs.grok import layout as grok

        return (
            path.name == grok.UPDATES
            or (path / grok.UPDATES).is_file()
            or (path / grok.SUMMARY).is_file()
            or bool(grok.session_dirs(path))
        )
    if name == "copilot":
        from trajconv.codecs.copilot import layout as copilot

        return (
            (path.is_file() and path.parent.name == copilot.SESSION_STATE)
            or (path.name == copilot.EVENTS and (path.parent / copilot.WORKSPACE).is_file())
            or (path / copilot.WORKSPACE).is_file()
            or (path.name == copilot.SESSION_STATE and path.is_dir())
            or copilot.copilot_home_of(path) is not None
        )
    if name == "fx":
        from trajconv.codecs.fx import layout as fx

        root = fx.sessions_root(path)
        return (
            path.name == fx.SESSION_JSON
            or (path.name == fx.EVENTS and (path.parent / fx.SESSION_JSON).is_file())
            or (path / fx.SESSION_JSON).is_file()
            or (root is not None and bool(fx.session_dirs(root)))
        )
    if name == "cursor":
        from trajconv.codecs.cursor import layout as cursor

        return (
            path.name == cursor.STORE
            or path.name.endswith(cursor.READOUT_SUFFIX)
            or (path / cursor.STORE).is_file()
            or cursor.find_readout(path) is not None
            or (cursor.config_dir(path) / cursor.CHATS).is_dir()
        )
    if name == "deepagents":
        from trajconv.codecs.deepagents import layout as deepagents

        return (
            path.name in (deepagents.DB, deepagents.SEED)
            or (path / deepagents.SEED).is_file()
            or (path.is_dir() and deepagents.find_db(path) is not None)
        )
    return False


def _codec_claim(codec: Codec, path: Path) -> Claim | None:
    """A codec's own ``claims(path)`` (the protocol), else the table above for the built-in
    codecs not yet moved onto it (a yes there counts as :data:`LIKELY`)."""
    import importlib

    package = getattr(codec, "package", None)
    try:
        layout = importlib.import_module(f"{package}.layout") if package else None
    except ImportError:
        layout = None
    if callable(getattr(layout, "claims", None)):
        return codec.claims(path)
    return Claim(LIKELY, "session") if _claims(codec.name, path) else None


def detect(path: Path) -> str:
    """The codec that reads ``path``, told from its files: the claim of the highest
    confidence; a usage error when none claims it or several tie (then ``--from`` says)."""
    claims = [
        (claim, c.name)
        for c in registry.all_codecs()
        if c.can_read and (claim := _codec_claim(c, path)) is not None
    ]
    if not claims:
        raise UsageError(
            f"cannot tell which harness {path} comes from; say it with --from "
            f"({', '.join(registry.names())})"
        )
    best = max(claim.confidence for claim, _ in claims)
    names = [name for claim, name in claims if claim.confidence == best]
    if len(names) == 1:
        return names[0]
    raise UsageError(
        f"{path} could be a session of several harnesses ({', '.join(names)}); pick one with --from"
    )
