"""The model server's Gemini API: generateContent, streamGenerateContent (SSE), errors, the
JSON side rule, and what the Gemini loader reads back from a request body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.record.modelserver import ModelServer
from proof.loaders.gemini import is_main_request, request_items
from tests.record.test_modelserver import _post

#: thought + text streamed in 4-character pieces; two calls; an HTTP error
STEPS: list[dict[str, Any]] = [
    {"text": "hello there", "reasoning": "think first", "chunk": 4},
    {"tool_calls": [{"name": "ls", "arguments": {"path": "."}, "id": "c1"}]},
    {"error": {"status": 500, "message": "boom"}},
]
ROUTER = {"name": "router", "gemini_json": True, "reply": {"text": '{"model_choice": "pro"}'}}


def _parts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for e in events for p in e["candidates"][0]["content"]["parts"]]


def test_gemini_stream_full_error_and_side_rule(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{}]}
    with ModelServer(STEPS, log, side=[ROUTER]) as srv:
        base = f"http://127.0.0.1:{srv.port}/v1beta/models/gemini-x"
        status, raw = _post(f"{base}:streamGenerateContent?alt=sse", body)
        events = [json.loads(x[6:]) for x in raw.decode().splitlines() if x.startswith("data: ")]
        parts = _parts(events)
        assert status == 200
        assert "".join(p["text"] for p in parts if p.get("thought")) == "think first"
        assert "".join(p["text"] for p in parts if not p.get("thought")) == "hello there"
        assert events[-1]["candidates"][0]["finishReason"] == "STOP"
        assert events[-1]["usageMetadata"]["thoughtsTokenCount"] == 5
        assert all("finishReason" not in e["candidates"][0] for e in events[:-1])
        # a request asking for JSON (the CLI's router) takes the side rule, not a step
        json_body = {**body, "generationConfig": {"responseMimeType": "application/json"}}
        status, raw = _post(f"{base}:generateContent", json_body)
        assert json.loads(raw)["candidates"][0]["content"]["parts"] == [
            {"text": '{"model_choice": "pro"}'}
        ]
        status, raw = _post(f"{base}:generateContent", body)
        calls = [p["functionCall"] for p in _parts([json.loads(raw)])]
        assert calls == [{"id": "c1", "name": "ls", "args": {"path": "."}}]
        status, raw = _post(f"{base}:generateContent", body)
        assert status == 500 and json.loads(raw)["error"]["code"] == 500
        assert srv.consumed == 3
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["answer"] for e in entries] == ["script", "side:router", "script", "script"]
    assert [is_main_request(e) for e in entries] == [True, False, True, True]


def test_request_items_reads_every_part_kind() -> None:
    body = {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "<session_context>x"}, {"text": "list"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "plan", "thought": True},
                    {"text": "ok"},
                    {"functionCall": {"id": "a", "name": "ls", "args": {"p": 1}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "a", "name": "ls", "response": {"output": "f"}}},
                    {"functionResponse": {"id": "b", "name": "x", "response": {"error": "no"}}},
                ],
            },
        ],
    }
    assert request_items(body) == [
        {"kind": "system", "text": "be brief"},
        {"kind": "system", "text": "<session_context>x"},
        {"kind": "user", "text": "list"},
        {"kind": "reasoning", "text": "plan"},
        {"kind": "assistant", "text": "ok"},
        {"kind": "tool-call", "name": "ls", "arguments": {"p": 1}, "id": "a"},
        {"kind": "tool-result", "call_id": "a", "text": "f", "error": None},  # the text speaks
        {"kind": "tool-result", "call_id": "b", "text": "no", "error": True},
    ]
