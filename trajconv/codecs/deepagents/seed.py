"""The portable Deep Agents seed, ``checkpoint.json`` (format ``trajconv.deepagents-seed/1``).

The writer emits it instead of a ``home/`` tree because the native store is a
shared SQLite database (docs/design.md §6); ``prepare.py`` turns it into rows with the
real ``langgraph`` / ``deepagents`` packages. Fields:

``format``, ``snapshot_id``, ``thread_id``, ``checkpoint_ns`` (always ``""``),
``cwd``, ``agent_name``, ``git_branch``, ``created_at`` / ``updated_at`` (dcode's
own ``isoformat`` shape, or null), ``acp_session`` (true), ``messages`` (LangChain
message dicts, each with a unique ``id``), ``times`` (message id -> Snapshot time,
only where the Snapshot had one; not written to the database, which cannot hold
per-message times).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.deepagents import layout
from trajconv.codecs.jsonl import read_bounded
from trajconv.errors import FormatError, UsageError
from trajconv.snapshot.builder import SnapshotBuilder, time_from_iso
from trajconv.snapshot.models import Session, Snapshot, Source

MESSAGE_TYPES = ("human", "ai", "tool", "system")
REQUIRED = ("format", "thread_id", "checkpoint_ns", "cwd", "messages")


def validate(doc: Any) -> list[str]:
    """Problems with a seed document; empty when it is valid."""
    if not isinstance(doc, dict):
        return ["the seed is not a JSON object"]
    problems = [f"missing {key}" for key in REQUIRED if key not in doc]
    if doc.get("format") != layout.SEED_FORMAT:
        problems.append(f"format is not {layout.SEED_FORMAT}")
    if not isinstance(doc.get("thread_id"), str) or not doc.get("thread_id"):
        problems.append("thread_id must be a non-empty string")
    if doc.get("checkpoint_ns") != "":
        problems.append("checkpoint_ns must be '' (only the root namespace is portable)")
    if not isinstance(doc.get("cwd"), str) or not doc.get("cwd"):
        problems.append("cwd must be a non-empty string")
    msgs = doc.get("messages")
    if not isinstance(msgs, list):
        return [*problems, "messages must be a list"]
    seen: set[str] = set()
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("type") not in MESSAGE_TYPES:
            problems.append(f"messages[{i}] has no known type")
            continue
        mid = m.get("id")
        if not isinstance(mid, str) or not mid:
            problems.append(f"messages[{i}] has no id")
        elif mid in seen:
            problems.append(f"messages[{i}] repeats id {mid!r}")
        else:
            seen.add(mid)
        if m["type"] == "tool" and not isinstance(m.get("tool_call_id"), str):
            problems.append(f"messages[{i}] (tool) has no tool_call_id")
    return problems


def to_message(d: dict[str, Any]) -> Any:
    """A LangChain message object from a seed message dict."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError("reading a Deep Agents seed needs langchain-core") from exc
    classes: dict[str, Any] = {
        "human": HumanMessage,
        "ai": AIMessage,
        "tool": ToolMessage,
        "system": SystemMessage,
    }
    fields = {k: v for k, v in d.items() if k != "type"}
    return classes[d["type"]](**fields)


def read_seed(path: Path, limits: Limits) -> Snapshot:
    from trajconv.codecs.deepagents.reader import HARNESS, READER, Occurrence, lift_messages

    data = read_bounded(path, limits.max_session_bytes)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(path, f"not JSON: {exc}") from exc
    problems = validate(doc)
    if problems:
        raise FormatError(path, "; ".join(problems))
    tid = str(doc["thread_id"])
    b = SnapshotBuilder(
        Source(harness=HARNESS, harness_version=None, session_id=tid, locator=layout.SEED), READER
    )
    b.add_artifact(layout.SEED, "application/json", data)
    times = doc.get("times") if isinstance(doc.get("times"), dict) else {}

    def occurrences() -> Iterator[tuple[Occurrence, Any]]:
        # one LangChain message at a time, lifted before the next is built
        for i, m in enumerate(doc["messages"]):
            try:
                msg = to_message(m)
            except Exception as exc:  # pydantic validation of a hand-edited seed
                raise FormatError(path, f"messages[{i}]: {exc}") from exc
            when = times.get(m["id"])
            occ = Occurrence(
                layout.SEED,
                1,
                i,
                msg.id,
                type(msg).__name__,
                time_from_iso(when) if isinstance(when, str) else None,
            )
            yield occ, msg

    lifter = lift_messages(b, occurrences())

    def _time(key: str) -> str | None:
        value = doc.get(key)
        return time_from_iso(value) if isinstance(value, str) else None

    model = doc.get("model")
    branch = doc.get("git_branch")
    b.session = Session(
        id=tid,
        cwd=str(doc["cwd"]),
        model=model if isinstance(model, str) else lifter.last_model,
        branch=branch if isinstance(branch, str) else None,
        created_at=_time("created_at"),
        updated_at=_time("updated_at"),
    )
    return b.build()
