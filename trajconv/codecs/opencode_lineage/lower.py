"""Snapshot -> the lineage's export document (``<cli> export`` prints it, ``<cli> import``
reads it) + the prepare script that installs it with the CLI's own ``import``: the writing
rules OpenCode and Kilo share (each codec's ``writer`` docstring states them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from trajconv.codecs.base import (
    ExportFile,
    ExportPlan,
    check_continuable,
    dropped_code,
    exit_code_shown,
)
from trajconv.codecs.common import iso_ms as ms
from trajconv.codecs.opencode_lineage import HARNESSES, Flavour
from trajconv.errors import RefusedError
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Child, Snapshot
from trajconv.snapshot.spool import CHUNK, Spool

MASK = (1 << 48) - 1
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ZERO_TOKENS = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}

JsonObj = dict[str, Any]


#: the line of ``prepare_import.py`` that :func:`prepare_script` fills with the flavour's names
FLAVOUR_LINE = "FLAVOUR: dict[str, str] = {}  # filled by the writer\n"


def prepare_script(flavour: Flavour, round_trip: bool = False) -> str:
    """``prepare_import.py`` with ``flavour``'s names (CLI, data folder, database, documents);
    ``round_trip``: the session's model is a session of the lineage's own (kept where the
    home configures no model)."""
    text = resources.files(__package__).joinpath("prepare_import.py").read_text("utf-8")
    names = {k: getattr(flavour, k) for k in ("label", "cli", "data", "db", "db_env", "document",
                                                 "children", "package")}  # fmt: skip
    filled = f"FLAVOUR: dict[str, str] = {json.dumps(names)}\n"
    flag = "\nROUND_TRIP = False\n"
    if text.count(FLAVOUR_LINE) != 1 or flag not in text:
        raise RuntimeError("prepare_import.py lost its FLAVOUR line or ROUND_TRIP flag")
    return text.replace(FLAVOUR_LINE, filled).replace(flag, f"\nROUND_TRIP = {round_trip}\n", 1)


class Ids:
    """OpenCode-shaped ids (``[OC-id]`` in the spec), derived from the source session, not
    the Snapshot id: a session that grew gets the same ids for what it already had, so a
    re-converted, grown session extends the one written before."""

    def __init__(self, seed: str, base_ms: int) -> None:
        self.seed = seed
        self.next = (base_ms * 4096) & MASK
        self.n = 0

    def _tail(self, what: str) -> str:
        digest = hashlib.sha256(f"{self.seed}:{what}".encode()).digest()
        return "".join(BASE62[b % 62] for b in digest[:14])

    def session(self, created_ms: int) -> str:
        value = ~((created_ms * 4096) & MASK) & MASK
        return f"ses_{value:012x}{self._tail('session')}"

    def ascending(self, prefix: str) -> str:
        value = self.next
        self.next = (self.next + 1) & MASK
        self.n += 1
        return f"{prefix}_{value:012x}{self._tail(f'{prefix}:{self.n}')}"


def split_model(model: str | None, source: str) -> tuple[str, str] | None:
    """``provider/model`` as OpenCode names it; a bare model name gets the source harness."""
    if not model:
        return None
    if "/" in model:
        provider, name = model.split("/", 1)
        if provider and name:
            return provider, name
    return source, model


class _Lowerer:
    """Builds messages turn by turn; each finished turn's messages go to ``out``."""

    def __init__(
        self, snapshot: Snapshot, diags: Diagnostics, ids: Ids, sid: str, cwd: str, out: TextIO,
        flavour: Flavour,
    ) -> None:  # fmt: skip
        self.d = diags
        self.agent = flavour.agent
        self.ids = ids
        self.sid = sid
        self.cwd = cwd
        self.out = out
        self.source = snapshot.source.harness
        # a source of the lineage: its text is what it sent, its reasoning is replayed as
        # reasoning to the provider/model its messages name
        self.foreign = self.source not in HARNESSES
        self.count = 0
        self.time = 0
        self.default_model = split_model(snapshot.session.model, self.source)
        self.model = self.default_model
        self.turn: list[JsonObj] = []  # messages of the open turn
        self.user_id: str = ""
        self.step: JsonObj | None = None  # the open assistant message
        self.after_result = False
        self.calls: dict[str, JsonObj] = {}  # call id -> its tool part, in the open turn
        self.synthesized = 0  # records without a time: they read back with a derived one
        self.moved = 0  # records whose time reads back changed (kept in order)
        self.models_assumed = 0
        self.models_changed = 0  # records whose model reads back as another name
        self.models_given = 0  # records without a model: they read back with their message's
        #: call id -> the child session it ran (a sub-agent): the task tool keeps it as
        #: ``state.metadata.sessionId``, which links the child back to the call
        self.links: dict[str, str] = {}

    # -- times and messages
    def _time(self, time: str | None) -> int:
        """A message's creation time: the record's, kept in order (OpenCode orders messages
        by time); a record whose own part holds no time reads back with this one."""
        value = ms(time)
        if value is None:
            return self.time
        if value < self.time:
            return self.time
        self.time = value
        return value

    def _record_time(self, time: str | None, shown: int | None) -> None:
        """Count a record's time that reads back derived (none) or changed (``shown``)."""
        value = ms(time)
        if value is None:
            self.synthesized += 1
        elif shown is not None and shown != value:
            self.moved += 1

    def _record_model(self, msg: JsonObj, model: str | None) -> None:
        """Count a record's model that reads back as its message's ``provider/model``."""
        info = msg["info"]
        shown = f"{info['providerID']}/{info['modelID']}"
        if model is None:
            self.models_given += 1
        elif model != shown:
            self.models_changed += 1

    def _model(self, rec_model: str | None) -> tuple[str, str]:
        found = split_model(rec_model, self.source) or self.model or self.default_model
        if found is None:
            self.models_assumed += 1
            found = ("trajconv", "unknown")
        self.model = found
        return found

    def _part(self, msg: JsonObj, body: JsonObj) -> JsonObj:
        part = {
            "id": self.ids.ascending("prt"),
            "sessionID": self.sid,
            "messageID": msg["info"]["id"],
            **body,
        }
        msg["parts"].append(part)
        return part

    def flush(self) -> None:
        self.close_step()
        for msg in self.turn:
            self.out.write(("," if self.count else "") + "\n" + json.dumps(msg, ensure_ascii=False))
            self.count += 1
        self.turn = []
        self.calls = {}

    def close_step(self) -> None:
        step = self.step
        if step is None:
            return
        self.step = None
        info = step["info"]
        has_tools = any(p["type"] == "tool" for p in step["parts"])
        info["finish"] = "tool-calls" if has_tools else "stop"
        info["time"]["completed"] = max(info["time"]["created"], self.time)
        self._part(
            step,
            {"type": "step-finish", "reason": info["finish"], "cost": 0, "tokens": ZERO_TOKENS},
        )

    def user(self, text: str, time: str | None) -> None:
        self.flush()
        created = self._time(time)
        self._record_time(time, created)
        provider, model = self._model(None)
        self.user_id = self.ids.ascending("msg")
        msg: JsonObj = {
            "info": {
                "id": self.user_id,
                "sessionID": self.sid,
                "role": "user",
                "time": {"created": created},
                "agent": self.agent,
                "model": {"providerID": provider, "modelID": model},
            },
            "parts": [],
        }
        self.turn.append(msg)
        self._part(msg, {"type": "text", "text": text})
        self.after_result = False

    def assistant_step(self, time: str | None, model: str | None) -> JsonObj:
        if self.step is not None and not self.after_result:
            return self.step
        self.close_step()
        created = self._time(time)
        provider, name = self._model(model)
        msg: JsonObj = {
            "info": {
                "id": self.ids.ascending("msg"),
                "sessionID": self.sid,
                "role": "assistant",
                "time": {"created": created},
                "parentID": self.user_id,
                "modelID": name,
                "providerID": provider,
                "mode": self.agent,
                "agent": self.agent,
                "path": {"cwd": self.cwd, "root": self.cwd},
                "cost": 0,
                "tokens": ZERO_TOKENS,
            },
            "parts": [],
        }
        self.turn.append(msg)
        self._part(msg, {"type": "step-start"})
        self.step = msg
        self.after_result = False
        return msg

    def text(self, kind: str, text: str, time: str | None, model: str | None) -> bool:
        """Add a text or reasoning part to the open step; whether it is a text part right
        after another (the CLI sends a message's text parts to the model as one text)."""
        msg = self.assistant_step(time, model)
        joined = kind == "assistant" and msg["parts"][-1]["type"] == "text"
        self._record_time(time, None)
        self._record_model(msg, model)
        body: JsonObj = {"type": "text" if kind == "assistant" else "reasoning", "text": text}
        t = ms(time)
        if t is not None:
            body["time"] = {"start": t, "end": t}
        elif kind == "reasoning":
            body["time"] = {"start": msg["info"]["time"]["created"]}
        self._part(msg, body)
        return joined

    def call(self, call_id: str, name: str, arguments: Any, time: str | None) -> None:
        msg = self.assistant_step(time, None)
        self._record_time(time, None)
        args = arguments
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        if not isinstance(args, dict):
            self.d.add("defaults-assumed", "tool input (not a JSON object; kept as {input})")
            args = {"input": args}
        start = ms(time) or msg["info"]["time"]["created"]
        part = self._part(
            msg,
            {
                "type": "tool",
                "callID": call_id,
                "tool": name,
                "state": {"status": "running", "input": args, "time": {"start": start}},
            },
        )
        self.calls[call_id] = part

    def result(
        self, rid: str, call_id: str, ok: bool | None, output: str, truncated: bool,
        exit_code: int | None, time: str | None,
    ) -> None:  # fmt: skip
        part = self.calls.pop(call_id, None)
        if part is None:
            # its call is in an earlier turn (check_continuable let it through): cannot hold it
            self.d.add("untranslated-orphan-result", rid)
            return
        state = part["state"]
        end = ms(time) or state["time"]["start"]
        times = {"start": state["time"]["start"], "end": max(end, state["time"]["start"])}
        self._record_time(time, times["end"])
        meta: JsonObj = {}
        if self.foreign and ok is False:
            # kept as the `error` state, but OpenCode sends its model (Chat Completions) the
            # text alone: a model that saw an error flag (is_error) is not sent one here
            self.d.add("untranslated-tool-status", rid)
        if exit_code is not None and (exit_code == 0) != (ok is False):
            meta["exit"] = exit_code
            if self.foreign and not exit_code_shown(output, exit_code):
                # kept in metadata.exit, which OpenCode does not send its model
                self.d.add("untranslated-exit-code", rid)
        elif exit_code is not None:
            # OpenCode reads a non-zero exit as a failure: a success that exited non-zero
            # (or a failure that exited 0) keeps its status and loses the code
            self.d.add("untranslated-exit-code", rid)
            exit_code = None
        if truncated:
            meta["truncated"] = True
        if call_id in self.links:
            meta["sessionId"] = self.links[call_id]
        if ok is None:
            self.d.add("tool-status-assumed", rid)
        if ok is False and exit_code in (None, 0):
            part["state"] = {"status": "error", "input": state["input"], "error": output,
                             "time": times}  # fmt: skip
            if meta:
                part["state"]["metadata"] = meta
        else:
            part["state"] = {"status": "completed", "input": state["input"], "output": output,
                             "title": part["tool"], "metadata": meta, "time": times}  # fmt: skip
        self.after_result = True


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


