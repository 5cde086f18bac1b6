"""The public Python API; the CLI is a thin layer over these functions.

>>> snap = trajconv.read("grok", path)                 # doctest: +SKIP
>>> export = trajconv.write(snap, "fx", out_dir)       # doctest: +SKIP
>>> snap, export = trajconv.convert("grok", "fx", path, out_dir)  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajconv.codecs import export as export_mod
from trajconv.codecs import registry
from trajconv.codecs.base import (
    Codec,
    Export,
    ExportPlan,
    Limits,
    SessionRef,
    name_untranslated_children,
)
from trajconv.errors import FormatError, TrajconvError, UnsafePathError, UsageError
from trajconv.snapshot.models import Snapshot


def codec(name: str) -> Codec:
    return registry.get(name)


def read(
    harness: str, path: str | Path, *, session: str | None = None, limits: Limits | None = None
) -> Snapshot:
    """Read one native session into a Snapshot (diagnostics inside it)."""
    c = registry.get(harness)
    if not c.can_read:
        raise UsageError(f"the {c.name} codec cannot read")
    path = Path(path)
    listed: list[SessionRef] | None = None
    if session is not None:
        listed = _listed(c, path)
        if listed:
            session = _session_named(c, path, session, listed)
    try:
        snap = c.read(path, session=session, limits=limits or Limits.from_env())
    except UnsafePathError:
        raise  # an id that is no file name is bad input, whatever the home holds
    except FormatError as exc:
        if listed and session is not None and all(r.session_id != session for r in listed):
            raise UsageError(
                f"no {c.name} session {session!r} in {path} ({len(listed)} there; "
                f"trajconv discover --harness {c.name} --home {path} lists them)"
            ) from exc
        raise
    if session is not None and snap.source.session_id != session:
        # PATH was one session, which --session does not name: reading on would convert
        # a session the user did not ask for
        raise UsageError(
            f"--session {session} does not match {path}, which is the {c.name} session "
            f"{snap.source.session_id}"
        )
    return snap


def write(
    snapshot: Snapshot,
    harness: str,
    out_dir: str | Path,
    *,
    allow_lossy: bool = False,
    **options: Any,
) -> Export:
    """Write ``snapshot`` as an export for ``harness`` into ``out_dir`` (atomic)."""
    c = registry.get(harness)
    if not c.can_write:
        raise UsageError(f"the {c.name} codec cannot write")
    plan = c.plan(snapshot, allow_lossy=allow_lossy, **options)
    name_untranslated_children(snapshot, plan)
    if allow_lossy:
        _name_open_turn(snapshot, plan)
    return export_mod.emit(plan, Path(out_dir))


def _listed(codec: Codec, path: Path) -> list[SessionRef] | None:
    """The sessions ``codec`` lists in ``path`` when it is a home or a store (a folder, or a
    file the codec claims as one); ``None`` for one session's files or what cannot list."""
    if not codec.can_discover:
        return None
    if not path.is_dir():
        claim = codec.claims(path)
        if claim is None or claim.what == "session":
            return None
    try:
        return codec.discover(path)
    except (TrajconvError, OSError):
        return None


def _session_named(codec: Codec, path: Path, session: str, listed: list[SessionRef]) -> str:
    """``--session`` as the id it names in a home or store: the id itself, or the one id it
    is a prefix of (as a positional prefix is taken); several is a usage error."""
    ids = sorted({r.session_id for r in listed})
    if session in ids or not session:
        return session  # an empty id is no prefix: the reader refuses it
    found = [i for i in ids if i.startswith(session)]
    if len(found) == 1:
        return found[0]
    if found:
        shown = "\n  ".join(found[:20])
        raise UsageError(
            f"--session {session!r} names {len(found)} {codec.name} sessions in {path}; "
            f"give more of the id:\n  {shown}"
        )
    return session  # not listed: the reader may still find it (or names why not)


#: What a lossy write leaves out or keeps unanswered, by diagnostic code.
LOSSY_CODES = ("untranslated-pending-call", "untranslated-orphan-result", "unanswered-turn")


def _name_open_turn(snapshot: Snapshot, plan: ExportPlan) -> None:
    """Count an unfinished last turn a lossy write kept, so the user is told of it."""
    from trajconv.codecs.base import CONVERSATIONAL
    from trajconv.snapshot.diagnostics import Diagnostics

    # continuity(snapshot).open_turn, from the end: only the last conversational record
    # tells (a pass over every record was a tenth of a lossy write)
    last = next((r for r in reversed(snapshot.records) if r.kind in CONVERSATIONAL), None)
    if last is None or last.kind == "assistant":
        return
    diags = Diagnostics()
    diags.extend(plan.diagnostics)
    diags.add("unanswered-turn", last.id)
    plan.diagnostics = diags.to_models()


def convert(
    source: str,
    target: str,
    path: str | Path,
    out_dir: str | Path,
    *,
    session: str | None = None,
    allow_lossy: bool = False,
    limits: Limits | None = None,
    **options: Any,
) -> tuple[Snapshot, Export]:
    snap = read(source, path, session=session, limits=limits)
    return snap, write(snap, target, out_dir, allow_lossy=allow_lossy, **options)


def discover(harness: str, home: str | Path | None = None) -> list[SessionRef]:
    c = registry.get(harness)
    return c.discover(Path(home) if home is not None else c.default_home())


def reread(out_dir: str | Path, harness: str | None = None, session: str | None = None) -> Snapshot:
    """An export read back with its target's own reader: the session its manifest names
    under ``home/``, or the export folder itself for targets read from a readout.
    ``harness`` and ``session`` default to the manifest's target and session id."""
    out = Path(out_dir)
    file = out / export_mod.MANIFEST
    manifest = export_mod.load_manifest(file)  # checked, its session paths kept in home/
    c = registry.get(harness or manifest.target)
    for rel in manifest.session_paths:
        installed = export_mod.installed_path(out, rel, file)
        if installed.exists():
            return c.read(installed)
    return c.read(out, session=session or manifest.session_id)
