"""A session as a Markdown transcript: one heading a turn, tool calls in fenced blocks.

Message text is Markdown as the agent wrote it, through :func:`model.prose` (no HTML
in it is live in a viewer); tool arguments and output sit in fenced blocks verbatim (a
fence longer than any backtick run in them). Every text passes :func:`model.inert`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from trajconv.snapshot.models import Snapshot
from trajconv.views import model
from trajconv.views.model import Family

_TICKS = re.compile("`+")


def render(family: Family | Snapshot, *, full: bool = False) -> str:
    return "".join(chunks(family, full=full))


def chunks(family: Family | Snapshot, *, full: bool = False) -> Iterator[str]:
    """The transcript in pieces (a record at a time), for large sessions."""
    fam = family if isinstance(family, Family) else Family(family)
    snap = fam.snapshot
    yield f"# {_escape(model.title(snap))}\n\n"
    yield from _facts(snap)
    yield from _timeline(fam, 2, full)
    yield from _diagnostics(snap, 2)


def _facts(snap: Snapshot) -> Iterator[str]:
    yield "| | |\n|---|---|\n"
    for name, value in model.facts(snap):
        yield f"| {name} | {_cell(value)} |\n"
    yield (
        "\nCheck it: `trajconv verify SNAPSHOT.json` recomputes every record hash and the "
        "Snapshot id above from the Snapshot file.\n\n"
    )


def _timeline(fam: Family, level: int, full: bool) -> Iterator[str]:
    names: dict[str, str] = {}
    turn: object = object()
    for record in fam.snapshot.records:
        if record.turn != turn:
            turn = record.turn
            yield f"{'#' * level} {model.turn_label(record.turn)}\n\n"
        when = f" · {record.time}" if record.time else ""
        if record.kind == "tool-call":
            call = record.call
            names[call.id] = call.name
            yield f"**Tool call** `{_code(call.name)}` · `{_code(call.id)}`{when}\n\n"
            yield _fenced(model.arguments_text(call.arguments), "json", full)
            for child in fam.under(call.id):
                yield from _child(child, level, full)
        elif record.kind == "tool-result":
            res = record.result
            name = names.get(res.call_id, "?")
            mark = "**FAILED** · " if model.failed(res) else ""
            yield (
                f"**Result** of `{_code(name)}` · `{_code(res.call_id)}` · {mark}"
                f"{model.result_status(res)}{when}\n\n"
            )
            yield _fenced(res.output, "text", full)
        elif record.kind == "reasoning":
            text = _clipped_prose(record.text, full)
            yield (
                f"<details><summary>Reasoning ({len(record.text):,} characters){when}"
                f"</summary>\n\n{text}\n\n</details>\n\n"
            )
        else:
            label = {"user": "User", "assistant": "Assistant", "system": "System"}.get(
                record.kind, "Observation"
            )
            extra = f" ({_escape(m)})" if (m := getattr(record, "model", None)) else ""
            body = _clipped_prose(record.text, full)
            if record.kind == "user":
                body = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
            yield f"**{label}**{extra}{when}\n\n{body}\n\n"
    for child in fam.unplaced:
        yield from _child(child, level, full)


def _child(child: Family, level: int, full: bool) -> Iterator[str]:
    snap = child.snapshot
    how = f" — spawned by this call ({child.how})" if child.how else " — spawning call not found"
    lines = [f"**Sub-agent** `{_code(snap.session.id)}` {_escape(model.title(snap))}{how}\n\n"]
    lines += list(_timeline(child, level + 1, full))
    if not child.held:  # one the Snapshot holds was read with it: its diagnostics are above
        lines += list(_diagnostics(snap, level + 1))
    text = "".join(lines).rstrip("\n")
    yield "\n".join(f"> {line}" if line else ">" for line in text.split("\n")) + "\n\n"


def _diagnostics(snap: Snapshot, level: int) -> Iterator[str]:
    yield f"{'#' * level} Diagnostics\n\n"
    if not snap.diagnostics:
        yield "None: every native unit is in a record.\n\n"
        return
    yield "| severity | code | count | meaning | samples |\n|---|---|---:|---|---|\n"
    for d in snap.diagnostics:
        samples = ", ".join(d.samples)
        yield (
            f"| {d.severity} | `{_code(d.code)}` | {d.count} | {_cell(model.meaning(d))} | "
            f"{_cell(samples)} |\n"
        )
    yield "\n"


def _clipped_prose(text: str, full: bool) -> str:
    c = model.clip(text) if not full else model.Clipped(text, "", 0, 0)
    if c.note is None:
        return model.prose(text)
    return f"{model.prose(c.head)}\n\n*{c.note}*\n\n{model.prose(c.tail)}"


def _fenced(text: str, lang: str, full: bool) -> str:
    c = model.clip(text) if not full else model.Clipped(text, "", 0, 0)
    body = model.inert(c.head)
    if c.note is not None:
        body += f"\n{c.note}\n{model.inert(c.tail)}"
    runs = [len(m.group()) for m in _TICKS.finditer(body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{lang}\n{body}\n{fence}\n\n"


def _escape(text: str) -> str:
    return model.inert(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """Text for an inline code span (a name or an id): no backticks, no newlines."""
    return model.inert(text).replace("`", "'").replace("\n", " ")


def _cell(text: str) -> str:
    return _escape(text).replace("|", "\\|").replace("\n", "<br>")
