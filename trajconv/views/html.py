"""A session as ONE self-contained HTML page: inline CSS and JS, no network at all.

The page is static facts (title, session, Snapshot id and how to verify it, the
diagnostics table), what the script needs to know (each record's kind as a letter),
the script, then the records as JSON data in ``<script type="application/json">``
blocks of :data:`CHUNK` records each. The script shows the first window once the
first block is parsed, parses a block only when it is needed and renders the
timeline a window at a time as it scrolls into view, so a 100 MB session's page is
usable before the browser has read it all; search and filters wait for the rest.

Inert by construction: every session text is in JSON data (``<`` written ``\\u003c``,
so no ``</script>`` can end a block) and the script puts it in the page with
``textContent`` only, never as HTML; :func:`model.inert` makes ANSI escapes and
bidi controls visible first. A Content-Security-Policy of ``default-src 'none'``
forbids every fetch, so even a bug cannot reach the network, and its ``script-src``
names the sha256 of the page's own two scripts (:data:`SCRIPTS`) and nothing else: an
inline script or event handler that escaped into the page (issue 34) does not run.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
from collections.abc import Iterator
from importlib import resources
from typing import Any

import orjson

from trajconv.snapshot.models import Record, Snapshot
from trajconv.views import model
from trajconv.views.model import Family

CHUNK = 250
#: a session of at most this many records is written into the page as HTML (the browser's
#: find and print see all of it, even without the script); a larger one is rendered by the
#: script a window at a time
EAGER_RECORDS = 500
NAMES = {
    "u": "user",
    "a": "assistant",
    "r": "reasoning",
    "c": "tool call",
    "o": "result",
    "s": "system",
    "b": "observation",
}
"""Records a data block holds; the page parses one block at a time."""
KIND_LETTERS = {
    "user": "u",
    "assistant": "a",
    "reasoning": "r",
    "tool-call": "c",
    "tool-result": "o",
    "system": "s",
    "observation": "b",
}
START = "trajconvStart()"
"""The page's second script: called after the first data block, it shows the first window."""
NO_SCRIPT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""The policy of a page with no script of its own (the diff page)."""


def _script_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def csp() -> str:
    """The page's policy: only its own scripts (by hash) run, no inline handler, no fetch."""
    hashes = " ".join(_script_hash(s) for s in (_asset("page.js"), START))
    return NO_SCRIPT_CSP.replace("script-src 'none'", f"script-src {hashes}")


def render(family: Family | Snapshot) -> str:
    return "".join(chunks(family))


def _asset(name: str) -> str:
    return resources.files("trajconv.views").joinpath(name).read_text("utf-8")


def _e(value: object) -> str:
    return html.escape(model.inert(str(value)), quote=True)


def chunks(family: Family | Snapshot) -> Iterator[str]:
    """The page in pieces, a data block at a time, for large sessions."""
    fam = family if isinstance(family, Family) else Family(family)
    snap = fam.snapshot
    members = _members(fam)
    yield (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{csp()}">'
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<meta name=generator content=trajconv><title>{_e(model.title(snap))}</title>"
        f"<style>{_asset('page.css')}</style></head><body>\n"
    )
    letters = _letters(snap)
    counts = {kind: letters.count(letter) for kind, letter in _first_seen(letters)}
    yield _header(snap, counts)
    yield _controls(counts)
    eager = len(snap.records) <= EAGER_RECORDS
    yield "<main id=timeline aria-live=polite>"
    if eager:
        yield from _static(snap)
    yield "</main><div id=sentinel aria-hidden=true></div>\n"
    yield _diagnostics(snap, "diagnostics")
    for i, member in enumerate(members[1:], start=1):
        if member.held:  # one the Snapshot holds was read with it: counted above
            yield (
                f"<section id=diagnostics-{i} class=diagnostics><h2>Diagnostics of sub-agent "
                f"{_e(member.snapshot.session.id)}</h2><p>read with the session: counted in "
                "<a href=#diagnostics>its diagnostics</a></p></section>\n"
            )
        else:
            yield _diagnostics(member.snapshot, f"diagnostics-{i}", child=True)
    yield _verify(snap)
    # What the script needs to know comes first, then the script, then the records: the
    # page shows its first window as soon as the first block is parsed, not the last.
    index = {id(m): i for i, m in enumerate(members)}
    meta = [
        _info(m, letters if i == 0 else _letters(m.snapshot), index) for i, m in enumerate(members)
    ]
    yield _json_block("meta", {"sessions": meta, "chunk": CHUNK, "eager": eager})
    yield f"<script>{_asset('page.js')}</script>\n"
    for i, member in enumerate(members):
        yield from _data(member, i)
    yield "</body></html>\n"