class _Document:
    """``opencode-export.json`` in pieces: the info, then the spooled messages."""

    def __init__(self, info: JsonObj, spool: Spool, messages: Path) -> None:
        self.info = info
        self.spool = spool  # keeps the spooled messages until the export is written
        self.messages = messages

    def __call__(self) -> Iterator[bytes]:
        yield (
            b'{"info": ' + json.dumps(self.info, ensure_ascii=False).encode() + b',\n"messages": ['
        )
        yield from _chunks(self.messages)
        yield b"\n]}\n"


def session_id(
    snapshot: Snapshot, ids: Ids, created: int, diags: Diagnostics, flavour: Flavour
) -> str:
    sid = snapshot.session.id
    if snapshot.source.harness == flavour.harness and sid.startswith("ses_") and sid.isascii():
        return sid
    diags.add("ids-derived", "session id")
    return ids.session(created)


def _lower(low: _Lowerer, records: Iterable[Any], drop: set[str], diags: Diagnostics) -> None:
    """One pass over a session's records (the Snapshot's or a child's)."""
    for rec in records:
        if rec.id in drop:
            diags.add(dropped_code(rec.kind), rec.id)
            continue
        if rec.kind == "user":
            low.user(rec.text, rec.time)
        elif rec.kind in ("assistant", "reasoning"):
            if low.text(rec.kind, rec.text, rec.time, rec.model):
                diags.add("untranslated-message-boundary", rec.id)
            if rec.kind == "reasoning" and low.foreign and rec.text.strip():
                # the CLI sends a reasoning part as reasoning only to the provider/model of
                # its message; the model continuing a converted session gets it as text
                diags.add("reasoning-as-text", rec.id)
        elif rec.kind == "tool-call":
            low.call(rec.call.id, rec.call.name, rec.call.arguments, rec.time)
        elif rec.kind == "tool-result":
            r = rec.result
            low.result(rec.id, r.call_id, r.ok, r.output, r.truncated, r.exit_code, rec.time)
        else:
            diags.add(f"untranslated-{rec.kind}", rec.id)


