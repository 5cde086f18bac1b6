"""Runtime protobuf schema for Cursor AgentKv blobs (package ``agent.v1``).

Field numbers and types come from the message descriptors shipped in
``@cursor/sdk`` 1.0.32 (see ``codecs/cursor/README.md`` section 4/6).
The schema is built at run time as a ``FileDescriptorProto`` and turned into
message classes with ``message_factory``; no ``.proto`` file or ``protoc``.

Design choices (why):
- proto2 syntax with every singular field ``optional``: presence then follows
  the wire exactly, so parse -> serialize does not add or drop zero values.
- Sub-messages and maps the codec does not interpret are declared ``bytes``
  (resp. ``repeated bytes`` of map entries): the wire form is the same
  length-delimited record, so their bytes survive untouched and in order.
- Cursor (bufbuild) writes fields in *declaration* order (1, 8, 3, 4, ...),
  protobuf-python writes in field-number order; ``encode`` serialises one
  field at a time in declaration order, then the unknown fields, so a root
  Cursor wrote re-encodes byte for byte.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

PACKAGE = "agent.v1"
_FDP = descriptor_pb2.FieldDescriptorProto

# (number, name, type, repeated, message type name or None) in Cursor's declaration order.
_T = {
    "bytes": _FDP.TYPE_BYTES,
    "string": _FDP.TYPE_STRING,
    "uint32": _FDP.TYPE_UINT32,
    "uint64": _FDP.TYPE_UINT64,
    "int32": _FDP.TYPE_INT32,
    "int64": _FDP.TYPE_INT64,
    "bool": _FDP.TYPE_BOOL,
    "message": _FDP.TYPE_MESSAGE,
}

Field = tuple[int, str, str, bool, str | None]

SCHEMA: dict[str, list[Field]] = {
    "ConversationStateStructure": [
        (1, "root_prompt_messages_json", "bytes", True, None),
        (8, "turns", "bytes", True, None),
        (3, "todos", "bytes", True, None),
        (4, "pending_tool_calls", "string", True, None),
        (5, "token_details", "bytes", False, None),  # ConversationTokenDetails, opaque
        (6, "summary", "bytes", False, None),
        (7, "plan", "bytes", False, None),
        (9, "previous_workspace_uris", "string", True, None),
        (10, "mode", "int32", False, None),  # enum agent mode
        (11, "summary_archive", "bytes", False, None),
        (12, "file_states", "bytes", True, None),  # map<string, bytes> entries
        (15, "file_states_v2", "bytes", True, None),  # map<string, FileStateStructure>
        (13, "summary_archives", "bytes", True, None),
        (14, "turn_timings", "bytes", True, None),  # StepTiming, opaque
        (16, "subagent_states", "bytes", True, None),  # map entries, opaque
        (17, "self_summary_count", "uint32", False, None),
        (18, "read_paths", "string", True, None),
        (19, "active_branch_name", "string", False, None),
        (20, "plans", "bytes", True, None),
        (21, "tracked_git_repo_branches", "bytes", True, None),
        (22, "agent_type", "string", False, None),
        (23, "communicate_update_history", "bytes", True, None),
        (24, "subagent_threads", "bytes", True, None),
        (25, "communicate_update_final_summary", "string", False, None),
        (28, "communicate_update_completed_subtitle", "string", False, None),
        (29, "communicate_update_states_by_parent_tool_call_id", "bytes", True, None),
        (30, "subagent_runs_by_parent_tool_call_id", "bytes", True, None),
        (26, "conversation_started_timestamp_ms", "uint64", False, None),
        (27, "conversation_started_time_zone", "string", False, None),
        (31, "subagent_state_refs", "bytes", True, None),  # map<string, bytes>
        (32, "goal_state", "bytes", False, None),
        (33, "is_root_project_conversation", "bool", False, None),
        (34, "completed_ask_question_tool_call_ids", "string", True, None),
        (35, "durable_skill_blocks", "string", True, None),
        (36, "durable_custom_mode_id", "string", False, None),
        (37, "message_count_at_last_compaction", "uint32", False, None),
        (38, "recent_user_message_ids", "string", True, None),
        (39, "recent_user_message_ids_older_turn_count", "uint32", False, None),
    ],
    "StringBytesEntry": [(1, "key", "string", False, None), (2, "value", "bytes", False, None)],
    "ConversationTurnStructure": [
        (1, "agent_conversation_turn", "message", False, "AgentConversationTurnStructure"),
        (2, "shell_conversation_turn", "message", False, "ShellConversationTurnStructure"),
    ],
    "AgentConversationTurnStructure": [
        (1, "user_message", "bytes", False, None),
        (2, "steps", "bytes", True, None),
        (3, "request_id", "string", False, None),
        (4, "encrypted_model", "string", False, None),
        (5, "dynamic_tool_count", "uint32", False, None),
        (6, "send_message_step_indices", "uint32", True, None),
        (7, "routed_model_display_name", "string", False, None),
        (8, "subagent_dispatch_steps", "bytes", True, None),
        (9, "dynamic_tool_names", "string", True, None),
        (10, "user_message_id", "string", False, None),
    ],
    "ShellConversationTurnStructure": [
        (1, "shell_command", "bytes", False, None),
        (2, "shell_output", "bytes", False, None),
    ],
    "ShellCommand": [(1, "command", "string", False, None)],
    "ShellOutput": [
        (1, "stdout", "string", False, None),
        (2, "stderr", "string", False, None),
        (3, "exit_code", "int32", False, None),
    ],
    "ConversationStep": [
        (1, "assistant_message", "message", False, "AssistantMessage"),
        (2, "tool_call", "bytes", False, None),  # ToolCall: large oneof, kept opaque
        (3, "thinking_message", "message", False, "ThinkingMessage"),
    ],
    "AssistantMessage": [
        (1, "text", "string", False, None),
        (2, "started_at_ms", "uint64", False, None),
        (3, "completed_at_ms", "uint64", False, None),
    ],
    "ThinkingMessage": [
        (1, "text", "string", False, None),
        (2, "duration_ms", "uint32", False, None),
        (3, "started_at_ms", "uint64", False, None),
        (4, "completed_at_ms", "uint64", False, None),
    ],
    "UserMessage": [
        (1, "text", "string", False, None),
        (2, "message_id", "string", False, None),
        (4, "mode", "int32", False, None),
        (8, "rich_text", "string", False, None),
        (10, "conversation_state_blob_id", "bytes", False, None),
        (17, "thread_id", "string", False, None),
        (18, "text_blob_id", "bytes", False, None),
        (25, "started_at_ms", "uint64", False, None),
        (26, "completed_at_ms", "uint64", False, None),
    ],
    "ConversationSummary": [(1, "summary", "string", False, None)],
    "ConversationPlan": [(1, "plan", "string", False, None)],
    "ConversationSummaryArchive": [
        (1, "summarized_messages", "bytes", True, None),
        (2, "summary", "string", False, None),
        (3, "window_tail", "uint32", False, None),
        (4, "summary_message", "bytes", False, None),
    ],
    "TodoItem": [
        (1, "id", "string", False, None),
        (2, "content", "string", False, None),
        (3, "status", "int32", False, None),
        (4, "created_at", "int64", False, None),
        (5, "updated_at", "int64", False, None),
        (6, "dependencies", "string", True, None),
    ],
}

# Oneof groups (message -> oneof name -> member field names).
_ONEOFS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ConversationTurnStructure": ("turn", ("agent_conversation_turn", "shell_conversation_turn")),
    "ConversationStep": ("message", ("assistant_message", "tool_call", "thinking_message")),
}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="trajconv/cursor_agent_v1.proto", package=PACKAGE, syntax="proto2"
    )
    for msg_name, fields in SCHEMA.items():
        mdp = fdp.message_type.add(name=msg_name)
        oneof = _ONEOFS.get(msg_name)
        if oneof:
            mdp.oneof_decl.add(name=oneof[0])
        for number, name, typ, repeated, type_name in fields:
            f = mdp.field.add(name=name, number=number, type=_T[typ])
            f.label = _FDP.LABEL_REPEATED if repeated else _FDP.LABEL_OPTIONAL
            if type_name:
                f.type_name = f".{PACKAGE}.{type_name}"
            if repeated and typ in ("uint32", "uint64", "int32", "int64", "bool"):
                f.options.packed = True  # proto3 default packing, as Cursor writes it
            if oneof and name in oneof[1]:
                f.oneof_index = 0
    return fdp


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file_descriptor())
CLASSES: dict[str, type[Message]] = {
    name: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))
    for name in SCHEMA
}


def decode(type_name: str, data: bytes) -> Any:
    """Parse ``data`` as ``agent.v1.<type_name>`` (raises ``DecodeError`` on bad wire data)."""
    msg = CLASSES[type_name]()
    msg.ParseFromString(data)
    return msg


def encode(msg: Message) -> bytes:
    """Serialise in Cursor's declaration order, unknown fields last."""
    name = msg.DESCRIPTOR.name
    cls = CLASSES[name]
    out = bytearray()
    for _num, fname, _t, repeated, _tn in SCHEMA[name]:
        present = len(getattr(msg, fname)) > 0 if repeated else msg.HasField(fname)
        if not present:
            continue
        part = cls()
        if repeated:
            getattr(part, fname).extend(getattr(msg, fname))
        elif _t == "message":
            getattr(part, fname).CopyFrom(getattr(msg, fname))
        else:
            setattr(part, fname, getattr(msg, fname))
        out += part.SerializeToString()
    rest = cls()
    rest.CopyFrom(msg)
    for _num, fname, _t, _r, _tn in SCHEMA[name]:
        rest.ClearField(fname)
    out += rest.SerializeToString()  # only unknown fields remain
    return bytes(out)


def unknown_counts(msg: Message) -> Counter[str]:
    """Unknown fields of ``msg`` counted by wire type (``"field:wiretype"`` keys)."""
    counts: Counter[str] = Counter()
    fields = UnknownFieldSet(msg)
    for i in range(len(fields)):  # the stubs declare __getitem__/__len__, not __iter__
        f = fields[i]
        counts[f"{f.field_number}:{f.wire_type}"] += 1
    return counts


def new(type_name: str) -> Any:
    """A fresh message of ``type_name`` (typed ``Any``: fields are set by name)."""
    return CLASSES[type_name]()
