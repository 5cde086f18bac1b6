"""One robustness case: mutate a copy of a fixture, read it, classify what happened.

Allowed outcomes: a Snapshot that validates against the schema, verifies and
satisfies conservation, or a ``FormatError`` naming the file. Anything else (a
traceback, a hang, a changed native file) is a failure.
"""

from __future__ import annotations

import contextlib
import random
import resource
import shutil
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from tests.aider.support import runs
from tests.helpers import FIXTURES, conservation, fingerprint
from tests.robustness import mutate
from trajconv.codecs import registry
from trajconv.codecs.jsonl import count_units
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot import io
from trajconv.snapshot.models import Snapshot

CASE_SECONDS = 60  # a hang guard, not a speed target
CASE_BYTES = 8 << 30
"""An address-space guard for one read: a reader that blows up (100,000 nested arrays once
took the ATIF reader to 23 GB, and the kernel killed the whole run) fails its case with a
MemoryError instead of taking the machine's memory."""


@contextlib.contextmanager
def _memory_cap(limit: int) -> Any:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    capped = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= capped:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (capped, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


Units = Callable[[Snapshot, Path], "int | None"]


def _journal_units(name: str) -> Units:
    """Lines of the journal artifact (the exact bytes the reader consumed)."""

    def units(snap: Snapshot, _victim: Path) -> int:
        art = next((a for a in snap.artifacts if a.name == name), None)
        return count_units((art.read() if art else None) or b"")

    return units


def _codex_units(snap: Snapshot, _victim: Path) -> int:
    """Lines of the rollout artifacts (each named after its rollout file: the session's and
    those of the threads it spawned, read with it as its children)."""
    return sum(count_units(a.read() or b"") for a in snap.artifacts if a.name.endswith(".jsonl"))


def _claude_units(snap: Snapshot, victim: Path) -> int:
    """Lines of the transcript artifact, and of its sub-agents' (read with it as children)."""
    subs = sum(
        count_units(a.read() or b"")
        for a in snap.artifacts
        if a.name.startswith("subagents/") and a.name.endswith(".jsonl")
    )
    return _journal_units(victim.name)(snap, victim) + (subs if snap.children else 0)


def _gemini_units(snap: Snapshot, _victim: Path) -> int:
    """Lines of every session file the Gemini reader copied (``chats/...``)."""
    return sum(count_units(a.read() or b"") for a in snap.artifacts if a.name.startswith("chats/"))


def _qwen_units(snap: Snapshot, _victim: Path) -> int:
    """Lines of every journal the Qwen Code reader copied (the session's and its sub-agents')."""
    return sum(count_units(a.read() or b"") for a in snap.artifacts if a.name.endswith(".jsonl"))


def _cursor_units(snap: Snapshot, _victim: Path) -> int:
    from trajconv.codecs.cursor import reader

    return reader.units_seen(snap)


def _fx_units(_snap: Snapshot, victim: Path) -> int | None:
    from tests.fx.test_fx import _units

    try:
        return _units(victim.parent)
    except Exception:  # the independent counter cannot read this mutation either
        return None


def _deepagents_units(snap: Snapshot, victim: Path) -> int | None:
    from tests.deepagents.support import count_units as da_units

    try:
        return da_units(victim, snap.session.id)
    except Exception:  # the independent counter cannot read this mutation either
        return None


def _atif_units(snap: Snapshot, victim: Path) -> int | None:
    """Steps of the trajectory, plus its embedded subagents (the reader's unit)."""
    import json

    doc = json.loads(victim.read_bytes())
    if doc.get("continued_trajectory_ref"):
        return None  # read on into another file: not this counter's business
    return len(doc["steps"]) + len(doc.get("subagent_trajectories") or ())


def _opencode_units(snap: Snapshot, victim: Path) -> int | None:
    import sqlite3

    from tests.opencode.support import units

    try:
        con = sqlite3.connect(f"file:{victim}?mode=ro", uri=True)
        try:
            damaged = con.execute("pragma integrity_check").fetchone()[0] != "ok"
        finally:
            con.close()
        # on damaged pages two query plans can see different rows: no independent count
        return None if damaged else units(victim, snap.session.id)
    except Exception:  # the independent counter cannot read this mutation either
        return None


def _openhands_units(_snap: Snapshot, victim: Path) -> int:
    """Event files of the conversation and of its sub-agents (the reader's unit)."""
    from tests.openhands.test_openhands import _units

    return _units(victim.parents[1])


@dataclass(frozen=True)
class Target:
    """Where a codec's fixtures keep the file to mutate, and how to count its units."""

    harness: str
    pattern: str  # glob under fixtures/<harness>/ for the file to mutate
    kind: str  # "text" or "sqlite"
    units: Units
    """Native units counted without the reader (None: the counter cannot read it either)."""


def _vibe_units(_snap: Snapshot, victim: Path) -> int | None:
    """Transcript items of the current checkpoint and lines of the recovery journal."""
    import json as _json

    store = victim.parents[1]
    try:
        current = _json.loads((store / "CURRENT").read_bytes())
        gen = store / "generations" / current["generation"]
        manifest = _json.loads((gen / "manifest.json").read_bytes())
        items = sum(
            len(_json.loads((store / "chunks" / f"{c}.json").read_bytes()))
            for c in manifest["checkpoint"]["chunks"]
        )
        journal = store / manifest["recovery_journal_segment"]["path"]
        return items + len(journal.read_bytes().splitlines())
    except (OSError, ValueError, KeyError, TypeError):
        return None


TARGETS: dict[str, Target] = {
    "grok": Target("grok", "*/sessions/*/*/updates.jsonl", "text", _journal_units("updates.jsonl")),
    "copilot": Target(
        "copilot", "*/session-state/*/events.jsonl", "text", _journal_units("events.jsonl")
    ),
    "codex": Target("codex", "*/.codex/*/*/*/*/rollout-*.jsonl", "text", _codex_units),
    "fx": Target("fx", "*/.fx/sessions/*/*.json*", "text", _fx_units),
    "cursor": Target("cursor", "*/store.db", "sqlite", _cursor_units),
    # single-thread stores: a multi-thread store needs --session, so every read would refuse
    "deepagents": Target("deepagents", "[!m]*/sessions.db", "sqlite", _deepagents_units),
    "claude": Target(
        "claude",
        "*/.claude/projects/*/*.jsonl",
        "text",
        _claude_units,
    ),
    "gemini": Target("gemini", "*/.gemini/tmp/*/chats/session-*.jsonl", "text", _gemini_units),
    "qwen": Target("qwen", "*/.qwen/projects/*/chats/*.jsonl", "text", _qwen_units),
    # documents that continue in no other file
    "atif": Target("atif", "[hv]*[!d]/trajectory.json", "text", _atif_units),
    # the one-session database (a two-session store needs --session, so reads would refuse)
    "opencode": Target("opencode", "recorded-tools/opencode.db", "sqlite", _opencode_units),
    # Kilo keeps OpenCode's tables: the same counter
    "kilo": Target("kilo", "recorded-tools/kilo.db", "sqlite", _opencode_units),
    "aider": Target("aider", "*/demo/.aider.chat.history.md", "text", lambda _s, v: runs(v)),
    # a cwd folder holding one session (the tree case's holds two: a read would need --session)
    "pi": Target(
        "pi",
        "recorded-tools/sessions/*/*.jsonl",
        "text",
        lambda snap, victim: _journal_units(victim.name)(snap, victim),
    ),
    # a transcript chunk of the one-session store (a changed checkpoint chunk no longer
    # matches its digest: vibe refuses it, and so does the reader)
    "vibe": Target("vibe", "recorded-tools/store/*/chunks/*.json", "text", _vibe_units),
    # one SDK event a file; the reader is given the events/ folder the victim is in
    "openhands": Target(
        "openhands",
        "recorded-*/.openhands/conversations/*/events/event-*.json",
        "text",
        _openhands_units,
    ),
}


def fixture_files(target: Target) -> list[Path]:
    return sorted((FIXTURES / target.harness).glob(target.pattern))


class _Timeout(Exception):
    pass


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise _Timeout


def run_case(
    target: Target, mutation: str, seed: int, work: Path, values: list[Any] | None = None
) -> str:
    """Run one case; return its outcome ``snapshot`` / ``format-error`` or raise AssertionError.

    ``values``: what a multi-field mutation plants (drawn from the seed when not given)."""
    r = random.Random(seed)
    source = r.choice(fixture_files(target))
    case_root = source.relative_to(FIXTURES / target.harness).parts[0]
    home = work / case_root
    shutil.copytree(FIXTURES / target.harness / case_root, home)
    victim = home / source.relative_to(FIXTURES / target.harness / case_root)
    if target.kind == "text":
        data = victim.read_bytes()
        if mutation == "multi-field" and data:
            victim.write_bytes(mutate.multi_field(r, data, values))
        else:
            victim.write_bytes(mutate.TEXT_MUTATIONS[mutation](r, data) if data else data)
    else:
        # a mutation that cannot apply (the store is already broken) leaves it as it is
        with contextlib.suppress(Exception):
            if mutation == "multi-cell":
                mutate.multi_cell(r, victim, values)
            else:
                mutate.sqlite_mutations()[mutation](r, victim)
    read_path = victim.parent if target.kind == "text" else victim
    before = fingerprint(home)
    codec = registry.get(target.harness)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        with _memory_cap(CASE_BYTES):
            snap = codec.read(read_path)
        outcome = "snapshot"
    except FormatError as exc:
        assert exc.file, f"FormatError without a file: {exc}"
        outcome = "format-error"
    except UsageError as exc:
        # several changed cells can make a one-session store hold two (a thread id
        # changed): the refusal that asks for --session, naming the store, is typed too
        assert str(victim) in str(exc) and "--session" in str(exc), str(exc)
        outcome = "format-error"
    except _Timeout:
        raise AssertionError(f"{mutation} seed {seed}: no answer in {CASE_SECONDS} s") from None
    except Exception:
        raise AssertionError(
            f"{target.harness} {mutation} seed {seed} on {source.name}: "
            f"{traceback.format_exc(limit=-3)}"
        ) from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert fingerprint(home) == before, "the reader changed the native home"
    if outcome == "snapshot":
        again = io.loads(io.dumps(snap))  # validates against the published schema
        assert io.verify(again).ok
        units = target.units(snap, victim)
        if units is not None:
            conservation(snap, units)
    return outcome


def mutations(target: Target) -> list[str]:
    if target.kind == "text":
        return list(mutate.TEXT_MUTATIONS)
    return list(mutate.sqlite_mutations())