def _letters(snap: Snapshot) -> str:
    """Each record's kind as one letter (:data:`KIND_LETTERS`), in order."""
    return "".join(KIND_LETTERS[r.kind] for r in snap.records)


def _first_seen(letters: str) -> list[tuple[str, str]]:
    """(kind, letter) of the kinds present, in the order they first occur."""
    by_letter = {v: k for k, v in KIND_LETTERS.items()}
    order = sorted({ch: letters.index(ch) for ch in set(letters)}.items(), key=lambda x: x[1])
    return [(by_letter[ch], ch) for ch, _ in order]


def _members(fam: Family) -> list[Family]:
    """The session and every sub-agent below it, depth first (index 0 is the session)."""
    out = [fam]
    for child in fam.children:
        out.extend(_members(child))
    return out


def _header(snap: Snapshot, counts: dict[str, int]) -> str:
    rows = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
        for k, v in model.facts(snap, counts)
        if k not in ("Snapshot", "records")
    )
    kinds = ", ".join(f"{_e(k)} {n}" for k, n in counts.items())
    return (
        f"<header><h1>{_e(model.title(snap))}</h1><dl class=facts>{rows}"
        f"<dt>Snapshot</dt><dd><code id=snapshot-id>{_e(snap.id)}</code></dd>"
        f"<dt>records</dt><dd><span id=count>{len(snap.records)}</span> ({kinds})</dd>"
        "</dl></header>\n"
    )


def _controls(present: dict[str, int]) -> str:
    boxes = "".join(
        f'<label><input type=checkbox class=kind value="{k}" checked> {_e(k)}'
        f" <small>{present[k]}</small></label>"
        for k in KIND_LETTERS
        if k in present
    )
    return (
        "<nav id=controls><input id=search type=search placeholder='search the session "
        "(Enter)' aria-label=search> <span id=status></span>"
        f"<div id=kinds>{boxes}</div>"
        "<button id=expand type=button>unfold all</button> "
        "<button id=collapse type=button>fold all</button> "
        "<a href=#diagnostics>diagnostics</a> <a href=#verify>verify</a></nav>\n"
    )


def _diagnostics(snap: Snapshot, anchor: str, child: bool = False) -> str:
    where = "" if not child else f" of sub-agent {_e(snap.session.id)}"
    if not snap.diagnostics:
        rows = "<tr><td colspan=5>none: every native unit is in a record</td></tr>"
    else:
        rows = "".join(
            f"<tr class=sev-{_e(d.severity)}><td>{_e(d.severity)}</td><td><code>{_e(d.code)}"
            f"</code></td><td class=num>{d.count}</td><td>{_e(model.meaning(d))}</td>"
            f"<td>{_e(', '.join(d.samples))}</td></tr>"
            for d in snap.diagnostics
        )
    return (
        f"<section id={anchor} class=diagnostics><h2>Diagnostics{where}</h2><table><thead><tr>"
        "<th>severity</th><th>code</th><th>count</th><th>meaning</th><th>samples</th></tr>"
        f"</thead><tbody>{rows}</tbody></table></section>\n"
    )


def _verify(snap: Snapshot) -> str:
    n = len(snap.records)
    head = snap.records[n - 1].hash if n else None
    chain = (
        f"The last record's hash, the head of the chain, is <code>{_e(head)}</code>."
        if head
        else "It has no records."
    )
    return (
        "<section id=verify><h2>Verify</h2><p>This page shows Snapshot "
        f"<code>{_e(snap.id)}</code> ({_e(snap.source.harness)} session "
        f"<code>{_e(snap.session.id)}</code>). The page itself proves nothing; the Snapshot "
        "file does. <code>trajconv verify SNAPSHOT.json</code> recomputes each record's "
        "sha256 over its RFC&nbsp;8785 canonical JSON, chained to the previous one, and the "
        "id over the chain, the session facts and the artifact digests; it prints "
        f"<code>ok {_e(snap.id)}</code> when the file is this Snapshot. {chain} "
        "Each record below shows its own hash under its header.</p></section>\n"
    )


