"""Claude Code's transcript vocabulary (``codecs/claude/README.md``, 2.1.332).

Chain lines carry ``uuid``/``parentUuid``; side lines do not. Kept here so the reader, the
writer and discovery share one list.
"""

from __future__ import annotations

import re
from typing import Any

from trajconv.codecs.common import json_text_member

CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
"""Lines that form the conversation tree (``progress``: older versions)."""

TITLE_TYPES = ("custom-title", "ai-title", "last-prompt", "summary")
"""Side lines that name a session, in the order trajconv prefers them (see the README)."""

SIDE_TYPES = frozenset(
    {
        *TITLE_TYPES,
        "agent-name",
        "queue-operation",
        "file-history-snapshot",
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "cost-state",
        "mode",
        "tools-used",
        "atis-latch",
        "tag",
        "pr-link",
    }
)
"""Side lines observed or named by the sources: session facts and bookkeeping."""

SYNTHETIC_MODEL = "<synthetic>"
"""``message.model`` of assistant lines the CLI writes itself (API errors, notices)."""

#: user text the CLI writes itself, not the person's words (command echoes, interrupts)
HARNESS_TEXT = re.compile(
    r"^\s*(<command-name>|<command-message>|<command-args>|<local-command-stdout>|"
    r"<local-command-stderr>|<task-notification>|<system-reminder>|<bash-input>|"
    r"<bash-stdout>|<bash-stderr>|\[Request interrupted by user)"
)

#: ``Exit code N`` heading a failed Bash result (observed 2.1.332)
EXIT_CODE = re.compile(r"^Exit code (-?\d+)(?:\n|$)")


def text_of(content: Any) -> str | None:
    """A tool result's or message's text: a string, or the ``text`` blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if parts or not content:
            return "\n".join(parts)
    return None


def is_chain(obj: dict[str, Any]) -> bool:
    """A chain line by its ``type`` (any JSON value may stand there in a damaged file)."""
    kind = obj.get("type")
    return isinstance(kind, str) and kind in CHAIN_TYPES


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def rendered(obj: dict[str, Any]) -> bool:
    """Whether an ``attachment`` line holds ``rendered`` text: what the CLI (2.1.332) sends to
    the model for it when the session is resumed (``renderedRole`` user or system)."""
    parts = obj.get("rendered")
    return isinstance(parts, list) and any(
        isinstance(p, dict) and isinstance(p.get("content"), str) and p["content"].strip()
        for p in parts
    )


def spawning_call(meta: bytes) -> str | None:
    """The ``toolUseId`` a sub-agent's ``.meta.json`` names (the parent's ``Agent`` call),
    or ``None`` when it names none or is not a JSON object."""
    return json_text_member(meta, "toolUseId")
