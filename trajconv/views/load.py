"""What ``trajconv show`` shows: a session with its sub-agent sessions, or two Snapshots.

Sub-agents are found where the session is: a native home (``--from H HOME --session ID``)
or an archive store. A session there is a candidate child when the parent names its id
(an artifact name such as Grok's ``subagents/<id>/meta.json``, a tool call's arguments
or a tool result) and it is read only then; it is a child when its own
``parent_session_id`` says so (:func:`model.family` places it under its call).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from trajconv.codecs.base import Limits
from trajconv.errors import TrajconvError, UsageError
from trajconv.snapshot.models import Diagnostic, Snapshot
from trajconv.views import model

EXPORT_MANIFEST = "trajconv-export.json"


def named_ids(snap: Snapshot, ids: Iterable[str]) -> set[str]:
    """Those of ``ids`` the session names in an artifact name or a tool call or result."""
    wanted = {i for i in ids if i and i != snap.session.id}
    found = {i for i in wanted if any(i in a.name for a in snap.artifacts)}
    wanted -= found
    if not wanted:
        return found
    for record in snap.records:
        if record.kind == "tool-call":
            text = json.dumps(record.call.arguments, ensure_ascii=False)
        elif record.kind == "tool-result":
            text = record.result.output
        else:
            continue
        hits = {i for i in wanted if i in text}
        found |= hits
        wanted -= hits
        if not wanted:
            break
    return found


def with_children(
    snap: Snapshot, candidates: dict[str, Callable[[], Snapshot]], depth: int = 4
) -> model.Family:
    """``snap`` and the sessions among ``candidates`` (id → how to load it) it spawned."""
    loaded: list[Snapshot] = []
    frontier = [snap]
    left = dict(candidates)
    left.pop(snap.session.id, None)
    for held in snap.children:  # held by the Snapshot itself: never read again
        left.pop(held.session.id, None)
    for _ in range(depth):
        nxt: list[Snapshot] = []
        for parent in frontier:
            for sid in sorted(named_ids(parent, left)):
                try:
                    child = left.pop(sid)()
                except TrajconvError:
                    continue  # a session that cannot be read is not shown as a sub-agent
                if child.session.parent_session_id == parent.session.id:
                    nxt.append(child)
        loaded.extend(nxt)
        frontier = nxt
        if not frontier:
            break
    return model.family(snap, loaded, depth)


def native_family(harness: str, path: Path, snap: Snapshot, limits: Limits) -> model.Family:
    """Sub-agents of a session read from a native home ``path`` (none for a session folder)."""
    from trajconv.codecs import registry

    codec = registry.get(harness)
    if not (path.is_dir() and codec.can_discover):
        return model.Family(snap)
    try:
        refs = codec.discover(path)
    except (OSError, TrajconvError):
        return model.Family(snap)
    candidates: dict[str, Callable[[], Snapshot]] = {}
    for ref in refs:
        candidates[ref.session_id] = lambda ref=ref: codec.read(  # type: ignore[misc]
            ref.path, session=ref.session_id, limits=limits
        )
    return with_children(snap, candidates)


def store_family(store: Path, snap: Snapshot) -> model.Family:
    """Sub-agents of a session read from an archive store (their latest Snapshots)."""
    from trajconv.store.local import Store, load_input

    with Store.open(store) as st:
        ids = [row["session_id"] for row in st.sessions()]
    candidates: dict[str, Callable[[], Snapshot]] = {
        sid: (lambda sid=sid: load_input(store, sid))  # type: ignore[misc]
        for sid in ids
    }
    return with_children(snap, candidates)


@dataclass(frozen=True)
class DiffSide:
    snapshot: Snapshot
    writer: tuple[Diagnostic, ...] = ()
    """The export's own diagnostics when this side is a re-read export."""


def diff_side(path: Path) -> DiffSide:
    """A Snapshot file, a stored Snapshot, or an export folder (re-read with the target's
    reader at the path its manifest names; its writer diagnostics from the manifest)."""
    from trajconv.store.local import load_input

    manifest = path / EXPORT_MANIFEST
    if path.is_dir() and manifest.is_file():
        from trajconv.api import reread
        from trajconv.codecs.export import check_files, load_manifest

        check_files(path)  # the files it re-reads are the ones the manifest names
        writer = load_manifest(manifest).diagnostics  # its fields checked too (issue 34)
        return DiffSide(reread(path), writer)
    if path.is_dir():
        raise UsageError(
            f"{path}: --diff takes Snapshot files or export folders (with {EXPORT_MANIFEST})"
        )
    return DiffSide(load_input(path))
