"""The Codex CLI's rollout vocabulary (``codecs/codex/README.md``, observed with 0.171.0).

One JSON object per line: ``{timestamp, [ordinal], type, payload, [metadata]}``. The model's
history is the ``response_item`` family; ``event_msg`` lines feed the UI and repeat the
prompts and replies (``user_message`` / ``agent_message``, or ``item_completed`` in the
paginated shape).
"""

from __future__ import annotations

import json
from typing import Any

from trajconv.codecs.base import CODEX_EXEC_EXIT, CODEX_PATCH_EXIT
from trajconv.codecs.common import json_text_member

SESSION_META = "session_meta"
RESPONSE_ITEM = "response_item"
EVENT_MSG = "event_msg"
TURN_CONTEXT = "turn_context"
COMPACTED = "compacted"
#: other line types 0.171 writes that carry no conversation
STATE_LINES = frozenset({"world_state", "token_usage_record"})

#: event_msg kinds that repeat a conversation item of the response family
EVENT_DUPLICATES = frozenset(
    {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"}
)
#: item_completed item types whose ``id`` is a call id and whose ``status`` (and, for a
#: command, ``exit_code``) is that call's outcome: a spawned sub-agent's
#: ``CollabAgentToolCall`` (``status: completed``, fixtures/codex/subagent) as well as
#: commands and patches
ITEM_STATUS = frozenset({"CommandExecution", "FileChange", "CollabAgentToolCall"})
#: item_completed item types that repeat one (CommandExecution/FileChange carry a status)
ITEM_DUPLICATES = frozenset({"UserMessage", "AgentMessage", "Reasoning"})

#: response items without conversational text, kept in the artifact
STATE_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})

#: text a user-role message starts with when the harness, not the person, wrote it
HARNESS_TAGS = (
    "<environment_context>",
    "<user_instructions>",
    "<turn_aborted>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<subagent_notification>",
    "<user_shell_command>",
    "<permissions instructions>",
    "<skills_instructions>",
)


def content_text(content: Any, kinds: tuple[str, ...]) -> tuple[str | None, int]:
    """Joined text of the content parts of the given types, and how many other parts there are."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return None, 0
    texts: list[str] = []
    other = 0
    for part in content:
        if (
            isinstance(part, dict)
            and part.get("type") in kinds
            and isinstance(part.get("text"), str)
        ):
            texts.append(part["text"])
        else:
            other += 1
    return ("".join(texts) if texts else None), other


def is_person_prompt(payload: dict[str, Any], text: str) -> bool:
    """A user-role message the person typed (not injected context).

    0.171 labels content with ``internal_chat_message_metadata_passthrough.content_item_kinds``
    (``user.text`` for a prompt); older files are told by the harness's tags.
    """
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    if isinstance(kinds, list):  # names only: a list or object in it is no kind (issue 34)
        kinds = [k for k in kinds if isinstance(k, str)]
    if isinstance(kinds, list) and set(kinds) - {"unknown"}:
        return "user.text" in kinds
    # no kinds, or only "unknown" (what 0.171 sends for items of a file that had none)
    return not text.lstrip().startswith(HARNESS_TAGS)


def output_text(output: Any) -> str | None:
    """``function_call_output.output``: a string, or (per the source) a list of content items."""
    if isinstance(output, str):
        return output
    text, _ = content_text(output, ("input_text", "output_text", "text"))
    return text


def exit_code_from_output(kind: str, text: str) -> int | None:
    """The exit status the tool itself printed at the head of its output.

    ``exec_command`` (unified exec) output starts with ``Chunk ID``/``Wall time`` lines and
    ``Process exited with code N``; ``apply_patch`` output starts with ``Exit code: N``
    (both observed with 0.171.0). Nothing else is read from output text.
    """
    m = (CODEX_EXEC_EXIT if kind == "function_call_output" else CODEX_PATCH_EXIT).match(text)
    return int(m.group(1)) if m else None


#: the head trajconv's writer gives a failed result with no exit code (Codex has no status
#: field); the reader takes it back as a failure
FAILED_HEAD = "Tool call failed\nOutput:\n"


def output_failed(kind: str, text: str) -> bool | None:
    """Failure as the output's head states it: exit code non-zero, or ``FAILED_HEAD``."""
    code = exit_code_from_output(kind, text)
    if code is not None:
        return code != 0
    return True if text.startswith(FAILED_HEAD) else None


def parse_arguments(raw: Any) -> Any:
    """``function_call.arguments`` is JSON text; invalid JSON (model output) stays text."""

    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


#: the tool that spawns a sub-agent thread (namespace ``multi_agent_v1``, 0.171.0); its
#: output is ``{"agent_id": "<thread id>", "nickname": ...}``
SPAWN_TOOL = "spawn_agent"


def spawned_thread(output: str) -> str | None:
    """The thread id a ``spawn_agent`` output names, or ``None``."""
    return json_text_member(output, "agent_id")
