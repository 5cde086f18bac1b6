"""fx writer: Snapshot -> ``home/.fx/sessions/<id>/`` (legacy schema 1 by default, or schema 4).

Format facts: ``codecs/fx/README.md``. The default target is the legacy monolithic
``session.json`` (schema 1), which every fx release reads and migrates on its first
writable open; its key order and execution v2 results follow fx 0.0.5's own legacy writer, and
fx 0.0.5 lists and shows such a file offline. ``schema=4`` (``--fx-schema 4``) writes the
current layout:
flat metadata, conversation frames v3 in writer field order with explicit ``null``s, and one
``tool-results/result-<tool>-<A>-<B>.txt`` body per result whose size is ``stored_bytes``.

What fx holds: user messages (and mid-turn steering in schema 4), assistant text, tool calls
and results (success/failure; the exit status in schema 4), interrupted turns with their
in-flight call. Reasoning, system text and observations have no slot (``untranslated-*``);
schema 1 also has no title, model, per-message times, steering or exit status. A session id that
is not a valid fx id is minted deterministically from the Snapshot id in fx's own
``<ms>-<ns>-<16 hex>`` shape (``ids-derived``); times fx needs and the Snapshot lacks are carried
forward from the nearest earlier known time (``timestamps-synthesized``).

One pass over the records: a turn is lowered and emitted when the next one begins, into files
in a private spool folder that the export writer copies out in chunks, so no output file is
held whole. What only the end of the pass knows (history length, last time, metadata) goes into
the small parts built after it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from trajconv.codecs.base import ExportFile, ExportPlan, folder_plan, safe_component
from trajconv.codecs.common import iso_ms as _ms
from trajconv.codecs.common import name_unheld
from trajconv.codecs.fx import layout, native
from trajconv.errors import RefusedError, UsageError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import (
    Record,
    Snapshot,
)
from trajconv.snapshot.spool import CHUNK, Blob, RecordLog, Spool

Obj = dict[str, Any]

# compact, insertion order, UTF-8 kept: the canonical form of Zig's std.json. Built once:
# json.dumps with options builds an encoder per call.
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _dumps(value: Any) -> bytes:
    """``value`` in that form. orjson writes the same bytes, faster, for what the writer builds
    (strings, integers, booleans, nulls; never floats, which orjson writes differently: call
    arguments are text by then, see ``_arguments``); the stdlib encoder takes what orjson
    refuses (integers beyond 64 bits)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _JSON.encode(value).encode()


def session_id(snapshot: Snapshot, diags: Diagnostics) -> str:
    """The Snapshot's id when fx accepts it; else one minted from the Snapshot id, in the shape
    fx mints."""
    sid = snapshot.session.id
    safe_component(sid, "session id")  # a hostile id is refused, never silently replaced
    if layout.is_session_id(sid):
        return sid
    diags.add("ids-derived", "session id")
    digest = hashlib.sha256(f"trajconv:{snapshot.id}:fx-session".encode()).hexdigest()
    ms = _ms(snapshot.session.created_at) or 0
    ns = ms * 1_000_000 + int(digest[16:24], 16) % 1_000_000
    return f"{ms}-{ns}-{digest[:16]}"


# --------------------------------------------------------------------------- lower


Rec = dict[str, Any]
"""A record as the JSON object a Snapshot holds (:func:`_dicts`): the writer reads a few
members of each, which costs less than making its models. The lowering parses each record's
``time`` once and keeps it there as epoch milliseconds (``None`` stays ``None``)."""


def _dicts(records: Sequence[Record]) -> Iterator[Rec]:
    """Each record as a :data:`Rec`: a spooled record's parsed text (every member there, as
    the spool checked it), or a model's dump."""
    if isinstance(records, RecordLog):
        return records.dicts()
    return (rec.model_dump() for rec in records)


@dataclass
class _Turn:
    user: Rec
    items: list[Rec] = field(default_factory=list)
    interrupted: str | None = None
    partial: Rec | None = None
    interruption: Rec | None = None


def _is_interruption(rec: Rec) -> bool:
    return bool(
        rec["kind"] == "system"
        and rec["evidence"]["native"] == "interrupted"
        and rec["text"].startswith(native.INTERRUPT_PREFIX)
    )


