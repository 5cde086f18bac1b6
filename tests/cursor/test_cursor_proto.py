"""Runtime protobuf schema: byte-identical round trips, declaration order, unknown fields."""

from __future__ import annotations

import hashlib

import pytest
from cursor_support import CASES, fixture_store, walk

from trajconv.codecs.cursor import proto

ROLE_TYPES = {
    "root": "ConversationStateStructure",
    "turn": "ConversationTurnStructure",
    "user-message": "UserMessage",
    "step": "ConversationStep",
    "summary": "ConversationSummary",
    "summary-archive": "ConversationSummaryArchive",
}


@pytest.mark.parametrize("case", CASES)
def test_every_protobuf_blob_round_trips_byte_identical(case: str) -> None:
    _, blobs = walk(fixture_store(case))
    checked = 0
    for bid, (role, data) in blobs.items():
        type_name = ROLE_TYPES.get(role)
        if type_name is None:
            continue
        msg = proto.decode(type_name, data)
        assert proto.encode(msg) == data, (role, bid)
        checked += 1
    assert checked >= 3


def test_declaration_order_differs_from_number_order() -> None:
    # Cursor writes field 8 (turns) right after field 1 and before 6 (summary);
    # protobuf-python's own serialiser would put 6 first.
    root = proto.new("ConversationStateStructure")
    root.root_prompt_messages_json.append(b"\x01" * 32)
    root.turns.append(b"\x02" * 32)
    root.summary = b"\x03" * 32
    data = proto.encode(root)
    assert data[34] == (8 << 3) | 2
    assert data[68] == (6 << 3) | 2
    assert root.SerializeToString() != data
    assert proto.encode(proto.decode("ConversationStateStructure", data)) == data


def test_unknown_fields_counted_by_wire_type_and_kept() -> None:
    root = proto.new("ConversationStateStructure")
    root.previous_workspace_uris.append("file:///w")
    # field 40 varint 7; field 41 length-delimited b"ab"; field 42 fixed32
    extra = bytes([0xC0, 0x02, 0x07, 0xCA, 0x02, 0x02]) + b"ab" + bytes([0xD5, 0x02, 1, 2, 3, 4])
    data = proto.encode(root) + extra
    msg = proto.decode("ConversationStateStructure", data)
    assert proto.unknown_counts(msg) == {"40:0": 1, "41:2": 1, "42:5": 1}
    assert proto.encode(msg) == data
    assert list(msg.previous_workspace_uris) == ["file:///w"]


def test_reference_ids_are_sha256_of_blobs() -> None:
    store, blobs = walk(fixture_store("multi-turn"))
    for raw in store.root.root_prompt_messages_json:
        assert hashlib.sha256(blobs[raw.hex()][1]).digest() == raw
