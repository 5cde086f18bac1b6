"""Deep Agents writer: Snapshot -> ``checkpoint.json`` (portable seed) + ``prepare.py``.

The native store is one shared SQLite database, so the export holds a portable
readout instead of ``home/`` (docs/design.md §6); its ``prepare.py``
(``prepare_thread.py`` here) writes the thread with the real ``langgraph`` /
``deepagents`` packages in the layout a real run makes (an input checkpoint
and a ``messages`` write), which ``dcode threads list`` counts right before and
after a continued turn (``codecs/deepagents/README.md`` and its caution;
the codec README seeding experiments D/E).

Lowering: user -> ``HumanMessage``; a run of reasoning / assistant / tool-call
records -> one ``AIMessage`` (text and LangChain ``reasoning`` content blocks,
``tool_calls``); a new AIMessage starts when text follows a tool call;
tool-result -> ``ToolMessage`` with ``status``. Deep Agents cannot hold system
text or observations in a thread (the system prompt is rebuilt at run time),
per-message times, or exit codes other than in the tool output text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    dropped_code,
    name_joined_models,
    name_status_not_sent,
)
from trajconv.codecs.common import name_unheld, start_write
from trajconv.codecs.deepagents import layout
from trajconv.codecs.deepagents.reader import HARNESS
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Snapshot
from trajconv.snapshot.spool import CHUNK, Spool

THREAD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
AI_KINDS = ("assistant", "reasoning", "tool-call")


def prepare_script() -> str:
    return (
        resources.files("trajconv.codecs.deepagents")
        .joinpath("prepare_thread.py")
        .read_text("utf-8")
    )


def dcode_time(time: str | None) -> str | None:
    """A Snapshot time in dcode's ``datetime.now(UTC).isoformat()`` shape."""
    if time is None:
        return None
    moment = datetime.fromisoformat(time.replace("Z", "+00:00"))
    return moment.isoformat(timespec="microseconds")


def thread_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    sid = snapshot.session.id
    if THREAD_ID_RE.match(sid):
        return sid
    diags.add("ids-derived", "thread id")
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:deepagents-thread"))


#: ``json.dumps(value, ensure_ascii=False, indent=1)``, with one encoder for every call.
_encode = json.JSONEncoder(ensure_ascii=False, indent=1).encode


def _dumps(value: Any, depth: int) -> str:
    """``value`` as ``json.dumps(seed, ensure_ascii=False, indent=1)`` lays it out
    ``depth`` levels deep. Non-empty lists and str-keyed dicts are laid out here, so
    json's pure-Python indenting encoder (most of the writer's time when it laid out
    everything) only sees scalars, which strings pass through in C."""
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        body = ",".join(f"{pad}{_encode(k)}: {_dumps(v, depth + 1)}" for k, v in value.items())
        return f"{{{body}\n{' ' * depth}}}"
    if isinstance(value, list | tuple) and value:
        body = ",".join(pad + _dumps(v, depth + 1) for v in value)
        return f"[{body}\n{' ' * depth}]"
    # scalars, empty containers; raw newlines are only ever between JSON tokens
    return _encode(value).replace("\n", "\n" + " " * depth)


class _SeedFile:
    """``checkpoint.json`` in pieces: the head fields, then the messages and times the
    lowering pass spooled, byte for byte what ``json.dumps(seed, indent=1)`` gives."""

    def __init__(self, head: dict[str, Any], spool: Spool, messages: Path, times: Path) -> None:
        self.head = head
        self.spool = spool  # keeps the spooled parts until the export is written
        self.messages = messages
        self.times = times

    def __call__(self) -> Iterator[bytes]:
        head = "".join(f" {_dumps(k, 1)}: {_dumps(v, 1)},\n" for k, v in self.head.items())
        yield f'{{\n{head} "messages": ['.encode()
        yield from _chunks(self.messages)
        yield b'\n ],\n "times": {'
        yield from _chunks(self.times)
        yield b"\n }\n}\n" if self.times.stat().st_size else b"}\n}\n"


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