def _is_partial(rec: Rec) -> bool:
    return bool(
        rec["kind"] == "assistant" and rec["evidence"]["native"] == "interrupted.partial_text"
    )


class _Lowering:
    """Groups records into fx turns in one pass and refuses what fx cannot continue truthfully.

    A turn is complete when the next one begins: it is paired and handed on then. The pass
    also notes the first and last record times (the session's fallback start and end).
    """

    def __init__(self, allow_lossy: bool, diags: Diagnostics) -> None:
        self.allow_lossy = allow_lossy
        self.diags = diags
        self.first: int | None = None
        self.last: int | None = None

    def turns(self, records: Iterable[Rec]) -> Iterator[_Turn]:
        cur: _Turn | None = None
        add = self.diags.add
        for rec in records:
            time = rec["time"]
            if time is not None:
                ms = _ms(time)
                rec["time"] = ms  # parsed once: the emitters read it as epoch ms
                if self.first is None:
                    self.first = ms
                self.last = ms
            kind = rec["kind"]
            if kind == "user":
                if (
                    cur is not None
                    and cur.interrupted is None
                    and rec["turn"] is not None
                    and rec["turn"] == cur.user["turn"]
                ):
                    cur.items.append(rec)  # guidance typed into the running turn: steering
                    continue
                if cur is not None:
                    self._pair(cur, last=False)
                    yield cur
                cur = _Turn(rec)
                continue
            interruption = kind == "system" and _is_interruption(rec)
            if not interruption and kind in _UNTRANSLATED:
                add(_UNTRANSLATED[kind], rec["id"])
                continue
            if cur is None:
                # an acknowledgement after a compaction summary, say: no fx turn can hold it
                _lossy(
                    self.allow_lossy,
                    rec["id"],
                    "placed before any user message (every fx turn starts with one)",
                )
                add(_LEADING_CODES.get(kind, "untranslated-assistant"), rec["id"])
                continue
            if interruption:
                cur.interrupted = rec["text"][len(native.INTERRUPT_PREFIX) :]
                cur.interruption = rec
                if cur.interrupted not in native.INTERRUPT_REASONS:
                    cur.interrupted = "cancelled"
            elif kind == "assistant" and _is_partial(rec):
                cur.partial = rec
            else:
                cur.items.append(rec)
        if cur is not None:
            self._pair(cur, last=True)
            yield cur

    def _pair(self, turn: _Turn, last: bool) -> None:
        """Calls and results pair inside a turn (the codec README); an interrupted turn may keep
        its in-flight calls, any other unanswered call or unmatched result is refused or left
        out, and so is the end of an unfinished ``last`` turn."""
        calls: dict[str, Rec] = {}
        answered: set[str] = set()
        keep: list[Rec] = []
        for rec in turn.items:
            kind = rec["kind"]
            if kind == "tool-call":
                calls[rec["call"]["id"]] = rec
            elif kind == "tool-result":
                call_id = rec["result"]["call_id"]
                if call_id not in calls or call_id in answered:
                    _lossy(
                        self.allow_lossy, rec["id"], "a tool result without its call in this turn"
                    )
                    self.diags.add("untranslated-orphan-result", rec["id"])
                    continue
                answered.add(call_id)
            keep.append(rec)
        turn.items = keep
        if turn.interrupted is None:
            pending = [c["id"] for cid, c in calls.items() if cid not in answered]
            for rid in pending:
                _lossy(self.allow_lossy, rid, "a tool call without its result")
                self.diags.add("untranslated-pending-call", rid)
            if pending:
                turn.items = [r for r in turn.items if r["id"] not in pending]
            end = next((r for r in reversed(turn.items) if r["kind"] != "user"), None)
            if last and (end is None or end["kind"] != "assistant"):
                _lossy(
                    self.allow_lossy,
                    (turn.user if end is None else end)["id"],
                    "the end of an unfinished last turn (no final assistant answer)",
                )


#: what names a record of a kind fx has no slot for
_UNTRANSLATED = {kind: f"untranslated-{kind}" for kind in ("reasoning", "system", "observation")}

#: what names a record left out because it comes before any user message
_LEADING_CODES = {
    "tool-call": "untranslated-pending-call",
    "tool-result": "untranslated-orphan-result",
    "system": "untranslated-system",
}


