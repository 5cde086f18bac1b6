"""Typed models of GitHub Copilot CLI's own records (``codecs/copilot/README.md``).

The reader parses each ``events.jsonl`` line into an :class:`Event` and the
``workspace.yaml`` mapping into a :class:`Workspace`, then lifts them to
Snapshot records; the writer builds events with :func:`event_line`.

Facts (the codec README, observed 1.0.102): one compact JSON object per line,
members in the order ``type, data, id, timestamp, parentId``; ``parentId`` is
the previous persisted event's id (``null`` on line 1); ``workspace.yaml``
keys in zod-schema order ``id, cwd, git_root, repository, host_type, branch,
name, client_name, user_named, summary_count, created_at, updated_at``.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

#: event types that carry conversation (the codec README, **bold** rows)
USER_MESSAGE = "user.message"
ASSISTANT_MESSAGE = "assistant.message"
ASSISTANT_REASONING = "assistant.reasoning"
TOOL_USER_REQUESTED = "tool.user_requested"
TOOL_START = "tool.execution_start"
TOOL_COMPLETE = "tool.execution_complete"
SYSTEM_MESSAGE = "system.message"
SESSION_START = "session.start"
TURN_START = "assistant.turn_start"
TURN_END = "assistant.turn_end"
SESSION_INFO = "session.info"
SESSION_WARNING = "session.warning"
SESSION_ERROR = "session.error"
COMPACTION_START = "session.compaction_start"
COMPACTION_COMPLETE = "session.compaction_complete"
MODEL_CHANGE = "session.model_change"

#: persisted lifecycle / bookkeeping types with no conversational content (the codec README table,
#: the 1.0.102 schema's ``SessionEvent`` union, and the "Observed" section).
LIFECYCLE_TYPES: frozenset[str] = frozenset(
    {
        SESSION_START,
        "session.resume",
        "session.shutdown",
        MODEL_CHANGE,
        "session.mode_changed",
        "session.context_changed",
        "session.plan_changed",
        "session.workspace_file_changed",
        "session.permissions_changed",
        "session.remote_steerable_changed",
        "session.autopilot_objective_changed",
        "session.schedule_created",
        "session.schedule_cancelled",
        "session.schedule_rearmed",
        "session.handoff",
        "session.truncation",
        "session.task_complete",
        "session.usage_record",
        "session.usage_checkpoint",
        "session.model_deselected",
        "session.limits_changed",
        "session.context_cleared",
        "session.binary_asset",
        COMPACTION_START,
        TURN_START,
        TURN_END,
        "assistant.turn_retry",
        "assistant.idle",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
        "subagent.selected",
        "subagent.deselected",
        "subagent.configured",
        "hook.start",
        "hook.end",
        "system.notification",
        "permission.requested",
        "permission.completed",
        "external_tool.requested",
        "abort",
        "model.call_finished",
        "model.call_failure",
    }
)

#: types whose text is shown to the user as a timeline note (the 1.0.102 ACP replay renders
#: ``session.info``/``session.error`` as ``Info: <message>`` / ``Error: <message>``).
NOTE_TYPES: frozenset[str] = frozenset({SESSION_INFO, SESSION_WARNING, SESSION_ERROR})

#: types that inject context the model saw (skill bodies).
INJECTED_TYPES: frozenset[str] = frozenset({"skill.invoked"})


# The per-line models are NamedTuples: one is made for every line, and a tuple is
# several times cheaper to make than a frozen dataclass.


class Event(NamedTuple):
    """One parsed ``events.jsonl`` line."""

    line: int
    type: str
    data: dict[str, Any]
    id: str | None
    timestamp: str | None
    parent_id: str | None
    has_parent: bool
    """The line carries a ``parentId`` member (``null`` counts)."""
    ephemeral: bool
    agent_id: str | None


def parse_event(obj: Any, line: int) -> Event | None:
    """The envelope of one decoded line, or None when it is not an event object."""
    if not isinstance(obj, dict):
        return None
    get = obj.get
    kind = get("type")
    if not isinstance(kind, str) or not kind:
        return None
    data = get("data")
    if data is None:
        data = {}
    elif not isinstance(data, dict):
        return None
    eid = get("id")
    ts = get("timestamp")
    parent = get("parentId")
    agent = get("agentId")
    return Event(
        line,
        kind,
        data,
        eid if isinstance(eid, str) else None,
        ts if isinstance(ts, str) else None,
        parent if isinstance(parent, str) else None,
        parent is not None or "parentId" in obj,
        get("ephemeral") is True,
        agent if isinstance(agent, str) else None,
    )


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class ToolRequest(NamedTuple):
    """One entry of ``assistant.message.data.toolRequests``."""

    tool_call_id: str
    name: str
    arguments: Any


def tool_requests(data: dict[str, Any]) -> list[ToolRequest]:
    out: list[ToolRequest] = []
    raw = data.get("toolRequests")
    if not isinstance(raw, list):
        return out
    for item in raw:
        if not isinstance(item, dict):
            continue
        call_id = item.get("toolCallId")
        name = item.get("name")
        if isinstance(call_id, str) and isinstance(name, str):
            out.append(ToolRequest(call_id, name, item.get("arguments", {})))
    return out


class ToolOutcome(NamedTuple):
    """``tool.execution_complete`` lifted: success, the model-facing text, exit status."""

    call_id: str
    ok: bool | None
    output: str
    exit_code: int | None


def tool_outcome(data: dict[str, Any]) -> ToolOutcome | None:
    call_id = data.get("toolCallId")
    if not isinstance(call_id, str):
        return None
    success = data.get("success")
    ok = success if isinstance(success, bool) else None
    result = data.get("result")
    error = data.get("error")
    # result.content is what the model was sent; detailedContent is display text.
    content = result.get("content") if isinstance(result, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if ok is False and isinstance(message, str):
        output = message
    elif isinstance(content, str):
        output = content
    elif isinstance(message, str):
        output = message
    else:
        output = ""
    shell = data.get("shellExecution")
    exit_code = shell.get("exitCode") if isinstance(shell, dict) else None
    if isinstance(exit_code, bool) or not isinstance(exit_code, int):
        exit_code = None
    return ToolOutcome(call_id, ok, output, exit_code)


# --------------------------------------------------------------------------- workspace.yaml

WORKSPACE_KEYS: tuple[str, ...] = (
    "id",
    "cwd",
    "git_root",
    "repository",
    "host_type",
    "branch",
    "name",
    "client_name",
    "user_named",
    "summary_count",
    "created_at",
    "updated_at",
)


@dataclass(frozen=True)
class Workspace:
    """``workspace.yaml`` with every scalar kept as the text the file holds."""

    values: dict[str, str | None] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    @property
    def title(self) -> str | None:
        # Legacy files used ``summary`` for the title.
        return self.values.get("name") or self.values.get("summary")


class WorkspaceError(ValueError):
    """``workspace.yaml`` is not a YAML mapping of scalars."""


def parse_workspace(text: str) -> Workspace:
    """Parse into the node tree, keeping each scalar's text exactly as written.

    Composing (not constructing) keeps timestamps as their text and tells a plain ``null``
    (absent) from a quoted ``"null"`` (the string).
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    yaml = YAML(typ="base", pure=True)
    try:
        node = yaml.compose(io.StringIO(text))
    except YAMLError as exc:
        raise WorkspaceError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from exc
    if node is None:
        return Workspace({})
    if not isinstance(node, MappingNode):
        raise WorkspaceError("not a mapping")
    values: dict[str, str | None] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode) or not isinstance(value_node, ScalarNode):
            continue  # nested values are kept only in the artifact
        key = str(key_node.value)
        value = str(value_node.value)
        plain = value_node.style in (None, "")
        values[key] = None if plain and value in _YAML_NULLS else value
    return Workspace(values)