class _Lowerer:
    """Lowers records to messages, written to ``messages`` (and their times to ``times``)
    as ``checkpoint.json`` members as soon as each message is complete."""

    def __init__(
        self,
        snapshot: Snapshot,
        diags: Diagnostics,
        keep_reasoning: bool,
        messages: TextIO,
        times: TextIO,
    ) -> None:
        self.snapshot = snapshot
        self.d = diags
        self.keep_reasoning = keep_reasoning
        self.native_ids = snapshot.source.harness == HARNESS
        self.messages = messages
        self.times = times
        self.count = 0
        self.timed = 0
        self.used: set[str] = set()
        self.call_names: dict[str, str] = {}
        self.group: dict[str, Any] | None = None
        self.parts: list[tuple[str, str]] = []
        self.model_seen = False
        self.group_time: str | None = None
        self.models: list[tuple[str, str | None]] = []  # the group's texts, which take its model

    def message_id(self, rec: Any) -> str:
        native = rec.evidence.native_id
        if self.native_ids and isinstance(native, str) and native and native not in self.used:
            mid = native
        else:
            self.d.add("ids-derived", "message ids")
            mid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{self.snapshot.id}:{rec.seq}"))
        self.used.add(mid)
        if rec.time is not None:
            self.times.write(
                f"{',' if self.timed else ''}\n  {_dumps(mid, 2)}: {_dumps(rec.time, 2)}"
            )
            self.timed += 1
        return mid

    def emit(self, msg: dict[str, Any]) -> None:
        self.messages.write(f"{',' if self.count else ''}\n  {_dumps(msg, 2)}")
        self.count += 1

    def close(self) -> None:
        group, self.group = self.group, None
        if group is None:
            return
        parts, self.parts = self.parts, []
        model = group.get("response_metadata", {}).get("model_name")
        name_joined_models(self.d, model, self.models)
        self.models = []
        texts = [t for k, t in parts if k == "assistant"]
        if len(parts) == len(texts) and len(texts) <= 1:
            group["content"] = texts[0] if texts else ""
        else:
            group["content"] = [
                {"type": "text", "text": t}
                if k == "assistant"
                else {"type": "reasoning", "reasoning": t}
                for k, t in parts
            ]
        self.emit(group)

    def ai(self, rec: Any) -> None:
        if self.group is None or (rec.kind != "tool-call" and self.group["tool_calls"]):
            self.close()
            self.group = {
                "type": "ai",
                "id": self.message_id(rec),
                "content": "",
                "tool_calls": [],
            }
            self.group_time = rec.time
        elif rec.time != self.group_time:  # one AIMessage holds one time, its first record's
            lost = rec.time is not None
            self.d.add("untranslated-time" if lost else "timestamps-synthesized", rec.id)
        group = self.group
        if rec.kind in ("assistant", "reasoning"):
            if rec.kind == "reasoning" and not self.keep_reasoning:
                self.d.add("untranslated-reasoning", rec.id)
                return
            self.parts.append((rec.kind, rec.text))
            self.models.append((rec.id, rec.model))
            if rec.model and "response_metadata" not in group:
                group["response_metadata"] = {"model_name": rec.model}
                self.model_seen = True
            return
        args = rec.call.arguments
        if not isinstance(args, dict):
            args = {"_raw": json.dumps(args, ensure_ascii=False)}
        group["tool_calls"].append(
            {"name": rec.call.name, "args": args, "id": rec.call.id, "type": "tool_call"}
        )
        self.call_names[rec.call.id] = rec.call.name

    def other(self, rec: Any) -> None:
        self.close()
        if rec.kind == "user":
            self.emit({"type": "human", "id": self.message_id(rec), "content": rec.text})
        elif rec.kind == "tool-result":
            res = rec.result
            if res.ok is None:
                self.d.add("tool-status-assumed", rec.id)
            # ``status`` keeps a failure, but the model is sent the content alone
            name_status_not_sent(self.d, rec.id, res, own=self.native_ids)
            msg: dict[str, Any] = {
                "type": "tool",
                "id": self.message_id(rec),
                "tool_call_id": res.call_id,
                "content": res.output,
                "status": "error" if res.ok is False else "success",
            }
            if res.call_id in self.call_names:
                msg["name"] = self.call_names[res.call_id]
            self.emit(msg)
        else:
            # system / observation: no slot in a Deep Agents thread.
            self.d.add(f"untranslated-{rec.kind}", rec.id)


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    agent_name: str = "agent",
    reasoning: str = "keep",
    **_options: Any,
) -> ExportPlan:
    """``reasoning="keep"`` writes reasoning as LangChain ``reasoning`` blocks (ACP replays
    them as thoughts); ``"drop"`` leaves it out (some providers reject such blocks)."""
    diags, drop, workdir = start_write(snapshot, "deepagents", allow_lossy=allow_lossy, cwd=cwd)
    if reasoning not in ("keep", "drop"):
        raise RefusedError(f"reasoning must be 'keep' or 'drop', not {reasoning!r}")
    tid = thread_id(snapshot, diags)
    spool = Spool()
    messages, times = spool.new_file("messages.json"), spool.new_file("times.json")
    last_time = None
    with messages.open("w", encoding="utf-8") as mfh, times.open("w", encoding="utf-8") as tfh:
        low = _Lowerer(snapshot, diags, reasoning == "keep", mfh, tfh)
        for rec in snapshot.records:
            last_time = rec.time or last_time
            if rec.id in drop:
                diags.add(dropped_code(rec.kind), rec.id)
                continue
            if rec.kind in AI_KINDS:
                low.ai(rec)
            else:
                low.other(rec)
        low.close()
    if not low.count:
        raise RefusedError("refusing to write deepagents: no message to write")

    session = snapshot.session
    if session.model is not None and not low.model_seen:
        diags.add("untranslated-model", "response_metadata.model_name")
    if low.timed:
        diags.add("untranslated-time", "per-message times (kept only in checkpoint.json)")
    if session.updated_at is None and last_time is not None:
        diags.add("timestamps-synthesized", "updated_at (the last record's time)")
    name_unheld(
        diags,
        session,
        {
            "untranslated-title": "a Deep Agents thread has no title",
            "untranslated-parent-session": "a Deep Agents thread has no parent thread",
        },
    )
    head: dict[str, Any] = {
        "format": layout.SEED_FORMAT,
        "snapshot_id": snapshot.id,
        "thread_id": tid,
        "checkpoint_ns": "",
        "cwd": workdir,
        "agent_name": agent_name,
        "git_branch": session.branch,
        "created_at": dcode_time(session.created_at),
        "updated_at": dcode_time(session.updated_at or last_time),
        "model": session.model,
        "acp_session": True,
    }
    return ExportPlan(
        session_id=tid,
        files=[ExportFile(layout.SEED, _SeedFile(head, spool, messages, times), 0o644)],
        session_paths=[],
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(),
        try_home=None,  # the session exists once prepare.py wrote it into a home
        notes=[
            "prepare.py imports langgraph and deepagents: it uses the python of the dcode "
            "on PATH when the one running it lacks them",
            f"the thread lands in ~/{layout.ROOT}/{layout.DB_REL}; "
            f"ACP clients load it with session/load cwd={workdir}",
        ],
    )