def _lossy(allow_lossy: bool, rid: str, what: str) -> None:
    if not allow_lossy:
        raise RefusedError(
            f"refusing to write fx: record {rid} is {what}, which fx cannot "
            "continue truthfully; pass --allow-lossy to write it anyway"
        )


class _Clock:
    """Times fx needs: the record's own, else the nearest earlier known one (synthesized).

    A ``start`` of ``None`` is found by ``find`` when first needed (:meth:`now`): a record
    time set before that makes it moot, and a session that never needs it (a legacy history
    whose results all come after a time, or that has none) is not searched for it.
    """

    def __init__(
        self, start: int | None, diags: Diagnostics, find: Callable[[], int] | None = None
    ) -> None:
        self.last = start  # None: the start, not yet found
        self.diags = diags
        self._find = find

    def now(self) -> int:
        """The last known time, else the start."""
        if self.last is None:
            self.last = self._find() if self._find is not None else 0
        return self.last

    def at(self, rec: Rec) -> int:
        ms: int | None = rec["time"]  # epoch ms: the lowering parsed it
        if ms is not None:
            self.last = ms
            return ms
        self.diags.add("timestamps-synthesized", rec["id"])
        return self.now()


def _arguments(rec: Rec) -> tuple[str, str]:
    """``arguments_json`` text and its ``argument_integrity``."""
    args = rec["call"]["arguments"]
    if not isinstance(args, dict):
        return _JSON.encode(args), "non_object_json"
    if len(args) == 1 and "_raw" in args and isinstance(args["_raw"], str):
        return (args["_raw"] or "{}"), "malformed_json"
    if all(type(value) in _FLAT for value in args.values()):
        try:  # no float among them: orjson writes the stdlib's bytes (see _dumps)
            return orjson.dumps(args).decode(), "valid"
        except TypeError:  # a key that is not a str, an integer beyond 64 bits
            pass
    # the stdlib encoder: arguments may hold floats, which orjson writes differently (1e-05)
    return _JSON.encode(args), "valid"


#: the types of a flat argument value that orjson and the stdlib encoder write alike
_FLAT = frozenset({str, int, bool, type(None)})


def _status(rec: Rec, diags: Diagnostics) -> str:
    if rec["result"]["ok"] is None:
        diags.add("tool-status-assumed", rec["id"])
    return "failure" if rec["result"]["ok"] is False else "success"


class _SpoolFile:
    """A file the writer fills as it goes, in a private spool folder; read back in chunks."""

    def __init__(self, spool: Spool, stem: str) -> None:
        self._spool = spool
        self.path = spool.new_file(stem)
        self._fh = self.path.open("wb", buffering=CHUNK)  # one write call a MiB
        self.size = 0

    def write(self, data: bytes) -> int:
        """Append ``data``; where it starts."""
        start = self.size
        self._fh.write(data)
        self.size += len(data)
        return start

    def close(self) -> None:
        self._fh.close()

    def blob(self, offset: int = 0, size: int | None = None) -> Blob:
        size = self.size - offset if size is None else size
        return Blob(path=self.path, offset=offset, size=size, keep=self._spool)


# --------------------------------------------------------------------------- emit: schema 1


@dataclass
class _Step:
    text: str | None = None
    calls: list[Rec] = field(default_factory=list)
    results: list[Rec] = field(default_factory=list)


def _legacy_call(rec: Rec) -> Obj:
    args, _integrity = _arguments(rec)
    return {
        "id": rec["call"]["id"],
        "name": rec["call"]["name"],
        "arguments_json": args,
        "provider_result": None,
    }


def _legacy_result(rec: Rec, name: str, ms: int, diags: Diagnostics) -> Obj:
    result = rec["result"]
    output: str = result["output"]
    size = len(output) if output.isascii() else len(output.encode("utf-8"))
    if result.get("exit_code") is not None:
        diags.add("untranslated-exit-code", rec["id"])
    return {
        "tool_call_id": result["call_id"],
        "tool_name": name,
        "status": _status(rec, diags),
        "output": output,
        "output_bytes": size,
        "stored_output_bytes": size,
        "truncated": result.get("truncated", False),
        "provider_native": False,
        "created_at_ms": ms,
        "permission_feedback": [],
    }


