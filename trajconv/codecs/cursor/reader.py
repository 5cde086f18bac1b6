"""Cursor CLI reader: AgentKv ``store.db`` (or its readout) -> Snapshot.

Format facts: ``codecs/cursor/README.md`` (``@cursor/sdk`` 1.0.32 and
public readers). Rules implemented here:

* records come from root field 1, the model-visible JSON messages (section 5),
  one record per content part; record ids are ``cursor:<position>.<part>``
  (blob ids are content hashes and repeat when two messages are equal);
* ``user`` with ``providerOptions.cursor.requestId`` is a human prompt and starts
  a turn; ``user`` without it is injected context (an ``observation``), as is a
  compaction summary (``isSummary: true``, also counted as ``compaction-state``);
* tool-result ``ok`` is ``not highLevelToolCallResult.isError`` when the flag is
  there, else ``null``; ``redacted-reasoning`` is counted, never decoded;
* Cursor messages carry no time: every record's ``time`` is ``null``;
* root state this codec cannot continue (compaction summaries and archives,
  subagents, branches) and unknown protobuf fields stay in artifacts and are counted.

Conservation units: every content part of every field-1 message, plus every
root state item and unknown protobuf field listed above.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.cursor import layout, native
from trajconv.errors import FormatError
from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder, evidence, time_from_ms
from trajconv.snapshot.jsonstream import Items, Members, json_chunks
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.snapshot.secrets import UNPARSED

READER = "cursor/1"
INDEX = "cursor/store.json"
INDEX_FORMAT = "trajconv.cursor-store/1"
META_ARTIFACT = "cursor/meta.json"


def blob_artifact(blob_hex: str, role: str) -> str:
    suffix = "json" if role in ("message", "archived-message") else "pb"
    return f"cursor/blobs/{blob_hex}.{suffix}"


def _cursor_opts(obj: dict[str, Any]) -> dict[str, Any]:
    opts = obj.get("providerOptions")
    cur = opts.get("cursor") if isinstance(opts, dict) else None
    return cur if isinstance(cur, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _output(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def root_state_items(root: Any) -> list[tuple[str, int]]:
    """Root fields this codec cannot continue, with their item counts (non-zero only)."""
    items = [
        ("summary", 1 if root.HasField("summary") else 0),
        ("summary_archive", 1 if root.HasField("summary_archive") else 0),
        ("summary_archives", len(root.summary_archives)),
        ("self_summary_count", 1 if root.self_summary_count else 0),
        (
            "message_count_at_last_compaction",
            1 if root.HasField("message_count_at_last_compaction") else 0,
        ),
        ("subagent_states", len(root.subagent_states)),
        ("subagent_state_refs", len(root.subagent_state_refs)),
        ("active_branch_name", 1 if root.HasField("active_branch_name") else 0),
        ("goal_state", 1 if root.HasField("goal_state") else 0),
    ]
    return [(name, n) for name, n in items if n]


class _Projector:
    """Takes the walk's blobs and messages as they are read: artifacts and records."""

    def __init__(self, b: SnapshotBuilder, path: Path, limits: Limits) -> None:
        self.b = b
        self.path = path
        self.limits = limits
        self.total = 0
        self.expanded = 0
        """Message bytes projected, a blob counted at every reference (issue 25)."""
        self.turn: int | None = None
        self.calls: dict[str, int] = {}
        self.answered: set[str] = set()
        #: the message blob handed over last and its size as kept: the walk hands a blob
        #: over just before its first reference, which then need not look the size up
        self.fresh: tuple[str, int] | None = None

    def _ev(self, bid: str, path: str, native_kind: str) -> EvidenceFields:
        return evidence(
            artifact=blob_artifact(bid, "message"),
            json_path=path,
            native=native_kind,
            native_id=bid,
        )

    def blob(self, bid: str, role: str, data: bytes, parsed: Any = UNPARSED) -> None:
        self.total += len(data)
        self.limits.check("max_session_bytes", self.total, self.path)
        name = blob_artifact(bid, role)
        media = "application/json" if name.endswith(".json") else "application/x-protobuf"
        kept = self.b.add_artifact(name, media, data, parsed=parsed)
        self.fresh = (bid, kept.size) if role == "message" else None

    def known(self, bid: str) -> bool:
        """Whether blob ``bid`` was handed over already: its artifact is kept, named
        ``.json`` or ``.pb`` by the role it came with (``message`` and ``root`` stand for
        the two)."""
        has = self.b.has_artifact
        return has(blob_artifact(bid, "message")) or has(blob_artifact(bid, "root"))

    def message(self, pos: int, bid: str, obj: Any) -> None:
        # A root may reference one blob many times (equal messages share an id); each
        # reference becomes records, so the limit counts the bytes at every reference.
        fresh, self.fresh = self.fresh, None
        if fresh is not None and fresh[0] == bid:
            self.expanded += fresh[1]
        else:
            self.expanded += self.b.artifact_size(blob_artifact(bid, "message")) or 0
        self.limits.check_expansion(self.expanded, self.total, self.path)
        if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
            raise FormatError(self.path, "message blob is not a {role, content} object", blob=bid)
        role = obj["role"]
        cur = _cursor_opts(obj)
        model = _str(cur.get("modelName"))
        content = obj.get("content")
        parts: list[tuple[str, Any]]
        if isinstance(content, str):
            parts = [("$.content", {"type": "text", "text": content})]
        elif isinstance(content, list):
            parts = [(f"$.content[{i}]", p) for i, p in enumerate(content)]
        else:
            parts = []
            self.b.diagnostics.add("empty-content", f"cursor:{pos}", name=role)
        user_kind: str | None = None
        if role == "user":
            human = cur.get("requestId") is not None and not cur.get("isSummary")
            if human:
                self.turn = 0 if self.turn is None else self.turn + 1
            user_kind = "user" if human else "observation"
        for index, (path, part) in enumerate(parts):
            rid = f"cursor:{pos}.{index}"
            self.part(role, rid, bid, path, part, model, cur, user_kind)
            self.limits.check("max_records", self.b.record_count, self.path)

    def part(
        self,
        role: str,
        rid: str,
        bid: str,
        path: str,
        part: Any,
        model: str | None,
        cur: dict[str, Any],
        user_kind: str | None,
    ) -> None:
        b = self.b
        ptype = part.get("type") if isinstance(part, dict) else None
        native_kind = f"{role}/{ptype}"
        if not isinstance(part, dict) or not isinstance(ptype, str):
            b.diagnostics.add("unknown-kind", rid, name=native_kind)
            return
        ev = self._ev(bid, path, native_kind)
        if ptype == "text" and isinstance(part.get("text"), str):
            if role == "system":
                b.add_text("system", rid, part["text"], time=None, turn=self.turn, evidence=ev)
            elif role == "user" and user_kind is not None:
                b.add_text(user_kind, rid, part["text"], time=None, turn=self.turn, evidence=ev)
            elif role == "assistant":
                b.add_text(
                    "assistant",
                    rid,
                    part["text"],
                    time=None,
                    turn=self.turn,
                    evidence=ev,
                    model=model,
                )
            else:
                b.diagnostics.add("unknown-kind", rid, name=native_kind)
        elif ptype == "reasoning" and role == "assistant":
            text = part.get("text")
            if isinstance(text, str) and text:
                part_model = _str(_cursor_opts(part).get("modelName")) or model
                b.add_text(
                    "reasoning", rid, text, time=None, turn=self.turn, evidence=ev, model=part_model
                )
            else:  # signature-only reasoning: nothing to project
                b.diagnostics.add("empty-content", rid, name=native_kind)
        elif ptype == "redacted-reasoning":
            b.diagnostics.add("redacted-content", rid, name=native_kind)
        elif ptype == "tool-call" and role == "assistant":
            call_id, name = part.get("toolCallId"), part.get("toolName")
            if not isinstance(call_id, str) or not isinstance(name, str):
                b.diagnostics.add("unknown-kind", rid, name=native_kind)
                return
            args = part.get("args", part.get("input"))
            b.add_call(rid, call_id, name, args, time=None, turn=self.turn, evidence=ev)
            self.calls[call_id] = b.record_count - 1
        elif ptype == "tool-result" and role == "tool":
            call_id = part.get("toolCallId")
            if not isinstance(call_id, str):
                b.diagnostics.add("unknown-kind", rid, name=native_kind)
                return
            high = cur.get("highLevelToolCallResult")
            is_error = high.get("isError") if isinstance(high, dict) else None
            ok = (not is_error) if isinstance(is_error, bool) else None
            b.add_result(
                rid,
                call_id,
                ok,
                _output(part.get("result")),
                time=None,
                turn=self.turn,
                evidence=ev,
            )
            self.answered.add(call_id)
        elif ptype in ("image", "file"):
            b.diagnostics.add("non-text-content", rid, name=native_kind)
        else:
            b.diagnostics.add("unknown-kind", rid, name=native_kind)

    def finish(self) -> None:
        for call_id in self.calls:
            if call_id not in self.answered:
                self.b.diagnostics.add("pending-tool-call", f"cursor:{self.calls[call_id]}")


