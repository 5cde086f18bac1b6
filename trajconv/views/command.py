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
) -> None:
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