def _child_documents(
    snapshot: Snapshot,
    sid: str,
    workdir: str,
    diags: Diagnostics,
    spool: Spool,
    flavour: Flavour,
) -> tuple[list[ExportFile], dict[str, str], list[str]]:
    """Each sub-agent as an export document of its own whose ``info.parentID`` is its
    spawner's session (imported after it); the spawning calls (call id -> child session id)
    and the children written."""
    sessions = {snapshot.session.id: sid}
    planned: list[tuple[Child, str, int]] = []
    links: dict[str, str] = {}
    for child in snapshot.children:
        parent = sessions.get(child.session.parent_session_id or "")
        if parent is None:
            continue  # its spawner is not written: counted as untranslated-subagent
        base = ms(child.session.created_at) or next(
            (t for t in (ms(r.time) for r in child.records) if t is not None), 0
        )
        own = child.session.id
        if snapshot.source.harness == flavour.harness and own.startswith("ses_") and own.isascii():
            kid = own
        else:
            diags.add("ids-derived", f"session id of sub-agent {own}")
            kid = Ids(f"{snapshot.source.harness}:{own}", base).session(base)
        sessions.setdefault(own, kid)
        planned.append((child, kid, base))
        if child.parent_call_id is not None:
            links.setdefault(child.parent_call_id, kid)
    files: list[ExportFile] = []
    for child, kid, base in planned:
        ids = Ids(f"{snapshot.source.harness}:{child.session.id}", base)
        path = spool.new_file(f"child-{kid}.json")
        with path.open("w", encoding="utf-8") as out:
            low = _Lowerer(snapshot, diags, ids, kid, child.session.cwd or workdir, out, flavour)
            low.default_model = split_model(child.session.model, low.source) or low.default_model
            low.model = low.default_model
            low.time = base
            low.links = links
            _lower(low, child.records, set(), diags)
            low.flush()
        info: JsonObj = {
            "id": kid,
            "slug": f"trajconv-{snapshot.id[7:15]}",
            "projectID": "global",
            "directory": child.session.cwd or workdir,
            "parentID": sessions[child.session.parent_session_id or ""],
            "title": child.session.title or "",
            "version": flavour.format_version,
            "time": {"created": base, "updated": max(low.time, base)},
        }
        model = low.default_model or low.model
        if model is not None:
            info["model"] = {"id": model[1], "providerID": model[0]}
        name = f"{flavour.children}/{kid}.json"
        files.append(ExportFile(name, _Document(info, spool, path), 0o644))
    return files, links, [c.id for c, _k, _b in planned]