_YAML_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9 _./@+-]*$")
_YAML_SPECIAL = re.compile(
    r"^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON"
    r"|off|Off|OFF|y|Y|n|N|[-+]?(?:\d[\d_]*)?(?:\.\d*)?(?:[eE][-+]?\d+)?|\.inf|\.nan|\.NaN|\.Inf)$"
)
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")


def yaml_scalar(value: str | int | bool) -> str:
    """A YAML scalar the CLI reads back as the same value (plain when safe, else quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _ISO_TIME.match(value):
        return value  # the CLI itself writes its timestamps plain
    if (
        _PLAIN_SAFE.match(value)
        and not _YAML_SPECIAL.match(value)
        and not value.endswith((" ", ":"))
        and ": " not in value
        and " #" not in value
    ):
        return value
    # A JSON string with every non-ASCII character escaped is a valid YAML double-quoted scalar.
    return json.dumps(value, ensure_ascii=True)


def workspace_text(values: dict[str, str | int | bool | None]) -> str:
    """``workspace.yaml`` text with the keys in the CLI's order; ``None`` values are left out."""
    ordered = [k for k in WORKSPACE_KEYS if k in values]
    ordered += [k for k in values if k not in WORKSPACE_KEYS]
    lines = []
    for key in ordered:
        value = values[key]
        if value is None:
            continue
        lines.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- writing events


def _float_free(value: Any) -> bool:
    """True when no float is anywhere in ``value`` (a JSON value)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def event_line(
    kind: str,
    data: dict[str, Any],
    event_id: str,
    timestamp: str,
    parent_id: str | None,
    any_json: tuple[Any, ...] | None = None,
) -> bytes:
    """One ``events.jsonl`` line as the CLI writes it (compact, members in write order, UTF-8).

    The text is ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``. orjson
    writes the same text several times faster, except that it writes some floats
    differently (``1e-7``, ``null`` for ``NaN``) and refuses lone surrogates, integers
    past 64 bits and keys that are not strings: such lines go through ``json``. Floats
    are looked for in ``any_json``, the values in ``data`` that may hold any JSON (tool
    arguments), or in all of ``data`` when it is not given.
    """
    obj = {
        "type": kind,
        "data": data,
        "id": event_id,
        "timestamp": timestamp,
        "parentId": parent_id,
    }
    if all(map(_float_free, (data,) if any_json is None else any_json)):
        try:
            return orjson.dumps(obj) + b"\n"
        except TypeError:
            pass
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # a lone surrogate cannot be UTF-8; keep it as a JSON escape instead
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
