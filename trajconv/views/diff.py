"""Two Snapshots side by side (a source and the re-read of its export): records kept,
changed, dropped or added, each difference with the diagnostic that named it.

Records are matched by content (kind and text, tool name and arguments, tool output;
never by id, which each harness makes its own) with :class:`difflib.SequenceMatcher`.
A matched pair whose time, model, call id, status or exit code differs is *changed*;
an unmatched record is *dropped* (only in A) or *added* (only in B), and an unmatched
pair of the same kind at the same place is one *changed* record. A difference is
*named* by a diagnostic that lists the record's id among its samples, else by one whose
code says it accounts for that kind of difference (:data:`trajconv.parity.DROP_CODES`
and :data:`FIELD_CODES`); one no diagnostic names is a loss, and the view says so.
"""

from __future__ import annotations

import difflib
import hashlib
import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from trajconv.parity import DROP_CODES, MERGE_CODES
from trajconv.snapshot.models import Diagnostic, Record, Snapshot
from trajconv.views import model

#: Codes that account for a field of a kept record differing.
FIELD_CODES: dict[str, tuple[str, ...]] = {
    "text": MERGE_CODES,
    # a tool call's or result's content: a writer that puts the exit status or failure in
    # the output text, where its harness has no field for it, says so (issue 33: the
    # Codex writer's own rewrites were shown NOT NAMED)
    "content": ("exit-status-in-text",),
    "time": ("untranslated-time", "timestamps-synthesized"),
    "model": ("untranslated-model", "defaults-assumed"),
    "call id": ("ids-derived",),
    "status": ("untranslated-tool-status", "tool-status-assumed"),
    "exit code": ("untranslated-exit-code",),
    "truncated": (),
}
#: Codes that account for a session fact differing.
FACT_CODES: dict[str, tuple[str, ...]] = {
    "title": ("untranslated-title", "title-missing"),
    "cwd": ("cwd-missing", "defaults-assumed"),
    "model": ("untranslated-model", "defaults-assumed"),
    "branch": ("defaults-assumed",),
    "created_at": ("untranslated-time", "timestamps-synthesized"),
    "updated_at": ("untranslated-time", "timestamps-synthesized"),
    "parent_session_id": (),
}
SIDES = ("A", "writer", "B")


@dataclass(frozen=True)
class Named:
    side: str
    """``A`` / ``B`` (that Snapshot's reader) or ``writer`` (the export's manifest)."""
    diagnostic: Diagnostic
    by_id: bool
    """True when the diagnostic lists the record's id among its samples."""

    def label(self) -> str:
        how = " (names this record)" if self.by_id else ""
        d = self.diagnostic
        return f"{self.side} {d.code} x{d.count}{how}"


@dataclass(frozen=True)
class Row:
    status: str  # same | changed | dropped | added | fact
    a: Record | None
    b: Record | None
    fields: tuple[str, ...] = ()
    named: tuple[Named, ...] = ()
    unnamed: tuple[str, ...] = ()
    """Fields of a changed record that no diagnostic names."""
    same_run: int = 0
    """For a collapsed run of identical records (``status == "same"``): how many."""
    fact: tuple[str, str | None, str | None] | None = None

    @property
    def lost(self) -> bool:
        return self.status != "same" and (not self.named or bool(self.unnamed))


@dataclass(frozen=True)
class Diff:
    a: Snapshot
    b: Snapshot
    rows: tuple[Row, ...]
    counts: dict[str, int]


