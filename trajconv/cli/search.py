"""``trajconv search``: every record of every session, through the index in
:mod:`trajconv.search`. Exit codes as grep's: 0 hits, 1 none (nothing on stdout), 2 usage."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from trajconv.cli.echo import echo, json_text
from trajconv.cli.options import ONLY_CWD, SINCE
from trajconv.errors import TrajconvError, UsageError


def _open_argv(hit: Any) -> list[str]:
    """The command that shows the session a hit is in."""
    if hit.store is not None:
        return ["trajconv", "show", hit.store, "--session", hit.session_id]
    return ["trajconv", "show", "--from", hit.harness, hit.path, "--session", hit.session_id]


def _marked(snippet: str, marks: Any, color: bool) -> str:
    from trajconv.views.model import inert

    out: list[str] = []
    at = 0
    for start, end in marks:
        out.append(inert(snippet[at:start]))
        found = inert(snippet[start:end])
        out.append(click.style(found, bold=True, fg="red") if color else found)
        at = end
    out.append(inert(snippet[at:]))
    return "".join(out)


def run_search(
    query: str,
    *,
    harnesses: tuple[str, ...] = (),
    homes: tuple[Path, ...] = (),
    stores: tuple[str, ...] = (),
    cwd: str | None = None,
    since: str | None = None,
    kinds: tuple[str, ...] = (),
    limit: int | None = 20,
    syntax: bool = False,
    redact: bool = False,
    index: Path | None = None,
) -> tuple[list[Any], Any]:
    """Bring the index up to date for the places searched, then ask it; an index SQLite
    finds damaged on the way is rebuilt once."""
    import sqlite3

    from trajconv import search as engine

    def once() -> tuple[list[Any], Any]:
        from trajconv import find
        from trajconv.codecs.base import Limits

        since_at = find.parse_since(since) if since is not None else None
        docs: list[engine.Doc] = []
        places: list[str] = []
        with contextlib.ExitStack() as stack:
            if homes or not stores:
                for home in homes or (None,):
                    if home is not None and not home.is_dir():
                        raise UsageError(f"--home {home}: no such folder")
                    found, where, _coverage = engine.home_docs(
                        harnesses or None, home, limits=Limits.from_env()
                    )
                    docs.extend(found)
                    places.extend(where)
            for location in stores:
                stored, at, store = engine.store_docs(location)
                stack.callback(store.close)
                docs.extend(stored)
                places.append(at)
            with engine.Index.open(index, redact=redact) as idx:
                refreshed, scope = idx.refresh(docs, places)
                hits = idx.query(
                    query,
                    scope,
                    kinds=kinds,
                    since=since_at,
                    cwd=cwd,
                    limit=limit,
                    syntax=syntax,
                )
        return hits, refreshed

    try:
        return once()
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):  # busy or locked: not damage
            where = index if index is not None else engine.default_index_path(redact)
            raise TrajconvError(f"the search index {where} cannot be used now: {exc}") from None
        engine.remove_index(index if index is not None else engine.default_index_path(redact))
        hits, done = once()
        done.rebuilt = True
        return hits, done


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--harness", "harnesses", multiple=True, help="only this harness (repeat for several)"
)
@click.option(
    "--home",
    "homes",
    multiple=True,
    type=click.Path(path_type=Path),
    help="search this home (a user home or a harness folder) instead of the default ones; "
    "repeat for several",
)
@click.option(
    "--store",
    "stores",
    multiple=True,
    help="search this archive store (a folder or URL); repeat for several",
)
@ONLY_CWD
@SINCE
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(
        ["user", "assistant", "tool-call", "tool-result", "reasoning", "system", "observation"]
    ),
    help="only records of this kind (repeat for several)",
)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--syntax",
    is_flag=True,
    help="pass QUERY to the search engine (SQLite FTS5) as its own query syntax",
)
@click.option(
    "--redact",
    is_flag=True,
    help="index and show every text with its secrets replaced by [REDACTED:<kind>] (an "
    "index of its own: no secret is kept in clear in the cache)",
)
@click.option("--json", "as_json", is_flag=True, help="the hits as a JSON list")
def search(query: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Search every record of every session (user and assistant text, reasoning, tool calls
    and their output) of the native homes, or of --home and --store.

    QUERY is text, not syntax: every word must occur (case-insensitively, also inside a
    longer word: `upload` finds `test_upload.py`); quotes, `*`, `AND`, `-` are searched as
    typed. The index (in the user's cache folder, or TRAJCONV_SEARCH_INDEX) is brought up
    to date on each search: only sessions whose files changed are read again.

    \b
    Exit codes: 0 hits, 1 no hit (nothing on stdout), 2 usage error.
    """
    from trajconv.errors import EXIT_USAGE

    text = " ".join(query)
    try:
        hits, refreshed = run_search(
            text, **options
        )  # each option is named as run_search's keyword
    except UsageError as exc:
        echo(f"trajconv search: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    for who, reason in refreshed.skipped:
        echo(f"# skipped {who}: {reason}", err=True)
    if refreshed.rebuilt:
        click.echo("# the search index was damaged and has been rebuilt", err=True)
    if refreshed.indexed:
        click.echo(
            f"# indexed {refreshed.indexed} sessions ({refreshed.records} records), "
            f"{refreshed.unchanged} unchanged",
            err=True,
        )
    if as_json:
        if hits:
            rows = [dict(h.to_json(), open=_open_argv(h)) for h in hits]
            click.echo(json_text(rows))
        sys.exit(0 if hits else 1)
    from trajconv.views.model import inert

    color = sys.stdout.isatty()
    for h in hits:
        where = f" (sub-agent {h.child})" if h.child else ""
        head = inert(
            f"{h.harness} {h.session_id}{where} {h.time or '-'} {h.kind}#{h.seq} "
            f"{h.title or 'untitled'}"
        )
        click.echo(click.style(head, bold=True) if color else head)
        click.echo("    " + _marked(h.snippet, h.marks, color))
        click.echo("    " + inert(shlex.join(_open_argv(h))))
    sys.exit(0 if hits else 1)