def _record(record: Record, names: dict[str, str]) -> dict[str, Any]:
    ev = record.evidence
    where = ev.artifact + (f":{ev.line}" if ev.line is not None else "")
    if ev.json_path:
        where += f" {ev.json_path}"
    out: dict[str, Any] = {
        "s": record.seq,
        "k": KIND_LETTERS[record.kind],
        "t": record.turn,
        "m": record.time,
        "i": model.inert(record.id),
        "h": record.hash,
        "e": model.inert(where),
    }
    if record.kind == "tool-call":
        names[record.call.id] = record.call.name
        out |= {
            "n": model.inert(record.call.name),
            "c": model.inert(record.call.id),
            "x": model.inert(model.arguments_text(record.call.arguments)),
        }
    elif record.kind == "tool-result":
        res = record.result
        out |= {
            "n": model.inert(names.get(res.call_id, "?")),
            "c": model.inert(res.call_id),
            "x": model.inert(res.output),
            "st": model.result_status(res),
            "f": model.failed(res),
        }
    else:
        out["x"] = model.inert(record.text)
        if m := getattr(record, "model", None):
            out["o"] = model.inert(m)
    return out


def _static(snap: Snapshot) -> Iterator[str]:
    """The records as the script's cards, written into the page (see :data:`EAGER_RECORDS`);
    whole texts, since nothing is rendered later."""
    names: dict[str, str] = {}
    last: object = ()
    for i, record in enumerate(snap.records):
        r = _record(record, names)
        turn = "none" if r["t"] is None else str(r["t"])
        if turn != last:
            last = turn
            label = "Outside a turn" if r["t"] is None else f"Turn {r['t']}"
            yield f'<div class=turn data-turn="{_e(turn)}" tabindex=0 role=button>{label}</div>'
        yield _card(r, i, turn)
    yield "\n"


def _card(r: dict[str, Any], i: int, turn: str) -> str:
    k = r["k"]
    if k == "c":
        who = "⚙ " + r["n"]
    elif k == "o":
        who = ("✗ result of " if r["f"] else "✓ result of ") + r["n"]
    else:
        who = NAMES[k]
    spans = [f"<span class=who>{_e(who)}</span>"]
    if "c" in r:
        spans.append(f'<span class="mono when">{_e(r["c"])} </span>')
    if "st" in r:
        spans.append(f"<span class=st>{_e(r['st'])} </span>")
    if k == "r":
        spans.append(f"<span class=note>{len(r['x']):,} characters </span>")
    if r.get("o"):
        spans.append(f"<span class=when>{_e(r['o'])} </span>")
    if r.get("m"):
        spans.append(f"<span class=when>{_e(r['m'])}</span>")
    cls = f"rec k-{k}" + (" failed" if k == "o" and r.get("f") else "")
    tag = "pre" if k in ("c", "o") else "div"
    prov = f"#{r['s']} · {r['i']} · {r['e']} · {r['h']}"
    return (
        f'<details class="{cls}" data-m=0 data-i={i} data-turn="{_e(turn)}"'
        + ("" if k == "r" else " open")
        + f'><summary>{"".join(spans)}</summary><div class="prov mono">{_e(prov)}</div>'
        + f"<{tag} class=body>{_e(r.get('x') or '')}</{tag}></details>"
    )


def _data(fam: Family, number: int) -> Iterator[str]:
    """The data blocks of one session (``number`` in the page's list)."""
    names: dict[str, str] = {}
    block: list[bytes] = []
    blocks = 0
    for record in fam.snapshot.records:
        block.append(orjson.dumps(_record(record, names)))
        if len(block) == CHUNK:
            yield _block(f"d{number}-{blocks}", block, start=number == 0 and blocks == 0)
            blocks += 1
            block = []
    if block:
        yield _block(f"d{number}-{blocks}", block, start=number == 0 and blocks == 0)


def _info(fam: Family, letters: str, index: dict[int, int]) -> dict[str, Any]:
    """What the page needs to know about one session before its records."""
    snap = fam.snapshot
    under: dict[str, list[int]] = {}
    for child in fam.children:
        if child.call_id is not None:
            under.setdefault(model.inert(child.call_id), []).append(index[id(child)])
    return {
        "id": model.inert(snap.session.id),
        "title": model.inert(model.title(snap)),
        "count": len(letters),
        "kinds": letters,
        "how": fam.how,
        "under": under,
        "unplaced": [index[id(c)] for c in fam.unplaced],
    }


def _block(name: str, items: list[bytes], start: bool = False) -> str:
    body = b"[" + b",".join(items) + b"]"
    block = f'<script type="application/json" id="{name}">{_safe(body)}</script>\n'
    # after the session's first block, the page can show its first window
    return block + (f"<script>{START}</script>\n" if start else "")


def _json_block(name: str, value: Any) -> str:
    return f'<script type="application/json" id="{name}">{_safe(orjson.dumps(value))}</script>\n'


def _safe(data: bytes) -> str:
    """JSON text that cannot end its script element or open a comment in it."""
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").decode("utf-8")