def plan(
    snapshot: Snapshot, flavour: Flavour, *, allow_lossy: bool = False, cwd: str | None = None
) -> ExportPlan:
    """The export of ``snapshot`` for ``flavour``'s harness (its codec's ``writer.plan``)."""
    name, cli, label = flavour.harness, flavour.cli, flavour.label
    diags = Diagnostics()
    drop = check_continuable(snapshot, name, allow_lossy=allow_lossy)
    workdir = cwd or snapshot.session.cwd
    if not workdir:
        raise RefusedError(f"refusing to write {name}: the session has no cwd; pass --cwd DIR")
    session = snapshot.session
    created = ms(session.created_at)
    first = None
    if created is None:
        first = next((ms(r.time) for r in snapshot.records if r.time), None)
    base = created if created is not None else first if first is not None else 0
    ids = Ids(f"{snapshot.source.harness}:{snapshot.session.id}", base)
    sid = session_id(snapshot, ids, base, diags, flavour)
    diags.add("ids-derived", "message and part ids")

    spool = Spool()
    child_files, links, children = _child_documents(snapshot, sid, workdir, diags, spool, flavour)
    messages = spool.new_file("messages.json")
    with messages.open("w", encoding="utf-8") as out:
        low = _Lowerer(snapshot, diags, ids, sid, workdir, out, flavour)
        low.time = base
        low.links = links
        _lower(low, snapshot.records, drop, diags)
        low.flush()
    if created is None:
        low.synthesized += 1
    updated = ms(session.updated_at)
    if updated is None:
        low.synthesized += 1
        updated = max(low.time, base)
    if low.synthesized:
        diags.add("timestamps-synthesized", "record or session times", count=low.synthesized)
    if low.moved:
        diags.add("untranslated-time", "times kept in order", count=low.moved)
    if low.models_assumed or low.default_model is None:
        diags.add("defaults-assumed", "message model (provider/model)")
    if low.models_given:
        diags.add("model-assumed", "the message's model", count=low.models_given)
    model = low.default_model or low.model
    shown_model = None if model is None else f"{model[0]}/{model[1]}"
    changed = low.models_changed + (session.model is not None and session.model != shown_model)
    if changed:
        diags.add("untranslated-model", f"provider/model of {label}", count=changed)
    if session.branch:
        diags.add("untranslated-branch", session.branch)
    if session.title is None:
        diags.add("title-missing", "info.title")
    info: JsonObj = {
        "id": sid,
        "slug": f"trajconv-{snapshot.id[7:15]}",
        "projectID": "global",
        "directory": workdir,
        "title": session.title or "",
        "version": flavour.format_version,
        "time": {"created": base, "updated": updated},
    }
    if session.parent_session_id and session.parent_session_id.startswith("ses_"):
        info["parentID"] = session.parent_session_id
    elif session.parent_session_id:
        a = "an" if label[:1] in "AEIOU" else "a"
        diags.add("untranslated-parent-session", f"parent session id (not {a} {label} id)")
    if model is not None:
        info["model"] = {"id": model[1], "providerID": model[0]}
    diags.add("defaults-assumed", f"agent/mode '{flavour.agent}', cost and tokens 0, slug")
    doc = flavour.document
    return ExportPlan(
        session_id=sid,
        files=[ExportFile(doc, _Document(info, spool, messages), 0o644), *child_files],
        session_paths=[],
        children_written=tuple(children),
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(flavour, snapshot.source.harness in HARNESSES),
        try_home=None,  # a readout: the session exists once prepare.py imported it into a home
        notes=[
            f"{doc} is the document `{cli} export` prints; prepare.py installs it with "
            f"the real CLI's own `{cli} import` ({label} must be on PATH, or pass "
            f"--{cli} PATH) and checks it with `{cli} export`",
            f"run prepare.py and the resume command in {workdir}: {label} files a session "
            "under the project of the directory it is imported in",
            "to try it in a scratch home first: python prepare.py --home DIR --cwd PROJECT, "
            f"then run {label} there with HOME and XDG_DATA_HOME under DIR",
            "the session names the model "
            + (f"{model[0]}/{model[1]}" if model else "of the source")
            + f": prepare.py binds the model the home configures ({label} continues a session "
            "with the session's model unless -m is given) and says so, or refuses by name; "
            "--model PROVIDER/MODEL gives one",
        ],
    )
