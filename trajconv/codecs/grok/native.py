"""Grok Build's own record vocabulary: envelope methods and ``sessionUpdate`` kinds.

Source: ``codecs/grok/README.md`` (from ``xai-grok-shell`` storage and
``extensions/notification.rs`` at grok-build 1.0.6; observed on 1.0.41).
"""

from __future__ import annotations

from typing import Any

ACP_METHOD = "session/update"
XAI_METHOD = "_x.ai/session/update"
XAI_TOLERATED = "x.ai/session/update"  # seen in third-party readers only

USER_CHUNK = "user_message_chunk"
AGENT_CHUNK = "agent_message_chunk"
THOUGHT_CHUNK = "agent_thought_chunk"
TOOL_CALL = "tool_call"
TOOL_UPDATE = "tool_call_update"
TERMINAL = ("completed", "failed")

# ACP kinds with no conversational text of their own.
ACP_STATE_KINDS = frozenset(
    {
        "plan",
        "current_mode_update",
        "available_commands_update",
        "session_info_update",
        "config_option_update",
        "usage_update",
        "notice",
        "compaction_update",
    }
)

# xAI extension kinds from notification.rs plus those seen on 1.0.41.
XAI_KINDS = frozenset(
    {
        "turn_completed",
        "hook_execution",
        "retry_state",
        "session_recap",
        "auto_compact_started",
        "auto_compact_completed",
        "auto_compact_failed",
        "auto_compact_cancelled",
        "auto_continue_completed",
        "compaction_checkpoint",
        "rewind_marker",
        "task_backgrounded",
        "task_completed",
        "subagent_spawned",
        "subagent_finished",
        "model_changed",
        "model_auto_switched",
        "session_summary_generated",
        "image_compressed",
        "image_dropped",
        "memory_updated",
        "memory_saved",
        "memory_loaded",
        "scheduled_task_created",
        "scheduled_task_fired",
        "scheduled_task_deleted",
        "monitor_event",
        "goal_updated",
        "workflow_updated",
        "diff_review",
        "feedback_request",
        "response_started",
        "reasoning_completed",
        "response_completed",
        "background_tasks",
    }
)
COMPACTION_KINDS = frozenset({"compaction_checkpoint"})


def unpack(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """``(params, update, kind)`` of a journal line, accepting the legacy bare notification
    (the line itself is its params); ``None`` when the line is not a session update."""
    method = obj.get("method")
    params = obj.get("params")
    if not (isinstance(method, str) and isinstance(params, dict)):
        if method is not None or not isinstance(obj.get("update"), dict):
            return None
        params = obj
    update = params.get("update")
    if not isinstance(update, dict):
        return None
    kind = update.get("sessionUpdate")
    if not isinstance(kind, str):
        return None
    return params, update, kind


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("_meta")
    return m if isinstance(m, dict) else {}


def content_text(block: Any) -> str | None:
    """Text of an ACP ContentBlock, or ``None`` when it holds no text."""
    if isinstance(block, dict) and block.get("type") == "text":
        text = block.get("text")
        if isinstance(text, str):
            return text
    return None


def tool_output(update: dict[str, Any]) -> str:
    """Result text as Grok's chat rebuild takes it: text content items, else rawOutput JSON."""
    parts = []
    content = update.get("content")
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") == "content":
                text = content_text(item.get("content"))
                if text is not None:
                    parts.append(text)
    if parts:
        return "".join(parts)
    raw = update.get("rawOutput")
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    import json

    return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
