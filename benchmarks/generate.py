"""Generate large native sessions for the benchmarks, deterministically (seeded).

Every harness's session is written from its format spec in ``trajconv/codecs/*/README.md``
(the section numbers below point there), at about 10 MB and 100 MB, or 1 GB
with ``--big``. The same seed and size always give the same bytes. Each
dataset folder holds a ``dataset.json`` that says what trajconv reads (path,
session) and what the floor reads (journal lines, or SQLite rows and blobs).

    python benchmarks/generate.py                    # 10 MB and 100 MB of every harness
    python benchmarks/generate.py --sizes 10MB --only grok,copilot
    python benchmarks/generate.py --big              # adds 1 GB datasets

Output goes to ``benchmarks/.data/`` (generated, never committed); a dataset
whose ``dataset.json`` already matches the parameters is not rebuilt.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import shutil
import sqlite3
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / ".data"
GENERATOR_VERSION = 8
SEED = 20261130
SIZES = {"10MB": 10 * 1024**2, "100MB": 100 * 1024**2, "1GB": 1024**3, "176KB": 176 * 1024}
"""``176KB``: the small sessions whose conversion ``run.py --startup`` times (issue 38)."""
HARNESSES = (
    "grok", "copilot", "fx1", "fx4", "cursor", "deepagents", "gemini", "opencode", "claude",
    "codex", "aider", "atif", "kilo", "pi", "qwen", "vibe", "openhands",
)  # fmt: skip
CWD = "/srv/bench"
BASE_MS = 1_788_249_600_000  # 2026-09-01T08:00:00Z

# -- text ------------------------------------------------------------------------------------

_WORD_TEXT = (
    "the a file list read write test module function return value error path config build "
    "run check output input session agent tool call result line token model reason plan "
    "update index import class self data format json bytes stream chunk parse open close "
    'naïve Größe café 日本語 テスト 🚀 ✓ "quoted" back\\slash tab\there '
)
_WORDS = _WORD_TEXT.split(" ")


class Text:
    """Slices of one fixed pseudo-random corpus: cheap, deterministic, varied."""

    def __init__(self, rng: random.Random, size: int = 1 << 21) -> None:
        words = [rng.choice(_WORDS) for _ in range(size // 5)]
        for i in range(0, len(words), 17):
            words[i] += rng.choice((".\n", ",", ":\n\n", ";", "?"))
        self.corpus = " ".join(w for w in words if w)
        self.rng = rng

    def __call__(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.corpus) - n - 1)
        return self.corpus[start : start + n]

    def said(self, n: int) -> str:
        """A slice with no whitespace at its ends, never empty: a message's text."""
        return self(n).strip() or "ok"

    def chunks(self, total: int, lo: int = 4, hi: int = 60) -> list[str]:
        """A message of about ``total`` characters cut into streaming-size chunks."""
        text = self(total)
        out, i = [], 0
        while i < len(text):
            step = self.rng.randint(lo, hi)
            out.append(text[i : i + step])
            i += step
        return out or [text]


def _size(rng: random.Random, median: int, cap: int) -> int:
    """A long-tailed size (log-normal around ``median``), at least 1 and at most ``cap``."""
    return max(1, min(cap, int(rng.lognormvariate(0, 1.0) * median)))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _line(obj: Any) -> bytes:
    # Compact, non-ASCII not escaped, members in insertion order (grok §3.1, copilot §3.1).
    return orjson.dumps(obj) + b"\n"


class _Budget:
    """Writes lines to a file until it holds about ``target`` bytes."""

    def __init__(self, path: Path, target: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("wb")
        self.target = target
        self.written = 0
        self.lines = 0

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self.written += len(data)
        self.lines += data.count(b"\n")

    @property
    def full(self) -> bool:
        return self.written >= self.target

    def close(self) -> None:
        self.fh.close()


def _one_journal(harness: str, log: _Budget, path: Path, sid: str, out: Path) -> dict[str, Any]:
    """Close ``log`` and describe a dataset that is one JSONL session file."""
    log.close()
    return {
        "harness": harness,
        "read_path": str(path),
        "session": sid,
        "cwd": CWD,
        "home": str(out),
        "floor": {"kind": "jsonl", "files": [str(path)], "json": [], "blobs": []},
        "units": log.lines,
    }


# -- Grok Build (grok-build.md §1-§5) ----------------------------------------------------------


def gen_grok(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    text = Text(rng)
    sid = "019c0000-1111-7000-8000-" + f"{rng.getrandbits(48):012x}"
    group = "%2Fsrv%2Fbench"  # urllib.parse.quote(CWD, safe="") (§1)
    sdir = out / "sessions" / group / sid
    journal = _Budget(sdir / "updates.jsonl", target)
    # chat_history.jsonl: the model-context log Grok derives from the journal (§2); a real
    # session has both, and harness-convert reads this one.
    history = _Budget(sdir / "chat_history.jsonl", 0)
    assistant: dict[str, Any] | None = None

    def flush() -> None:
        nonlocal assistant
        if assistant is not None:
            history.write(_line(assistant))
            assistant = None

    def said(piece: str) -> None:
        nonlocal assistant
        assistant = assistant or {"type": "assistant", "content": ""}
        assistant["content"] += piece

    ms = BASE_MS
    event = 40
    prompt = 0
    calls = 0
    model = "grok-build"

    def emit(update: dict[str, Any], *, xai: bool = False, **meta: Any) -> None:
        nonlocal ms, event
        ms += rng.randint(1, 900)
        event += rng.randint(1, 3)
        params_meta = {"eventId": f"{sid}-{event}", "agentTimestampMs": ms, **meta}
        journal.write(
            _line(
                {
                    "timestamp": ms // 1000,
                    "method": "_x.ai/session/update" if xai else "session/update",
                    "params": {"sessionId": sid, "update": update, "_meta": params_meta},
                }
            )
        )

    emit({"sessionUpdate": "available_commands_update", "availableCommands": []})
    torn_at = target // 2
    torn_done = False
    while not journal.full:
        prompt_id = _uuid(rng)
        blocks = []
        for _ in range(rng.choice((1, 1, 1, 2))):  # a prompt of one or two content blocks (§3.4)
            block = {"type": "text", "text": text(_size(rng, 300, 20_000))}
            blocks.append(block)
            emit(
                {
                    "sessionUpdate": "user_message_chunk",
                    "content": block,
                    "_meta": {"modelId": model, "promptIndex": prompt},
                }
            )
        history.write(_line({"type": "user", "content": blocks}))
        chunk = 0
        for piece in text.chunks(_size(rng, 400, 8_000)):
            chunk += 1
            emit(
                {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": piece},
                },
                promptId=prompt_id,
                chunkId=chunk,
            )
        for _step in range(rng.choice((0, 1, 2, 3, 4))):
            if rng.random() < 0.5:
                for piece in text.chunks(_size(rng, 150, 2_000)):
                    said(piece)
                    chunk += 1
                    emit(
                        {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": piece},
                        },
                        promptId=prompt_id,
                        chunkId=chunk,
                    )
            calls += 1
            call_id = f"call_{calls:07d}"
            tool = rng.choice(("read_file", "run_terminal_command", "search", "edit_file"))
            args = {"target_file": f"src/m{rng.randint(0, 999)}.py", "note": text(40)}
            said("")
            assert assistant is not None
            assistant.setdefault("tool_calls", []).append(
                {"id": call_id, "name": tool, "arguments": orjson.dumps(args).decode()}
            )
            emit(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": tool,
                    "kind": "other",
                    "status": "pending",
                    "rawInput": args,
                    "_meta": {"x.ai/tool": {"version": 1, "name": tool, "kind": "read"}},
                },
                promptId=prompt_id,
            )
            for _p in range(rng.choice((0, 1, 1, 2, 3))):  # progress (§4.3)
                emit(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "in_progress",
                        "content": [
                            {"type": "content", "content": {"type": "text", "text": text(80)}}
                        ],
                    },
                    promptId=prompt_id,
                )
            failed = rng.random() < 0.1
            output = text(_size(rng, 1_500, 200_000))
            terminal: dict[str, Any] = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "failed" if failed else "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": output}}],
            }
            flush()
            history.write(
                _line({"type": "tool_result", "tool_call_id": call_id, "content": output})
            )
            if tool == "run_terminal_command":
                terminal["rawOutput"] = {"exit_code": 1 if failed else 0}
            emit(terminal, promptId=prompt_id)
            if rng.random() < 0.02:  # a repeated terminal update (§4.3)
                emit(dict(terminal, title=f"{tool} (done)"), promptId=prompt_id)
        for piece in text.chunks(_size(rng, 600, 20_000)):
            said(piece)
            chunk += 1
            emit(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": piece},
                },
                promptId=prompt_id,
                chunkId=chunk,
            )
        emit(
            {
                "sessionUpdate": "turn_completed",
                "prompt_id": prompt_id,
                "stop_reason": "end_turn",
                "usage": {"inputTokens": rng.randint(1000, 90000), "outputTokens": 300},
            },
            xai=True,
        )
        flush()
        if not torn_done and journal.written >= torn_at:
            journal.write(b'{"timestamp":1788250000,"method":"session/upd\n')  # torn (§4.5)
            torn_done = True
        prompt += 1
    journal.close()
    history.close()
    summary = {
        "info": {"id": sid, "cwd": CWD},
        "session_summary": "Benchmark session",
        "created_at": _iso(BASE_MS),
        "updated_at": _iso(ms),
        "num_messages": journal.lines,
        "num_chat_messages": history.lines,
        "current_model_id": model,
        "next_trace_turn": prompt,
        "chat_format_version": 1,
        "last_active_at": _iso(ms),
        "generated_title": "Benchmark session",
    }
    (sdir / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False))
    return {
        "harness": "grok",
        "read_path": str(sdir),
        "session": sid,
        "cwd": CWD,
        "home": str(out),
        "floor": {
            "kind": "jsonl",
            "files": [str(sdir / "updates.jsonl")],
            "json": [str(sdir / "summary.json")],
            "blobs": [str(sdir / "chat_history.jsonl")],
        },
        "units": journal.lines,
    }


# -- GitHub Copilot CLI (copilot-cli.md §1, §3, §6) ---------------------------------------


