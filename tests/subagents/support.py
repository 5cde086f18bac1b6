"""Recorded sessions with sub-agents, one or more per harness that has them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trajconv
from tests.helpers import FIXTURES
from trajconv.snapshot.models import Child, Snapshot

#: (label, harness, path, session)
SOURCES: list[tuple[str, str, Path, str | None]] = [
    (
        "claude/recorded-subagent",
        "claude",
        next(FIXTURES.glob("claude/recorded-subagent/.claude/projects/*/*.jsonl")),
        None,
    ),
    (
        "claude/recorded-subagent-background",
        "claude",
        next(FIXTURES.glob("claude/recorded-subagent-background/.claude/projects/*/*.jsonl")),
        None,
    ),
    (
        "codex/subagent",
        "codex",
        FIXTURES / "codex" / "subagent" / ".codex",
        "01a23309-4528-7ad0-a040-0926c32991db",
    ),
    (
        "opencode/recorded-subagent",
        "opencode",
        FIXTURES / "opencode" / "recorded-subagent" / "opencode.db",
        "ses_dcd058513ffevrQ8QGLlAtfPlw",
    ),
    (
        "kilo/recorded-subagent",
        "kilo",
        FIXTURES / "kilo" / "recorded-subagent" / "kilo.db",
        "ses_db2bc2f11ffeMPBoVezRYjQqUf",
    ),
    (
        "qwen/recorded-subagent-background",
        "qwen",
        next(FIXTURES.glob("qwen/recorded-subagent-background/.qwen/projects/*/chats/*.jsonl")),
        None,
    ),
    (
        "qwen/recorded-subagent-compress",
        "qwen",
        next(FIXTURES.glob("qwen/recorded-subagent-compress/.qwen/projects/*/chats/*.jsonl")),
        None,
    ),
]
IDS = [s[0] for s in SOURCES]

#: what a target that holds children must carry of each child's records
CARRIED = ("user", "assistant", "tool-call", "tool-result")


def read(harness: str, path: Path, session: str | None) -> Snapshot:
    return trajconv.read(harness, path, session=session)


def carried(child: Child) -> list[tuple[Any, ...]]:
    """A child's conversation as a target with children keeps it: prompts, answers, calls
    (name and arguments) and results (text), in order."""
    out: list[tuple[Any, ...]] = []
    for r in child.records:
        if r.kind in ("user", "assistant"):
            out.append((r.kind, r.text))
        elif r.kind == "tool-call":
            out.append((r.kind, r.call.name, r.call.arguments))
        elif r.kind == "tool-result":
            out.append((r.kind, r.result.output))
    return out
