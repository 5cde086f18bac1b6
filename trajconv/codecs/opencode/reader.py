"""OpenCode reader: one session of ``opencode.db``, the legacy ``storage/`` JSON files or an
``opencode export`` document -> Snapshot.

Format facts: ``codecs/opencode/README.md`` (OpenCode 1.18.33). Rules:

* the native unit is a part (row or file); a message with no parts is one unit itself;
* ``text`` parts of a user message -> ``user`` (``synthetic`` ones, injected by the harness,
  -> ``system``; ``ignored`` ones, never sent to the model, are counted); of an assistant
  message -> ``assistant`` with ``providerID/modelID`` as the model;
* ``reasoning`` -> ``reasoning``;
* ``tool`` -> ``tool-call`` (``callID``, ``tool``, ``state.input``) and, for a ``completed``
  or ``error`` state, its ``tool-result``: ``completed`` is ok unless the bash tool's
  ``metadata.exit`` is non-zero (OpenCode keeps a failing command ``completed``, the spec's
  2026-12 observations), ``error`` is not ok with ``state.error`` as the output; results
  follow all of their message's parts, as OpenCode sends them to the model;
  ``pending`` / ``running`` calls have no result (``pending-tool-call``);
* ``step-start``, ``step-finish``, ``retry``, ``snapshot``, ``patch`` -> ``lifecycle-dropped``;
  ``compaction`` -> ``compaction-state``; ``file``, ``agent``, ``subtask`` ->
  ``non-text-content``; anything else -> ``unknown-kind``; every byte stays in the
  ``rows.jsonl`` artifact (or the export document);
* an assistant message's ``error`` ({name, data.message}) -> a ``system`` record;
* record ids are ``opencode:<part id>`` (a tool's result ``opencode:<part id>:result``);
* a part row whose message row is missing (``orphan-part``) is kept in ``rows.jsonl``;
* a sub-session (task tool) is its own session: its ``parent_id`` is the Snapshot's
  ``parent_session_id``, and a parent lists its children in ``children.json``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import Limits
from trajconv.codecs.jsonl import read_bounded
from trajconv.codecs.opencode import layout, native
from trajconv.codecs.opencode.native import nonblank as _str
from trajconv.codecs.opencode.native import time_of as _ms
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import ArtifactWriter, SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "opencode/1"
HARNESS = "opencode"
ROWS = "rows.jsonl"
EXPORT = "export.json"


def _time(obj: Any, key: str = "start") -> str | None:
    t = obj.get("time") if isinstance(obj, dict) else None
    return _ms(t.get(key)) if isinstance(t, dict) else None


def _model(info: dict[str, Any]) -> str | None:
    provider, model = _str(info.get("providerID")), _str(info.get("modelID"))
    if provider and model:
        return f"{provider}/{model}"
    return model


def session_model(info: dict[str, Any]) -> str | None:
    m = info.get("model")
    if isinstance(m, dict):
        provider = _str(m.get("providerID"))
        mid = _str(m.get("id")) or _str(m.get("modelID"))
        if provider and mid:
            return f"{provider}/{mid}"
        return mid
    return None


class _Rows:
    """``rows.jsonl``: every native unit's bytes, one JSON line each, in read order."""

    def __init__(self, out: ArtifactWriter | None) -> None:
        self.out = out
        self.line = 0

    def add(self, kind: str, unit: native.Unit, **extra: Any) -> int | None:
        if self.out is None:
            return None
        self.line += 1
        row = {"table": kind, "id": unit.id, **extra, "data": unit.raw.decode("utf-8", "replace")}
        self.out.write(orjson.dumps(row) + b"\n")
        return self.line