def emit_legacy_turn(turn: _Turn, clock: _Clock, diags: Diagnostics, extra: list[str]) -> Obj:
    """One ``history`` entry; the ids of in-flight calls it has no room for go to ``extra``."""
    add = diags.add
    user = turn.user
    if user["time"] is not None:  # only results carry a time in the legacy layout
        add("untranslated-time", user["id"])
        clock.last = user["time"]
    # one pass over the items: the clock, what has no slot, and the steps (an assistant text,
    # the calls after it, their results; a call after a result opens a step)
    names: dict[str, str] = {}
    result_ms: dict[str, int] = {}
    steps: list[_Step] = []
    cur: _Step | None = None
    for rec in turn.items:
        kind = rec["kind"]
        if kind == "tool-result":
            result_ms[rec["id"]] = clock.at(rec)  # its created_at_ms
            if cur is None:
                cur = _Step()
            cur.results.append(rec)
            continue
        if rec["time"] is not None:
            add("untranslated-time", rec["id"])
            clock.last = rec["time"]
        if kind == "assistant":
            if rec.get("model"):
                add("untranslated-model", rec["id"])  # a legacy history holds no model
            if cur is not None:
                steps.append(cur)
            cur = _Step(text=rec["text"])
        elif kind == "tool-call":
            names[rec["call"]["id"]] = rec["call"]["name"]
            if cur is None or cur.results:
                if cur is not None:
                    steps.append(cur)
                cur = _Step()
            cur.calls.append(rec)
        elif kind == "user":
            add("untranslated-steering", rec["id"])
    if cur is not None:
        steps.append(cur)
    for held in (turn.interruption, turn.partial):  # held as an interrupted turn, untimed
        if held is not None and held["time"] is not None:
            add("untranslated-time", held["id"])
        if held is not None and held["kind"] == "assistant" and held.get("model"):
            add("untranslated-model", held["id"])
    final: str | None = None
    if (
        turn.interrupted is None
        and steps
        and steps[-1].text is not None
        and not (steps[-1].calls or steps[-1].results)
    ):
        final = steps.pop().text
    in_flight: Rec | None = None
    if turn.interrupted is not None:
        answered = {r["result"]["call_id"] for s in steps for r in s.results}
        for step in reversed(steps):
            open_calls = [c for c in step.calls if c["call"]["id"] not in answered]
            if open_calls:
                # the legacy interrupted turn holds one in-flight call
                in_flight = open_calls[-1]
                extra.extend(c["id"] for c in open_calls[:-1])
                step.calls = [c for c in step.calls if c["call"]["id"] in answered]
                break
    execution = {
        "schema_version": 2,
        "tool_steps": [
            {
                "assistant": s.text,
                "tool_calls": [_legacy_call(c) for c in s.calls],
                "tool_results": [
                    _legacy_result(
                        r, names.get(r["result"]["call_id"], ""), result_ms[r["id"]], diags
                    )
                    for r in s.results
                ],
            }
            for s in steps
        ],
        "files": [],
    }
    user = {"text": turn.user["text"], "images": []}
    if turn.interrupted is not None:
        out: Obj = {
            "kind": "interrupted",
            "user": user,
            "assistant": turn.partial["text"] if turn.partial is not None else None,
            "tool_call": _legacy_call(in_flight) if in_flight is not None else None,
            "completed_tool_names": [
                names.get(r["result"]["call_id"], "") for s in steps for r in s.results
            ],
            "terminal_reason": turn.interrupted,
        }
        if steps:
            out["execution"] = execution
        return out
    out = {"kind": "assistant", "user": user, "assistant": final or ""}
    if steps:
        out["execution"] = execution
    return out


class _History:
    """Schema 1: the ``history`` entries, comma-separated, spooled as the pass emits them."""

    def __init__(self, spool: Spool) -> None:
        self.file = _SpoolFile(spool, "history.json")
        self.count = 0
        self.extra: list[str] = []  # in-flight calls an interrupted entry has no room for

    def turn(self, turn: _Turn, clock: _Clock, diags: Diagnostics) -> None:
        entry = _dumps(emit_legacy_turn(turn, clock, diags, self.extra))
        if self.count:
            self.file.write(b",")  # apart: the buffered file copies the entry once
        self.file.write(entry)
        self.count += 1

    def close(self) -> None:
        self.file.close()


