"""Shared by the Claude Code tests: fixture paths, sources of other harnesses, expectations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trajconv
from tests.copilot.support import session_dir as copilot_session
from tests.helpers import FIXTURES
from trajconv.codecs.base import continuity
from trajconv.codecs.claude import native
from trajconv.snapshot.models import Snapshot

CLAUDE = FIXTURES / "claude"
TRANSCRIPTS = sorted(CLAUDE.glob("*/.claude/projects/*/*.jsonl")) + sorted(
    CLAUDE.glob("*/.claude/projects/*/*/subagents/agent-*.jsonl")
)
IDS = [f"{p.parts[len(CLAUDE.parts)]}/{p.stem[:14]}" for p in TRANSCRIPTS]


def other_sources() -> list[tuple[str, Path, str | None]]:
    """(harness, path, session) of one recorded session of each other harness."""
    grok = next((FIXTURES / "grok").glob("recorded-tool-failures/sessions/*/*/summary.json")).parent
    return [
        ("grok", grok, None),
        ("copilot", copilot_session(FIXTURES / "copilot" / "recorded-tool-failures"), None),
        ("deepagents", FIXTURES / "deepagents" / "failed-tool" / "sessions.db", None),
    ]


OTHER_IDS = [h for h, _p, _s in other_sources()]


def read_other(harness: str, path: Path, session: str | None) -> Snapshot:
    return trajconv.read(harness, path, session=session)


def expected_items(snap: Snapshot) -> list[tuple[Any, ...]]:
    """What a written session must show the model, from the Snapshot the writer was given:
    every user and assistant text, tool call and result (with its error flag and the
    ``Exit code N`` heading for a non-zero status), in order; reasoning only from a Claude
    Code source (only its thinking has a signature); pending calls and orphan results left
    out as the lossy write does."""
    found = continuity(snap)
    drop = set(found.pending) | set(found.orphans)
    out: list[tuple[Any, ...]] = []
    for r in snap.records:
        if r.id in drop:
            continue
        own_thinking = r.kind == "reasoning" and snap.source.harness == "claude"
        if r.kind in ("user", "assistant") or own_thinking:
            out.append((r.kind, r.text))
        elif r.kind == "tool-call":
            args = (
                r.call.arguments
                if isinstance(r.call.arguments, dict)
                else {"_raw": r.call.arguments}
            )
            out.append((r.kind, r.call.name, args))
        elif r.kind == "tool-result":
            res = r.result
            text = res.output
            if res.exit_code not in (None, 0) and not native.EXIT_CODE.match(text):
                text = f"Exit code {res.exit_code}\n{text}"
            out.append((r.kind, text, res.ok is False))
    return out
