"""The scripted model server's Anthropic Messages API (what Claude Code speaks)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from fixtures.record.modelserver import ModelServer


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url,
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "x-api-key": "secret-key"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for frame in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_messages_stream_thinking_text_tool_use_and_errors(tmp_path: Path) -> None:
    steps = [
        {"reasoning": "hmm", "text": "hi there", "chunk": 3},
        {"tool_calls": [{"id": "toolu_1", "name": "Bash", "arguments": {"command": "ls"}}]},
        {"error": {"status": 529, "message": "overloaded", "type": "overloaded_error"}},
        {"text": "plain"},
    ]
    log = tmp_path / "req.jsonl"
    msgs = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    with ModelServer(steps, log) as srv:
        url = f"http://127.0.0.1:{srv.port}/v1/messages?beta=true"
        status, raw = _post(url, {"model": "m", "messages": msgs, "stream": True})
        events = _events(raw)
        names = [n for n, _ in events]
        assert status == 200
        assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
        deltas = [e["delta"] for n, e in events if n == "content_block_delta"]
        assert "".join(d.get("thinking", "") for d in deltas) == "hmm"
        assert "".join(d.get("text", "") for d in deltas) == "hi there"
        assert any(d["type"] == "signature_delta" for d in deltas)
        status, raw = _post(url, {"model": "m", "messages": msgs, "stream": True})
        events = _events(raw)
        starts = [e["content_block"] for n, e in events if n == "content_block_start"]
        assert starts == [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]
        partial = [e["delta"]["partial_json"] for n, e in events if n == "content_block_delta"]
        assert json.loads("".join(partial)) == {"command": "ls"}
        assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
        status, raw = _post(url, {"model": "m", "messages": msgs})
        assert status == 529 and json.loads(raw)["error"]["type"] == "overloaded_error"
        status, raw = _post(url, {"model": "m", "messages": msgs})
        full = json.loads(raw)
        assert full["content"] == [{"type": "text", "text": "plain"}]
        assert full["stop_reason"] == "end_turn"
        count = f"http://127.0.0.1:{srv.port}/v1/messages/count_tokens"
        assert _post(count, {"model": "m", "messages": msgs})[0] == 200
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert [e["answer"] for e in entries] == ["script"] * 4 + ["count_tokens"]
    assert srv.consumed == 4  # counting tokens does not use a scripted step
    assert "secret-key" not in log.read_text()
