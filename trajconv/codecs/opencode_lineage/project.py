"""One session of a lineage store (``store``) -> Snapshot: the reading rules OpenCode and Kilo
share (each codec's ``reader`` docstring states them, with the facts' sources).

The caller resolves the path to a :class:`Located` (its own layout) and passes its
:class:`~trajconv.codecs.opencode_lineage.Flavour`: record ids are ``<harness>:<part id>``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from trajconv.codecs.base import Limits, safe_component
from trajconv.codecs.jsonl import read_bounded
from trajconv.codecs.opencode_lineage import Flavour
from trajconv.codecs.opencode_lineage import store as native
from trajconv.codecs.opencode_lineage.store import nonblank as _str
from trajconv.codecs.opencode_lineage.store import time_of as _ms
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import ArtifactWriter, SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source

ROWS = "rows.jsonl"
EXPORT = "export.json"


@dataclass(frozen=True)
class Located:
    """One session: in a database, in the legacy JSON storage (OpenCode), or an export
    document; ``locator`` is the Snapshot's ``Source.locator``."""

    kind: Literal["db", "json", "export"]
    path: Path
    """the database file, the ``storage`` folder, or the document"""
    session: str | None


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
    """``rows.jsonl``: every native unit's bytes, one JSON line each, in read order.

    Lines are handed to the artifact in batches of about :data:`_BATCH` bytes (one write,
    hash update and UTF-8 check per batch, not per row: issue 38); :meth:`flush` hands
    over the rest before the artifact is kept."""

    def __init__(self, out: ArtifactWriter | None) -> None:
        self.out = out
        self.line = 0
        self._held: list[bytes] = []
        self._size = 0

    def add(self, kind: str, unit: native.Unit, **extra: Any) -> int | None:
        if self.out is None:
            return None
        self.line += 1
        row = {"table": kind, "id": unit.id, **extra, "data": unit.raw.decode("utf-8", "replace")}
        data = orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
        self._held.append(data)
        self._size += len(data)
        if self._size >= _BATCH:
            self.flush()
        return self.line

    def flush(self) -> None:
        if self.out is not None and self._held:
            self.out.write(b"".join(self._held))
        self._held.clear()
        self._size = 0


_BATCH = 256 * 1024


def _utf8() -> bool:
    return True