def gen_copilot(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    text = Text(rng)
    sid = _uuid(rng)
    sdir = out / "session-state" / sid
    log = _Budget(sdir / "events.jsonl", target)
    ms = BASE_MS
    parent: str | None = None
    model = "gpt-5.4"
    calls = 0

    def emit(kind: str, data: dict[str, Any]) -> None:
        nonlocal ms, parent
        ms += rng.randint(1, 900)
        eid = _uuid(rng)
        log.write(
            _line(
                {"type": kind, "data": data, "id": eid, "timestamp": _iso(ms), "parentId": parent}
            )
        )
        parent = eid  # a linear chain over persisted events (§3.2)

    emit(
        "session.start",
        {
            "sessionId": sid,
            "version": 1,
            "producer": "copilot-agent",
            "copilotVersion": "1.0.102",
            "startTime": _iso(ms),
            "selectedModel": model,
            "context": {"cwd": CWD},
        },
    )
    first = ""
    while not log.full:
        interaction = _uuid(rng)
        prompt = text(_size(rng, 300, 20_000))
        first = first or prompt
        # A user prompt hook, as the CLI persists it when one is configured (§3.3 hook.start/
        # hook.end); agent-trajectory takes user prompts only from these events.
        hook = _uuid(rng)
        emit(
            "hook.start",
            {
                "hookInvocationId": hook,
                "hookType": "userPromptSubmitted",
                "input": {"timestamp": ms, "cwd": CWD, "prompt": prompt, "sessionId": sid},
            },
        )
        emit(
            "hook.end",
            {"hookInvocationId": hook, "hookType": "userPromptSubmitted", "success": True},
        )
        emit(
            "user.message",
            {
                "content": prompt,
                "transformedContent": f"<current_datetime>{_iso(ms)}</current_datetime>\n\n"
                + prompt,
                "messageId": _uuid(rng),
                "interactionId": interaction,
            },
        )
        turn = 0
        for _step in range(rng.choice((0, 1, 2, 3, 4))):
            emit("assistant.turn_start", {"turnId": str(turn), "interactionId": interaction})
            emit("assistant.reasoning", {"reasoningId": _uuid(rng), "content": text(400)})
            requests = []
            for _c in range(rng.choice((1, 1, 2))):
                calls += 1
                requests.append(
                    {
                        "toolCallId": f"call_{calls:07d}",
                        "name": rng.choice(("bash", "view", "edit", "grep")),
                        "arguments": {"command": text(60), "description": text(20)},
                        "type": "function",
                    }
                )
            emit(
                "assistant.message",
                {
                    "messageId": _uuid(rng),
                    "content": text(_size(rng, 120, 2_000)) if rng.random() < 0.5 else "",
                    "toolRequests": requests,
                    "model": model,
                    "turnId": str(turn),
                },
            )
            for req in requests:
                emit(
                    "tool.execution_start",
                    {
                        "toolCallId": req["toolCallId"],
                        "toolName": req["name"],
                        "arguments": req["arguments"],
                        "turnId": str(turn),
                    },
                )
            for req in requests:
                ok = rng.random() >= 0.1
                done: dict[str, Any] = {
                    "toolCallId": req["toolCallId"],
                    "model": model,
                    "turnId": str(turn),
                    "success": ok,
                }
                if ok:
                    done["result"] = {"content": text(_size(rng, 1_500, 200_000))}
                else:
                    done["error"] = {"message": text(200), "code": "failure"}
                emit("tool.execution_complete", done)
            emit("assistant.turn_end", {"turnId": str(turn)})
            turn += 1
        emit("assistant.turn_start", {"turnId": str(turn), "interactionId": interaction})
        emit(
            "session.usage_record",
            {"usage": {"model": model, "inputTokens": rng.randint(100, 90000), "outputTokens": 9}},
        )
        emit(
            "assistant.message",
            {
                "messageId": _uuid(rng),
                "content": text(_size(rng, 600, 20_000)),
                "toolRequests": [],
                "model": model,
                "turnId": str(turn),
            },
        )
        emit("assistant.turn_end", {"turnId": str(turn)})
    log.close()
    name = first.splitlines()[0][:60].replace("'", "")
    (sdir / "workspace.yaml").write_text(
        f"id: {sid}\ncwd: {CWD}\nclient_name: github/cli\nname: '{name}'\nuser_named: false\n"
        f"summary_count: 0\ncreated_at: {_iso(BASE_MS)}\nupdated_at: {_iso(ms)}\n",
        encoding="utf-8",
    )
    return {
        "harness": "copilot",
        "read_path": str(sdir),
        "session": sid,
        "home": str(out),
        "floor": {"kind": "jsonl", "files": [str(sdir / "events.jsonl")]},
        "units": log.lines,
    }


# -- fx (fx.md §1-§5) ------------------------------------------------------------------------


def _fx_id(rng: random.Random) -> str:
    return f"{BASE_MS}-{BASE_MS * 1_000_000 + rng.randint(0, 999_999)}-{rng.getrandbits(64):016x}"


def gen_fx4(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """Schema 4: ``session.json`` metadata + ``events.jsonl`` frames + ``tool-results/`` (§2-§4)."""
    text = Text(rng)
    sid = _fx_id(rng)
    sdir = out / ".fx" / "sessions" / sid
    results = sdir / "tool-results"
    results.mkdir(parents=True, exist_ok=True)
    log = _Budget(sdir / "events.jsonl", target)
    ms = BASE_MS
    seq = 0
    calls = 0
    bodies: list[str] = []

    def emit(event: dict[str, Any]) -> None:
        nonlocal ms, seq
        ms += rng.randint(1, 900)
        seq += 1
        log.write(_line({"schema_version": 3, "seq": seq, "timestamp_ms": ms, "event": event}))

    while not log.full:
        started = ms
        emit({"user": {"text": text(_size(rng, 300, 20_000)), "images": [], "work_id": None}})
        for _step in range(rng.choice((0, 1, 2, 3, 4))):
            emit(
                {
                    "assistant": {
                        "text": text(_size(rng, 150, 2_000)),
                        "provider_replay": None,
                        "standalone_response": False,
                    }
                }
            )
            calls += 1
            call_id = f"call_{calls:07d}"
            tool = rng.choice(("read_file", "shell", "list_files", "edit_file"))
            emit(
                {
                    "tool_call": {
                        "call_id": call_id,
                        "tool_name": tool,
                        "arguments_json": json.dumps({"path": f"src/m{calls % 997}.py"}),
                        "argument_integrity": "valid",
                        "provisional_id": None,
                        "provider_result": None,
                        "final_identity": "valid",
                        "provenance": "fx_local",
                    }
                }
            )
            output = text(_size(rng, 1_500, 200_000)).encode()
            # result-<tool>-<sha256(call id)[:8]>-<sha256(output)[:8]>.txt (§4)
            ref = (
                f"result-{tool}-{hashlib.sha256(call_id.encode()).digest()[:8].hex()}-"
                f"{hashlib.sha256(output).digest()[:8].hex()}.txt"
            )
            (results / ref).write_bytes(output)
            bodies.append(str(results / ref))
            log.written += len(output)  # the bodies count toward the session's size
            failed = rng.random() < 0.1
            emit(
                {
                    "tool_result": {
                        "call_id": call_id,
                        "tool_name": tool,
                        "status": "failure" if failed else "success",
                        "artifact_ref": ref,
                        "tool_image_handle": None,
                        "output_bytes": len(output),
                        "stored_bytes": len(output),
                        "completeness": "complete",
                        "preview": output[:4096].decode("utf-8", "ignore"),
                        "provider_native": False,
                        "created_at_ms": ms,
                        "permission_feedback": [],
                        "committed_file_presentation": None,
                        "command_replay_ref": None,
                        "command_replay_bytes": None,
                        "command_process_presentation": {"exit_code": 1 if failed else 0}
                        if tool == "shell"
                        else None,
                        "terminal_action_presentation": None,
                    }
                }
            )
        emit(
            {
                "assistant": {
                    "text": text(_size(rng, 600, 20_000)),
                    "provider_replay": None,
                    "standalone_response": True,
                }
            }
        )
        emit(
            {
                "turn_completed": {
                    "files": [],
                    "turn_summary": {
                        "started_at_ms": started,
                        "completed_at_ms": ms,
                        "thinking_duration_ms": 100,
                        "turn_duration_ms": ms - started,
                        "token_progress": {
                            "input_tokens": 2600,
                            "output_tokens": 40,
                            "input_exact": True,
                            "output_exact": True,
                        },
                    },
                }
            }
        )
    log.close()
    meta = {
        "schema_version": 4,
        "id": sid,
        "origin_workspace_root": CWD,
        "workspace_root": CWD,
        "created_at_ms": BASE_MS,
        "updated_at_ms": ms,
        "conversation_language": "en",
        "provider": "gateway",
        "model": "openai/gpt-5",
        "effort": "auto",
        "fast_mode": False,
        "title": "Benchmark session",
        "subagent_child": False,
    }
    (sdir / "session.json").write_bytes(orjson.dumps(meta))
    return {
        "harness": "fx",
        "read_path": str(sdir),
        "session": sid,
        "home": str(out),
        "floor": {
            "kind": "jsonl",
            "files": [str(sdir / "events.jsonl")],
            "json": [str(sdir / "session.json")],
            "blobs": bodies,
        },
        "units": log.lines,
    }


def gen_fx1(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """Schema 1: one monolithic ``session.json`` with ``history`` (§5.1)."""
    text = Text(rng)
    sid = _fx_id(rng)
    sdir = out / ".fx" / "sessions" / sid
    sdir.mkdir(parents=True, exist_ok=True)
    history: list[dict[str, Any]] = []
    size = 0
    calls = 0
    ms = BASE_MS
    while size < target:
        steps = []
        for _step in range(rng.choice((0, 1, 2, 3))):
            calls += 1
            output = text(_size(rng, 1_500, 200_000))
            ms += rng.randint(1, 900)
            call = {
                "id": f"call_{calls:07d}",
                "name": "shell",
                "arguments_json": json.dumps({"command": text(40)}),
                "provider_result": None,
            }
            result = {
                "tool_call_id": call["id"],
                "tool_name": "shell",
                "status": "failure" if rng.random() < 0.1 else "success",
                "output": output,
                "output_bytes": len(output.encode()),
                "stored_output_bytes": len(output.encode()),
                "truncated": False,
                "provider_native": False,
                "created_at_ms": ms,
            }
            steps.append({"assistant": text(150), "tool_calls": [call], "tool_results": [result]})
        item = {
            "kind": "assistant",
            "user": {"text": text(_size(rng, 300, 20_000)), "images": []},
            "assistant": text(_size(rng, 600, 20_000)),
            "execution": {"tool_steps": steps, "files": []},
        }
        history.append(item)
        size += len(orjson.dumps(item))
    doc = {
        "schema_version": 1,
        "id": sid,
        "created_at_ms": BASE_MS,
        "updated_at_ms": ms,
        "workspace_root": CWD,
        "conversation_language": "en",
        "total_input_tokens": 1200,
        "total_output_tokens": 340,
        "history_len": len(history),
        "history": history,
    }
    (sdir / "session.json").write_bytes(orjson.dumps(doc))
    return {
        "harness": "fx",
        "read_path": str(sdir),
        "session": sid,
        "home": str(out),
        "floor": {"kind": "json", "files": [str(sdir / "session.json")]},
        "units": len(history),
    }


# -- Cursor AgentKv store (cursor-agentkv.md §2-§6) ---------------------------------------


def gen_cursor(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from trajconv.codecs.cursor import proto

    text = Text(rng)
    agent_id = _uuid(rng)
    path = out / "chats" / hashlib.md5(CWD.encode()).hexdigest() / agent_id / "store.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    # Same pragmas and schema as Cursor (§2).
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = NORMAL")
    con.execute("PRAGMA user_version = 1")
    con.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
    con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    written = 0
    count = 0

    def put(data: bytes) -> bytes:
        nonlocal written, count
        blob_id = hashlib.sha256(data).digest()  # content address (§2)
        con.execute("INSERT OR IGNORE INTO blobs (id, data) VALUES (?, ?)", (blob_id.hex(), data))
        written += len(data)
        count += 1
        return blob_id

    def message(obj: dict[str, Any]) -> bytes:
        return put(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())

    cur = {"cursor": {"modelName": "gpt-5"}}
    ids = [message({"role": "system", "content": "You are a coding agent."})]
    turns = []
    calls = 0
    while written < target * 3 // 4:  # SQLite pages add about a third to the blob bytes
        request = _uuid(rng)
        msg_id = _uuid(rng)
        prompt = text(_size(rng, 300, 20_000))
        ids.append(
            message(
                {
                    "role": "user",
                    "id": msg_id,
                    "content": [{"type": "text", "text": f"<user_query>{prompt}</user_query>"}],
                    "providerOptions": {"cursor": {"requestId": request}},
                }
            )
        )
        steps = []
        for _step in range(rng.choice((0, 1, 2, 3, 4))):
            calls += 1
            call_id = f"call_{calls:07d}"
            ids.append(
                message(
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "reasoning", "text": text(300), "providerOptions": cur},
                            {
                                "type": "tool-call",
                                "toolCallId": call_id,
                                "toolName": "read_file",
                                "args": {"path": f"src/m{calls % 997}.py"},
                            },
                        ],
                        "providerOptions": cur,
                    }
                )
            )
            failed = rng.random() < 0.1
            ids.append(
                message(
                    {
                        "role": "tool",
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": call_id,
                                "toolName": "read_file",
                                "result": text(_size(rng, 1_000, 200_000)),
                            }
                        ],
                        "providerOptions": {
                            "cursor": {"highLevelToolCallResult": {"isError": failed}}
                        },
                    }
                )
            )
        answer = text(_size(rng, 600, 20_000))
        ids.append(
            message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": answer}],
                    "providerOptions": cur,
                }
            )
        )
        step = proto.new("ConversationStep")
        step.assistant_message.text = answer
        steps.append(put(proto.encode(step)))
        user = proto.new("UserMessage")
        user.text = prompt
        user.message_id = msg_id
        turn = proto.new("ConversationTurnStructure")
        agent = turn.agent_conversation_turn
        agent.user_message = put(proto.encode(user))
        agent.steps.extend(steps)
        agent.request_id = request
        agent.user_message_id = msg_id
        turns.append(put(proto.encode(turn)))
    root = proto.new("ConversationStateStructure")
    root.root_prompt_messages_json.extend(ids)
    root.turns.extend(turns)
    root.previous_workspace_uris.append("file://" + CWD)
    root.conversation_started_timestamp_ms = BASE_MS
    root_id = put(proto.encode(root))
    meta = {
        "agentId": agent_id,
        "latestRootBlobId": root_id.hex(),
        "name": "Benchmark session",
        "createdAt": BASE_MS,
        "mode": "default",
        "isRunEverything": False,
        "lastUsedModel": "gpt-5",
    }
    value = json.dumps(meta, separators=(",", ":")).encode().hex()  # meta["0"] (§3)
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('0', ?)", (value,))
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return {
        "harness": "cursor",
        "read_path": str(path.parent),
        "session": agent_id,
        "home": str(out),
        "floor": {"kind": "cursor", "db": str(path)},
        "units": count,
    }


