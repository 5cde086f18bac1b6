"""Offline chat models for running the real Deep Agents ``dcode`` with zero inference.

This module is *not* imported by trajconv itself: it runs inside the separate
``deepagents-code`` venv (see ``proof/loaders/deepagents.py``), where
``langchain-core`` is installed. ``dcode`` loads a model class named by
``class_path`` in ``~/.deepagents/config.toml``; the loader copies this file
next to a scratch HOME and points ``class_path`` at it.

Why a subclass is needed (deepagents-code 0.1.57, ``deepagents_code/_fake_models.py``):
the agent runtime calls ``model.bind_tools(...)`` and reads ``model.profile``
while compiling the graph; ``GenericFakeChatModel`` raises on ``bind_tools``
and has no profile.

Two models:

* ``TrajconvOfflineChatModel`` - for loader checks (``threads list``, ACP
  ``session/load``). It is never expected to generate; if asked, it answers a
  fixed text without looking at the prompt.
* ``TrajconvScriptedChatModel`` - for recording fixtures. It reads a JSON script
  named by ``$TRAJCONV_DCODE_SCRIPT`` (else ``~/.deepagents/trajconv-script.json``):
  ``{"turns": {"<user text>": [reply, ...]}}``.
  The reply used is chosen by the latest user message and the number of AI
  messages after it, so it is restart-safe (a resumed process picks the same
  reply). A reply is ``{"content": str | [blocks], "tool_calls": [{"name",
  "args", "id"}], "id": optional message id, "usage": optional usage dict}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import (  # type: ignore[import-not-found,unused-ignore]
    GenericFakeChatModel,
)
from langchain_core.messages import (  # type: ignore[import-not-found,unused-ignore]
    AIMessage,
    AIMessageChunk,
)
from langchain_core.outputs import (  # type: ignore[import-not-found,unused-ignore]
    ChatGeneration,
    ChatGenerationChunk,
    ChatResult,
)
from pydantic import Field

_PROFILE: dict[str, Any] = {"tool_calling": True, "max_input_tokens": 200000}
OFFLINE_REPLY = "trajconv offline model: no inference available"
SCRIPT_ENV = "TRAJCONV_DCODE_SCRIPT"
SCRIPT_IN_HOME = "~/.deepagents/trajconv-script.json"


class TrajconvOfflineChatModel(GenericFakeChatModel):  # type: ignore[misc,unused-ignore]
    """Fake chat model that binds tools and never calls a provider."""

    messages: object = Field(default_factory=lambda: iter(()))  # type: ignore[assignment,unused-ignore]
    profile: dict[str, Any] | None = Field(  # type: ignore[assignment,unused-ignore]
        default_factory=lambda: dict(_PROFILE)
    )
    model: str = "trajconv-offline"

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Return self: tool schemas are accepted and ignored."""
        return self

    def _generate(
        self,
        messages: list[Any],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self,
        messages: list[Any],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        # GenericFakeChatModel._stream splits text and drops tool_calls; emit the
        # whole reply as one final chunk instead.
        reply = self._reply(messages)
        chunks = [
            {
                "name": c["name"],
                "args": json.dumps(c["args"]),
                "id": c["id"],
                "index": i,
                "type": "tool_call_chunk",
            }
            for i, c in enumerate(reply.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=reply.content,
                id=reply.id,
                tool_call_chunks=chunks,
                usage_metadata=reply.usage_metadata,
                chunk_position="last",
            )
        )

    def _reply(self, messages: list[Any]) -> Any:
        return AIMessage(content=OFFLINE_REPLY)

    @property
    def _llm_type(self) -> str:
        return "trajconv-offline"


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _is_user_prompt(message: Any) -> bool:
    # Synthetic human messages carry additional_kwargs.lc_source (the deepagents codec's
    # README, "What the reader projects").
    if getattr(message, "type", None) != "human":
        return False
    if message.additional_kwargs.get("lc_source"):
        return False
    return not _text(message).startswith("[SYSTEM]")


class TrajconvScriptedChatModel(TrajconvOfflineChatModel):
    """Fake chat model that answers from a JSON script (fixture recording only)."""

    model: str = "trajconv-scripted"

    def _reply(self, messages: list[Any]) -> Any:
        # dcode runs the graph in a LangGraph server subprocess that may not see
        # every variable, so the script can also sit at a fixed place in HOME.
        path = os.environ.get(SCRIPT_ENV) or os.path.expanduser(SCRIPT_IN_HOME)
        if not os.path.exists(path):
            return AIMessage(content=OFFLINE_REPLY)
        with open(path, encoding="utf-8") as fh:
            script = json.load(fh)
        last = -1
        for i, message in enumerate(messages):
            if _is_user_prompt(message):
                last = i
        if last < 0:
            return AIMessage(content=OFFLINE_REPLY)
        prompt = _text(messages[last]).strip()
        step = sum(1 for m in messages[last + 1 :] if getattr(m, "type", None) == "ai")
        replies = script.get("turns", {}).get(prompt)
        if replies is None or step >= len(replies):
            return AIMessage(content=f"script has no reply #{step} for this prompt")
        reply = replies[step]
        calls = [
            {"name": c["name"], "args": c.get("args", {}), "id": c["id"], "type": "tool_call"}
            for c in reply.get("tool_calls", [])
        ]
        extra: dict[str, Any] = {}
        if "id" in reply:
            extra["id"] = reply["id"]
        if "usage" in reply:
            extra["usage_metadata"] = reply["usage"]
        return AIMessage(content=reply.get("content", ""), tool_calls=calls, **extra)