def _index(store: native.CursorStore, state: list[tuple[str, int]]) -> Members:
    """The store index; its ``messages`` and ``blobs`` lists are written entry by entry."""
    return Members(
        format=INDEX_FORMAT,
        agent_id=store.agent_id,
        root=store.root_id,
        cwd=store.cwd,
        user_version=store.user_version,
        messages=Items(store.message_ids()),
        blobs=Items(
            {"id": bid, "role": role, "artifact": blob_artifact(bid, role)}
            for bid, role in store.roles()
        ),
        root_fields=sorted(f.name for f, _ in store.root.ListFields()),
        root_state=dict(state),
        unknown_fields=dict(sorted(store.unknown_fields.items())),
    )


def session_of(store: native.CursorStore) -> Session:
    meta = store.meta
    created = meta.get("createdAt")
    if isinstance(created, str) and created.isdigit():  # some stores hold a numeric string
        created = int(created)
    model = _str(meta.get("lastUsedModel"))
    sub = meta.get("subagentInfo")
    return Session(
        id=store.agent_id,
        title=native.title_of(meta),
        cwd=store.cwd,
        model=None if model == "default" else model,  # "default" is not a model (section 3)
        branch=None,
        created_at=time_from_ms(created)
        if isinstance(created, int | float) and not isinstance(created, bool)
        else None,
        updated_at=None,
        parent_session_id=_str(sub.get("parentAgentId")) if isinstance(sub, dict) else None,
    )