class _Projector:
    def __init__(self, b: SnapshotBuilder, rows: _Rows, artifact: str, limits: Limits) -> None:
        self.b = b
        self.d = b.diagnostics
        self.rows = rows
        self.artifact = artifact
        self.limits = limits
        self.turn: int | None = None
        self.results: list[dict[str, Any]] = []  # the open message's tool results
        self.model: str | None = None
        self.bytes = 0
        #: child session id -> the ``task`` call that ran it (``state.metadata.sessionId``)
        self.spawned: dict[str, str] = {}

    def _ev(self, unit: native.Unit, line: int | None, kind: str, units: int = 1) -> Any:
        json_path = None if line is not None else unit.place
        return evidence(
            self.artifact, line=line, json_path=json_path, native=kind, native_id=unit.id,
            units=units,
        )  # fmt: skip

    def _budget(self, unit: native.Unit) -> None:
        size = len(unit.raw)
        self.limits.check("max_line_bytes", size, unit.place)
        self.bytes += size
        self.limits.check("max_session_bytes", self.bytes, unit.place)
        if self.b.record_count > self.limits.max_records:
            raise LimitError(unit.place, "max_records", self.limits.max_records)

    def _skip(self, msg: native.Unit, parts: list[native.Unit], code: str, name: str | None
              ) -> None:  # fmt: skip
        """A message that cannot be projected: its parts (or it, without parts) are counted."""
        for part in parts:
            self._budget(part)
            self.rows.add("part", part, message_id=msg.id)
            self.d.add(code, part.place, name=name)
        if not parts:
            self.d.add(code, msg.place, name=name)

    def message(self, msg: native.Unit, parts: list[native.Unit]) -> None:
        self._budget(msg)
        mline = self.rows.add("message", msg, time_created=msg.time_created)
        info = msg.data
        if info is None:
            # The message cannot be read: its parts are kept in the artifact and counted.
            self._skip(msg, parts, "invalid-line", None)
            return
        role = info.get("role")
        created = _time(info, "created") or _ms(msg.time_created)
        if role == "user":
            self.turn = 0 if self.turn is None else self.turn + 1
        elif role == "assistant":
            self.model = _model(info) or self.model
        else:
            self._skip(msg, parts, "unknown-kind", f"message:{role}")
            return
        count = 0
        self.results = []
        for part in parts:
            self._budget(part)
            count += 1
            line = self.rows.add("part", part, message_id=msg.id)
            self.part(part, line, str(role), created, _model(info) if role == "assistant" else None)
        for result in self.results:
            # OpenCode sends a step's results after the whole assistant message
            self.b.add_result(**result)
        error = info.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            detail = _str(data.get("message")) if isinstance(data, dict) else None
            name = _str(error.get("name")) or "Error"
            ev = self._ev(msg, mline, f"message.error:{name}", units=0 if count else 1)
            text = f"{name}: {detail}" if detail else name
            self.b.add_text(
                "system", f"opencode:{msg.id}:error", text, time=created, turn=self.turn,
                evidence=ev,
            )  # fmt: skip
        elif count == 0:
            self.d.add("empty-content", msg.place)

    def part(
        self,
        part: native.Unit,
        line: int | None,
        role: str,
        created: str | None,
        model: str | None,
    ) -> None:
        data = part.data
        if data is None:
            self.d.add("invalid-line", part.place)
            return
        ptype = data.get("type")
        rid = f"opencode:{part.id}"
        if ptype == "text":
            text = data.get("text")
            if not isinstance(text, str):
                self.d.add("invalid-line", part.place)
                return
            if data.get("ignored") is True:
                self.d.add("lifecycle-dropped", part.place, name="text(ignored)")
                return
            kind = "system" if data.get("synthetic") is True else role
            native_kind = "text(synthetic)" if kind == "system" else "text"
            time = _time(data) or created
            ev = self._ev(part, line, native_kind)
            self.b.add_text(
                kind, rid, text, time=time, turn=self.turn, evidence=ev,
                model=model if kind == "assistant" else None,
            )  # fmt: skip
        elif ptype == "reasoning":
            text = data.get("text")
            if not isinstance(text, str):
                self.d.add("invalid-line", part.place)
                return
            ev = self._ev(part, line, "reasoning")
            self.b.add_text(
                "reasoning", rid, text, time=_time(data) or created, turn=self.turn, evidence=ev,
                model=model,
            )  # fmt: skip
        elif ptype == "tool":
            self.tool(part, data, line, created)
        elif ptype in native.LIFECYCLE_PARTS:
            self.d.add("lifecycle-dropped", part.place, name=str(ptype))
        elif ptype == "compaction":
            self.d.add("compaction-state", part.place, name="compaction")
        elif ptype in native.NON_TEXT_PARTS:
            self.d.add("non-text-content", part.place, name=str(ptype))
        else:
            self.d.add("unknown-kind", part.place, name=f"part:{ptype}")

    def tool(self, part: native.Unit, data: dict[str, Any], line: int | None, created: str | None
             ) -> None:  # fmt: skip
        call_id, name, state = data.get("callID"), data.get("tool"), data.get("state")
        if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(state, dict):
            self.d.add("invalid-line", part.place)
            return
        rid = f"opencode:{part.id}"
        args = state.get("input", {})
        self.b.add_call(
            rid, call_id, name, args, time=_time(state) or created, turn=self.turn,
            evidence=self._ev(part, line, "tool"),
        )  # fmt: skip
        status = state.get("status")
        if status not in ("completed", "error"):
            self.d.add("pending-tool-call", rid)
            return
        meta = state.get("metadata")
        spawned = meta.get("sessionId") if isinstance(meta, dict) else None
        if isinstance(spawned, str) and spawned:
            self.spawned.setdefault(spawned, call_id)
        exit_code = meta.get("exit") if isinstance(meta, dict) else None
        if not isinstance(exit_code, int) or isinstance(exit_code, bool):
            exit_code = None
        if status == "completed":
            output = state.get("output")
            ok = exit_code in (None, 0)
        else:
            output = state.get("error")
            ok = False
        truncated = isinstance(meta, dict) and meta.get("truncated") is True
        self.results.append(
            {
                "rid": f"{rid}:result",
                "call_id": call_id,
                "ok": ok,
                "output": output if isinstance(output, str) else "",
                "time": _time(state, "end"),
                "turn": self.turn,
                "evidence": self._ev(part, line, f"tool:{status}", units=0),
                "truncated": truncated,
                "exit_code": exit_code,
            }
        )