def _key(record: Record) -> bytes:
    if record.kind == "tool-call":
        body: Any = [record.kind, record.call.name, record.call.arguments]
    elif record.kind == "tool-result":
        body = [record.kind, record.result.output]
    else:
        body = [record.kind, record.text]
    return hashlib.blake2b(orjson.dumps(body, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def _fields(a: Record, b: Record) -> tuple[str, ...]:
    out: list[str] = []
    if _key(a) != _key(b):
        out.append("text" if a.kind not in ("tool-call", "tool-result") else "content")
    if a.time != b.time:
        out.append("time")
    if getattr(a, "model", None) != getattr(b, "model", None):
        out.append("model")
    if a.kind == "tool-call" and b.kind == "tool-call" and a.call.id != b.call.id:
        out.append("call id")
    if a.kind == "tool-result" and b.kind == "tool-result":
        ra, rb = a.result, b.result
        if ra.call_id != rb.call_id:
            out.append("call id")
        if ra.ok != rb.ok:
            out.append("status")
        if ra.exit_code != rb.exit_code:
            out.append("exit code")
        if ra.truncated != rb.truncated:
            out.append("truncated")
    return tuple(out)


def diff(
    a: Snapshot, b: Snapshot, writer: Sequence[Diagnostic] = (), *, full: bool = False
) -> Diff:
    """Compare ``a`` with ``b``; ``writer`` is the export's diagnostics when ``b`` is a
    re-read export. ``full`` keeps runs of identical records as rows of their own."""
    named_by = _Namer(a, b, writer)
    rows: list[Row] = []
    for name in FACT_CODES:
        va, vb = getattr(a.session, name), getattr(b.session, name)
        if va != vb:
            rows.append(
                Row(
                    "fact",
                    None,
                    None,
                    (name,),
                    named_by.codes(FACT_CODES[name]),
                    fact=(name, va, vb),
                )
            )
    ka = [_key(r) for r in a.records]
    kb = [_key(r) for r in b.records]
    ra, rb = a.records, b.records
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            run: list[Row] = []
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                fields = _fields(ra[i], rb[j])
                if fields:
                    if run:
                        rows.extend(_collapse(run, full))
                        run = []
                    rows.append(
                        Row("changed", ra[i], rb[j], fields, named_by.fields(ra[i], fields))
                    )
                else:
                    run.append(Row("same", ra[i], rb[j]))
            rows.extend(_collapse(run, full))
            continue
        left = list(range(i1, i2))
        right = list(range(j1, j2))
        while left or right:
            if left and right and ra[left[0]].kind == rb[right[0]].kind:
                i, j = left.pop(0), right.pop(0)
                rows.append(_changed(named_by, ra[i], rb[j], _fields(ra[i], rb[j])))
            elif left and (not right or _drop_first(ra, rb, left, right)):
                i = left.pop(0)
                rows.append(Row("dropped", ra[i], None, (), named_by.dropped(ra[i])))
            else:
                j = right.pop(0)
                rows.append(Row("added", None, rb[j], (), named_by.added(rb[j])))
    counts = {s: 0 for s in ("same", "changed", "dropped", "added", "fact", "not named")}
    for row in rows:
        counts[row.status] += row.same_run if row.status == "same" else 1
        if row.lost:
            counts["not named"] += 1
    return Diff(a, b, tuple(rows), counts)


def _changed(named_by: _Namer, a: Record, b: Record, fields: tuple[str, ...]) -> Row:
    named = named_by.fields(a, fields)
    return Row("changed", a, b, fields, named, named_by.unnamed(fields, named))


def _drop_first(
    ra: Sequence[Record], rb: Sequence[Record], left: list[int], right: list[int]
) -> bool:
    """Of two unmatched records of different kinds, which goes first: A's (dropped) unless
    A's kind comes soon in B and B's does not in A."""
    a_kind, b_kind = ra[left[0]].kind, rb[right[0]].kind
    if any(ra[i].kind == b_kind for i in left[1:50]):
        return True
    return not any(rb[j].kind == a_kind for j in right[1:50])


def _collapse(run: list[Row], full: bool) -> list[Row]:
    if full or len(run) <= 3:
        return [Row("same", r.a, r.b, same_run=1) for r in run]
    return [Row("same", run[0].a, run[0].b, same_run=len(run))]


class _Namer:
    def __init__(self, a: Snapshot, b: Snapshot, writer: Sequence[Diagnostic]) -> None:
        self.diags = [
            *(("A", d) for d in a.diagnostics),
            *(("writer", d) for d in writer),
            *(("B", d) for d in b.diagnostics),
        ]

    def codes(self, codes: Sequence[str]) -> tuple[Named, ...]:
        return tuple(Named(side, d, False) for side, d in self.diags if d.code in codes)

    def _by_id(self, record: Record) -> tuple[Named, ...]:
        return tuple(
            Named(side, d, True)
            for side, d in self.diags
            if any(
                record.id == s or s.endswith(f" {record.id}") or s.startswith(f"{record.id} ")
                for s in d.samples
            )
        )

    def dropped(self, record: Record) -> tuple[Named, ...]:
        codes = DROP_CODES.get(record.kind, ())
        if record.kind in ("assistant", "reasoning"):
            codes = (*codes, *MERGE_CODES)
        return self._by_id(record) or self.codes(codes)

    def added(self, record: Record) -> tuple[Named, ...]:
        return self._by_id(record) or self.codes(MERGE_CODES)

    def fields(self, record: Record, fields: tuple[str, ...]) -> tuple[Named, ...]:
        """For each field: a diagnostic naming the record with a code for that field, else
        every diagnostic with such a code; a field none names is left out (a loss)."""
        by_id = self._by_id(record)
        out: list[Named] = []
        for f in fields:
            codes = FIELD_CODES.get(f, ())
            mine = [n for n in by_id if n.diagnostic.code in codes] or list(self.codes(codes))
            out += [n for n in mine if n not in out]
        return tuple(out)

    def unnamed(self, fields: tuple[str, ...], named: tuple[Named, ...]) -> tuple[str, ...]:
        return tuple(
            f for f in fields if not any(n.diagnostic.code in FIELD_CODES.get(f, ()) for n in named)
        )


# -- views -------------------------------------------------------------------------------------


def _brief(record: Record | None, width: int = 60) -> str:
    if record is None:
        return ""
    if record.kind == "tool-call":
        text = f"{record.call.name} {model.arguments_text(record.call.arguments)}"
    elif record.kind == "tool-result":
        text = f"[{model.result_status(record.result)}] {record.result.output}"
    else:
        text = record.text
    flat = " ".join(model.inert(text).split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return f"{record.kind}: {flat}"


def _what(row: Row) -> str:
    if row.status == "same":
        return "same" if row.same_run <= 1 else f"{row.same_run} records the same"
    if row.status == "fact":
        assert row.fact is not None
        name, va, vb = row.fact
        return f"session {name}: {model.inert(str(va))} → {model.inert(str(vb))}"
    if row.status == "changed":
        assert row.a is not None and row.b is not None
        return "changed: " + ", ".join(_change(f, row.a, row.b) for f in row.fields)
    return row.status


def _value(field: str, record: Record) -> object:
    if field == "time":
        return record.time
    if field == "model":
        return getattr(record, "model", None)
    if record.kind == "tool-call":
        return record.call.id
    if record.kind == "tool-result":
        res = record.result
        return {"call id": res.call_id, "status": res.ok, "exit code": res.exit_code}.get(
            field, res.truncated
        )
    return None


def _change(field: str, a: Record, b: Record) -> str:
    """A changed field with its two values (text and content are shown in the row)."""
    if field in ("text", "content"):
        return field
    return f"{field} {model.inert(str(_value(field, a)))} → {model.inert(str(_value(field, b)))}"


def _named(row: Row) -> str:
    if row.status == "same":
        return ""
    if not row.named:
        return "NOT NAMED by any diagnostic"
    text = "; ".join(n.label() for n in row.named)
    if row.unnamed:
        text += f"; NOT NAMED: {', '.join(row.unnamed)}"
    return text


def _seq(record: Record | None) -> str:
    return str(record.seq) if record is not None else ""


def summary(d: Diff) -> str:
    c = d.counts
    return (
        f"A {d.a.id} ({len(d.a.records)} records) vs B {d.b.id} ({len(d.b.records)} records): "
        f"{c['same']} same, {c['changed']} changed, {c['dropped']} dropped, {c['added']} added, "
        f"{c['fact']} session facts differ; {c['not named']} differences not named by a diagnostic"
    )


def render_text(d: Diff, *, width: int = 100, color: bool = False) -> str:
    return "".join(text_chunks(d, width=width, color=color))


def text_chunks(d: Diff, *, width: int = 100, color: bool = False) -> Iterator[str]:
    from rich.table import Table
    from rich.text import Text

    from trajconv.views.terminal import console

    out = console(width, color)
    table = Table(title=Text(summary(d)), title_justify="left", expand=True, show_lines=False)
    for col, ratio in (("A#", 0), ("A", 3), ("B#", 0), ("B", 3), ("difference · named by", 3)):
        table.add_column(col, ratio=ratio or None, justify="right" if ratio == 0 else "left")
    style = {"changed": "yellow", "dropped": "red", "added": "green", "fact": "cyan"}
    for row in d.rows:
        named = Text(_named(row), style="bold red" if row.lost else "")
        table.add_row(
            _seq(row.a),
            Text(_brief(row.a, 40)),
            _seq(row.b),
            Text(_brief(row.b, 40)),
            Text.assemble(
                (_what(row), style.get(row.status, "dim")),
                "\n" if row.named or row.lost else "",
                named,
            ),
        )
    out.print(table)
    buffer = out.file
    yield buffer.getvalue()  # type: ignore[attr-defined]


def render_markdown(d: Diff) -> str:
    from trajconv.views.markdown import _cell

    lines = [
        f"# Diff of two Snapshots\n\n{_cell(summary(d))}\n\n",
        "| A# | A | B# | B | difference | named by |\n|---:|---|---:|---|---|---|\n",
    ]
    for row in d.rows:
        named = _named(row)
        if row.lost:
            named = f"**{named}**"
        lines.append(
            f"| {_seq(row.a)} | {_cell(_brief(row.a))} | {_seq(row.b)} | {_cell(_brief(row.b))} | "
            f"{_cell(_what(row))} | {_cell(named) if not row.lost else named} |\n"
        )
    return "".join(lines)


def render_html(d: Diff) -> str:
    from trajconv.views.html import NO_SCRIPT_CSP, _asset

    def e(text: str) -> str:
        return html.escape(model.inert(text), quote=True)

    rows = "".join(
        f'<tr class="d-{row.status}{" lost" if row.lost else ""}">'
        f"<td class=num>{_seq(row.a)}</td>"
        f"<td>{e(_brief(row.a, 120))}</td><td class=num>{_seq(row.b)}</td>"
        f"<td>{e(_brief(row.b, 120))}</td><td>{e(_what(row))}</td><td>{e(_named(row))}</td></tr>"
        for row in d.rows
    )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{NO_SCRIPT_CSP}">'
        f"<title>trajconv diff</title><style>{_asset('page.css')}"
        ".d-dropped td{background:rgba(220,38,38,.08)}.d-added td{background:rgba(22,163,74,.08)}"
        ".d-changed td{background:rgba(202,138,4,.08)}.lost td:last-child{color:var(--bad);"
        "font-weight:700}</style></head><body>\n"
        f"<h1>Diff of two Snapshots</h1><p id=summary>{e(summary(d))}</p>"
        "<table><thead><tr><th>A#</th><th>A</th><th>B#</th><th>B</th><th>difference</th>"
        f"<th>named by</th></tr></thead><tbody>{rows}</tbody></table>\n</body></html>\n"
    )


def to_json(d: Diff) -> dict[str, Any]:
    return {
        "a": d.a.id,
        "b": d.b.id,
        "counts": d.counts,
        "rows": [
            {
                "status": row.status,
                "a": row.a.id if row.a is not None else None,
                "a_seq": row.a.seq if row.a is not None else None,
                "b": row.b.id if row.b is not None else None,
                "b_seq": row.b.seq if row.b is not None else None,
                "fields": list(row.fields),
                "unnamed_fields": list(row.unnamed),
                "same_run": row.same_run,
                "fact": list(row.fact) if row.fact else None,
                "named_by": [
                    {
                        "side": n.side,
                        "code": n.diagnostic.code,
                        "count": n.diagnostic.count,
                        "names_record": n.by_id,
                    }
                    for n in row.named
                ],
                "not_named": row.lost,
            }
            for row in d.rows
        ],
    }
