"""Shared test helpers: conservation, record projections for round trips, home fingerprints."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from trajconv.snapshot.builder import SnapshotBuilder
from trajconv.snapshot.diagnostics import REGISTRY, unit_count
from trajconv.snapshot.models import Session, Snapshot

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"


def conservation(snapshot: Snapshot, units_seen: int) -> None:
    """Assert units seen = units in records (the session's and its sub-agents') + units
    counted by diagnostics."""
    in_records = sum(r.evidence.units for r in snapshot.all_records())
    in_diags = unit_count(snapshot.diagnostics)
    assert in_records + in_diags == units_seen, (
        f"conservation: {in_records} in records + {in_diags} in diagnostics "
        f"!= {units_seen} seen; diagnostics: "
        f"{[(d.code, d.count) for d in snapshot.diagnostics if REGISTRY[d.code].units]}"
    )


def projection(snapshot: Snapshot, kinds: tuple[str, ...] | None = None) -> list[tuple[Any, ...]]:
    """What a round trip must keep: kind and content of each record, no ids or places."""
    out: list[tuple[Any, ...]] = []
    for r in snapshot.records:
        if kinds is not None and r.kind not in kinds:
            continue
        if r.kind == "tool-call":
            out.append((r.kind, r.call.id, r.call.name, r.call.arguments))
        elif r.kind == "tool-result":
            res = r.result
            out.append((r.kind, res.call_id, res.ok, res.output, res.exit_code))
        else:
            out.append((r.kind, r.text))  # type: ignore[union-attr]
    return out


def merged_projection(snapshot: Snapshot, kinds: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """``projection`` of the given kinds with consecutive same-kind texts joined, as targets
    without message boundaries (Grok chunks) read them back."""
    out: list[tuple[Any, ...]] = []
    for item in projection(snapshot, kinds):
        if out and item[0] in ("assistant", "reasoning") and out[-1][0] == item[0]:
            out[-1] = (item[0], out[-1][1] + item[1])
        else:
            out.append(item)
    return out


def session_dir(root: Path, pattern: str) -> Path:
    """The one folder matching ``pattern`` under ``root`` (files such as ``.cwd`` ignored)."""
    return next(p for p in sorted(root.glob(pattern)) if p.is_dir())


def run_prepare(out: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """An export's own ``prepare.py --home HOME``, run with this Python (its output kept)."""
    return subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )


def fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under ``root``: sha256, mode and mtime (ns), to prove nothing changed."""
    found: dict[str, tuple[str, int, int]] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "link"
            found[str(path.relative_to(root))] = (digest, st.st_mode, st.st_mtime_ns)
    return found


def export_tree(out: Path) -> dict[str, str]:
    """An export folder as {relative path: text}, for syrupy snapshots."""
    tree: dict[str, str] = {}
    for path in sorted(out.rglob("*")):
        if path.is_file():
            rel = path.relative_to(out).as_posix()
            if rel == "prepare.py":
                tree[rel] = f"<{len(path.read_bytes())} bytes>"
                continue
            try:
                tree[rel] = path.read_text("utf-8")
            except UnicodeDecodeError:
                tree[rel] = f"<binary {hashlib.sha256(path.read_bytes()).hexdigest()}>"
    return tree


def fixture_homes() -> list[tuple[str, Path]]:
    """``(codec name, fixture case folder)`` for every case of every registered codec that
    discovers sessions in it (a fixture case is a native home of its harness)."""
    from trajconv.codecs import registry

    cases = []
    for codec in registry.all_codecs():
        root = FIXTURES / codec.name
        if not (codec.can_discover and codec.can_read and root.is_dir()):
            continue
        for case in sorted(p for p in root.iterdir() if p.is_dir()):
            try:
                refs = codec.discover(case)
            except Exception:  # a case that is no home (a hand-made edge case)
                continue
            if refs:
                cases.append((codec.name, case))
    return cases


def rebuilt(
    snapshot: Snapshot, count: int | None = None, session: Session | None = None
) -> Snapshot:
    """The first ``count`` records (all by default) of ``snapshot`` as a Snapshot of its own
    (no artifacts, no sub-agents), its session facts replaced by ``session`` when given: a
    changed Snapshot whose hashes hold, as a reader would have made it. A whole copy keeps
    the diagnostics' codes, counts and first samples."""
    b = SnapshotBuilder(snapshot.source, snapshot.producer.reader)
    b.session = session if session is not None else snapshot.session
    if count is None:
        for d in snapshot.diagnostics:
            b.diagnostics.add(d.code, d.samples[0] if d.samples else None, d.count)
    for rec in snapshot.records[:count]:
        at = {"time": rec.time, "turn": rec.turn, "evidence": rec.evidence}
        if rec.kind == "tool-call":
            b.add_call(rec.id, rec.call.id, rec.call.name, rec.call.arguments, **at)
        elif rec.kind == "tool-result":
            r = rec.result
            b.add_result(
                rec.id,
                r.call_id,
                r.ok,
                r.output,
                truncated=r.truncated,
                exit_code=r.exit_code,
                **at,
            )
        else:
            b.add_text(rec.kind, rec.id, rec.text, model=getattr(rec, "model", None), **at)
    return b.build()


def tiny_session(*steps: tuple[str, str], cwd: str = "/work/demo") -> Snapshot:
    """A small Grok-sourced session of ``(kind, text)`` steps: user, assistant, reasoning,
    system or observation text, ``("call", name)`` (a shell call) or ``("result", output)``
    (its ok result), for writer tests that need a given order of records."""
    from trajconv.snapshot.builder import evidence
    from trajconv.snapshot.models import Source

    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="tiny", locator="x"), "test"
    )
    b.session = Session(id="019c0000-4444-7000-8000-000000000001", cwd=cwd)
    ev = evidence("updates.jsonl", native="test", line=1)
    turn = -1
    for i, (kind, text) in enumerate(steps):
        turn += kind == "user"
        at = {"time": None, "turn": max(turn, 0), "evidence": ev}
        if kind == "call":
            b.add_call(f"r{i}", f"call-{i}", text, {"cmd": "ls"}, **at)
        elif kind == "result":
            b.add_result(f"r{i}", f"call-{i - 1}", True, text, **at)
        else:
            b.add_text(kind, f"r{i}", text, **at)
    return b.build()