@contextlib.contextmanager
def open_native(path: Path, limits: Limits) -> Iterator[native.CursorStore]:
    if path.name.endswith(layout.READOUT_SUFFIX) or path.suffix == ".json":
        with native.read_readout(path, max_blob=limits.max_line_bytes) as readout:
            yield readout
        return
    try:
        with native.read_store(path, max_blob=limits.max_line_bytes) as store:
            yield store
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        # A damaged page can surface anywhere in a query; it is bad input, not a crash.
        raise FormatError(path, f"damaged SQLite store ({type(exc).__name__}: {exc})") from None


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    target = layout.resolve(path, session)
    with open_native(target, limits) as store:
        b = SnapshotBuilder(
            Source(
                harness="cursor",
                harness_version=None,
                session_id=store.agent_id,
                locator=layout.locator(target),
            ),
            READER,
        )
        # Before the blobs: the order of secret-dropped samples is part of the Snapshot.
        b.add_artifact(
            META_ARTIFACT,
            "application/json",
            orjson.dumps(
                {"meta": store.meta, "other_rows": store.other_meta}, option=orjson.OPT_INDENT_2
            ),
        )
        proj = _Projector(b, target, limits)
        store.walk(proj.blob, proj.message, proj.known, proj.blob)
    b.session = session_of(store)
    state = root_state_items(store.root)
    # The index lists every blob, so it is written in pieces; it holds no native keys,
    # only ids, roles and field names, so there is no credential to strip.
    with b.artifact_writer(INDEX, "application/json") as out:
        for chunk in json_chunks(_index(store, state)):
            out.write(chunk)
    for name in store.dropped_secrets:  # the key name only; the value is gone already
        b.diagnostics.add("secret-dropped", f"meta.{name}")
    for name, count in state:
        b.diagnostics.add("compaction-state", f"root.{name}", count=count)
    for key, count in sorted(store.unknown_fields.items()):
        b.diagnostics.add("unknown-kind", f"protobuf {key}", count=count)
    proj.finish()
    return b.build()


def units_seen(snapshot: Snapshot) -> int:
    """Native units a Cursor Snapshot accounts for, recomputed from its artifacts.

    Every content part of every field-1 message, every root state item and every
    unknown protobuf field (the conservation test compares this with records +
    unit diagnostics).
    """
    arts = {a.name: a for a in snapshot.artifacts}  # fixture-sized: tests only
    index = orjson.loads(arts[INDEX].read() or b"")
    units: int = sum(index["root_state"].values()) + sum(index["unknown_fields"].values())
    for bid in index["messages"]:
        obj = orjson.loads(arts[blob_artifact(bid, "message")].read() or b"")
        content = obj.get("content")
        units += 1 if isinstance(content, str) else len(content) if isinstance(content, list) else 1
    return units
