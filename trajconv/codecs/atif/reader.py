"""ATIF reader: ``trajectory.json`` (v1.0 to v1.8) -> Snapshot.

Per step, in order (``shared`` mapping of RFC 0001 to records, as letta-ai/trajectory's
ATIF adapter also does it): a system step's message is a ``system`` record, a user
step's a ``user`` record; an agent step gives ``reasoning`` (its ``reasoning_content``)
before the ``assistant`` text, then a ``tool-call`` per call; each observation result
with a ``source_call_id`` is that call's ``tool-result``, one without is an
``observation``. The native unit is the step: every step ends in records or in the
``empty-content`` count, and an embedded subagent trajectory in ``nested-namespace``
(read it on its own with ``--session <trajectory_id>``). Metrics, notes, tool
definitions and ``extra`` objects stay in the document, which is kept whole as an
artifact. A document the validator rejects is refused, naming its first error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from trajconv.codecs.atif import layout, native, stream
from trajconv.codecs.base import Limits
from trajconv.codecs.jsonl import read_bounded
from trajconv.errors import FormatError, LimitError, UsageError
from trajconv.snapshot.builder import SnapshotBuilder, evidence, time_from_iso
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "atif/1"

Json = dict[str, Any]


Steps = Iterable[tuple[int, Json]]


def _parse_whole(data: bytes, path: Path) -> Json:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(path, f"not JSON: {exc}") from None
    found = native.problem(doc)
    if found is not None:
        raise FormatError(path, f"not a valid ATIF trajectory: {found}")
    assert isinstance(doc, dict)
    return doc


@dataclass
class _Document:
    doc: Json
    """The document; its ``steps`` are empty when they are read a step at a time."""
    steps: Steps
    size: int
    sha256: str


def _document(b: SnapshotBuilder, path: Path, name: str, limits: Limits, budget: int) -> _Document:
    """Keep ``path`` as artifact ``name`` and read it: a step at a time (``stream``), or
    whole when ``stream`` cannot (a surrogate escape; a credential-looking member, whose
    stripped copy then replaces the kept one)."""
    blob = b.add_artifact_file(name, "application/json", path, budget, "max_session_bytes")
    copy = blob.whole_file
    assert copy is not None
    frame = stream.frame(copy, path, limits.max_json_depth)
    if frame.whole:
        data = copy.read_bytes()
        doc = _parse_whole(data, path)
        b.add_artifact(name, "application/json", data)
        return _Document(doc, list(enumerate(doc["steps"])), len(data), frame.sha256)
    found = native.problem(frame.doc)
    if found is not None:
        raise FormatError(path, f"not a valid ATIF trajectory: {found}")
    return _Document(frame.doc, stream.steps(copy, path, limits), blob.size, frame.sha256)


def _inside(folder: Path, ref: str) -> Path | None:
    """The file a relative reference names inside ``folder``; ``None`` for a URL, an
    absolute path, or one that climbs out (``..``) or passes through a link."""
    rel = PurePosixPath(ref)
    if "://" in ref or rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return None
    path = folder.joinpath(*rel.parts)
    return (
        None if any(p.is_symlink() for p in (path, *path.parents[: len(rel.parts) - 1])) else path
    )


def _ours(doc: Json) -> Json:
    """The session facts trajconv's writer keeps in the root ``extra`` (absent elsewhere)."""
    extra = doc.get("extra")
    ours = extra.get("trajconv") if isinstance(extra, dict) else None
    session = ours.get("session") if isinstance(ours, dict) else None
    return session if isinstance(session, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _time(value: Any) -> str | None:
    return time_from_iso(value) if isinstance(value, str) else None


class _Steps:
    """Lifts the steps of one document (the root, a continuation or a subagent)."""

    def __init__(
        self, b: SnapshotBuilder, default_model: str | None, folder: Path, limits: Limits
    ) -> None:
        self.b = b
        self.default_model = default_model
        self.folder = folder
        self.limits = limits
        self.first: str | None = None  # the earliest and latest step time
        self.last: str | None = None

    def media(self, parts: list[Json], place: str) -> None:
        """Count image and audio parts; keep the files a relative path names inside the
        trajectory's folder as artifacts (a URL or a path outside it is only counted)."""
        for part in parts:
            kind = str(part.get("type"))
            self.b.diagnostics.add("media-part", place, name=kind)
            source = part.get("source")
            if not isinstance(source, dict) or not isinstance(source.get("path"), str):
                continue
            path = _inside(self.folder, source["path"])
            if path is None or not path.is_file():
                continue
            rel = path.relative_to(self.folder).as_posix()
            if not self.b.has_artifact(rel):
                data = read_bounded(path, self.limits.max_line_bytes, "max_line_bytes")
                self.b.add_artifact(rel, str(source.get("media_type")), data)

    def lift(self, steps: Steps, artifact: str, prefix: str, path: str, where: Path) -> None:
        for i, step in steps:
            self._step(step, artifact, f"{prefix}:{step['step_id']}", f"{path}.steps[{i}]")
            if self.b.record_count > self.limits.max_records:
                raise LimitError(where, "max_records", self.limits.max_records)

    def _step(self, step: Json, artifact: str, rid: str, at: str) -> None:
        b = self.b
        source = step["source"]
        time = _time(step.get("timestamp"))
        if time is not None:
            self.first = time if self.first is None else min(self.first, time)
            self.last = time if self.last is None else max(self.last, time)
        units = 1

        def ev(where: str, nid: str | None = None) -> Any:
            nonlocal units
            found = evidence(
                artifact,
                native=f"step:{source}",
                json_path=f"{at}{where}",
                native_id=nid,
                units=units,
            )
            units = 0
            return found

        text, media = native.text_of(step.get("message"))
        self.media(media, f"{artifact}:{at}.message")
        model = _str(step.get("model_name")) or self.default_model
        if source == "agent":
            said = (
                ("reasoning", "r", step.get("reasoning_content"), ".reasoning_content"),
                ("assistant", "m", text, ".message"),
            )
            for kind, key, body, path in said:
                if body:
                    b.add_text(
                        kind,
                        f"{rid}:{key}",
                        body,
                        time=time,
                        turn=None,
                        evidence=ev(path),
                        model=model,
                    )
            for j, call in enumerate(step.get("tool_calls") or ()):
                b.add_call(
                    f"{rid}:c{j}",
                    call["tool_call_id"],
                    call["function_name"],
                    call["arguments"],
                    time=time,
                    turn=None,
                    evidence=ev(f".tool_calls[{j}]", call["tool_call_id"]),
                )
        elif text or not step.get("observation"):
            kind = "user" if source == "user" else "system"
            b.add_text(kind, f"{rid}:m", text, time=time, turn=None, evidence=ev(".message"))
        for j, res in enumerate((step.get("observation") or {}).get("results") or ()):
            output, media = native.text_of(res.get("content"))
            where = f".observation.results[{j}]"
            self.media(media, f"{artifact}:{at}{where}")
            call_id = res.get("source_call_id")
            if call_id is None:
                b.add_text(
                    "observation", f"{rid}:o{j}", output, time=time, turn=None, evidence=ev(where)
                )
                continue
            ok, code = native.status_of(res.get("extra"), step.get("extra"), call_id)
            b.add_result(
                f"{rid}:o{j}",
                call_id,
                ok,
                output,
                time=time,
                turn=None,
                evidence=ev(where, call_id),
                exit_code=code,
            )
        if units:  # nothing in the step became a record
            b.diagnostics.add("empty-content", f"{artifact}:{at}")


def _pick(doc: Json, session: str | None, path: Path) -> tuple[Json, str, Json | None]:
    """The trajectory ``--session`` names: the root (by session or trajectory id) or an
    embedded subagent (by trajectory id); its JSON path; and its parent, if any."""
    subs = doc.get("subagent_trajectories") or []
    if session is None or session in (doc.get("session_id"), doc.get("trajectory_id")):
        return doc, "$", None
    for k, sub in enumerate(subs):
        if sub.get("trajectory_id") == session:
            return sub, f"$.subagent_trajectories[{k}]", doc
    known = [x for x in (doc.get("session_id"), doc.get("trajectory_id")) if x] + [
        s["trajectory_id"] for s in subs
    ]
    raise UsageError(f"{path}: no trajectory {session!r} in it; it holds: {', '.join(known)}")


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    doc_path = layout.resolve(path)
    name = doc_path.name
    # the source is known once the document's frame is read: set again before any record
    b = SnapshotBuilder(
        Source(harness="atif", harness_version=None, session_id="", locator=name), READER
    )
    read_doc = _document(b, doc_path, name, limits, limits.max_session_bytes)
    doc = read_doc.doc
    chosen, at, parent = _pick(doc, session, doc_path)
    sid = _str(chosen.get("session_id")) if parent is None else None
    sid = sid or _str(chosen.get("trajectory_id"))
    derived = sid is None
    if sid is None:  # ATIF 1.7 made session_id optional: name the run by its bytes
        sid = "atif-" + read_doc.sha256[:32]
    locator = name if parent is None else f"{name}#{sid}"
    b.source = Source(
        harness="atif", harness_version=doc["schema_version"], session_id=sid, locator=locator
    )
    if derived:
        b.diagnostics.add("session-id-derived", name)
    facts = _ours(chosen)
    agent = chosen["agent"]
    parent_id = (
        _str(parent.get("session_id")) or _str(parent.get("trajectory_id"))
        if parent is not None
        else _str(facts.get("parent_session_id"))
    )
    b.session = Session(
        id=sid,
        title=_str(facts.get("title")),
        cwd=_str(facts.get("cwd")),
        model=_str(agent.get("model_name")),
        branch=_str(facts.get("branch")),
        created_at=_time(facts.get("created_at")),
        updated_at=_time(facts.get("updated_at")),
        parent_session_id=parent_id,
    )
    steps = _Steps(b, _str(agent.get("model_name")), doc_path.parent, limits)
    if parent is not None:
        for _ in read_doc.steps:  # the root's steps are checked even when a subagent is read
            pass
    own_steps = read_doc.steps if parent is None else enumerate(chosen["steps"])
    steps.lift(own_steps, name, "atif:0", at, doc_path)
    for k, _sub in enumerate(chosen.get("subagent_trajectories") or ()):
        b.diagnostics.add("nested-namespace", f"{name}:{at}.subagent_trajectories[{k}]")
    if parent is None:
        _follow(doc, doc_path, b, steps, limits, read_doc.size)
    extra = chosen.get("extra")
    if steps.first is not None and not (isinstance(extra, dict) and "trajconv" in extra):
        # a trajectory trajconv did not write states no session times: its first and last step's
        b.session = b.session.model_copy(
            update={
                "created_at": b.session.created_at or steps.first,
                "updated_at": b.session.updated_at or steps.last,
            }
        )
    if b.record_count > limits.max_records:
        raise LimitError(doc_path, "max_records", limits.max_records)
    return b.build()


def _follow(
    doc: Json, doc_path: Path, b: SnapshotBuilder, steps: _Steps, limits: Limits, used: int
) -> None:
    """Read the continuation files a split run names, one after the other."""
    seen = {doc_path.name}
    k = 0
    while ref := _str(doc.get("continued_trajectory_ref")):
        nxt = _inside(doc_path.parent, ref)
        if nxt is None or not nxt.is_file():
            b.diagnostics.add("continuation-missing", ref)
            return
        rel = nxt.relative_to(doc_path.parent).as_posix()
        if rel in seen:
            raise FormatError(nxt, "continued_trajectory_ref loops back to an earlier file")
        seen.add(rel)
        k += 1
        read_doc = _document(b, nxt, rel, limits, limits.max_session_bytes - used)
        doc = read_doc.doc
        used += read_doc.size
        steps.lift(read_doc.steps, rel, f"atif:{k}", "$", nxt)
        for j, _sub in enumerate(doc.get("subagent_trajectories") or ()):
            b.diagnostics.add("nested-namespace", f"{rel}:$.subagent_trajectories[{j}]")