# --------------------------------------------------------------------------- emit: schema 4


class _Frames:
    """Schema 4: ``events.jsonl`` and the tool-result bodies, spooled as the pass emits them."""

    def __init__(self, spool: Spool) -> None:
        self.events = _SpoolFile(spool, "events.jsonl")
        self.pack = _SpoolFile(spool, "tool-results.bin")
        #: body name -> (offset, size) in ``pack``; a name made again keeps its last body
        self.bodies: dict[str, tuple[int, int]] = {}
        self.seq = 0

    def add(self, ms: int, kind: str, body: Obj) -> None:
        self.seq += 1
        frame = {
            "schema_version": native.FRAME_SCHEMA,
            "seq": self.seq,
            "timestamp_ms": ms,
            "event": {kind: body},
        }
        self.events.write(_dumps(frame) + b"\n")

    def body(self, ref: str, data: bytes) -> None:
        self.bodies[ref] = (self.pack.write(data), len(data))

    def turn(self, turn: _Turn, clock: _Clock, diags: Diagnostics) -> None:
        emit_v4_turn(turn, self, clock, diags)

    def close(self) -> None:
        self.events.close()
        self.pack.close()


def emit_v4_turn(turn: _Turn, frames: _Frames, clock: _Clock, diags: Diagnostics) -> None:
    frames.add(
        clock.at(turn.user), native.USER, {"text": turn.user["text"], "images": [], "work_id": None}
    )
    names: dict[str, str] = {}
    items = turn.items
    for i, rec in enumerate(items):
        ms = clock.at(rec)
        if rec["kind"] == "user":
            frames.add(ms, native.STEERING, {"text": rec["text"]})
        elif rec["kind"] == "assistant":
            nxt = items[i + 1] if i + 1 < len(items) else None
            if rec.get(
                "model"
            ):  # its slot, provider_replay, also needs the provider's replay parts
                diags.add("untranslated-model", rec["id"])
            frames.add(
                ms,
                native.ASSISTANT,
                {
                    "text": rec["text"],
                    "provider_replay": None,
                    # a text-only step that the model followed with another step
                    "standalone_response": nxt is not None and nxt["kind"] == "assistant",
                },
            )
        elif rec["kind"] == "tool-call":
            args, integrity = _arguments(rec)
            names[rec["call"]["id"]] = rec["call"]["name"]
            frames.add(
                ms,
                native.TOOL_CALL,
                {
                    "call_id": rec["call"]["id"],
                    "tool_name": rec["call"]["name"],
                    "arguments_json": args,
                    "argument_integrity": integrity,
                    "provisional_id": None,
                    "provider_result": None,
                    "final_identity": "valid",
                    "provenance": "fx_local",
                },
            )
        elif rec["kind"] == "tool-result":
            name = names[rec["result"]["call_id"]]
            data = rec["result"]["output"].encode("utf-8")
            ref = native.result_ref(name, rec["result"]["call_id"], data)
            frames.body(ref, data)
            exit_code = rec["result"].get("exit_code")
            frames.add(
                ms,
                native.TOOL_RESULT,
                {
                    "call_id": rec["result"]["call_id"],
                    "tool_name": name,
                    "status": _status(rec, diags),
                    "artifact_ref": ref,
                    "tool_image_handle": None,
                    "output_bytes": len(data),
                    "stored_bytes": len(data),
                    "completeness": "partial"
                    if rec["result"].get("truncated", False)
                    else "complete",
                    "preview": native.preview(data),
                    "provider_native": False,
                    "created_at_ms": ms,
                    "permission_feedback": [],
                    "committed_file_presentation": None,
                    "command_replay_ref": None,
                    "command_replay_bytes": None,
                    "command_process_presentation": (
                        None if exit_code is None else {"exit_code": exit_code}
                    ),
                    "terminal_action_presentation": None,
                },
            )
    end = clock.now()
    if turn.interruption is not None:
        at = clock.at(turn.interruption)
        partial = turn.partial
        if partial is not None:  # its text is held in the interrupted frame, at that time
            if partial.get("model"):
                diags.add("untranslated-model", partial["id"])
            if partial["time"] is None:
                diags.add("timestamps-synthesized", partial["id"])
            elif partial["time"] != at:
                diags.add("untranslated-time", partial["id"])
        frames.add(
            at,
            native.INTERRUPTED,
            {
                "reason": turn.interrupted,
                "partial_text": turn.partial["text"] if turn.partial is not None else None,
                "command_replay_ref": None,
                "command_replay_bytes": None,
                "command_artifact_ref": None,
                "files": [],
                "turn_summary": None,
            },
        )
    else:
        frames.add(end, native.TURN_COMPLETED, {"files": [], "turn_summary": None})


