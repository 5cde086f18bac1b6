"""Finding sessions: every codec's home listed newest first, one picked by id, prefix or
recency, and the harness a path belongs to told from its files.

Used by ``trajconv discover`` and by ``trajconv convert`` given only an id (or
``--latest``); listing reads only what each codec's ``discover`` reads.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trajconv.codecs import registry
from trajconv.codecs.base import Codec, Limits, SessionRef
from trajconv.errors import TrajconvError, UsageError

if TYPE_CHECKING:
    from trajconv.snapshot.models import Snapshot

#: Harness folders under a user home (``folder``, ``label``) that may have no codec installed:
#: data, in ``harness_homes.json`` beside this module. A folder found there whose harness no
#: registered codec declares in its ``homes`` is reported as found but not supported yet
#: (instead of "0 sessions").
HARNESS_HOMES: dict[str, tuple[str, str]] = {
    name: (row["folder"], row["label"])
    for name, row in json.loads(
        resources.files("trajconv").joinpath("harness_homes.json").read_text("utf-8")
    ).items()
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
    that no registered codec declares as its home."""
    declared = {spec.folder for c in registry.all_codecs() for spec in c.homes}
    declared |= set(registry.names())
    rows = []
    for name, (folder, label) in HARNESS_HOMES.items():
        if name in declared or folder in declared:
            continue
        place = home if home.as_posix().endswith("/" + folder) else home / folder
        if place.is_dir():
            status = f"{label} home found: not supported yet"
            rows.append({"harness": name, "home": str(place), "status": status})
    return rows


def list_sessions(
    harnesses: Iterable[str] | None = None, home: Path | None = None, *, readable: bool = False
) -> Listing:
    """Every session of the chosen codecs' homes (their default ones, or ``home``), newest
    first, with a coverage row per codec; ``readable``: only codecs that can also read what
    they list (``archive``, which takes them in the order the codecs list them)."""
    if home is not None and not home.is_dir():
        raise UsageError(f"--home {home}: no such folder")
    listing = Listing()
    found: list[SessionRef] = []
    for c in _codecs(harnesses):
        if not c.can_discover or (readable and not c.can_read):
            if harnesses:  # asked for by name: say why nothing is listed
                listing.coverage.append({"harness": c.name, "home": None, "status": "no homes"})
            continue
        if home is None and not c.homes:  # sessions live in project folders: --home says where
            if harnesses:
                listing.coverage.append(
                    {"harness": c.name, "home": None, "status": "no default home: give --home"}
                )
            continue
        root = home if home is not None else c.default_home()
        row: dict[str, Any] = {"harness": c.name, "home": str(root)}
        listing.coverage.append(row)
        if not root.exists():
            row["status"] = "missing root"
            continue
        try:
            refs = c.discover(root)
        except (OSError, TrajconvError) as exc:
            row["status"] = f"unreadable root: {exc}"
        except Exception as exc:  # a codec's listing bug must not stop the other harnesses
            row["status"] = f"unreadable root: {type(exc).__name__}: {exc}"
        else:
            row.update(status="listable", sessions=len(refs))
            found.extend(refs)
    if not harnesses:
        listing.coverage.extend(unsupported_homes(home if home is not None else Path.home()))
    listing.sessions = found if readable else newest_first(found)
    return listing


def coverage_lines(coverage: list[dict[str, Any]], verbose: bool = False) -> list[str]:
    """The coverage rows as ``# harness: status`` lines for stderr; the harnesses whose home
    is not on this machine in one line, unless ``verbose``."""
    lines: list[str] = []
    missing: list[str] = []
    for cov in coverage:
        if cov["status"] == "missing root" and not verbose:
            missing.append(cov["harness"])
            continue
        extra = f" ({cov['sessions']} sessions)" if "sessions" in cov else ""
        where = f" at {cov['home']}" if cov["home"] else ""
        lines.append(f"# {cov['harness']}: {cov['status']}{extra}{where}")
    if missing:
        lines.append(f"# no home found for {', '.join(missing)} (-v names each place looked at)")
    return lines


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


def same_dir(a: str, b: str) -> bool:
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
        if cwd is not None and (r.cwd is None or not same_dir(r.cwd, cwd)):
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


def detect(path: Path) -> str:
    """The codec that reads ``path``, told from its files: the claim of the highest
    confidence; a usage error when none claims it or several tie (then ``--from`` says)."""
    claims = [
        (claim, c.name)
        for c in registry.all_codecs()
        if c.can_read and (claim := c.claims(path)) is not None
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


# -- what a command was given: a path, a Snapshot or store, or a session to look up ---------


@dataclass
class Loaded:
    """The Snapshot a command starts from, and where it came from."""

    snapshot: Snapshot
    harness: str | None
    """The codec that read it; ``None`` for a Snapshot file or an archive store."""
    path: Path | str
    """The path (or store URL) it was read from."""
    note: str | None = None
    """What to tell the user about the choice made (the harness told from the files, the
    session found by id), for stderr."""

    @property
    def stored(self) -> bool:
        """Read from an archive store folder (so its sub-agents are there too)."""
        from trajconv.store import is_store

        return self.harness is None and isinstance(self.path, Path) and is_store(self.path)


def sniff_snapshot(path: Path) -> bool:
    """Whether ``path`` opens as a Snapshot file (its first bytes name the format)."""
    from trajconv.codecs.common import head

    data = head(path, 512)
    return data.lstrip().startswith(b"{") and b'"trajconv.snapshot/' in data


def _stored(path: str | Path, session: str | None) -> Loaded:
    from trajconv.store import load_input

    return Loaded(load_input(path, session), None, path)


def load(
    path: str | None,
    *,
    source: str | None = None,
    session: str | None = None,
    latest: bool = False,
    cwd: str | None = None,
    limits: Limits | None = None,
) -> Loaded:
    """What ``convert``, ``read`` and ``show`` start from: a path (its harness told by
    ``source`` or by the files' claims), a Snapshot file or archive store (``source`` left
    out or ``snapshot``), a store URL, or instead of a path a session id, a unique prefix of
    one, or the newest (``latest``) of the default homes."""
    from trajconv import api
    from trajconv.store import is_store, is_url

    if source is not None and source.strip().lower() == "snapshot":
        return _stored(Path(path or "."), session)
    if path is not None and is_url(path):  # a store on object storage (s3://bucket/prefix)
        return _stored(path, session)
    given = Path(path) if path is not None else None
    if given is not None and given.exists():
        note = None
        if source is None:
            if is_store(given) if given.is_dir() else sniff_snapshot(given):
                return _stored(given, session)
            source = detect(given)
            note = f"reading {given} as {source} (--from to say otherwise)"
        return Loaded(api.read(source, given, session=session, limits=limits), source, given, note)
    if path is not None and ("/" in path or path.startswith(".")):
        raise UsageError(f"{path}: no such file or folder")
    ref = pick(path or session, latest=latest, cwd=cwd, harnesses=[source] if source else None)
    snap = api.read(ref.harness, ref.path, session=ref.session_id, limits=limits)
    return Loaded(snap, ref.harness, ref.path, f"found {describe(ref)}")
