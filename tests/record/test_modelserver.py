"""The scripted model server used to record real CLI sessions: loopback only, logs everything."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from fixtures.record.modelserver import ModelServer

STEPS: list[dict[str, Any]] = [
    {"text": "hello there", "reasoning": "think first", "chunk": 4},
    {
        "tool_calls": [
            {"name": "ls", "arguments": {"path": "."}, "id": "c1"},
            {"name": "cat", "arguments": {"path": "a"}, "id": "c2"},
        ]
    },
    {"error": {"status": 500, "message": "boom"}},
    {"text": "done"},
]


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url,
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer secret-key"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_scripted_steps_stream_tools_errors_and_log(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    msgs = [{"role": "user", "content": "hi"}]
    with ModelServer(STEPS, log) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        status, body = _post(
            f"{srv.base_url}/chat/completions", {"model": "m", "messages": msgs, "stream": True}
        )
        events = [json.loads(x[6:]) for x in body.decode().splitlines() if x.startswith("data: {")]
        text = "".join(
            e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"]
        )
        reasoning = "".join(
            e["choices"][0]["delta"].get("reasoning_content") or "" for e in events if e["choices"]
        )
        assert status == 200 and text == "hello there" and reasoning == "think first"
        assert body.decode().rstrip().endswith("data: [DONE]")
        status, body = _post(f"{srv.base_url}/chat/completions", {"model": "m", "messages": msgs})
        calls = json.loads(body)["choices"][0]["message"]["tool_calls"]
        assert [c["function"]["name"] for c in calls] == ["ls", "cat"]
        assert _post(f"{srv.base_url}/chat/completions", {"model": "m", "messages": msgs})[0] == 500
        status, body = _post(f"{srv.base_url}/responses", {"model": "m", "input": "hi"})
        assert status == 200 and "done" in body.decode()
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(entries) == 4
    assert entries[0]["body"]["messages"] == msgs
    assert "secret-key" not in log.read_text()  # credentials are not logged


def test_responses_freeform_tool_call_is_a_custom_tool_call(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
    step = {"tool_calls": [{"name": "apply_patch", "input": patch, "id": "p1"}]}
    with ModelServer([step, step], tmp_path / "log.jsonl") as srv:
        _, body = _post(f"{srv.base_url}/responses", {"model": "m", "input": "hi"})
        item = json.loads(body)["output"][0]
        _, streamed = _post(
            f"{srv.base_url}/responses", {"model": "m", "input": "hi", "stream": True}
        )
    assert item["type"] == "custom_tool_call"
    assert (item["call_id"], item["name"], item["input"]) == ("p1", "apply_patch", patch)
    done = [
        json.loads(line[6:])
        for line in streamed.decode().splitlines()
        if line.startswith("data: ") and "output_item.done" in line
    ]
    assert [{**d["item"], "id": item["id"]} for d in done] == [item]  # ids count requests


def test_a_websocket_upgrade_is_told_to_use_http(tmp_path: Path) -> None:
    """Codex tries a Responses WebSocket first: a 426 sends it to plain HTTP at once (a 404
    made 0.171.0 retry five times); any other unknown GET stays a 404."""

    def get(url: str, headers: dict[str, str]) -> int:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10):
                return 200
        except urllib.error.HTTPError as err:
            return err.code

    with ModelServer([{"text": "hi"}], tmp_path / "requests.jsonl") as srv:
        upgrade = {"Upgrade": "websocket", "Connection": "Upgrade"}
        assert get(f"{srv.base_url}/responses", upgrade) == 426
        assert get(f"{srv.base_url}/responses", {}) == 404
