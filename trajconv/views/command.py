"""``trajconv show``: load what to show, render it, page it or write it.

Kept out of ``trajconv/cli/main.py`` so the command there is only its options.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from trajconv.cli.echo import echo
from trajconv.codecs.base import Limits
from trajconv.errors import RefusedError, UsageError
from trajconv.views import chunks, diff, load, model


def show(
    *,
    path: str | None,
    source: str | None,
    session: str | None,
    latest: bool,
    fmt: str,
    output: Path | None,
    full: bool,
    diff_paths: tuple[Path, Path] | None,
    as_json: bool,
    limits: Limits,
    redact: bool = False,
    grep: str | None = None,
) -> None:
    if grep is not None:
        if diff_paths or session is not None or latest:
            raise UsageError("--grep picks the session: it takes no --session, --latest or --diff")
        path, source, session = _grep_pick(path, source, grep)
    if diff_paths:
        if path is not None or source is not None or session is not None or latest:
            raise UsageError("--diff A B takes no PATH, --from, --session or --latest")
        _show_diff(diff_paths, fmt, output, full, as_json)
        return
    if path is None and session is None and not latest:
        raise UsageError(
            "say what to show: trajconv show PATH, a session id or prefix, --latest (or --diff A B)"
        )
    fam = _family(path, source, session, latest, limits)
    if grep is not None:
        _name_records(fam.snapshot, grep)
    if redact:
        fam = _redacted(fam)
    if as_json:
        from trajconv.snapshot import io

        if output is not None:
            _refuse_existing(output)
            io.dump(fam.snapshot, output)
        else:
            io.write(fam.snapshot, sys.stdout.buffer)
        return
    if output is not None:
        _write(output, chunks(fam, fmt, full=full))
        echo(f"wrote {output} ({fmt}, {len(fam.snapshot.records)} records)", err=True)
        return
    if fmt == "text" and interactive():
        width = shutil.get_terminal_size().columns
        with _less_shows_colour():
            click.echo_via_pager(chunks(fam, fmt, full=full, width=width, color=True), color=True)
        return
    for piece in chunks(fam, fmt, full=full):
        click.echo(piece, nl=False)


@contextlib.contextmanager
def _less_shows_colour() -> Iterator[None]:
    """``less`` (click's pager) shows colour codes as raw escapes unless told ``-R``: add it
    to ``LESS`` for the pager, keeping the user's own options."""
    before = os.environ.get("LESS")
    if before is None or "R" not in before.lstrip("-"):
        os.environ["LESS"] = f"{before} -R" if before else "-R"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LESS", None)
        else:
            os.environ["LESS"] = before


def interactive() -> bool:
    """Standard output is a terminal: page the text view in colour."""
    return sys.stdout.isatty()


def _redacted(fam: model.Family) -> model.Family:
    """The family with every session's text redacted (``show --redact``)."""
    from trajconv.redact import redacted

    kids = tuple(_redacted(kid) for kid in fam.children)
    return model.Family(redacted(fam.snapshot), fam.call_id, fam.how, kids)


def _family(
    path: str | None, source: str | None, session: str | None, latest: bool, limits: Limits
) -> model.Family:
    from trajconv import find

    loaded = find.load(path, source=source, session=session, latest=latest, limits=limits)
    if loaded.note is not None:
        click.echo(loaded.note, err=True)
    if loaded.harness is None:
        if loaded.stored:
            return load.store_family(Path(loaded.path), loaded.snapshot)
        return model.Family(loaded.snapshot)
    return load.native_family(loaded.harness, Path(loaded.path), loaded.snapshot, limits)


def _grep_pick(path: str | None, source: str | None, text: str) -> tuple[str, str, str]:
    """``(path, harness, session id)`` of the newest session ``discover --grep TEXT`` lists
    (of the default homes, or of the home ``path``; ``source`` narrows to a harness)."""
    from trajconv import find, search

    home = Path(path) if path is not None else None
    if home is not None and not home.is_dir():
        raise UsageError(f"--grep: PATH is the home to look in, and {home} is not a folder")
    listing = find.list_sessions([source] if source is not None else None, home)
    found, done = search.grep_refs(listing, listing.sessions, text)
    for who, reason in done.skipped:
        echo(f"# --grep skipped {who}: {reason}", err=True)
    if not found:
        where = f" in {home}" if home is not None else ""
        raise UsageError(f"--grep: no session{where} holds {text!r} (in its title or a record)")
    ref = found[0]
    more = (
        f" (the newest of {len(found)}: `trajconv discover --grep` lists them)"
        if len(found) > 1
        else ""
    )
    echo(f"# --grep {text!r}: {find.describe(ref)}{more}", err=True)
    return str(ref.path), ref.harness, ref.session_id


def _name_records(snapshot: Any, text: str) -> None:
    """Name on stderr the shown session's records that hold ``text`` (a session found by
    its title alone may have none)."""
    from trajconv import search

    held = search.records_holding(snapshot, text)
    if not held:
        echo(f"# --grep: no record holds {text!r} (its title does)", err=True)
        return
    where = ", ".join(f"{model.turn_label(r.get('turn'))} {r['kind']}" for r in held[:20])
    more = f" and {len(held) - 20} more" if len(held) > 20 else ""
    echo(f"# --grep: {len(held)} records hold {text!r}: {where}{more}", err=True)


def _show_diff(
    paths: tuple[Path, Path], fmt: str, output: Path | None, full: bool, as_json: bool
) -> None:
    a, b = (load.diff_side(p) for p in paths)
    d = diff.diff(a.snapshot, b.snapshot, a.writer + b.writer, full=full)
    if as_json:
        import json

        text = json.dumps(diff.to_json(d), indent=2, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        text = diff.render_markdown(d)
    elif fmt == "html":
        text = diff.render_html(d)
    else:
        color = output is None and interactive()
        width = shutil.get_terminal_size().columns if color else 100
        text = diff.render_text(d, width=width, color=color)
    if output is not None:
        _write(output, [text])
        echo(f"wrote {output} ({diff.summary(d)})", err=True)
    else:
        click.echo(text, nl=False)


def _write(output: Path, pieces: Iterable[str]) -> None:
    """Write ``pieces`` to ``output`` through a temporary file; never replace a file."""
    _refuse_existing(output)
    folder = output.parent if str(output.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            for piece in pieces:
                fh.write(piece)
        try:
            os.link(tmp, output)  # fails if a file appeared meanwhile: never replaced
        except FileExistsError:
            _refuse_existing(output)
    finally:
        os.unlink(tmp)


def _refuse_existing(output: Path) -> None:
    if output.exists() or output.is_symlink():
        raise RefusedError(f"{output} exists; refusing to replace it (remove it or pick a name)")
