"""fx's own session vocabulary: schema versions, event kinds, enums and naming rules.

Sources: ``codecs/fx/README.md`` (upstream vercel-labs/fx ``session_event.zig``,
``session_json.zig``, ``session_codec.zig``, ``types.zig``; the Rust port binbandit/oh-fx
``session_event.rs`` / ``result_store.rs``), checked against fx 0.0.5 built from source for the
legacy and ``event_log_v1`` layouts.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, NamedTuple

#: top-level ``session.json`` schema versions
LEGACY_SCHEMAS = (1, 2)
EVENT_LOG_SCHEMA = 3
CURRENT_SCHEMA = 4
#: conversation-frame envelope versions a schema-4 reader accepts; writers emit 3
FRAME_SCHEMAS = (1, 2, 3)
FRAME_SCHEMA = 3

# schema-4 conversation frame kinds
USER = "user"
ASSISTANT = "assistant"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
STEERING = "steering"
TURN_COMPLETED = "turn_completed"
INTERRUPTED = "interrupted"
CONTEXT_CHECKPOINT = "context_checkpoint"
FRAME_KINDS = frozenset(
    {
        USER,
        ASSISTANT,
        TOOL_CALL,
        TOOL_RESULT,
        STEERING,
        TURN_COMPLETED,
        INTERRUPTED,
        CONTEXT_CHECKPOINT,
    }
)
#: kinds only valid inside an open turn
IN_TURN = frozenset({ASSISTANT, TOOL_CALL, TOOL_RESULT, STEERING})
CLOSING = frozenset({TURN_COMPLETED, INTERRUPTED})

# schema-3 semantic frame kinds
SESSION_STARTED = "session_started"
PREFERENCES_CHANGED = "preferences_changed"
WORKSPACE_REBOUND = "workspace_rebound"
HISTORY_TURN_COMMITTED = "history_turn_committed"
STATE_STARTED = "state_replacement_started"
STATE_CHUNK = "state_replacement_chunk"
STATE_COMMITTED = "state_replacement_committed"
V3_LIFECYCLE = frozenset(
    {
        SESSION_STARTED,
        PREFERENCES_CHANGED,
        WORKSPACE_REBOUND,
        "usage_checkpointed",
        "recovery_checkpoint_set",
        "recovery_checkpoint_cleared",
        "permission_state_changed",
        STATE_STARTED,
        STATE_COMMITTED,
    }
)

# legacy / schema-3 history turn kinds
TURN_ASSISTANT = "assistant"
TURN_COMPACTED = "compacted_summary"
TURN_BACKGROUND = "background_command"
TURN_INTERRUPTED = "interrupted"

#: the reason of an interruption, in both layouts
INTERRUPT_REASONS = ("cancelled", "failed")
#: the Snapshot text of the system record that stands for an interruption
INTERRUPT_PREFIX = "interrupted: "

# schema-4 ``session.json`` writer field order
META_FIELDS = (
    "schema_version",
    "id",
    "origin_workspace_root",
    "workspace_root",
    "created_at_ms",
    "updated_at_ms",
    "conversation_language",
    "provider",
    "model",
    "effort",
    "fast_mode",
    "title",
    "subagent_child",
)
#: fx's documented defaults for fields a writer must fill
DEFAULT_LANGUAGE = "und"
DEFAULT_PROVIDER = "gateway"
DEFAULT_EFFORT = "auto"
#: the model fx 0.0.5 assigns when it migrates a legacy session that recorded none
DEFAULT_MODEL = "anthropic/claude-opus-4.7"

PREVIEW_MAX = 4096
TITLE_MAX = 240
MODEL_MAX = 1024

_TOOL_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def result_ref(tool_name: str, call_id: str, output: bytes) -> str:
    """Native tool-result body name: ``result-<tool>-<A>-<B>.txt``.

    ``<tool>``: bytes outside ``[A-Za-z0-9_-]`` become ``-``, cut to 48 bytes, ``call`` if empty;
    ``<A>``/``<B>``: hex of the first 8 bytes of SHA-256 of the call id / the output bytes.
    """
    raw = tool_name.encode("utf-8")
    safe = "".join(chr(b) if _TOOL_SAFE.match(chr(b)) is None else "-" for b in raw)[:48]
    a = hashlib.sha256(call_id.encode("utf-8")).digest()[:8].hex()
    b = hashlib.sha256(output).digest()[:8].hex()
    return f"result-{safe or 'call'}-{a}-{b}.txt"


def preview(output: bytes) -> str:
    """At most 4096 bytes of the output, cut on a UTF-8 boundary (the codec README ``preview``)."""
    return output[:PREVIEW_MAX].decode("utf-8", "ignore")


def durable_text(value: Any) -> str | None:
    """A schema-3 durable-bytes value (a string, or ``{"encoding":"base64","data"}``) as text.

    ``session_codec.zig`` writes non-UTF-8 bytes in the base64 form; they are decoded with
    replacement here (the exact bytes stay in the artifact).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("encoding") == "base64":
        data = value.get("data")
        if isinstance(data, str):
            try:
                return base64.b64decode(data, validate=True).decode("utf-8", "replace")
            except ValueError:
                return None
    return None


class FxFrame(NamedTuple):
    """One schema-4 conversation frame: envelope plus its single event (a tuple: one per
    line, made four times as fast as a frozen dataclass)."""

    line: int
    seq: int
    timestamp_ms: int
    kind: str
    body: dict[str, Any]


class FxEventV3(NamedTuple):
    """One schema-3 ``event_log_v1`` frame (a tuple, as :class:`FxFrame`)."""

    line: int
    seq: int
    event_id: str
    timestamp_ms: int
    kind: str
    payload: dict[str, Any]


def exit_code_of(presentation: Any) -> int | None:
    """Exit status from a schema-4 ``{"exit_code":n}`` or schema-3 ``{"kind","value"}`` form."""
    if not isinstance(presentation, dict):
        return None
    if presentation.get("kind") == "exit_code":
        value = presentation.get("value")
    else:
        value = presentation.get("exit_code")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