class _Projector:
    def __init__(
        self, b: SnapshotBuilder, rows: _Rows, artifact: str, limits: Limits, flavour: Flavour
    ) -> None:
        self.b = b
        self.prefix = flavour.harness
        self.user_context = flavour.user_context
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
        if (
            role == "user"
            and self.user_context
            and any(p.data is not None and p.data.get("type") == "text" for p in parts)
        ):
            # the CLI sends this message with context it adds at request time (Kilo's
            # <environment_details>: the message's time, the directory it runs in)
            self.d.add("context-not-projected", msg.place, name=self.user_context)
        error = info.get("error")
        if isinstance(error, dict):
            data = error.get("data")
            detail = _str(data.get("message")) if isinstance(data, dict) else None
            name = _str(error.get("name")) or "Error"
            ev = self._ev(msg, mline, f"message.error:{name}", units=0 if count else 1)
            text = f"{name}: {detail}" if detail else name
            self.b.add_text(
                "system", f"{self.prefix}:{msg.id}:error", text, time=created, turn=self.turn,
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
        rid = f"{self.prefix}:{part.id}"
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
        rid = f"{self.prefix}:{part.id}"
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


def locate_file(path: Path, session: str | None, flavour: Flavour) -> Located | None:
    """A database or export document ``path`` names (a file, or a trajconv export folder
    holding the flavour's document), or None when ``path`` is a folder without one."""
    if session is not None:
        safe_component(session, "session id", path)
    if path.is_file():
        if native.is_sqlite(path):
            return Located("db", path, session)
        if path.suffix == ".json":
            return Located("export", path, session)
        a = native.article(flavour.label)
        raise FormatError(path, f"not {a} {flavour.label} database (no SQLite header) or "
                          "export document")  # fmt: skip
    if (path / flavour.document).is_file():  # a trajconv export folder (the writer's readout)
        return Located("export", path / flavour.document, session)
    return None


def in_database(data: Path, session: str, flavour: Flavour) -> Located | None:
    """Session ``session`` in the data folder's database, or None when it is not there."""
    db = data / flavour.db
    if not db.is_file():
        return None
    try:
        found = native.db_has_session(db, session, flavour.label)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise FormatError(db, f"cannot read the database: {exc}") from None
    return Located("db", db, session) if found else None


def many_sessions(path: Path, flavour: Flavour) -> FormatError:
    a = native.article(flavour.label)
    return FormatError(
        path, f"this is {a} {flavour.label} data folder with many sessions; pick one with "
        "--session ID",
    )  # fmt: skip


@contextlib.contextmanager
def _open(located: Located, limits: Limits, flavour: Flavour) -> Iterator[native.Store]:
    if located.kind == "db":
        with native.connect(located.path, flavour.label) as con:
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
        sfile = native.json_session_file(located.path, located.session)
        assert sfile is not None
        yield native.JsonStore(located.path, sfile, limits.max_line_bytes)
    else:
        data = read_bounded(located.path, limits.max_session_bytes)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise FormatError(located.path, f"not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise FormatError(
                located.path, f"not {native.article(flavour.cli)} {flavour.cli} export document"
            )
        yield native.ExportStore(located.path, doc, flavour.cli, flavour.children)


def read(located: Located, limits: Limits, flavour: Flavour) -> Snapshot:
    """The session ``located`` names, as ``flavour``'s codec reads it."""
    try:
        return _read(located, limits, flavour)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged database: named
        raise FormatError(located.path, f"cannot read the database: {exc}") from None


#: how many generations of child sessions are read as children
MAX_DEPTH = 8


def _fill(
    b: SnapshotBuilder, store: native.Store, limits: Limits, flavour: Flavour, prefix: str
) -> _Projector:
    """Keep one session's native units as artifacts (``prefix`` before their names, for a
    child) and make its records in ``b``."""
    if isinstance(store, native.ExportStore):
        b.add_artifact_file(
            f"{prefix}{EXPORT}", "application/json", store.path, limits.max_session_bytes,
            "max_session_bytes",
        )  # fmt: skip
        p = _Projector(b, _Rows(None), f"{prefix}{EXPORT}", limits, flavour)
        _project(b, store, p)
        return p
    if isinstance(store, native.JsonStore):
        b.add_artifact(f"{prefix}session.json", "application/json", store.raw_info)
    else:
        b.add_artifact(f"{prefix}session.json", "application/json", orjson.dumps(store.info()))
    # every line is orjson's output, UTF-8 by construction: the writer need not decode it
    with b.artifact_writer(f"{prefix}{ROWS}", "application/x-ndjson", utf8=_utf8) as out:
        p = _Projector(b, _Rows(out), f"{prefix}{ROWS}", limits, flavour)
        _project(b, store, p)
        p.rows.flush()
    return p


def _child_store(
    store: native.Store, located: Located, child: str, limits: Limits, flavour: Flavour
) -> native.Store | None:
    """The store of child session ``child`` beside ``store`` (an export document holds none)."""
    if isinstance(store, native.DbStore):
        return native.DbStore(store.con, store.path, child)
    if located.kind == "json":
        sfile = native.json_session_file(located.path, child)
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
                    return native.ExportStore(path, doc, flavour.cli, flavour.children)
    return None


def _children(
    b: SnapshotBuilder,
    store: native.Store,
    located: Located,
    limits: Limits,
    flavour: Flavour,
    p: _Projector,
    seen: set[str],
    depth: int,
) -> None:
    """Each child session (``parent_id``, a ``task`` call's sub-agent) as a child of the
    Snapshot, linked to the call whose metadata names it, and theirs in turn."""
    if depth >= MAX_DEPTH:
        return
    for child in store.children():
        kid_store = _child_store(store, located, child, limits, flavour)
        if kid_store is None or child in seen:
            continue
        seen.add(child)
        info = kid_store.info()
        locator = {
            "db": f"{flavour.db}#{child}",
            "json": f"{native.STORAGE}/session/{info.get('projectID', '?')}/{child}.json",
            "export": f"{flavour.children}/{child}.json",
        }[located.kind]
        kid = b.child(
            Source(
                harness=flavour.harness,
                harness_version=_str(info.get("version")),
                session_id=child,
                locator=locator,
            ),
            p.spawned.get(child),
        )
        kid_p = _fill(kid, kid_store, limits, flavour, f"children/{child}/")
        kid.session = _session(info, child, kid_p.model)
        _children(b, kid_store, located, limits, flavour, kid_p, seen, depth + 1)


def _read(located: Located, limits: Limits, flavour: Flavour) -> Snapshot:
    with _open(located, limits, flavour) as store:
        info = store.info()
        sid = store.session
        if not sid:
            raise FormatError(located.path, "the session has no id")
        locator = {
            "db": f"{flavour.db}#{sid}",
            "json": f"{native.STORAGE}/session/{info.get('projectID', '?')}/{sid}.json",
            "export": located.path.name,
        }[located.kind]
        version = _str(info.get("version"))
        b = SnapshotBuilder(
            Source(harness=flavour.harness, harness_version=version, session_id=sid,
                   locator=locator),
            flavour.reader,
        )  # fmt: skip
        p = _fill(b, store, limits, flavour, "")
        children = store.children()
        if children:
            b.add_artifact("children.json", "application/json", orjson.dumps(children))
        if isinstance(store, native.JsonStore):
            for link in dict.fromkeys(store.links):
                b.diagnostics.add("symlink-skipped", f"{native.STORAGE}/{link}")
        b.session = _session(info, sid, p.model)
        _children(b, store, located, limits, flavour, p, {sid}, 0)
    return b.build()
