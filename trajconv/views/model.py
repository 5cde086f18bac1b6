"""What every view shares: a session with its sub-agents, inert text, cut output.

A view is a pure function of Snapshots: nothing here reads a clock, the
environment or a native file, so the same Snapshots always give the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajconv.snapshot.diagnostics import REGISTRY
from trajconv.snapshot.models import Child, Diagnostic, Snapshot, ToolResult
from trajconv.textsafe import inert as inert  # the views use model.inert

#: Longest tool output, argument text or reasoning a view shows whole by default.
MAX_LINES = 40
MAX_CHARS = 4000

_CODE = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)", re.S)
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def prose(text: str) -> str:
    """Markdown as the agent wrote it, made inert for a Markdown renderer: outside code
    spans and fenced blocks (where HTML is already text) ``<`` and an entity-like ``&``
    become entities, so no tag in it is live or hidden; everything else is kept."""
    out: list[str] = []
    at = 0
    text = inert(text)
    for m in _CODE.finditer(text):
        out.append(_ENTITY.sub("&amp;", text[at : m.start()]).replace("<", "&lt;"))
        out.append(m.group())
        at = m.end()
    out.append(_ENTITY.sub("&amp;", text[at:]).replace("<", "&lt;"))
    return "".join(out)


@dataclass(frozen=True)
class Clipped:
    """A long text with its middle cut: ``head`` + (what was cut) + ``tail``."""

    head: str
    tail: str
    lines_cut: int
    chars_cut: int

    @property
    def note(self) -> str | None:
        if not self.chars_cut:
            return None
        lines = f"{self.lines_cut:,} lines, " if self.lines_cut else ""
        return f"[... {lines}{self.chars_cut:,} characters cut; --full shows all ...]"


def clip(text: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> Clipped:
    """Keep the first two thirds and the last third of the allowance, by lines and chars."""
    size = len(text)
    head_end, tail_start = size, size
    newlines = text.count("\n")
    if newlines >= max_lines:
        keep_head = max_lines * 2 // 3
        keep_tail = max_lines - keep_head
        head_end = _nth(text, "\n", keep_head) + 1
        tail_start = _rnth(text, "\n", keep_tail) + 1
    head_end = min(head_end, max_chars * 2 // 3)
    tail_start = max(tail_start, size - max_chars // 3)
    if head_end >= tail_start:
        return Clipped(text, "", 0, 0)
    middle = text[head_end:tail_start]
    return Clipped(text[:head_end], text[tail_start:], middle.count("\n"), len(middle))


def _nth(text: str, sep: str, n: int) -> int:
    pos = -1
    for _ in range(n):
        pos = text.index(sep, pos + 1)
    return pos


def _rnth(text: str, sep: str, n: int) -> int:
    pos = len(text)
    for _ in range(n):
        pos = text.rindex(sep, 0, pos)
    return pos


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the view shows them: indented JSON (a string as itself)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, indent=2, ensure_ascii=False)


def result_status(result: ToolResult) -> str:
    """``ok`` / ``FAILED`` / ``status unknown``, with the exit status when there is one."""
    status = {True: "ok", False: "FAILED", None: "status unknown"}[result.ok]
    if result.exit_code is not None:
        status += f", exit {result.exit_code}"
    if result.truncated:
        status += ", truncated by the harness"
    return status


def failed(result: ToolResult) -> bool:
    """A result the view marks: the harness said it failed, or a process exited non-zero."""
    return result.ok is False or (result.exit_code is not None and result.exit_code != 0)


def meaning(diag: Diagnostic) -> str:
    code = REGISTRY.get(diag.code)
    return code.meaning if code is not None else diag.message


def kind_counts(snapshot: Snapshot) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in snapshot.records:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    return counts


def facts(snapshot: Snapshot, counts: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """The session facts a view's header shows, absent ones left out (``counts``: the
    :func:`kind_counts`, when the caller has them)."""
    s = snapshot.session
    counts = kind_counts(snapshot) if counts is None else counts
    kinds = ", ".join(f"{k} {n}" for k, n in counts.items())
    rows = [
        ("harness", snapshot.source.harness),
        ("session", s.id),
        ("Snapshot", snapshot.id),
        ("cwd", s.cwd),
        ("model", s.model),
        ("branch", s.branch),
        ("created", s.created_at),
        ("updated", s.updated_at),
        ("parent session", s.parent_session_id),
        ("records", f"{len(snapshot.records)} ({kinds})" if kinds else "0"),
    ]
    return [(name, value) for name, value in rows if value is not None]


def title(snapshot: Snapshot) -> str:
    return snapshot.session.title or f"{snapshot.source.harness} session {snapshot.session.id}"


def turn_label(turn: int | None) -> str:
    return f"Turn {turn}" if turn is not None else "Outside a turn"


# -- sub-agents ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A session and the sub-agent sessions it spawned, each placed under the tool call
    that spawned it (``call_id``) or, when no call names it, after the timeline."""

    snapshot: Snapshot
    call_id: str | None = None
    how: str | None = None
    """How the spawning call was found (shown beside the sub-agent)."""
    children: tuple[Family, ...] = ()
    held: bool = False
    """A sub-agent the parent's Snapshot holds: its diagnostics are among the parent's."""
    _by_call: dict[str, list[Family]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.children and self.snapshot.children:
            # the sub-agents the Snapshot holds itself (a frozen field, set once here)
            object.__setattr__(self, "children", tuple(embedded(self.snapshot)))
        for child in self.children:
            if child.call_id is not None:
                self._by_call.setdefault(child.call_id, []).append(child)

    def under(self, call_id: str) -> Sequence[Family]:
        return self._by_call.get(call_id, ())

    @property
    def unplaced(self) -> list[Family]:
        return [c for c in self.children if c.call_id is None]


def family(snapshot: Snapshot, sessions: Sequence[Snapshot] = (), depth: int = 4) -> Family:
    """``snapshot`` with those of ``sessions`` whose ``parent_session_id`` is its id (and
    theirs, ``depth`` levels down), each placed under its spawning call (:func:`spawner`)."""
    return _family(snapshot, list(sessions), depth, None, None, {snapshot.id})


def as_snapshot(parent: Snapshot, child: Child) -> Snapshot:
    """A sub-agent the Snapshot holds, as a Snapshot a view shows: its own source, facts and
    records, the parent's artifacts (its evidence names them) and producer."""
    return Snapshot.model_construct(
        format=parent.format,
        id=child.id,
        meta_hash=parent.meta_hash,
        source=child.source,
        session=child.session,
        records=child.records,
        children=(),
        artifacts=parent.artifacts,
        diagnostics=(),
        producer=parent.producer,
    )


LINKED = "the Snapshot links it to this call"


def embedded(snap: Snapshot) -> list[Family]:
    """The Snapshot's own sub-agents, each under the call that spawned it (``parent_call_id``,
    else found as :func:`spawner` finds one), a sub-agent's own under it."""
    views = {c.id: as_snapshot(snap, c) for c in snap.children}

    def under(session: Snapshot) -> list[Family]:
        kids = []
        for child in snap.children:
            if child.session.parent_session_id != session.session.id:
                continue
            view = views[child.id]
            call: str | None
            how: str | None
            if child.parent_call_id is not None:
                call, how = child.parent_call_id, LINKED
            else:
                found = spawner(session, child.session.id)
                call, how = found if found is not None else (None, None)
            kids.append(Family(view, call, how, tuple(under(view)), held=True))
        return kids

    return under(snap)


def _family(
    snap: Snapshot,
    pool: list[Snapshot],
    depth: int,
    call_id: str | None,
    how: str | None,
    seen: set[str],
) -> Family:
    own = embedded(snap)
    kids: list[Family] = list(own)
    held = {c.session.id for c in snap.children}  # read with it: not again from the pool
    if depth > 0:
        mine = [
            s
            for s in pool
            if s.session.parent_session_id == snap.session.id
            and s.id not in seen
            and s.session.id not in held
        ]
        mine.sort(key=lambda s: (s.session.created_at or "", s.session.id))
        seen.update(s.id for s in mine)
        for child in mine:
            found = spawner(snap, child.session.id)
            kid_call, kid_how = found if found is not None else (None, None)
            kids.append(_family(child, pool, depth - 1, kid_call, kid_how, seen))
    return Family(snap, call_id, how, tuple(kids))


def spawner(parent: Snapshot, child_id: str) -> tuple[str, str] | None:
    """The tool call of ``parent`` that spawned session ``child_id``, and how it was found:

    1. a tool call whose arguments, or whose result, name the child's id;
    2. else the native line that names the child (an artifact a tool call's evidence
       points into) lies between that call's line and its result's line: Grok Build
       writes ``subagent_spawned`` there (``codecs/grok/README.md``).
    """
    calls: list[tuple[str, int, str]] = []  # (artifact, line, call id)
    ends: dict[str, int] = {}
    for record in parent.records:
        if record.kind == "tool-call":
            if child_id in json.dumps(record.call.arguments, ensure_ascii=False):
                return record.call.id, "its id is in the call's arguments"
            if record.evidence.line is not None:
                calls.append((record.evidence.artifact, record.evidence.line, record.call.id))
        elif record.kind == "tool-result":
            if child_id in record.result.output:
                return record.result.call_id, "its id is in the call's result"
            if record.evidence.line is not None:
                ends.setdefault(record.result.call_id, record.evidence.line)
    needle = child_id.encode()
    for art in parent.artifacts:
        spans = [(line, cid) for name, line, cid in calls if name == art.name]
        if not spans or art.blob is None:
            continue
        hit = _first_line_with(art.chunks(), needle)
        if hit is None:
            continue
        before = [(line, cid) for line, cid in spans if line <= hit]
        if before:
            _, cid = max(before)
            if ends.get(cid, hit) >= hit:
                return cid, f"{art.name} names it at line {hit}, inside this call"
    return None


def _first_line_with(chunks: Iterator[bytes], needle: bytes) -> int | None:
    """The 1-based number of the first line holding ``needle``, reading in chunks."""
    line = 1
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        at = data.find(needle)
        if at >= 0:
            return line + data.count(b"\n", 0, at)
        cut = max(data.rfind(b"\n") + 1, len(data) - len(needle) + 1)
        line += data.count(b"\n", 0, cut)
        carry = data[cut:]
    return None