# -- Deep Agents (deepagents.md §3-§5, §9) ------------------------------------------------


def gen_deepagents(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """A native-style thread written through LangGraph's own SqliteSaver: a chain of
    checkpoints, each step's new messages as a ``messages`` write on it (§5). Only the root
    checkpoint stores the (empty) list; dcode would also store a full snapshot every 50
    steps, which makes the file grow with the square of the thread, so that is left out
    (a reader walks back to the root, §5 rule 4)."""
    try:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise SkipDataset(
            f"deepagents: {exc.name} is not installed in this environment; "
            "pip install langgraph-checkpoint-sqlite (or make .tools/venv-langgraph, see run.py) "
            "to generate Deep Agents threads"
        ) from None
    from langgraph.checkpoint.base import empty_checkpoint

    text = Text(rng)
    thread = _uuid(rng)
    db = out / ".deepagents" / "sessions.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(con)
    saver.setup()
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    size = 0
    count = 0
    step = 0
    version = 0
    messages: list[Any] = []
    calls = 0

    def checkpoint(new: list[Any]) -> None:
        nonlocal config, step, version, size, count
        version += 1
        cp = empty_checkpoint()
        # time-ordered (v6 layout): lexicographic order is step order (§3)
        high = (step + 1) << 80 | 6 << 76 | rng.getrandbits(12) << 64
        cp["id"] = str(uuid.UUID(int=high | 2 << 62 | rng.getrandbits(62)))
        cp["ts"] = _iso(BASE_MS + step * 1000).replace("Z", "+00:00")
        cp["channel_versions"] = {"messages": f"{version:032d}.0.5"}
        cp["updated_channels"] = ["messages"]
        if step == 0:
            cp["channel_values"] = {"messages": list(messages)}
        meta = {
            "source": "loop",
            "step": step,
            "parents": {},
            "agent_name": "agent",
            "updated_at": cp["ts"],
            "cwd": CWD,
        }
        parent = config
        config = saver.put(parent, cp, meta, {"messages": cp["channel_versions"]["messages"]})
        if step != 0:
            saver.put_writes(config, [("messages", new)], task_id=_uuid(rng))
        size += sum(len(str(m.content)) for m in new)
        count += len(new)
        step += 1

    while size < target // 2:  # msgpack framing and SQLite pages about double the text
        new: list[Any] = [HumanMessage(content=text(_size(rng, 300, 20_000)), id=_uuid(rng))]
        messages.extend(new)
        checkpoint(new)
        for _s in range(rng.choice((0, 1, 2, 3))):
            calls += 1
            call_id = f"call_{calls:07d}"
            ai = AIMessage(
                content=text(_size(rng, 150, 2_000)),
                id=f"lc_run--{_uuid(rng)}-0",
                tool_calls=[{"name": "read_file", "args": {"path": text(20)}, "id": call_id}],
            )
            tool = ToolMessage(
                content=text(_size(rng, 1_500, 200_000)),
                tool_call_id=call_id,
                name="read_file",
                id=_uuid(rng),
                status="error" if rng.random() < 0.1 else "success",
            )
            messages.extend([ai, tool])
            checkpoint([ai, tool])
        final = AIMessage(content=text(_size(rng, 600, 20_000)), id=f"lc_run--{_uuid(rng)}-0")
        messages.append(final)
        checkpoint([final])
    con.commit()
    con.close()
    return {
        "harness": "deepagents",
        "read_path": str(db),
        "session": thread,
        "home": str(out / ".deepagents"),
        "floor": {"kind": "deepagents", "db": str(db), "thread": thread},
        "units": count,
    }


# -- Gemini CLI (trajconv/codecs/gemini/README.md; shapes as 0.61.0 writes them) ---------------


def gen_gemini(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """A live-shaped session: each model message written first without and then with its
    tool calls (replaced by id), each result also as a user message, ``$set`` after each."""
    text = Text(rng)
    sid = _uuid(rng)
    project = out / ".gemini" / "tmp" / "bench"
    project.mkdir(parents=True)
    (project / ".project_root").write_text(CWD)
    path = project / "chats" / f"session-2026-09-01T08-00-{sid[:8]}.jsonl"
    log = _Budget(path, target)
    ms = BASE_MS
    log.write(
        _line(
            {
                "sessionId": sid,
                "projectHash": hashlib.sha256(CWD.encode()).hexdigest(),
                "startTime": _iso(ms),
                "lastUpdated": _iso(ms),
                "kind": "main",
            }
        )
    )

    def stamp() -> str:
        nonlocal ms
        ms += rng.randint(1, 900)
        return _iso(ms)

    def touched() -> None:
        log.write(_line({"$set": {"lastUpdated": _iso(ms)}}))

    calls = 0
    while not log.full:
        prompt = [{"text": text(_size(rng, 300, 20_000))}]
        log.write(
            _line({"id": _uuid(rng), "timestamp": stamp(), "type": "user", "content": prompt})
        )
        touched()
        for _ in range(rng.randint(1, 4)):
            msg: dict[str, Any] = {
                "id": _uuid(rng),
                "timestamp": stamp(),
                "type": "gemini",
                "content": text(_size(rng, 400, 30_000)) if rng.random() < 0.7 else "",
                "thoughts": [
                    {
                        "subject": "Plan",
                        "description": text(_size(rng, 200, 4000)),
                        "timestamp": _iso(ms),
                    }
                ],
                "tokens": {
                    "input": 1000,
                    "output": 50,
                    "cached": 0,
                    "thoughts": 10,
                    "tool": 0,
                    "total": 1060,
                },
                "model": "gemini-2.5-pro",
            }
            log.write(_line(msg))
            touched()
            responses = []
            tool_calls = []
            for _ in range(rng.choice((1, 1, 2))):
                calls += 1
                name = rng.choice(("read_file", "run_shell_command", "list_directory"))
                cid = f"{name}__call_{calls}"
                failed = rng.random() < 0.15
                output = text(_size(rng, 800, 60_000))
                if name == "run_shell_command":
                    output = f"Output: {output}\nExit Code: {1 if failed else 0}"
                response = (
                    {"error": output}
                    if failed and name != "run_shell_command"
                    else {"output": output}
                )
                part = {"functionResponse": {"id": cid, "name": name, "response": response}}
                responses.append(part)
                tool_calls.append(
                    {
                        "id": cid,
                        "name": name,
                        "args": {"file_path": text(_size(rng, 20, 200))},
                        "result": [part],
                        "status": "error" if failed and name != "run_shell_command" else "success",
                        "timestamp": stamp(),
                    }
                )
            log.write(_line({**msg, "toolCalls": tool_calls}))
            log.write(
                _line(
                    {"id": _uuid(rng), "timestamp": stamp(), "type": "user", "content": responses}
                )
            )
            touched()
        log.write(
            _line(
                {
                    "id": _uuid(rng),
                    "timestamp": stamp(),
                    "type": "gemini",
                    "content": text(_size(rng, 400, 30_000)),
                    "thoughts": [],
                    "model": "gemini-2.5-pro",
                }
            )
        )
        touched()
    return _one_journal("gemini", log, path, sid, out)


def _opencode_ids(rng: random.Random) -> Callable[[str], str]:
    """OpenCode's ids (opencode.md §3; Kilo keeps them): ``<prefix>_`` + 12 hex digits
    counting up + 14 random base-62 characters."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    counter = (BASE_MS * 4096) & ((1 << 48) - 1)

    def ident(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix}_{counter:012x}" + "".join(rng.choice(alphabet) for _ in range(14))

    return ident


def _close_store(con: sqlite3.Connection, db: Path) -> None:
    """Commit, fold the WAL into the database and leave no ``-wal``/``-shm`` beside it."""
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)


# -- OpenCode (opencode.md §2, §3, §5, §6) ---------------------------------------------------


def gen_opencode(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``<data>/opencode.db`` with the session, message and part tables of 1.18.x (§2): one
    session, user messages with a text part, assistant steps with reasoning, text and tool
    parts between step-start and step-finish, ids in OpenCode's shape (§3)."""
    text = Text(rng)
    db = out / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(
        """
        CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text,
          name text, time_created integer NOT NULL, time_updated integer NOT NULL,
          sandboxes text NOT NULL);
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, workspace_id text,
          parent_id text, slug text NOT NULL, directory text NOT NULL, path text,
          title text NOT NULL, version text NOT NULL, agent text, model text,
          time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
          time_archived integer);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
          time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
          session_id text NOT NULL, time_created integer NOT NULL,
          time_updated integer NOT NULL, data text NOT NULL);
        CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
        CREATE INDEX part_message_id_id_idx ON part (message_id, id);
        CREATE INDEX part_session_idx ON part (session_id);
        """
    )
    ident = _opencode_ids(rng)
    sid = "ses_" + f"{~(BASE_MS * 4096) & ((1 << 48) - 1):012x}" + "Bench0000000000"[:14]
    con.execute("INSERT INTO project VALUES ('global', '/', NULL, NULL, ?, ?, '[]')",
                (BASE_MS, BASE_MS))  # fmt: skip
    written = 0
    count = 0
    ms = BASE_MS
    calls = 0

    def message(data: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        nonlocal written, count, ms
        mid = ident("msg")
        ms += 1000
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, ms, ms, body))
        for part in parts:
            pdata = json.dumps(part, separators=(",", ":"), ensure_ascii=False)
            con.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (ident("prt"), mid, sid, ms, ms, pdata),
            )
            written += len(pdata)
            count += 1

    tokens = {"input": 1000, "output": 50, "reasoning": 20, "cache": {"read": 0, "write": 0}}
    assistant = {"role": "assistant", "mode": "build", "agent": "build", "modelID": "gpt-5",
                 "providerID": "openai", "path": {"cwd": CWD, "root": CWD}, "cost": 0,
                 "tokens": tokens}  # fmt: skip
    while written < target * 3 // 4:
        message({"role": "user", "time": {"created": ms}, "agent": "build",
                 "model": {"providerID": "openai", "modelID": "gpt-5"}},
                [{"type": "text", "text": text(_size(rng, 300, 20_000))}])  # fmt: skip
        for _s in range(rng.choice((0, 1, 2, 3))):
            calls += 1
            failed = rng.random() < 0.1
            state: dict[str, Any] = {"input": {"filePath": f"{CWD}/src/m{calls % 997}.py"},
                                     "time": {"start": ms, "end": ms + 10}}  # fmt: skip
            if failed:
                state |= {"status": "error", "error": text(_size(rng, 200, 2_000))}
            else:
                state |= {"status": "completed", "output": text(_size(rng, 1_500, 200_000)),
                          "title": "read", "metadata": {}}  # fmt: skip
            message({**assistant, "time": {"created": ms}, "finish": "tool-calls"}, [
                {"type": "step-start"},
                {"type": "reasoning", "text": text(300), "time": {"start": ms, "end": ms}},
                {"type": "tool", "callID": f"call_{calls:07d}", "tool": "read", "state": state},
                {"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": tokens},
            ])  # fmt: skip
        message({**assistant, "time": {"created": ms}, "finish": "stop"}, [
            {"type": "step-start"},
            {"type": "text", "text": text(_size(rng, 600, 20_000))},
            {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": tokens},
        ])  # fmt: skip
    con.execute(
        "INSERT INTO session (id, project_id, slug, directory, path, title, version, "
        "time_created, time_updated) VALUES (?, 'global', 'bench-run', ?, ?, ?, '1.18.33', ?, ?)",
        (sid, CWD, CWD.lstrip("/"), "Benchmark session", BASE_MS, ms),
    )
    _close_store(con, db)
    return {
        "harness": "opencode",
        "read_path": str(db),
        "session": sid,
        "home": str(out),
        "floor": {"kind": "opencode", "db": str(db), "session": sid},
        "units": count,
    }


# -- Claude Code (trajconv/codecs/claude/README.md; shapes as 2.1.332 writes them) -------------


def gen_claude(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """One main-chain transcript: each line's ``parentUuid`` the line before it, one content
    block per assistant line (the blocks of one answer sharing ``message.id``), each
    ``tool_use`` answered by a user ``tool_result`` line, a ``last-prompt`` line at the end."""
    text = Text(rng)
    sid = _uuid(rng)
    key = "".join(c if c.isascii() and c.isalnum() else "-" for c in CWD)
    path = out / ".claude" / "projects" / key / f"{sid}.jsonl"
    log = _Budget(path, target)
    ms = BASE_MS
    parent: str | None = None
    facts = {"userType": "external", "cwd": CWD, "sessionId": sid, "version": "2.1.332",
             "gitBranch": "main"}  # fmt: skip

    def chain(kind: str, message: dict[str, Any], **extra: Any) -> str:
        nonlocal ms, parent
        ms += rng.randint(1, 900)
        uid = _uuid(rng)
        line = {"parentUuid": parent, "isSidechain": False, "type": kind, "message": message,
                "uuid": uid, "timestamp": _iso(ms), **extra, **facts}  # fmt: skip
        log.write(_line(line))
        parent = uid
        return uid

    answers = calls = 0
    prompt = ""

    def block(mid: str, content: dict[str, Any], stop: str | None) -> str:
        usage = {"input_tokens": 1000, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "output_tokens": 50}  # fmt: skip
        message = {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                   "content": [content], "stop_reason": stop, "stop_sequence": None,
                   "usage": usage}  # fmt: skip
        return chain("assistant", message, requestId=f"req_{mid[4:]}")

    while not log.full:
        prompt = text(_size(rng, 300, 20_000))
        chain("user", {"role": "user", "content": prompt}, promptId=_uuid(rng))
        for _ in range(rng.randint(1, 4)):
            answers += 1
            mid = f"msg_{answers:024d}"
            signature = base64.b64encode(rng.randbytes(rng.randint(200, 600))).decode()
            thinking = {"type": "thinking", "thinking": text(_size(rng, 200, 4000)),
                        "signature": signature}  # fmt: skip
            block(mid, thinking, None)
            if rng.random() < 0.7:
                block(mid, {"type": "text", "text": text(_size(rng, 400, 30_000))}, None)
            uses = []
            for _ in range(rng.choice((1, 1, 2))):
                calls += 1
                name = rng.choice(("Read", "Bash"))
                args: dict[str, Any] = (
                    {"file_path": f"{CWD}/src/m{calls % 997}.py"}
                    if name == "Read"
                    else {"command": text(_size(rng, 40, 400)), "description": "Run it"}
                )
                tid = f"toolu_{calls:020d}"
                uses.append((tid, name, block(mid, {"type": "tool_use", "id": tid,
                             "name": name, "input": args}, "tool_use")))  # fmt: skip
            for tid, name, assistant_uuid in uses:
                failed = rng.random() < 0.15
                output = text(_size(rng, 800, 60_000))
                if failed and name == "Bash":
                    output = f"Exit code 1\n{output}"
                result = {"type": "tool_result", "content": output, "is_error": failed,
                          "tool_use_id": tid}  # fmt: skip
                chain("user", {"role": "user", "content": [result]},
                      toolUseResult=f"Error: {output}" if failed else output,
                      sourceToolAssistantUUID=assistant_uuid)  # fmt: skip
        answers += 1
        text_block = {"type": "text", "text": text(_size(rng, 400, 30_000))}
        block(f"msg_{answers:024d}", text_block, "end_turn")
    log.write(_line({"type": "last-prompt", "lastPrompt": prompt, "leafUuid": parent,
                     "sessionId": sid}))  # fmt: skip
    return _one_journal("claude", log, path, sid, out)


# -- Codex CLI (trajconv/codecs/codex/README.md; the legacy rollout shape) ---------------------


def gen_codex(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """A rollout in the legacy ``{timestamp, type, payload}`` shape: ``session_meta``, a
    ``turn_context`` per turn, ``response_item`` messages, reasoning (summary + an opaque
    ``encrypted_content``), ``exec_command`` function calls and ``apply_patch`` custom tool
    calls with outputs headed by their exit line, and the ``event_msg`` copies of prompts
    and replies (counted as duplicates by the reader)."""
    text = Text(rng)
    sid = _uuid(rng)
    day = out / ".codex" / "sessions" / "2026" / "09" / "01"
    path = day / f"rollout-2026-09-01T08-00-00-{sid}.jsonl"
    log = _Budget(path, target)
    ms = BASE_MS

    def put(kind: str, payload: dict[str, Any]) -> None:
        nonlocal ms
        ms += rng.randint(1, 900)
        log.write(_line({"timestamp": _iso(ms), "type": kind, "payload": payload}))

    put("session_meta", {"id": sid, "timestamp": _iso(ms), "cwd": CWD,
                         "originator": "codex_cli_rs", "cli_version": "0.171.0", "source": "cli",
                         "model_provider": "openai", "git": {"branch": "main"}})  # fmt: skip
    calls = 0
    while not log.full:
        put("turn_context", {"cwd": CWD, "approval_policy": "never", "model": "gpt-5.5"})
        prompt = text(_size(rng, 300, 20_000))
        put("response_item", {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": prompt}]})  # fmt: skip
        put("event_msg", {"type": "user_message", "message": prompt, "images": []})
        for _ in range(rng.randint(1, 4)):
            summary = text(_size(rng, 200, 4000))
            blob = base64.b64encode(rng.randbytes(rng.randint(300, 3000))).decode()
            put("response_item", {"type": "reasoning",
                                  "summary": [{"type": "summary_text", "text": summary}],
                                  "content": None, "encrypted_content": blob})  # fmt: skip
            put("event_msg", {"type": "agent_reasoning", "text": summary})
            calls += 1
            cid = f"call_{calls:08d}"
            code = 1 if rng.random() < 0.15 else 0
            body = text(_size(rng, 800, 60_000))
            if rng.random() < 0.8:
                cmd = text(_size(rng, 40, 400))
                put("response_item", {"type": "function_call", "name": "exec_command",
                                      "arguments": orjson.dumps({"cmd": cmd}).decode(),
                                      "call_id": cid})  # fmt: skip
                output = (f"Chunk ID: {calls:06x}\nWall time: 0.0100 seconds\n"
                          f"Process exited with code {code}\nOriginal token count: "
                          f"{len(body) // 4}\nOutput:\n{body}")  # fmt: skip
                put("response_item", {"type": "function_call_output", "call_id": cid,
                                      "output": output})  # fmt: skip
            else:
                patch = f"*** Begin Patch\n*** Add File: m{calls}.txt\n+{body}\n*** End Patch\n"
                put("response_item", {"type": "custom_tool_call", "status": "completed",
                                      "call_id": cid, "name": "apply_patch",
                                      "input": patch})  # fmt: skip
                output = (f"Exit code: {code}\nWall time: 0 seconds\nOutput:\n"
                          f"Success. Updated the following files:\nA m{calls}.txt\n")  # fmt: skip
                put("response_item", {"type": "custom_tool_call_output", "call_id": cid,
                                      "output": output})  # fmt: skip
            put("event_msg", {"type": "token_count", "info": {"total_token_usage": {
                "input_tokens": 1000 * calls, "output_tokens": 50 * calls}}})  # fmt: skip
        reply = text(_size(rng, 400, 30_000))
        put("response_item", {"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": reply}]})  # fmt: skip
        put("event_msg", {"type": "agent_message", "message": reply})
    return _one_journal("codex", log, path, sid, out)


# -- the newer codecs: each reports ``records``, the Snapshot records (by kind) its reader
# -- makes of the session, which tests/core/test_benchmark_generators.py checks -------------

FIXTURES = ROOT / "fixtures"


def _local(ms: int) -> str:
    """``YYYY-MM-DD HH:MM:SS`` of ``ms`` (UTC standing in for the machine's local time)."""
    return _iso(ms)[:19].replace("T", " ")


# -- Aider (trajconv/codecs/aider/README.md; aider/io.py of 0.86.2) ----------------------------


def gen_aider(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """One repository's ``.aider.chat.history.md`` as Aider appends it: runs of the CLI (a
    header and its banner), each with exchanges: typed lines (``#### ``, hard breaks), the
    model's answer (text and SEARCH/REPLACE edit blocks) and Aider's own output (``> ``:
    token counts, applied edits, failed edit blocks with their report, ``/run`` questions)."""
    text = Text(rng)
    repo = out / "repo"
    path = repo / ".aider.chat.history.md"
    log = _Budget(path, target)
    records: Counter[str] = Counter()
    ms = BASE_MS
    model = "openai/gpt-5"

    def put(chunk: str) -> None:
        log.write(chunk.encode())

    def tool(*lines: str) -> None:  # InputOutput._tool_message: "> " + line + hard break
        for line in lines:
            put(f"> {line.strip()}  \n")
        records["observation"] += 1

    def typed(inp: str) -> None:  # InputOutput.user_input
        lines = inp.splitlines() or ["<blank>"]
        put("\n#### " + "  \n#### ".join(lines).rstrip() + "  \n")
        records["user"] += 1

    def answer(content: str) -> None:  # InputOutput.ai_output
        put("\n" + content.strip() + "\n\n")
        records["assistant"] += 1

    def edit(name: str) -> str:
        old, new = text.said(_size(rng, 200, 8_000)), text.said(_size(rng, 200, 8_000))
        return f"{name}\n```python\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```"

    runs = 0
    first = ""
    while not log.full:
        runs += 1
        ms += rng.randint(60_000, 3_600_000)
        first = first or _local(ms)
        put(f"\n# aider chat started at {_local(ms)}\n\n")
        tool(
            f"/usr/local/bin/aider --model {model} --restore-chat-history"
            if runs > 1
            else f"/usr/local/bin/aider --model {model}",
            "Aider v0.86.2",
            f"Model: {model} with diff edit format",
            "Git repo: .git with 412 files",
            "Repo-map: using 4096 tokens, auto refresh",
            *(["Restored previous conversation history."] if runs > 1 else []),
        )
        for _ in range(rng.randint(1, 30)):
            if log.full:
                break
            name = f"src/m{rng.randint(0, 999)}.py"
            if rng.random() < 0.1:  # /run: its output goes to the chat, not the history
                typed(f"/run pytest -q {name}")
                lines = rng.randint(1, 400)
                tool(
                    f"Add {lines / 10:.1f}k tokens of command output to the chat? "
                    "(Y)es/(N)o [Yes]: y",
                    f"Added {lines} lines of output to the chat.",
                )
                continue
            typed(text.said(_size(rng, 300, 20_000)))
            said = text.said(_size(rng, 600, 30_000))
            if rng.random() < 0.6:
                said += "\n\n" + edit(name)
            answer(said)
            sent = rng.randint(1_000, 90_000)
            if "<<<<<<< SEARCH" in said and rng.random() < 0.15:  # a failed edit (fixture)
                tool(
                    f"Tokens: {sent} sent, {rng.randint(10, 4000)} received.",
                    "The LLM did not conform to the edit format.",
                    "https://aider.chat/docs/troubleshooting/edit-errors.html",
                    "# 1 SEARCH/REPLACE block failed to match!",
                )
                block = said[said.index("<<<<<<< SEARCH") :].removesuffix("\n```")
                report = (
                    f"## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match "
                    f"lines in {name}\n{block}\n\nThe SEARCH section must exactly match an "
                    "existing block of lines including all white space, comments, indentation, "
                    "docstrings, etc  \n"
                )
                put("\n" + report)
                answer(text.said(_size(rng, 200, 4_000)) + "\n\n" + edit(name))  # one run with it
            lines_out = [f"Tokens: {sent} sent, {rng.randint(10, 4000)} received."]
            if "<<<<<<< SEARCH" in said:
                lines_out.append(f"Applied edit to {name}")
            tool(*lines_out)
    log.close()
    return {
        "harness": "aider",
        "read_path": str(path),
        "session": "aider-" + first.replace("-", "").replace(":", "").replace(" ", "-"),
        "cwd": str(repo),
        "home": str(out),
        "floor": {"kind": "text", "files": [str(path)]},
        "units": log.lines,
        "records": dict(records),
    }


# -- ATIF (trajconv/codecs/atif/README.md; as Harbor 0.26.0's adapters write it) --------------


def gen_atif(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """A ``trajectory.json`` as Harbor writes one for an agent run (``format_trajectory_json``:
    ``json.dumps(indent=2)``): a system step, then per turn a user step and agent steps,
    each an inference with its reasoning, message, tool calls and their results in its
    ``observation`` (failures in the result text, as the Grok adapter writes them)."""
    text = Text(rng)
    sid = _uuid(rng)
    path = out / "run" / "agent" / "trajectory.json"
    path.parent.mkdir(parents=True)
    records: Counter[str] = Counter()
    steps: list[dict[str, Any]] = []
    size = 0
    ms = BASE_MS
    calls = 0
    model = "xai/grok-code-fast-1"

    def step(source: str, **fields: Any) -> None:
        nonlocal ms, size
        ms += rng.randint(1, 900)
        body = {"step_id": len(steps) + 1, "timestamp": _iso(ms), "source": source, **fields}
        steps.append(body)
        size += len(orjson.dumps(body, option=orjson.OPT_INDENT_2))  # less its \u escapes

    step("system", message=text.said(_size(rng, 3_000, 20_000)))
    records["system"] += 1
    while size < target * 4 // 5:
        step("user", message=text.said(_size(rng, 300, 20_000)))
        records["user"] += 1
        for _ in range(rng.choice((0, 1, 2, 3, 4))):
            fields: dict[str, Any] = {"model_name": model}
            if rng.random() < 0.7:
                fields["reasoning_content"] = text.said(_size(rng, 200, 4_000))
                records["reasoning"] += 1
            said = text(_size(rng, 150, 2_000)).strip() if rng.random() < 0.5 else ""
            fields["message"] = said
            records["assistant"] += 1 if said else 0
            tool_calls, results = [], []
            for _c in range(rng.choice((1, 1, 2))):
                calls += 1
                cid = f"call_{calls:07d}"
                name = rng.choice(("read_file", "run_terminal_command", "search"))
                args = {"target_file": f"src/m{calls % 997}.py", "note": text(40)}
                tool_calls.append({"tool_call_id": cid, "function_name": name, "arguments": args})
                output = text(_size(rng, 1_500, 200_000))
                if rng.random() < 0.1:
                    output = (
                        f"exit: 1\n{output}"
                        if name == "run_terminal_command"
                        else f"Error: {CWD}/src/m{calls % 997}.py does not exist."
                    )
                results.append({"source_call_id": cid, "content": output})
            records["tool-call"] += len(tool_calls)
            records["tool-result"] += len(results)
            fields |= {"tool_calls": tool_calls, "observation": {"results": results}}
            step("agent", **fields, llm_call_count=1)
        step(
            "agent",
            model_name=model,
            message=text.said(_size(rng, 600, 20_000)),
            llm_call_count=1,
        )
        records["assistant"] += 1
    doc = {
        "schema_version": "ATIF-v1.7",
        "session_id": sid,
        "agent": {"name": "grok-build", "version": "unknown", "model_name": model},
        "steps": steps,
        "final_metrics": {"total_steps": len(steps)},
    }
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return {
        "harness": "atif",
        "read_path": str(path),
        "session": sid,
        "cwd": CWD,
        "home": str(out),
        "floor": {"kind": "json", "files": [str(path)], "list": "steps"},
        "units": len(steps),
        "records": dict(records),
    }


# -- Kilo Code CLI (trajconv/codecs/kilo/README.md; 7.7.7) -----------------------------------


def _kilo_schema() -> list[str]:
    """The tables and indexes of Kilo 7.7.7's ``kilo.db``, as the recorded fixture holds them."""
    con = sqlite3.connect(
        f"file:{FIXTURES / 'kilo' / 'recorded-tools' / 'kilo.db'}?mode=ro", uri=True
    )
    try:
        rows = con.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY type = 'index', rowid"
        ).fetchall()
        migrations = con.execute("SELECT * FROM migration").fetchall()
    finally:
        con.close()
    values = ", ".join(f"('{name}', {at})" for name, at in migrations)
    return [sql for (sql,) in rows] + [f"INSERT INTO migration VALUES {values}"]


def gen_kilo(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``~/.local/share/kilo/kilo.db`` as Kilo 7.7.7 writes a session: OpenCode's message and
    part rows (agent ``code``, the prompt quoted as ``kilo run`` stores it, bash exits in
    ``state.metadata.exit``, ``step-finish`` with ``metrics``), the session's event log
    (``message.updated.1``, ``message.part.updated.1``) and its ``kilo_board`` row."""
    text = Text(rng)
    db = out / ".local" / "share" / "kilo" / "kilo.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    for sql in _kilo_schema():
        con.execute(sql)
    ident = _opencode_ids(rng)
    sid = "ses_" + f"{~(BASE_MS * 4096) & ((1 << 48) - 1):012x}" + "Bench0000000000"[:14]
    records: Counter[str] = Counter()
    written = count = seq = calls = 0
    ms = BASE_MS
    model = {"providerID": "openrouter", "modelID": "anthropic/claude-sonnet-4.5"}

    def event(kind: str, data: dict[str, Any]) -> None:
        nonlocal seq, written
        body = json.dumps({"sessionID": sid, **data}, separators=(",", ":"), ensure_ascii=False)
        con.execute(
            "INSERT INTO event VALUES (?, ?, ?, ?, ?)", (ident("evt"), sid, seq, kind, body)
        )
        seq += 1
        written += len(body)

    def message(data: dict[str, Any], parts: list[dict[str, Any]]) -> str:
        nonlocal written, count, ms
        mid = ident("msg")
        ms += rng.randint(200, 3000)
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, ms, ms, body))
        event("message.updated.1", {"info": {"id": mid, "sessionID": sid, **data}})
        for part in parts:
            pid = ident("prt")
            pdata = json.dumps(part, separators=(",", ":"), ensure_ascii=False)
            con.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (pid, mid, sid, ms, ms, pdata)
            )
            event(
                "message.part.updated.1",
                {"part": {"id": pid, "sessionID": sid, "messageID": mid, **part}, "time": ms},
            )
            written += len(pdata)
            count += 1
        return mid

    tokens = {
        "total": 1100,
        "input": 1000,
        "output": 80,
        "reasoning": 20,
        "cache": {"write": 0, "read": 0},
    }

    def finish(reason: str) -> dict[str, Any]:  # Kilo's step-finish adds metrics
        return {
            "reason": reason,
            "type": "step-finish",
            "time": {"start": ms, "end": ms + 1000, "elapsed": 1000},
            "metrics": {"generation": 3.8, "source": "computed"},
            "tokens": tokens,
            "cost": 0,
        }

    first = ""
    while written < target * 3 // 4:
        prompt = text.said(_size(rng, 300, 20_000))
        quoted = '"' + prompt.replace('"', '\\"') + '"'  # buildRunMessage (README)
        first = first or quoted
        user = message(
            {
                "role": "user",
                "time": {"created": ms},
                "agent": "code",
                "model": model,
                "summary": {"diffs": []},
            },
            [{"type": "text", "text": quoted}],
        )
        records["user"] += 1
        assistant = {
            "parentID": user,
            "role": "assistant",
            "mode": "code",
            "agent": "code",
            "path": {"cwd": CWD, "root": CWD},
            "cost": 0,
            "tokens": tokens,
            **model,
        }
        for _s in range(rng.choice((0, 1, 2, 3))):
            parts: list[dict[str, Any]] = [{"type": "step-start", "time": {"start": ms}}]
            if rng.random() < 0.8:
                parts.append(
                    {
                        "type": "reasoning",
                        "text": text.said(_size(rng, 200, 4_000)),
                        "time": {"start": ms, "end": ms + 50},
                    }
                )
                records["reasoning"] += 1
            for _c in range(rng.choice((1, 1, 2))):
                calls += 1
                failed = rng.random() < 0.1
                state: dict[str, Any]
                if rng.random() < 0.5:
                    output = text(_size(rng, 1_500, 200_000))
                    command = text.said(_size(rng, 20, 200))
                    exit_code = rng.choice((1, 2)) if failed else 0
                    state = {
                        "status": "completed",
                        "input": {"command": command, "description": "Run it"},
                        "output": output,
                        "metadata": {
                            "output": output,
                            "exit": exit_code,
                            "description": "Run it",
                            "truncated": False,
                        },
                        "title": "Run it",
                        "time": {"start": ms, "end": ms + 900},
                    }
                    tool = "bash"
                elif failed:
                    state = {
                        "status": "error",
                        "input": {"filePath": f"{CWD}/src/m{calls}.py"},
                        "error": f"File not found: {CWD}/src/m{calls}.py",
                        "metadata": {},
                        "time": {"start": ms, "end": ms + 10},
                    }
                    tool = "read"
                else:
                    state = {
                        "status": "completed",
                        "input": {"filePath": f"{CWD}/src/m{calls}.py"},
                        "output": text(_size(rng, 1_500, 200_000)),
                        "metadata": {},
                        "title": f"src/m{calls}.py",
                        "time": {"start": ms, "end": ms + 10},
                    }
                    tool = "read"
                parts.append(
                    {"type": "tool", "tool": tool, "callID": f"call_{calls:07d}", "state": state}
                )
                records["tool-call"] += 1
                records["tool-result"] += 1
            parts.append(finish("tool-calls"))
            message(
                {
                    **assistant,
                    "time": {"created": ms, "completed": ms + 1000},
                    "finish": "tool-calls",
                },
                parts,
            )
        message(
            {**assistant, "time": {"created": ms, "completed": ms + 1000}, "finish": "stop"},
            [
                {"type": "step-start", "time": {"start": ms}},
                {
                    "type": "text",
                    "text": text.said(_size(rng, 600, 20_000)),
                    "time": {"start": ms, "end": ms + 500},
                },
                finish("stop"),
            ],
        )
        records["assistant"] += 1
    con.execute(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) "
        "VALUES ('global', '/', ?, ?, '[]')",
        (BASE_MS, ms),
    )
    con.execute(
        "INSERT INTO session (id, project_id, slug, directory, path, title, version, agent, "
        "model, time_created, time_updated) VALUES (?, 'global', 'bench-run', ?, ?, ?, "
        "'7.7.7', 'code', ?, ?, ?)",
        (
            sid,
            CWD,
            CWD.lstrip("/"),
            "Benchmark session",
            json.dumps({"id": model["modelID"], "providerID": model["providerID"]}),
            BASE_MS,
            ms,
        ),
    )
    con.execute("INSERT INTO event_sequence VALUES (?, ?, NULL)", (sid, seq - 1))
    con.execute(
        "INSERT INTO kilo_board (root_session_id, objective, time_created, time_updated) "
        "VALUES (?, ?, ?, ?)",
        (sid, first, BASE_MS, ms),
    )
    _close_store(con, db)
    return {
        "harness": "kilo",
        "read_path": str(db),
        "session": sid,
        "home": str(out),
        "floor": {"kind": "opencode", "db": str(db), "session": sid},
        "units": count,
        "records": dict(records),
    }


# -- Pi coding agent (trajconv/codecs/pi/README.md; 0.73.1) ------------------------------------


def gen_pi(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``~/.pi/agent/sessions/--srv-bench--/<time>_<uuid7>.jsonl``: the header, a
    ``model_change`` and ``thinking_level_change``, then message entries chained by
    ``parentId``: user prompts, assistant messages (thinking, text, tool calls), tool results
    (bash failures ending in ``Command exited with code N``, ENOENT reads), the user's own
    ``!cmd`` runs (``bashExecution``), and a ``session_info`` title."""
    text = Text(rng)
    high = (BASE_MS << 80) | (7 << 76) | (rng.getrandbits(12) << 64)
    sid = str(uuid.UUID(int=high | (2 << 62) | rng.getrandbits(62)))
    stamp = _iso(BASE_MS).replace(":", "-").replace(".", "-")
    path = out / ".pi" / "agent" / "sessions" / "--srv-bench--" / f"{stamp}_{sid}.jsonl"
    log = _Budget(path, target)
    records: Counter[str] = Counter()
    ms = BASE_MS
    parent: str | None = None
    log.write(
        _line({"type": "session", "version": 3, "id": sid, "timestamp": _iso(ms), "cwd": CWD})
    )

    seen: set[str] = set()

    def entry(kind: str, **fields: Any) -> None:
        nonlocal ms, parent
        ms += rng.randint(1, 900)
        eid = f"{rng.getrandbits(32):08x}"
        while eid in seen:  # pi's generateId checks the ids it holds
            eid = f"{rng.getrandbits(32):08x}"
        seen.add(eid)
        log.write(
            _line({"type": kind, "id": eid, "parentId": parent, "timestamp": _iso(ms), **fields})
        )
        parent = eid

    provider, model = "openrouter", "qwen/qwen3-coder"
    entry("model_change", provider=provider, modelId=model)
    entry("thinking_level_change", thinkingLevel="medium")
    usage = {
        "input": 1000,
        "output": 80,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 1080,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    answers = calls = 0

    def assistant(content: list[dict[str, Any]], stop: str) -> None:
        nonlocal answers
        answers += 1
        entry(
            "message",
            message={
                "role": "assistant",
                "content": content,
                "api": "openai-completions",
                "provider": provider,
                "model": model,
                "usage": usage,
                "stopReason": stop,
                "timestamp": ms,
                "responseId": f"gen-{answers:08d}",
            },
        )

    while not log.full:
        if rng.random() < 0.05:  # the user's own !cmd (bashExecution)
            code = rng.choice((0, 0, 1))
            entry(
                "message",
                message={
                    "role": "bashExecution",
                    "command": "git status",
                    "output": text(_size(rng, 500, 20_000)),
                    "exitCode": code,
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": ms,
                },
            )
            records["observation"] += 1
        prompt = [{"type": "text", "text": text.said(_size(rng, 300, 20_000))}]
        entry("message", message={"role": "user", "content": prompt, "timestamp": ms})
        records["user"] += 1
        for _ in range(rng.choice((0, 1, 2, 3, 4))):
            content: list[dict[str, Any]] = []
            if rng.random() < 0.8:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": text.said(_size(rng, 200, 4_000)),
                        "thinkingSignature": "reasoning_content",
                    }
                )
                records["reasoning"] += 1
            if rng.random() < 0.4:
                content.append({"type": "text", "text": text.said(_size(rng, 150, 2_000))})
                records["assistant"] += 1
            results = []
            for _c in range(rng.choice((1, 1, 2, 3))):
                calls += 1
                cid = f"call_{calls:07d}"
                name = rng.choice(("bash", "read", "edit"))
                args = (
                    {"command": text.said(_size(rng, 20, 200))}
                    if name == "bash"
                    else {"path": f"src/m{calls % 997}.py"}
                )
                content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
                failed = rng.random() < 0.1
                output = text(_size(rng, 1_500, 200_000))
                if failed and name == "bash":
                    output += f"\n\n\nCommand exited with code {rng.choice((1, 2, 127))}"
                elif failed:
                    output = f"ENOENT: no such file or directory, access '{CWD}/{args['path']}'"
                results.append((cid, name, output, failed))
            records["tool-call"] += len(results)
            assistant(content, "toolUse")
            for cid, name, output, failed in results:
                entry(
                    "message",
                    message={
                        "role": "toolResult",
                        "toolCallId": cid,
                        "toolName": name,
                        "content": [{"type": "text", "text": output}],
                        **({"details": {}} if failed else {}),
                        "isError": failed,
                        "timestamp": ms,
                    },
                )
            records["tool-result"] += len(results)
        assistant([{"type": "text", "text": text.said(_size(rng, 600, 20_000))}], "stop")
        records["assistant"] += 1
    entry("session_info", name="Benchmark session")
    info = _one_journal("pi", log, path, sid, out)
    return info | {"records": dict(records)}


# -- Qwen Code (trajconv/codecs/qwen/README.md; 0.24.4) ----------------------------------------


def gen_qwen(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``~/.qwen/projects/-srv-bench/chats/<uuid>.jsonl``: ChatRecords chained by
    ``parentUuid``: user prompts, ``attribution_snapshot`` and ``ui_telemetry`` system records
    (api responses, tool calls), assistant records (thought, text, function calls) and one
    ``tool_result`` record a call (``functionResponse`` output or error, ``toolCallResult``
    status, a ``shell_result`` display with the exit code for ``run_shell_command``)."""
    text = Text(rng)
    sid = _uuid(rng)
    path = out / ".qwen" / "projects" / "-srv-bench" / "chats" / f"{sid}.jsonl"
    log = _Budget(path, target)
    records: Counter[str] = Counter()
    ms = BASE_MS
    parent: str | None = None
    model = "qwen3-coder-plus"

    def put(kind: str, provenance: str, **fields: Any) -> None:
        nonlocal ms, parent
        ms += rng.randint(1, 900)
        uid = _uuid(rng)
        log.write(
            _line(
                {
                    "uuid": uid,
                    "parentUuid": parent,
                    "sessionId": sid,
                    "timestamp": _iso(ms),
                    "type": kind,
                    "provenance": provenance,
                    "cwd": CWD,
                    "version": "0.24.4",
                    "gitBranch": "main",
                    **fields,
                }
            )
        )
        parent = uid

    def telemetry(event: dict[str, Any]) -> None:
        put(
            "system",
            "system",
            subtype="ui_telemetry",
            systemPayload={"uiEvent": {**event, "event.timestamp": _iso(ms)}},
        )

    usage = {
        "promptTokenCount": 1000,
        "candidatesTokenCount": 80,
        "thoughtsTokenCount": 20,
        "totalTokenCount": 1100,
        "cachedContentTokenCount": 0,
    }
    prompts = responses = calls = 0
    while not log.full:
        prompts += 1
        put(
            "user",
            "real_user",
            message={"role": "user", "parts": [{"text": text.said(_size(rng, 300, 20_000))}]},
        )
        records["user"] += 1
        put(
            "system",
            "system",
            subtype="attribution_snapshot",
            systemPayload={
                "snapshot": {
                    "type": "attribution-snapshot",
                    "version": 1,
                    "surface": "cli",
                    "fileStates": {},
                    "promptCount": prompts,
                    "promptCountAtLastCommit": 0,
                }
            },
        )
        for last in [False] * rng.choice((0, 1, 2, 3, 4)) + [True]:
            responses += 1
            rid = f"chatcmpl-{responses:06d}"
            parts: list[dict[str, Any]] = []
            if rng.random() < 0.7:
                parts.append({"text": text.said(_size(rng, 200, 4_000)), "thought": True})
                records["reasoning"] += 1
            if last or rng.random() < 0.5:
                parts.append({"text": text.said(_size(rng, 150 if not last else 600, 20_000))})
                records["assistant"] += 1
            made = []
            for _c in range(0 if last else rng.choice((1, 1, 2))):
                calls += 1
                cid = f"call_{calls:07d}"
                name = rng.choice(("read_file", "run_shell_command", "grep_search"))
                args = (
                    {"command": text.said(60), "description": "Run it", "is_background": False}
                    if name == "run_shell_command"
                    else {"file_path": f"{CWD}/src/m{calls % 997}.py"}
                )
                parts.append({"functionCall": {"id": cid, "name": name, "args": args}})
                made.append((cid, name, args))
            telemetry(
                {
                    "event.name": "qwen-code.api_response",
                    "response_id": rid,
                    "model": model,
                    "status_code": 200,
                    "duration_ms": 900,
                    "input_token_count": 1000,
                    "output_token_count": 80,
                    "total_token_count": 1100,
                    "auth_type": "openai",
                }
            )
            put(
                "assistant",
                "assistant_output",
                model=model,
                message={"role": "model", "parts": parts},
                usageMetadata=usage,
                contextWindowSize=1_000_000,
            )
            records["tool-call"] += len(made)
            for cid, name, args in made:
                failed = rng.random() < 0.1
                output = text(_size(rng, 1_500, 200_000))
                display: Any = ""
                status = "error" if failed else "success"
                if name == "run_shell_command":
                    code = rng.choice((1, 2)) if failed else 0
                    shown = (
                        f"Command: {args['command']}\nDirectory: (root)\nOutput: {output}\n"
                        f"Error: (none)\nExit Code: {code}\nSignal: (none)\n"
                        "Process Group PGID: (none)"
                    )
                    response = {"error": shown} if failed else {"output": shown}
                    display = {
                        "type": "shell_result",
                        "version": 1,
                        "directory": CWD,
                        "exitCode": code,
                        "signal": None,
                        "pid": None,
                        "outcome": "failed" if failed else "succeeded",
                        "outputFiles": [],
                        "output": output,
                        "text": shown,
                        "error": None,
                        "notices": [],
                        "truncated": False,
                    }
                elif failed:
                    response = {"error": f"File not found: {args['file_path']}"}
                    display = response["error"]
                else:
                    response = {"output": output}
                telemetry(
                    {
                        "event.name": "qwen-code.tool_call",
                        "call_id": cid,
                        "function_name": name,
                        "function_args": args,
                        "duration_ms": 60,
                        "status": status,
                        "success": not failed,
                        "decision": "auto_accept",
                        "response_id": rid,
                    }
                )
                result = {
                    "callId": cid,
                    "status": status,
                    "resultDisplay": display,
                    "executionStatus": status,
                }
                if failed:
                    result |= {
                        "error": {},
                        "errorType": "shell_execute_error"
                        if name == "run_shell_command"
                        else "file_not_found",
                    }
                put(
                    "tool_result",
                    "tool_result",
                    message={
                        "role": "user",
                        "parts": [
                            {"functionResponse": {"id": cid, "name": name, "response": response}}
                        ],
                    },
                    toolCallResult=result,
                )
                records["tool-result"] += 1
    info = _one_journal("qwen", log, path, sid, out)
    return info | {"records": dict(records)}


# -- Mistral Vibe (trajconv/codecs/vibe/README.md; 3.0.3's UnifiedSessionStore) ----------------


def _canonical(value: Any) -> bytes:
    # canonical_json of vibe's _storage.py where json.dumps agrees with RFC 8785 (no floats)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def gen_vibe(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``~/.vibe/logs/session/unified/<uuid>/`` as a live session leaves it: ``CURRENT``
    naming the generation, its manifest, core checkpoint (``context.messages`` pooled into
    content-addressed chunks sealed at 64 KiB, as ``_split_chunks`` does), runtime state and
    public projection (its history pooled too), an empty recovery journal segment, and the
    session logger's ``meta.json``. Messages: user prompts, assistant messages (reasoning,
    text, one tool call each), tool messages (the JSON text of a bash run with its
    ``returncode``, a read, or a ``tool_failed`` error), a final answer per turn. The runtime
    state is the recorded fixture's, renamed to this session."""
    text = Text(rng)
    sid = _uuid(rng)
    folder = out / ".vibe" / "logs" / "session" / "unified" / sid
    chunk_dir = folder / "chunks"
    chunk_dir.mkdir(parents=True)
    records: Counter[str] = Counter()
    size = 0
    items: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    ms = BASE_MS
    calls = 0

    def item(message: dict[str, Any], turn: int) -> None:
        nonlocal size
        items.append({"message": message, "source": "history", "turn_index": turn})
        size += len(_canonical(items[-1]))

    def entry(**fields: Any) -> None:
        nonlocal ms, size
        ms += rng.randint(1, 900)
        entries.append(
            {
                "createdAt": ms,
                "generationStatus": "completed",
                "relatedEntryId": None,
                "sessionId": sid,
                "updatedAt": ms,
                **fields,
            }
        )
        size += len(_canonical(entries[-1]))

    turn = -1
    while size < target:
        turn += 1
        turn_id = f"turn-{rng.getrandbits(128):032x}"
        prompt = text.said(_size(rng, 300, 20_000))
        item({"content": [{"text": prompt, "type": "text"}], "role": "user"}, turn)
        records["user"] += 1
        user_entry = f"user-{turn_id}-{len(entries) + 1}"
        entry(
            content=[{"text": prompt, "type": "text"}],
            id=user_entry,
            inputEntryId=None,
            role="user",
            source="turn_start",
            turnId=turn_id,
            type="message",
        )
        for _ in range(rng.choice((0, 1, 2, 3, 4))):
            calls += 1
            cid = f"call_{calls:07d}"
            content: list[dict[str, Any]] = []
            if rng.random() < 0.6:
                said = text.said(_size(rng, 200, 4_000))
                content.append({"content": [{"text": said, "type": "text"}], "type": "reasoning"})
                records["reasoning"] += 1
            if rng.random() < 0.3:
                content.append({"text": text.said(_size(rng, 150, 2_000)), "type": "text"})
                records["assistant"] += 1
            name = rng.choice(("bash", "read_file"))
            args = (
                {"command": text.said(_size(rng, 20, 200))}
                if name == "bash"
                else {"path": f"src/m{calls % 997}.py"}
            )
            content.append(
                {
                    "arguments": {"raw": json.dumps(args), "type": "json", "value": args},
                    "id": cid,
                    "name": name,
                    "type": "tool_call",
                }
            )
            item({"content": content, "role": "assistant"}, turn)
            records["tool-call"] += 1
            output = text(_size(rng, 1_500, 200_000))
            failed = rng.random() < 0.1
            if name == "bash":  # a command that exits non-zero ran: outcome success (README)
                result = {
                    "command": args["command"],
                    "returncode": rng.choice((1, 2)) if failed else 0,
                    "stderr": "",
                    "stdout": output,
                    "timed_out": False,
                    "was_truncated": False,
                }
                outcome, failed = "success", False
            elif failed:
                result = {
                    "result": {
                        "type": "error",
                        "error": {
                            "name": "tool_failed",
                            "message": f"File not found at: {CWD}/{args['path']}",
                            "details": None,
                        },
                    }
                }
                outcome = "failure"
            else:
                result = {
                    "content": output,
                    "file_size_bytes": len(output.encode()),
                    "lines_read": output.count("\n") + 1,
                    "next_offset": None,
                    "offset": 0,
                    "path": f"{CWD}/{args['path']}",
                    "returned_bytes": len(output.encode()),
                    "total_lines": output.count("\n") + 1,
                    "was_truncated": False,
                }
                outcome = "success"
            body = json.dumps(result, separators=(",", ":"), ensure_ascii=False)
            item(
                {
                    "content": [{"text": body, "type": "text"}],
                    "name": name,
                    "outcome": outcome,
                    "role": "tool",
                    "tool_call_id": cid,
                },
                turn,
            )
            records["tool-result"] += 1
            tool = f"file_system.{name}"
            display = {
                "message": tool,
                "settledMessage": tool,
                "settledVerb": "Ran",
                "statusText": f"Running {tool}",
                "summary": tool,
                "verb": "Running",
            }
            approval = {"approvalSource": "config", "approvalType": "always", "decision": "execute"}
            state: dict[str, Any] = {
                **approval,
                "outputText": "",
                "display": {"message": tool, "success": not failed},
            }
            if failed:
                error = result["result"]["error"]
                state |= {
                    "status": "failed",
                    "error": {"code": "tool_failed", "details": None, "message": error["message"]},
                    "output": {
                        "_meta": {"approval": approval},
                        "content": [],
                        "error": {
                            "code": "tool_failed",
                            "message": error["message"],
                            "retryable": False,
                        },
                        "type": "failure",
                    },
                }
            else:
                state |= {
                    "status": "completed",
                    "output": {
                        "_meta": {"approval": approval},
                        "content": [],
                        "structured_content": result,
                        "type": "success",
                    },
                }
            entry(
                detail={"display": display, "input": args, "kind": "tool", "toolName": tool},
                id=f"effect-{_uuid(rng)}",
                inputEntryId=user_entry,
                state=state,
                title=tool,
                turnId=turn_id,
                type="effect",
            )
        answer = text.said(_size(rng, 600, 20_000))
        item({"content": [{"text": answer, "type": "text"}], "role": "assistant"}, turn)
        records["assistant"] += 1
        entry(
            content=[{"text": answer, "type": "text"}],
            id=f"assistant-{_uuid(rng)}",
            inputEntryId=user_entry,
            outcome={"type": "committed"},
            role="assistant",
            turnId=turn_id,
            type="message",
        )

    def pool(values: list[Any]) -> list[str]:  # _split_chunks + _write_chunks
        digests, pending, nbytes = [], [], 0
        for n, value in enumerate(values):
            pending.append(_canonical(value))
            nbytes += len(pending[-1]) + 1
            if nbytes >= 64 * 1024 or n == len(values) - 1:
                body = b"[" + b",".join(pending) + b"]"
                digests.append(hashlib.sha256(body).hexdigest())
                (chunk_dir / f"{digests[-1]}.json").write_bytes(body + b"\n")
                pending, nbytes = [], 0
        return digests

    generation = f"{2 * len(entries) + 3:016d}"
    gen_dir = folder / "generations" / generation
    gen_dir.mkdir(parents=True)

    def document(name: str, value: Any, chunks: list[str] | None) -> dict[str, Any]:
        body = _canonical(value)
        (gen_dir / name).write_bytes(body + b"\n")
        return {"chunks": chunks, "path": name, "sha256": hashlib.sha256(body).hexdigest()}

    last_turn = f"turn-{rng.getrandbits(128):032x}"
    checkpoint = {
        "checkpoint_version": 1,
        "compaction_count": 0,
        "context": {"messages": []},
        "last_finished_turn_id": last_turn,
        "last_reported_context_tokens": 90_000,
        "notifications": [],
        "turn": {
            "outcome": {"output": items[-1]["message"]["content"], "type": "completed"},
            "turn_id": last_turn,
            "type": "terminal",
        },
    }
    projection = {
        "projection_state_version": 1,
        "session_id": sid,
        "snapshot": {
            "activeCallbacks": [],
            "format": "harness.public-session-state/v1",
            "history": {
                "cursor": {"after": None, "before": None},
                "entries": [],
                "range": "latest",
            },
            "session": {
                "createdAt": BASE_MS,
                "id": sid,
                "parentSessionId": None,
                "preview": items[0]["message"]["content"][0]["text"][:200],
                "rootSessionId": sid,
                "status": {"type": "idle"},
                "title": None,
                "titleSource": "auto",
                "updatedAt": ms,
            },
            "turnQueue": {"items": [], "maxItems": 32, "paused": False},
        },
        "snapshot_sequence": int(generation),
        "watermark": len(entries),
    }
    fixture = next((FIXTURES / "vibe" / "recorded-tools" / "store").iterdir())
    old_gen = json.loads((fixture / "CURRENT").read_text())["generation"]
    old_manifest = json.loads((fixture / "generations" / old_gen / "manifest.json").read_text())
    old_cwd = json.loads((fixture / "meta.json").read_text())["environment"]["working_directory"]

    def renamed(raw: str) -> Any:
        return json.loads(raw.replace(fixture.name, sid).replace(old_cwd, CWD))

    runtime = renamed((fixture / "generations" / old_gen / "runtime-state.json").read_text())
    runtime["snapshot_sequence"] = int(generation)
    catalog = [
        renamed((fixture / "chunks" / f"{c}.json").read_text())[0]
        for c in old_manifest["runtime_state"]["chunks"]
    ]
    manifest = {
        "checkpoint": {
            "checkpoint_version": 1,
            **document("checkpoint.json", checkpoint, pool(items)),
        },
        "created_at": _iso(ms),
        "execution_state": "quiescent",
        "generation": generation,
        "interop_export": None,
        "manifest_version": 1,
        "projection_state": document("projection-state.json", projection, pool(entries)),
        "recovery_journal_segment": {
            "first_sequence": int(generation) + 1,
            "path": f"journal/{int(generation) + 1:016d}.jsonl",
        },
        "runtime_state": document("runtime-state.json", runtime, pool(catalog)),
        "session_id": sid,
        "snapshot_sequence": int(generation),
    }
    manifest_body = _canonical(manifest)
    (gen_dir / "manifest.json").write_bytes(manifest_body + b"\n")
    (folder / "journal").mkdir()
    (folder / manifest["recovery_journal_segment"]["path"]).write_bytes(b"")
    current = {
        "generation": generation,
        "manifest_sha256": hashlib.sha256(manifest_body).hexdigest(),
        "session_id": sid,
        "snapshot_sequence": int(generation),
        "store_format": "mistral.vibe.unified-session-store/v1",
        "store_format_minor": 10,
    }
    (folder / "CURRENT").write_bytes(_canonical(current) + b"\n")
    meta = renamed((fixture / "meta.json").read_text())
    meta |= {
        "start_time": _iso(BASE_MS).replace("Z", "+00:00"),
        "end_time": _iso(ms).replace("Z", "+00:00"),
        "title": "Benchmark session",
        "config": {"active_model": "mistral-medium", "model_name": "mistral-medium-3"},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return {
        "harness": "vibe",
        "read_path": str(folder),
        "session": sid,
        "home": str(out / ".vibe"),
        "floor": {"kind": "vibe", "folder": str(folder)},
        "units": len(items),
        "records": dict(records),
    }


# -- OpenHands (trajconv/codecs/openhands/README.md; openhands 1.16.0, openhands-sdk 1.21.0) ---


def gen_openhands(out: Path, target: int, rng: random.Random) -> dict[str, Any]:
    """``~/.openhands/conversations/<32 hex>/``: ``base_state.json`` and one
    ``events/event-NNNNN-<uuid>.json`` an event (``EventLog``: ``model_dump_json
    (exclude_none=True)``): the ``SystemPromptEvent``, user and assistant ``MessageEvent``s,
    ``ActionEvent``s (reasoning, thought, a terminal or file_editor call) each answered by an
    ``ObservationEvent`` (a ``TerminalObservation`` with its exit code, a
    ``FileEditorObservation``, errors). The system prompt event and base state are the
    recorded fixture's, renamed to this conversation."""
    text = Text(rng)
    cid = f"{rng.getrandbits(128):032x}"
    conv = out / ".openhands" / "conversations" / cid
    events = conv / "events"
    events.mkdir(parents=True)
    (events / ".eventlog.lock").write_bytes(b"")
    fixture = next(
        (
            FIXTURES / "openhands" / "recorded-tool-failures" / ".openhands" / "conversations"
        ).iterdir()
    )
    old_cwd = "/work/demo"

    def renamed(raw: str) -> Any:
        old_dashed = str(uuid.UUID(fixture.name))
        return json.loads(
            raw.replace(fixture.name, cid)
            .replace(old_dashed, str(uuid.UUID(cid)))
            .replace(old_cwd, CWD)
        )

    records: Counter[str] = Counter()
    size = index = calls = responses = 0
    ms = BASE_MS

    def event(kind: str, source: str, **fields: Any) -> str:
        nonlocal ms, size, index
        ms += rng.randint(1, 900)
        eid = _uuid(rng)
        body = orjson.dumps(
            {
                "id": eid,
                "timestamp": _iso(ms)[:-1] + f"{rng.randint(0, 999):03d}",
                "source": source,
                **fields,
                "kind": kind,
            }
        )
        (events / f"event-{index:05d}-{eid}.json").write_bytes(body)
        size += len(body)
        index += 1
        return eid

    system = renamed(next(events_of(fixture)).read_text())
    event(
        "SystemPromptEvent",
        "agent",
        system_prompt=system["system_prompt"],
        tools=system["tools"],
        dynamic_context=system["dynamic_context"],
    )
    records["system"] += 1

    def part(said: str) -> dict[str, Any]:
        return {"cache_prompt": False, "type": "text", "text": said}

    last_user = ""
    while size < target:
        last_user = event(
            "MessageEvent",
            "user",
            llm_message={
                "role": "user",
                "content": [part(text.said(_size(rng, 300, 20_000)))],
                "thinking_blocks": [],
            },
            activated_skills=[],
            extended_content=[],
        )
        records["user"] += 1
        for _ in range(rng.choice((0, 1, 2, 3, 4))):
            responses += 1
            calls += 1
            call = f"call_{calls:07d}"
            extra: dict[str, Any] = {}
            if rng.random() < 0.6:
                extra["reasoning_content"] = text.said(_size(rng, 200, 4_000))
                records["reasoning"] += 1
            thought = [part(text.said(_size(rng, 150, 2_000)))] if rng.random() < 0.3 else []
            records["assistant"] += len(thought)
            terminal = rng.random() < 0.6
            if terminal:
                command = text.said(_size(rng, 20, 200))
                action = {
                    "command": command,
                    "is_input": False,
                    "reset": False,
                    "kind": "TerminalAction",
                }
                args = {"command": command, "security_risk": "LOW"}
                name = "terminal"
            else:
                path = f"{CWD}/src/m{calls % 997}.py"
                action = {"command": "view", "path": path, "kind": "FileEditorAction"}
                args = {"command": "view", "path": path, "security_risk": "LOW"}
                name = "file_editor"
            arguments = json.dumps(args)
            action_id = event(
                "ActionEvent",
                "agent",
                thought=thought,
                **extra,
                thinking_blocks=[],
                action=action,
                tool_name=name,
                tool_call_id=call,
                tool_call={
                    "id": call,
                    "name": name,
                    "arguments": arguments,
                    "origin": "completion",
                },
                llm_response_id=f"chatcmpl-{responses:06d}",
                security_risk="LOW",
                summary=f"{name}: {arguments}",
            )
            records["tool-call"] += 1
            output = text(_size(rng, 1_500, 200_000))
            failed = rng.random() < 0.1
            if terminal:
                code = rng.choice((1, 2)) if failed else 0
                observation = {
                    "content": [part(output)],
                    "is_error": False,
                    "command": action["command"],
                    "exit_code": code,
                    "timeout": False,
                    "metadata": {
                        "exit_code": code,
                        "pid": -1,
                        "username": "root",
                        "hostname": "bench",
                        "working_dir": CWD,
                        "py_interpreter_path": "/usr/bin/python3",
                        "prefix": "",
                        "suffix": f"\n[The command completed with exit code {code}.]",
                    },
                    "full_output_save_dir": f"{out}/.openhands/conversations/{cid}/observations",
                    "kind": "TerminalObservation",
                }
            elif failed:
                observation = {
                    "content": [
                        part(
                            f"Invalid `path` parameter: {action['path']}. "
                            f"The path {action['path']} does not exist. Please provide a "
                            "valid path."
                        )
                    ],
                    "is_error": True,
                    "command": "view",
                    "prev_exist": True,
                    "kind": "FileEditorObservation",
                }
            else:
                observation = {
                    "content": [part(output)],
                    "is_error": False,
                    "command": "view",
                    "path": action["path"],
                    "prev_exist": True,
                    "kind": "FileEditorObservation",
                }
            event(
                "ObservationEvent",
                "environment",
                tool_name=name,
                tool_call_id=call,
                observation=observation,
                action_id=action_id,
            )
            records["tool-result"] += 1
        responses += 1
        event(
            "MessageEvent",
            "agent",
            llm_message={
                "role": "assistant",
                "content": [part(text.said(_size(rng, 600, 20_000)))],
                "thinking_blocks": [],
            },
            llm_response_id=f"chatcmpl-{responses:06d}",
            activated_skills=[],
            extended_content=[],
        )
        records["assistant"] += 1
    state = renamed((fixture / "base_state.json").read_text())
    state["persistence_dir"] = str(conv)
    state["last_user_message_id"] = last_user
    (conv / "base_state.json").write_text(json.dumps(state, ensure_ascii=False))
    return {
        "harness": "openhands",
        "read_path": str(conv),
        "session": cid,
        "home": str(out / ".openhands"),
        "floor": {
            "kind": "files",
            "files": [str(p) for p in sorted(events.glob("event-*"))],
            "json": [str(conv / "base_state.json")],
        },
        "units": index,
        "records": dict(records),
    }


def events_of(conversation: Path) -> Iterator[Path]:
    """An OpenHands conversation's event files in index order."""
    return iter(sorted((conversation / "events").glob("event-*.json")))


class SkipDataset(Exception):
    """A dataset that cannot be generated here (a missing optional library)."""


GENERATORS: dict[str, Callable[[Path, int, random.Random], dict[str, Any]]] = {
    "grok": gen_grok,
    "copilot": gen_copilot,
    "fx1": gen_fx1,
    "fx4": gen_fx4,
    "cursor": gen_cursor,
    "deepagents": gen_deepagents,
    "gemini": gen_gemini,
    "opencode": gen_opencode,
    "claude": gen_claude,
    "codex": gen_codex,
    "aider": gen_aider,
    "atif": gen_atif,
    "kilo": gen_kilo,
    "pi": gen_pi,
    "qwen": gen_qwen,
    "vibe": gen_vibe,
    "openhands": gen_openhands,
}


def _du(path: Path) -> int:
    return sum(
        p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "dataset.json"
    )


def ensure(name: str, size: str, data: Path = DATA) -> dict[str, Any]:
    """The dataset ``<name>-<size>``, generated unless a matching one is cached."""
    folder = data / f"{name}-{size}"
    params = {"generator": GENERATOR_VERSION, "seed": SEED, "name": name, "size": size}
    marker = folder / "dataset.json"
    if marker.is_file():
        cached: dict[str, Any] = json.loads(marker.read_text())
        if cached.get("params") == params:
            return cached
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    seed = int.from_bytes(hashlib.sha256(f"{SEED}:{name}:{size}".encode()).digest()[:8], "big")
    try:
        info = GENERATORS[name](folder, SIZES[size], random.Random(seed))
    except SkipDataset:
        shutil.rmtree(folder)
        raise
    info.update(params=params, name=f"{name}-{size}", size_label=size, bytes=_du(folder))
    marker.write_text(json.dumps(info, indent=2))
    return info


def iter_datasets(
    names: list[str], sizes: list[str], data: Path = DATA
) -> Iterator[dict[str, Any] | str]:
    """Each dataset's description, or a message saying why it was skipped."""
    for size in sizes:
        for name in names:
            try:
                yield ensure(name, size, data)
            except SkipDataset as exc:
                yield str(exc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10MB,100MB", help="comma list of 10MB,100MB,1GB")
    parser.add_argument("--big", action="store_true", help="also generate the 1 GB datasets")
    parser.add_argument("--only", default=",".join(HARNESSES), help="comma list of datasets")
    parser.add_argument("--out", type=Path, default=DATA, help="data folder")
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",") + (["1GB"] if args.big and "1GB" not in args.sizes else [])
    for item in iter_datasets(args.only.split(","), sizes, args.out):
        if isinstance(item, str):
            print(f"skipped: {item}", file=sys.stderr)
        else:
            print(f"{item['name']:<18} {item['bytes'] / 1024**2:8.1f} MiB  {item['read_path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
