"""A session in the terminal with ``rich``: turns, Markdown messages, reasoning dimmed
and folded, tool calls with their results, sub-agents nested, diagnostics at the end.

Session text never reaches rich as markup: it goes in :class:`rich.text.Text` or
:class:`rich.markdown.Markdown` after :func:`model.inert`, so an ANSI escape or a
bidi control in a session is shown, not obeyed. The console is built from the
arguments alone (``_environ={}``), so the output is a pure function of them.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from trajconv.snapshot.models import Snapshot
from trajconv.views import model
from trajconv.views.model import Family

WIDTH = 100
_TRAILING = re.compile(r" +\n")


def render(
    family: Family | Snapshot, *, width: int = WIDTH, color: bool = False, full: bool = False
) -> str:
    return "".join(chunks(family, width=width, color=color, full=full))


def console(width: int = WIDTH, color: bool = False) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        color_system="truecolor" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
        _environ={},
    )


def chunks(
    family: Family | Snapshot, *, width: int = WIDTH, color: bool = False, full: bool = False
) -> Iterator[str]:
    """The view in pieces, a record at a time, so a large session streams to the pager."""
    fam = family if isinstance(family, Family) else Family(family)
    out = console(width, color)
    buffer = out.file
    assert isinstance(buffer, io.StringIO)
    for renderable in _session(fam, full):
        out.print(renderable)
        piece = buffer.getvalue()
        yield piece if color else _TRAILING.sub("\n", piece)
        buffer.seek(0)
        buffer.truncate()


def _session(fam: Family, full: bool) -> Iterator[RenderableType]:
    snap = fam.snapshot
    yield _header(snap)
    yield from _timeline(fam, full)
    yield _diagnostics(snap)


def _header(snap: Snapshot) -> RenderableType:
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold")
    for name, value in model.facts(snap):
        facts.add_row(name, Text(model.inert(value)))
    return Panel(facts, title=Text(model.inert(model.title(snap)), style="bold"), expand=True)


def _timeline(fam: Family, full: bool) -> Iterator[RenderableType]:
    names: dict[str, str] = {}
    turn: object = object()
    for record in fam.snapshot.records:
        if record.turn != turn:
            turn = record.turn
            yield Rule(model.turn_label(record.turn), style="blue")
        when = Text(f"  {record.time}", style="dim") if record.time else Text("")
        if record.kind == "tool-call":
            call = record.call
            names[call.id] = call.name
            head = Text.assemble(
                ("⚙ tool call ", "bold yellow"),
                (model.inert(call.name), "bold"),
                (f"  {model.inert(call.id)}", "dim"),
                when,
            )
            yield Group(head, _indented(_clipped(model.arguments_text(call.arguments), full)))
            for child in fam.under(call.id):
                yield _child(child, full)
        elif record.kind == "tool-result":
            res = record.result
            bad = model.failed(res)
            head = Text.assemble(
                ("✗ " if bad else "✓ ", "bold red" if bad else "green"),
                ("result of ", "bold red" if bad else "green"),
                (model.inert(names.get(res.call_id, "?")), "bold"),
                (f"  {model.inert(res.call_id)}  ", "dim"),
                (model.result_status(res), "bold red" if bad else "green"),
                when,
            )
            yield Group(head, _indented(_clipped(res.output, full)))
        elif record.kind == "reasoning":
            size = f"{len(record.text):,} characters"
            if full:
                yield Group(
                    Text.assemble(("▾ reasoning ", "dim italic"), (size, "dim"), when),
                    _indented(Text(model.inert(record.text), style="dim")),
                )
            else:
                first = model.inert(record.text.strip().split("\n", 1)[0])
                if len(first) > 80:
                    first = first[:79] + "…"
                yield Group(
                    Text.assemble(
                        ("▸ reasoning ", "dim italic"),
                        (f"({size}, folded; --full unfolds)", "dim"),
                        when,
                    ),
                    _indented(Text(first, style="dim")),
                )
        else:
            style = {"user": "bold cyan", "assistant": "bold magenta"}.get(record.kind, "bold")
            label = Text.assemble((record.kind, style), when)
            if m := getattr(record, "model", None):
                label.append(f"  {model.inert(m)}", style="dim")
            yield Group(label, _indented(_prose(record.text, full)))
    for child in fam.unplaced:
        yield _child(child, full)


def _child(child: Family, full: bool) -> RenderableType:
    snap = child.snapshot
    how = f"spawned by this call: {child.how}" if child.how else "spawning call not found"
    # a sub-agent the Snapshot holds was read with it: its diagnostics are the session's
    diags = [] if child.held else [_diagnostics(snap)]
    inner = Group(Text(how, style="dim"), *_timeline(child, full), *diags)
    title = Text(f"sub-agent {model.inert(snap.session.id)}", style="bold")
    return Padding(
        Panel(inner, title=title, title_align="left", border_style="yellow"), (0, 0, 0, 4)
    )


def _prose(text: str, full: bool) -> RenderableType:
    # rich's Markdown drops HTML tags and blocks: model.prose keeps them as text
    c = model.clip(text) if not full else model.Clipped(text, "", 0, 0)
    if c.note is None:
        return Markdown(model.prose(text))
    return Group(
        Markdown(model.prose(c.head)),
        Text(c.note, style="italic yellow"),
        Markdown(model.prose(c.tail)),
    )


def _clipped(text: str, full: bool) -> RenderableType:
    c = model.clip(text) if not full else model.Clipped(text, "", 0, 0)
    shown = Text(model.inert(c.head))
    if c.note is not None:
        shown.append(f"\n{c.note}\n", style="italic yellow")
        shown.append(model.inert(c.tail))
    return shown


def _indented(renderable: RenderableType) -> RenderableType:
    return Padding(renderable, (0, 0, 0, 4))


def _diagnostics(snap: Snapshot) -> RenderableType:
    if not snap.diagnostics:
        return Text("diagnostics: none (every native unit is in a record)", style="green")
    table = Table(title="diagnostics", title_justify="left", expand=False)
    widest = max(len(d.code) for d in snap.diagnostics)
    for col in ("severity", "code", "count", "meaning", "samples"):
        table.add_column(
            col,
            justify="right" if col == "count" else "left",
            overflow="fold",
            min_width=widest if col == "code" else None,  # a code is never cut in two
            no_wrap=col == "code",
        )
    for d in snap.diagnostics:
        style = {"error": "red", "warning": "yellow"}.get(d.severity, "")
        table.add_row(
            Text(d.severity, style=style),
            d.code,
            str(d.count),
            Text(model.inert(model.meaning(d))),
            Text(model.inert(", ".join(d.samples))),
        )
    return table