# --------------------------------------------------------------------------- plan


def _emit(
    snapshot: Snapshot, lowering: _Lowering, out: _History | _Frames, diags: Diagnostics
) -> tuple[int, _Clock]:
    """Emit each turn as the lowering hands it on; the session's start and the clock after.

    Records without a time take the nearest earlier one, the first ones the session's start;
    when the Snapshot has none, that is the first record time (0 when no record has one).
    When the first turn is handed on before the pass met a time, the records are searched
    for it (:func:`_first_time`) when a record first needs it, so no turn waits in memory
    for it.
    """
    created = _ms(snapshot.session.created_at)
    clock: _Clock | None = None
    for turn in lowering.turns(_dicts(snapshot.records)):
        if clock is None:
            start = created if created is not None else lowering.first
            clock = _Clock(start, diags, lambda: _first_time(snapshot.records) or 0)
        out.turn(turn, clock, diags)
    start = created if created is not None else (lowering.first or 0)
    return start, clock or _Clock(start, diags)


#: a record's own ``time`` holding a time, as a records array holds it (``OPT_INDENT_2`` one
#: level deep: a record's members are indented six spaces, deeper members more, and a JSON
#: string holds no raw newline); a Snapshot time is 24 characters, none of them a quote
_RECORD_TIME = re.compile(rb'\n      "time": "([^"\\]{1,64})"')
#: where :data:`_RECORD_TIME` starts
_TIME_KEY = b'\n      "time": "'
#: bytes kept from one piece of the array for the next: more than a match can span
_TIME_SPAN = 96


def _first_time(records: Sequence[Record]) -> int | None:
    """The first record time (epoch ms) of ``records``, ``None`` when none has one: from
    the text of a spooled records array, searched in slices without parsing a record, or
    from each record in memory."""
    if not isinstance(records, RecordLog):
        return next((ms for rec in records if (ms := _ms(rec.time)) is not None), None)
    tail = b""
    for piece in records.array_pieces():
        data = tail + piece
        # bytes.find, then the pattern where it starts: some times faster than re's search
        at = data.find(_TIME_KEY)
        while at >= 0:
            found = _RECORD_TIME.match(data, at)
            if found is not None:
                return _ms(found[1].decode())
            at = data.find(_TIME_KEY, at + 1)
        tail = data[-_TIME_SPAN:]
    return None