def _session(info: dict[str, Any], sid: str, model: str | None) -> Session:
    t = info.get("time") if isinstance(info.get("time"), dict) else {}
    assert isinstance(t, dict)
    return Session(
        id=sid,
        title=_str(info.get("title")),
        cwd=_str(info.get("directory")),
        model=session_model(info) or model,
        created_at=_ms(t.get("created")),
        updated_at=_ms(t.get("updated")),
        parent_session_id=_str(info.get("parentID")),
    )


def _project(b: SnapshotBuilder, store: native.Store, p: _Projector) -> None:
    for msg, parts in store.messages():
        p.message(msg, parts)
    if isinstance(store, native.DbStore):
        for part in store.orphans():
            p.rows.add("part", part)
            b.diagnostics.add("orphan-part", part.place)


@contextlib.contextmanager
def _open(located: layout.Located, limits: Limits) -> Iterator[native.Store]:
    if located.kind == "db":
        with native.connect(located.path) as con:
            if located.session is None:
                rows = con.execute("select id from session").fetchall()
                if len(rows) != 1:
                    raise FormatError(
                        located.path,
                        f"this database holds {len(rows)} sessions; pick one with --session ID",
                    )
                session = native.text(rows[0][0])
            else:
                session = located.session
            yield native.DbStore(con, located.path, session)
    elif located.kind == "json":
        assert located.session is not None
        sfile = layout.json_session_file(located.path, located.session)
        assert sfile is not None
        yield native.JsonStore(located.path, sfile, limits.max_line_bytes)
    else:
        data = read_bounded(located.path, limits.max_session_bytes)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise FormatError(located.path, f"not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise FormatError(located.path, "not an opencode export document")
        yield native.ExportStore(located.path, doc)


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    located = layout.resolve(path, session)
    try:
        return _read(located, limits)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged database: named
        raise FormatError(located.path, f"cannot read the database: {exc}") from None


#: how many generations of child sessions are read as children
MAX_DEPTH = 8


def _fill(
    b: SnapshotBuilder, store: native.Store, located: layout.Located, limits: Limits, prefix: str
) -> _Projector:
    """Keep one session's native units as artifacts (``prefix`` before their names, for a
    child) and make its records in ``b``."""
    if isinstance(store, native.ExportStore):
        b.add_artifact_file(
            f"{prefix}{EXPORT}", "application/json", store.path, limits.max_session_bytes,
            "max_session_bytes",
        )  # fmt: skip
        p = _Projector(b, _Rows(None), f"{prefix}{EXPORT}", limits)
        _project(b, store, p)
        return p
    if isinstance(store, native.JsonStore):
        b.add_artifact(f"{prefix}session.json", "application/json", store.raw_info)
    else:
        b.add_artifact(f"{prefix}session.json", "application/json", orjson.dumps(store.info()))
    with b.artifact_writer(f"{prefix}{ROWS}", "application/x-ndjson") as out:
        p = _Projector(b, _Rows(out), f"{prefix}{ROWS}", limits)
        _project(b, store, p)
    return p


def _child_store(
    store: native.Store, located: layout.Located, child: str, limits: Limits
) -> native.Store | None:
    """The store of child session ``child`` beside ``store`` (an export document holds none)."""
    if isinstance(store, native.DbStore):
        return native.DbStore(store.con, store.path, child)
    if located.kind == "json":
        sfile = layout.json_session_file(located.path, child)
        if sfile is not None:
            return native.JsonStore(located.path, sfile, limits.max_line_bytes)
    if isinstance(store, native.ExportStore):
        for sid, path in store.child_documents():
            if sid == child:  # child_documents parsed it once already
                try:
                    doc = orjson.loads(read_bounded(path, limits.max_session_bytes))
                except orjson.JSONDecodeError as exc:
                    raise FormatError(path, f"not JSON: {exc}") from None
                if isinstance(doc, dict):
                    return native.ExportStore(path, doc)
    return None


def _children(
    b: SnapshotBuilder,
    store: native.Store,
    located: layout.Located,
    limits: Limits,
    p: _Projector,
    seen: set[str],
    depth: int,
) -> None:
    """Each child session (``parent_id``, a ``task`` call's sub-agent) as a child of the
    Snapshot, linked to the call whose metadata names it, and theirs in turn."""
    if depth >= MAX_DEPTH:
        return
    for child in store.children():
        kid_store = _child_store(store, located, child, limits)
        if kid_store is None or child in seen:
            continue
        seen.add(child)
        info = kid_store.info()
        locator = {
            "db": f"{layout.DB}#{child}",
            "json": f"{layout.STORAGE}/session/{info.get('projectID', '?')}/{child}.json",
            "export": f"{layout.CHILDREN}/{child}.json",
        }[located.kind]
        kid = b.child(
            Source(
                harness=HARNESS,
                harness_version=_str(info.get("version")),
                session_id=child,
                locator=locator,
            ),
            p.spawned.get(child),
        )
        kid_p = _fill(kid, kid_store, located, limits, f"children/{child}/")
        kid.session = _session(info, child, kid_p.model)
        _children(b, kid_store, located, limits, kid_p, seen, depth + 1)


def _read(located: layout.Located, limits: Limits) -> Snapshot:
    with _open(located, limits) as store:
        info = store.info()
        sid = store.session
        if not sid:
            raise FormatError(located.path, "the session has no id")
        locator = {
            "db": f"{layout.DB}#{sid}",
            "json": f"{layout.STORAGE}/session/{info.get('projectID', '?')}/{sid}.json",
            "export": located.path.name,
        }[located.kind]
        version = _str(info.get("version"))
        b = SnapshotBuilder(
            Source(harness=HARNESS, harness_version=version, session_id=sid, locator=locator),
            READER,
        )
        p = _fill(b, store, located, limits, "")
        children = store.children()
        if children:
            b.add_artifact("children.json", "application/json", orjson.dumps(children))
        if isinstance(store, native.JsonStore):
            for link in dict.fromkeys(store.links):
                b.diagnostics.add("symlink-skipped", f"{layout.STORAGE}/{link}")
        b.session = _session(info, sid, p.model)
        _children(b, store, located, limits, p, {sid}, 0)
    return b.build()
