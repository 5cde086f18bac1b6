"""Helpers shared by the Copilot tests: fixtures, read/write through the codec, replay shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import FIXTURES
from trajconv.codecs.base import Export
from trajconv.codecs.copilot import CODEC
from trajconv.codecs.export import emit
from trajconv.snapshot.models import Snapshot

COPILOT = FIXTURES / "copilot"
CASES = sorted(p for p in COPILOT.iterdir() if (p / "session-state").is_dir())
IDS = [p.name for p in CASES]


def session_dir(case: Path) -> Path:
    return next(p for p in (case / "session-state").iterdir() if (p / "events.jsonl").is_file())


def read(path: Path, **kw: Any) -> Snapshot:
    # Through the codec object, so the tests do not depend on the entry point being installed.
    return CODEC.read(path, **kw)


def write(snapshot: Snapshot, out: Path, **kw: Any) -> Export:
    return emit(CODEC.plan(snapshot, **kw), out)


def exported_session(export: Export) -> Path:
    return export.out_dir / "home" / ".copilot" / "session-state" / export.session_id


def expected_replay(snapshot: Snapshot) -> list[tuple[Any, ...]]:
    """What ``copilot --acp`` ``session/load`` replays for a Snapshot (observed on 1.0.102).

    User and agent text come back as message chunks, a tool call as ``tool_call`` (pending)
    with its arguments as ``rawInput``, a result as ``tool_call_update`` (completed with the
    output as text content, or only as ``rawOutput.content`` for read tools such as ``view``;
    or failed), ``session.info`` as an ``Info: `` agent chunk.
    Reasoning and system text are not replayed.
    """
    out: list[tuple[Any, ...]] = []
    for rec in snapshot.records:
        if rec.kind == "user":
            out.append(("user", rec.text))
        elif rec.kind == "assistant":
            out.append(("agent", rec.text))
        elif rec.kind == "observation":
            out.append(("agent", f"Info: {rec.text}"))
        elif rec.kind == "tool-call":
            out.append(("tool_call", rec.call.id, rec.call.arguments))
        elif rec.kind == "tool-result":
            res = rec.result
            if res.ok is False:
                out.append(("tool_call_update", res.call_id, "failed", None))
            else:
                out.append(("tool_call_update", res.call_id, "completed", res.output))
    return out


def replay_projection(updates: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The ACP replay in the same shape as :func:`expected_replay`."""
    out: list[tuple[Any, ...]] = []
    for u in updates:
        kind = u.get("sessionUpdate")
        if kind in ("user_message_chunk", "agent_message_chunk"):
            content = u.get("content") or {}
            out.append(("user" if kind == "user_message_chunk" else "agent", content.get("text")))
        elif kind == "tool_call":
            out.append(("tool_call", u.get("toolCallId"), u.get("rawInput")))
        elif kind == "tool_call_update":
            texts = [
                c["content"].get("text")
                for c in u.get("content") or []
                if c.get("type") == "content" and isinstance(c.get("content"), dict)
            ]
            text = "".join(t for t in texts if isinstance(t, str)) if texts else None
            raw = u.get("rawOutput")
            if text is None and u.get("status") == "completed" and isinstance(raw, dict):
                # read-kind tools (``view``) replay their output only as rawOutput.content
                text = raw.get("content")
            out.append(("tool_call_update", u.get("toolCallId"), u.get("status"), text))
        elif kind == "agent_thought_chunk":
            out.append(("thought", (u.get("content") or {}).get("text")))
    return out
