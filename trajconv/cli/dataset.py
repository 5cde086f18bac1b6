"""``trajconv dataset``: sessions as training data (:mod:`trajconv.dataset`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command()
@click.argument("sources", nargs=-1)
@click.option(
    "--format",
    "fmt",
    required=True,
    help="openai (JSONL messages), sharegpt (JSONL), parquet (one row per session), or a "
    "document codec such as atif (one document per session)",
)
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True, help="a new folder")
@click.option(
    "--home",
    multiple=True,
    type=click.Path(path_type=Path),
    help="every session of this native home (repeat for several)",
)
@click.option(
    "--store", multiple=True, help="every session of this archive store, a folder or URL (repeat)"
)
@click.option("--harness", multiple=True, help="only this harness (repeat for several)")
@click.option(
    "--no-redact",
    is_flag=True,
    help="write secrets as they are (redaction is on by default; see README, Training data)",
)
@click.option(
    "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="worker processes"
)
@click.option(
    "--scheduler",
    default=None,
    metavar="tcp://HOST:PORT",
    help="run the work on this Dask distributed scheduler (pip install 'trajconv[dask]')",
)
@click.option("--json", "as_json", is_flag=True, help="the summary as JSON")
def dataset(
    sources: tuple[str, ...],
    fmt: str,
    out: Path,
    home: tuple[Path, ...],
    store: tuple[str, ...],
    harness: tuple[str, ...],
    no_redact: bool,
    jobs: int,
    scheduler: str | None,
    as_json: bool,
) -> None:
    """Write sessions as training or evaluation data: one line or row per session, each
    sub-agent its own row linked to its parent, and OUT/manifest.json saying what each
    row holds, what was left out and what was redacted.

    SOURCES are paths or session ids (as `convert` takes them) and stores; --home and
    --store add every session of a home or store.

    Secrets (keys, tokens, passwords, private keys) in every text are replaced by
    [REDACTED:<kind>] unless --no-redact; a text that cannot be scanned is dropped.
    """
    from trajconv import dataset as ds
    from trajconv.errors import UsageError

    if fmt not in ds.formats():
        raise UsageError(f"--format {fmt!r}: one of {', '.join(ds.formats())}")
    if not (sources or home or store):
        raise UsageError("name what to export: SOURCES, --home DIR or --store STORE")
    units = ds.units_of(sources, homes=home, stores=store, harnesses=harness or None)
    if not units:
        raise UsageError("no session found in what was named")
    tty = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if tty:
            click.echo(f"\r{done}/{total} sessions", err=True, nl=done == total)

    summary = ds.build(
        units, fmt, out, redact=not no_redact, jobs=jobs, scheduler=scheduler, progress=progress
    )
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2))
        return
    click.echo(
        f"wrote {summary.rows} rows of {summary.sessions} sessions as {fmt} to {out} "
        f"(manifest: {out / 'manifest.json'})"
    )
    if summary.failed:
        click.echo(f"  {summary.failed} sessions could not be read (named in the manifest)")
    if summary.redactions:
        counts = ", ".join(f"{k} x{v}" for k, v in sorted(summary.redactions.items()))
        click.echo(f"  redacted: {counts}")
    if summary.left_out:
        counts = ", ".join(f"{k} x{v}" for k, v in sorted(summary.left_out.items()))
        click.echo(f"  left out: {counts}")
