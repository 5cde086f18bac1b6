"""Pi coding agent reader: ``sessions/--<cwd>--/<time>_<id>.jsonl`` -> Snapshot.

Format facts: the codec's README.md (read from ``@mariozechner/pi-coding-agent`` 0.73.1
``dist/core/session-manager.js``, ``messages.js``, ``docs/session-format.md``; checked
against the recorded fixtures). Rules implemented:

* line 1 is the header ``{"type": "session", "id", "cwd", "timestamp", "parentSession"?}``;
  every other line is an entry ``{"type", "id", "parentId", "timestamp", ...}``;
* the conversation is the ``parentId`` chain back from the **last entry of the file** (pi's
  leaf on open, ``_buildIndex``); entries off that chain (branches the user left with
  ``/tree``) are counted as ``rewound`` and stay in the artifact;
* ``message`` entries: ``user`` -> user records (text blocks), ``assistant`` -> ``thinking``
  -> reasoning, ``text`` -> assistant, ``toolCall`` -> tool-call (model = the message's
  ``model``), ``toolResult`` -> tool-result with ``ok = not isError`` and, for ``bash``, the
  exit status of its "Command exited with code N" tail; ``bashExecution`` (the user's own
  ``!cmd``) -> an observation holding the text pi sends its model for it
  (``bashExecutionToText``); ``custom`` (an extension's message, sent as user text) -> system;
  an assistant message that ended in ``error`` / ``aborted`` is not sent again by pi
  (``transformMessages``) and is counted as ``aborted-message``;
* ``compaction`` and ``branch_summary`` entries -> system records holding the summary (pi
  sends each to the model as a user message wrapped in its own prefix); ``custom_message``
  -> system; ``model_change``, ``thinking_level_change``, ``label``, ``session_info``,
  ``custom`` -> ``lifecycle-dropped`` by name (``session_info.name`` is the title; the session
  model is the last ``model_change`` or assistant message on the chain, as pi takes it);
* a fork's header names the parent file (``parentSession``): its id (from the file name) is
  ``Session.parent_session_id``;
* record ids are ``pi:<entry id>`` (``:<n>`` for the second and later blocks of a message).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from trajconv.codecs.base import Limits
from trajconv.codecs.common import LineUnit
from trajconv.codecs.jsonl import Utf8Tally, copy_jsonl, iter_file_objects
from trajconv.codecs.pi import layout
from trajconv.codecs.tool_results import answered
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import SnapshotBuilder, time_from_iso, time_from_ms
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "pi/1"

#: entry types that hold no conversation (``SessionEntry`` of session-manager.d.ts)
SIDE_ENTRIES = ("model_change", "thinking_level_change", "label", "session_info", "custom")
#: entry types that join the chain (every ``SessionEntry``)
ENTRY_TYPES = (*SIDE_ENTRIES, "message", "compaction", "branch_summary", "custom_message")

#: the tail pi's bash tool gives a command that exits non-zero (``core/tools/bash.js``)
EXIT_TAIL = re.compile(r"(?:^|\n)Command exited with code (-?\d+)\s*$")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _time(entry: dict[str, Any]) -> str | None:
    ts = entry.get("timestamp")
    if isinstance(ts, str):
        return time_from_iso(ts)
    msg = entry.get("message")
    if isinstance(msg, dict) and type(msg.get("timestamp")) is int:
        return time_from_ms(msg["timestamp"])
    return None


def bash_execution_text(msg: dict[str, Any]) -> str:
    """The user text pi sends its model for a ``bashExecution`` message
    (``bashExecutionToText`` of ``core/messages.js``)."""
    text = f"Ran `{msg.get('command', '')}`\n"
    output = msg.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    code = msg.get("exitCode")
    if msg.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif type(code) is int and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if msg.get("truncated") and msg.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {msg['fullOutputPath']}]"
    return text


def parent_id_of(parent: str) -> str | None:
    """The session id a ``parentSession`` path names (its file name), or None."""
    name = (PureWindowsPath if "\\" in parent else PurePosixPath)(parent).name
    return layout.id_of_file(Path(name))


@dataclass
class _Scan:
    """The first pass: the tree (``id`` -> parent and line) and the session facts."""

    parent: dict[str, str | None] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    last: str | None = None
    title: str | None = None
    last_time: str | None = None

    def line(self, number: int, obj: dict[str, Any]) -> None:
        if obj.get("type") not in ENTRY_TYPES or not isinstance(obj.get("id"), str):
            return
        if obj["id"] not in self.line_of:
            self.add(number, obj)

    def add(self, number: int, obj: dict[str, Any]) -> str | None:
        """Join the entry ``obj`` (a new id, of a type in ENTRY_TYPES) to the tree; its time."""
        eid = obj["id"]
        parent = obj.get("parentId")
        self.parent[eid] = parent if isinstance(parent, str) else None
        self.line_of[eid] = number
        self.last = eid
        if obj["type"] == "session_info":
            self.title = _str(obj.get("name"))
        time = _time(obj)
        if time is not None:
            self.last_time = time
        return time

    def chain(self) -> list[int]:
        """Line numbers of the conversation pi continues, root first."""
        path: list[int] = []
        seen: set[str] = set()
        node = self.last
        while node is not None and node in self.line_of and node not in seen:
            seen.add(node)
            path.append(self.line_of[node])
            node = self.parent.get(node)
        path.reverse()
        return path


class _Projector:
    def __init__(self, b: SnapshotBuilder, name: str) -> None:
        self.b = b
        self.d = b.diagnostics
        self.name = name
        self.turn: int | None = None
        self.calls: set[str] = set()
        self.done: set[str] = set()
        self.model: str | None = None

    def entry(self, number: int, obj: dict[str, Any], time: str | None) -> None:
        kind = obj["type"]
        unit = _Unit(self, number, obj["id"], time)
        if kind == "message":
            msg = obj.get("message")
            if not isinstance(msg, dict):
                unit.drop("invalid-line")
            else:
                self.message(unit, msg)
        elif kind in ("compaction", "branch_summary"):
            summary = obj.get("summary")
            if isinstance(summary, str) and summary.strip():
                unit.text("system", summary, kind, "$.summary")
            else:
                unit.drop("empty-content", name=kind)
        elif kind == "custom_message":
            self.content(unit, obj.get("content"), "system", "custom_message", "$.content")
        else:
            if kind == "model_change" and _str(obj.get("modelId")):
                self.model = obj["modelId"]  # pi continues with it (``buildSessionContext``)
            unit.drop("lifecycle-dropped", name=kind)
        unit.finish()

    def message(self, unit: _Unit, msg: dict[str, Any]) -> None:
        role = msg.get("role")
        if role == "user":
            self.turn = 0 if self.turn is None else self.turn + 1
            self.content(unit, msg.get("content"), "user", "user", "$.message.content")
        elif role == "assistant":
            self.assistant(unit, msg)
        elif role == "toolResult":
            self.result(unit, msg)
        elif role == "bashExecution":
            unit.text("observation", bash_execution_text(msg), "bashExecution", "$.message")
        elif role == "custom":
            self.content(unit, msg.get("content"), "system", "custom", "$.message.content")
        elif role in ("compactionSummary", "branchSummary"):
            summary = msg.get("summary")
            if isinstance(summary, str) and summary.strip():
                unit.text("system", summary, f"message:{role}", "$.message.summary")
            else:
                unit.drop("empty-content", name=str(role))
        else:
            unit.drop("unknown-kind", name=f"message:{role}")

    def content(self, unit: _Unit, content: Any, kind: str, native: str, path: str) -> None:
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
            paths = [path]
        elif isinstance(content, list):
            blocks = content
            paths = [f"{path}[{i}]" for i in range(len(content))]
        else:
            unit.drop("invalid-line")
            return
        for block, where in zip(blocks, paths, strict=True):
            btype = block.get("type") if isinstance(block, dict) else None
            text = block.get("text") if btype == "text" else None
            if isinstance(text, str) and text.strip():
                unit.text(kind, text, native, where)
            elif isinstance(text, str):
                unit.drop("empty-content")
            else:
                unit.drop("non-text-content", name=str(btype))

    def assistant(self, unit: _Unit, msg: dict[str, Any]) -> None:
        content = msg.get("content")
        if not isinstance(content, list):
            unit.drop("invalid-line")
            return
        if msg.get("stopReason") in ("error", "aborted"):
            unit.drop("aborted-message", name=str(msg.get("stopReason")))
            return
        model = _str(msg.get("model"))
        if model:
            self.model = model
        for i, block in enumerate(content):
            where = f"$.message.content[{i}]"
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "text" and isinstance(block.get("text"), str):
                if block["text"].strip():
                    unit.text("assistant", block["text"], "text", where, model)
                else:
                    unit.drop("empty-content")
            elif btype == "thinking" and isinstance(block.get("thinking"), str):
                if block.get("redacted"):
                    unit.drop("redacted-content", name="thinking:redacted")
                elif block["thinking"].strip():
                    unit.text("reasoning", block["thinking"], "thinking", where, model)
                else:
                    unit.drop("empty-content", name="thinking")
            elif btype == "toolCall" and isinstance(block.get("id"), str):
                call_id, name = block["id"], str(block.get("name") or "")
                args = block.get("arguments")
                self.calls.add(call_id)
                unit.add(
                    lambda rid, ev, c=call_id, n=name, a=args: self.b.add_call(
                        rid, c, n, a, time=unit.time, turn=self.turn, evidence=ev
                    ),
                    "toolCall",
                    where,
                )
            else:
                unit.drop("non-text-content", name=str(btype))

    def result(self, unit: _Unit, msg: dict[str, Any]) -> None:
        call_id = answered(unit, msg.get("toolCallId"), self.calls, self.done)
        if call_id is None:
            return
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        if any(isinstance(b, dict) and b.get("type") != "text" for b in blocks):
            self.d.add("block-dropped", f"{self.name}:{unit.number}", name="toolResult:image")
        output = "\n".join(texts)  # how pi joins them for the model (openai-completions.js)
        failed = msg.get("isError") is True
        exit_code = None
        if failed and msg.get("toolName") == "bash":
            match = EXIT_TAIL.search(output)
            exit_code = int(match.group(1)) if match else None
        self.done.add(call_id)
        unit.result(call_id, not failed, output, "toolResult", "$.message", exit_code)

    def finish(self) -> None:
        for call_id in sorted(self.calls - self.done):
            self.d.add("pending-tool-call", call_id)


class _Unit(LineUnit):
    """One entry: its first record carries the unit; an entry with none is counted once."""

    def __init__(self, proj: _Projector, number: int, eid: str, time: str | None) -> None:
        super().__init__(proj, "pi", number, eid, time)


def _header(copy: Path, name: str, limits: Limits) -> dict[str, Any]:
    for number, obj in iter_file_objects(copy, name, Diagnostics(), limits):
        if number != 1 or obj.get("type") != "session" or not isinstance(obj.get("id"), str):
            break
        return obj
    raise FormatError(name, "not a Pi session: line 1 is not a session header", line=1)


class _Branched(Exception):
    """The one-pass read cannot stand for the two-pass one: read the session again."""


def _one_pass(
    scan: _Scan, proj: _Projector, copy: Path, name: str, limits: Limits, utf8: Utf8Tally
) -> None:
    """Project the entries as they come, while every entry's parent is the entry before it
    (a session never branched with ``/tree``, the common case): the chain is then every
    entry, in file order, and one parse of each line does what :func:`_two_passes` does.
    The first entry off that straight line raises :class:`_Branched`, and so does any error
    (an entry projected here may be off the chain, where the two passes never look)."""
    b = proj.b
    diags = b.diagnostics
    line_of = scan.line_of
    max_records = limits.max_records
    try:
        for number, obj in iter_file_objects(copy, name, diags, limits, utf8):
            kind = obj.get("type")
            eid = obj.get("id")
            if number == 1:
                diags.add("lifecycle-dropped", f"{name}:{number}", name="session")
            elif kind not in ENTRY_TYPES:
                diags.add("unknown-kind", f"{name}:{number}", name=str(kind))
            elif not isinstance(eid, str):
                diags.add("invalid-line", f"{name}:{number}")
            elif eid in line_of:
                diags.add("duplicate-message", f"{name}:{number}")
            elif scan.last is not None and obj.get("parentId") != scan.last:
                raise _Branched
            else:
                proj.entry(number, obj, scan.add(number, obj))
            if b.record_count > max_records:
                raise _Branched  # the two passes say whether and where
    except FormatError:
        raise _Branched from None


def _two_passes(
    scan: _Scan,
    proj: _Projector,
    copy: Path,
    name: str,
    limits: Limits,
    utf8: Utf8Tally,
    file: Path,
) -> None:
    """The tree first (a pass that only parses), then the entries on the chain."""
    b = proj.b
    try:
        for number, obj in iter_file_objects(copy, name, Diagnostics(), limits):
            scan.line(number, obj)
    except LimitError:
        pass  # the projection below refuses the same line with the same error
    chain = scan.chain()
    on_chain = set(chain)
    in_order = all(a < c for a, c in itertools.pairwise(chain))

    held: dict[int, dict[str, Any]] = {}
    for number, obj in iter_file_objects(copy, name, b.diagnostics, limits, utf8):
        kind = obj.get("type")
        eid = obj.get("id")
        place = f"{name}:{number}"
        if number == 1:
            b.diagnostics.add("lifecycle-dropped", place, name="session")
        elif kind not in ENTRY_TYPES:
            b.diagnostics.add("unknown-kind", place, name=str(kind))
        elif not isinstance(eid, str):
            b.diagnostics.add("invalid-line", place)
        elif scan.line_of.get(eid) != number:
            b.diagnostics.add("duplicate-message", place)
        elif number not in on_chain:
            b.diagnostics.add("rewound", place, name=str(kind))
        elif in_order:
            proj.entry(number, obj, _time(obj))
        else:
            held[number] = obj
        if b.record_count > limits.max_records:
            raise LimitError(file, "max_records", limits.max_records, line=number)
    for number in chain if held else ():
        proj.entry(number, held[number], _time(held[number]))


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    file = layout.resolve(path, session)
    try:
        return _read(file, session, limits, straight=True)
    except _Branched:
        pass  # the first builder holds entries off the chain: it (and its spool) goes here
    return _read(file, session, limits, straight=False)  # a fresh builder and copy


def _read(file: Path, session: str | None, limits: Limits, *, straight: bool) -> Snapshot:
    name = file.name
    locator = f"{file.parent.name}/{name}"
    sid = layout.id_of_file(file) or file.stem
    b = SnapshotBuilder(
        Source(harness="pi", harness_version=None, session_id=sid, locator=locator), READER
    )
    utf8 = Utf8Tally()
    _blob, copy = copy_jsonl(b, name, file, limits, utf8)
    try:
        header = _header(copy, name, limits)
    except FormatError as exc:
        raise FormatError(file, exc.reason, line=1) from None
    sid = str(header["id"])
    if session is not None and session != sid:
        raise FormatError(file, f"the header names session {sid}, not {session}", line=1)
    b.source = Source(harness="pi", harness_version=None, session_id=sid, locator=locator)

    scan = _Scan()
    proj = _Projector(b, name)
    if straight:
        _one_pass(scan, proj, copy, name, limits, utf8)
    else:
        _two_passes(scan, proj, copy, name, limits, utf8, file)
    proj.finish()

    parent = _str(header.get("parentSession"))
    created = _str(header.get("timestamp"))
    b.session = Session(
        id=sid,
        title=scan.title,
        cwd=_str(header.get("cwd")),
        model=proj.model,
        created_at=time_from_iso(created) if created else None,
        updated_at=scan.last_time or (time_from_iso(created) if created else None),
        parent_session_id=parent_id_of(parent) if parent else None,
    )
    return b.build()