def _schema(value: int | str | None) -> int:
    """The ``schema`` option (``--fx-schema``): 1 (legacy, the default) or 4 (current)."""
    if value is None:
        return 1
    try:
        schema = int(value)
    except (TypeError, ValueError):
        schema = -1
    if schema not in (1, 4):
        raise UsageError(f"--fx-schema must be 1 (legacy, default) or 4 (current), not {value!r}")
    return schema


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    schema: int | str | None = None,
    cwd: str | None = None,
    model: str | None = None,
    **_options: Any,
) -> ExportPlan:
    legacy = _schema(schema) == 1
    diags = Diagnostics()
    sid = session_id(snapshot, diags)
    session = snapshot.session
    workdir = cwd or session.cwd
    if session.created_at is None:
        diags.add("timestamps-synthesized", "created_at_ms")
    if session.updated_at is None:
        diags.add("timestamps-synthesized", "updated_at_ms")
    # fx keeps no git branch, and its sessions name no parent session (the codec README)
    name_unheld(
        diags,
        session,
        {"untranslated-branch": "session.json", "untranslated-parent-session": "session.json"},
    )
    base = f"{layout.FX_DIR}/{layout.SESSIONS}/{sid}"
    lowering = _Lowering(allow_lossy, diags)
    out = _History(Spool()) if legacy else _Frames(Spool())
    try:
        created, clock = _emit(snapshot, lowering, out, diags)
    finally:
        out.close()
    files: list[ExportFile] = []
    if isinstance(out, _History):
        # after the pass, behind the unanswered calls the lowering left out
        for rid in out.extra:
            diags.add("untranslated-pending-call", rid)
        if session.title:
            diags.add("untranslated-title", "session.json")
        if session.model:
            diags.add("untranslated-model", "session.json")
        if not workdir:
            diags.add("cwd-missing", "workspace_root")
        diags.add("defaults-assumed", "conversation_language")
        last = lowering.last if lowering.last is not None else created
        updated = max(_ms(session.updated_at) or last, created)
        doc: Obj = {
            "schema_version": 1,
            "id": sid,
            "created_at_ms": created,
            "updated_at_ms": updated,
            "workspace_root": workdir or None,
            "conversation_language": native.DEFAULT_LANGUAGE,
            "history_len": out.count,
            "history": [],
        }
        head = _dumps(doc)[:-2]  # up to '"history":[': the spooled entries and "]}" follow
        history = out.file.blob()
        files.append(
            ExportFile(
                f"home/{base}/{layout.SESSION_JSON}",
                lambda: itertools.chain((head,), history.chunks(), (b"]}",)),
            )
        )
        notes = [
            "fx migrates this legacy (schema 1) session to its current layout on the "
            "first writable open"
        ]
    else:
        if not workdir or not workdir.startswith("/"):
            raise RefusedError(
                "refusing to write fx schema 4: the session has no absolute "
                "working directory; pass --cwd DIR"
            )
        updated = max(_ms(session.updated_at) or clock.now() or created, created)
        meta = _meta4(snapshot, sid, workdir, created, updated, model, diags)
        for ref, (offset, size) in sorted(out.bodies.items()):
            body = out.pack.blob(offset, size)
            files.append(ExportFile(f"home/{base}/{layout.TOOL_RESULTS}/{ref}", body.chunks))
        files.append(ExportFile(f"home/{base}/{layout.EVENTS}", out.events.blob().chunks))
        # session.json last: a reader that finds it finds the log and bodies complete
        files.append(ExportFile(f"home/{base}/{layout.SESSION_JSON}", _dumps(meta)))
        notes = []
    if workdir:
        notes.append(
            f"run the resume command in {workdir}: fx lists the sessions of the current workspace"
        )
    bodies = f"{base}/{layout.TOOL_RESULTS}"
    return folder_plan(
        base,
        files,
        diags=diags,
        notes=notes,
        below=[bodies] if any(f.path.startswith(f"home/{bodies}/") for f in files) else [],
    )


def _meta4(
    snapshot: Snapshot,
    sid: str,
    workdir: str,
    created: int,
    updated: int,
    model: str | None,
    diags: Diagnostics,
) -> Obj:
    session = snapshot.session
    chosen = model or session.model
    defaults = ["conversation_language", "provider", "effort", "fast_mode"]
    if not chosen or len(chosen.encode()) > native.MODEL_MAX or chosen != chosen.strip():
        chosen = native.DEFAULT_MODEL
        defaults.append("model")
    for name in defaults:
        diags.add("defaults-assumed", name)
    title = session.title
    if title is None:
        diags.add("title-missing", "session.json")
    elif len(title.encode()) > native.TITLE_MAX:
        title = title.encode()[: native.TITLE_MAX].decode("utf-8", "ignore")
    values = {
        "schema_version": native.CURRENT_SCHEMA,
        "id": sid,
        "origin_workspace_root": workdir,
        "workspace_root": workdir,
        "created_at_ms": created,
        "updated_at_ms": updated,
        "conversation_language": native.DEFAULT_LANGUAGE,
        "provider": native.DEFAULT_PROVIDER,
        "model": chosen,
        "effort": native.DEFAULT_EFFORT,
        "fast_mode": False,
        "title": title,
        "subagent_child": False,
    }
    return {key: values[key] for key in native.META_FIELDS}
