"""The ``trajconv`` command line: a thin click layer over :mod:`trajconv.api`.

Exit codes come from :mod:`trajconv.errors` (0 ok, 1 bad input, 2 usage, 3 refused).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from trajconv.cli.storepath import StorePath
from trajconv.errors import EXIT_CODES, EXIT_USAGE, TrajconvError

F = TypeVar("F", bound=Callable[..., Any])


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def limit_options(func: F) -> F:
    """Reader limits as options; each also reads TRAJCONV_<NAME> from the environment."""
    for name, help_text in (
        ("max_session_bytes", "largest native session to read, in bytes"),
        ("max_line_bytes", "largest single line/event/row/blob, in bytes"),
        ("max_records", "most records in one Snapshot"),
        ("max_expansion", "most bytes projected per native byte read (repeated blobs)"),
    ):
        func = click.option(
            f"--{name.replace('_', '-')}", name, type=int, default=None, help=help_text
        )(func)
    return func


def _limits(kwargs: dict[str, Any]) -> Any:
    from trajconv.codecs.base import Limits

    return Limits.from_env(
        **{
            k: kwargs.pop(k, None)
            for k in ("max_session_bytes", "max_line_bytes", "max_records", "max_expansion")
        }
    )


def write_options(func: F) -> F:
    func = click.option(
        "--allow-lossy",
        is_flag=True,
        help="write even when the target cannot continue the session "
        "truthfully; what is left out is reported",
    )(func)
    func = click.option(
        "--cwd",
        default=None,
        help="working directory for targets that need one, when the source has none",
    )(func)
    func = click.option(
        "--fx-schema",
        type=click.Choice(["1", "4"]),
        default=None,
        help="fx target layout: 1 (legacy, default) or 4 (current)",
    )(func)
    return func


def _write_opts(kwargs: dict[str, Any]) -> dict[str, Any]:
    opts = {"cwd": kwargs.pop("cwd"), "fx_schema": kwargs.pop("fx_schema")}
    return {k: (int(v) if k == "fx_schema" else v) for k, v in opts.items() if v is not None}


def _diag_lines(diagnostics: Any, side: str) -> list[str]:
    return [f"  {side:<6} {d.severity:<7} {d.code} x{d.count}" for d in diagnostics]


def _report_export(export: Any, as_json: bool, snapshot: Any = None) -> None:
    if as_json:
        _emit_json(
            {
                "snapshot_id": export.snapshot_id,
                "out": str(export.out_dir),
                "manifest": export.manifest,
                "reader_diagnostics": [d.model_dump() for d in snapshot.diagnostics]
                if snapshot is not None
                else [],
            }
        )
        return
    out = export.out_dir.resolve()
    resume = " ".join(shlex.quote(a) for a in export.resume_argv)
    click.echo(f"wrote {export.target} session {export.session_id} to {out}")
    click.echo(f"  snapshot:  {export.snapshot_id}")
    click.echo(f"  install:   python {shlex.quote(str(out / 'prepare.py'))}")
    click.echo(f"  resume:    {resume}")
    click.echo(f"  try first: HOME={shlex.quote(str(out / 'home'))} {resume}")
    for note in export.manifest.get("notes", []):
        click.echo(f"  note:      {note}")
    lines = (_diag_lines(snapshot.diagnostics, "read") if snapshot is not None else []) + (
        _diag_lines(export.diagnostics, "write")
    )
    if lines:
        click.echo("diagnostics (counts; `trajconv diagnostics` explains each code):")
        for line in lines:
            click.echo(line)


class _Cli(click.Group):
    """Turns trajconv's own errors into a one-line message and the documented exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TrajconvError as exc:
            click.echo(f"trajconv: error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trajconv")
def cli() -> None:
    """Move a saved AI coding-agent session from one harness to another.

    Read a native session into a hashed Snapshot, write it as native files for
    another harness plus a prepare script, and resume it there.

    \b
    Exit codes: 0 ok, 1 bad input, 2 usage error, 3 refused (not portable / would overwrite).
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def codecs(as_json: bool) -> None:
    """List the registered codecs (harnesses) and what each can do."""
    from trajconv.codecs import registry

    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "aliases": list(c.aliases),
            "read": c.can_read,
            "write": c.can_write,
            "discover": c.can_discover,
            "description": c.description,
        }
        for c in registry.all_codecs()
    ]
    if as_json:
        _emit_json(rows)
        return
    for r in rows:
        caps = ",".join(k for k in ("read", "write", "discover") if r[k])
        aliases = f" ({', '.join(r['aliases'])})" if r["aliases"] else ""
        click.echo(f"{r['name']:<11} {caps:<20} {r['description']}{aliases}")


@cli.command()
@click.option("--from", "source", required=True, help="harness the session comes from")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Snapshot file (default: stdout)"
)
@click.option("--session", default=None, help="session id inside a home or store holding several")
@limit_options
def read(source: str, path: Path, output: Path | None, session: str | None, **kw: Any) -> None:
    """Read a native session into a Snapshot."""
    import trajconv
    from trajconv.snapshot import io

    snap = trajconv.read(source, path, session=session, limits=_limits(kw))
    if output is None:
        io.write(snap, sys.stdout.buffer)
    else:
        io.dump(snap, output)
        click.echo(f"wrote {output} ({len(snap.records)} records, {snap.id})", err=True)


@cli.command()
@click.option("--to", "target", required=True, help="harness to write for")
@click.argument("snapshot", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path), help="export folder")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@write_options
def write(target: str, snapshot: Path, out: Path, as_json: bool, **kw: Any) -> None:
    """Write a Snapshot as an export for another harness (native files + prepare.py)."""
    import trajconv
    from trajconv.store.local import load_input

    snap = load_input(snapshot)  # a Snapshot in a store gets its artifacts from the store
    export = trajconv.write(snap, target, out, allow_lossy=kw.pop("allow_lossy"), **_write_opts(kw))
    _report_export(export, as_json)


def _snapshot_input(path: Path, session: str | None, source: str | None) -> Any:
    """PATH as a Snapshot file or an archive store, for ``convert`` without ``--from``.

    A Snapshot is the central format, not a harness, so it is not a codec: ``--from``
    is left out (or given as ``snapshot``) and the file or store is loaded as is.
    """
    from trajconv.errors import UsageError
    from trajconv.store import is_store, is_url, load_input

    if source is None and not is_url(path):
        looks_stored = is_store(path) if path.is_dir() else _sniff_snapshot(path)
        if not looks_stored:
            raise UsageError(
                f"{path} is not a Snapshot file or a trajconv store; say which harness "
                "it comes from with --from (trajconv codecs lists them)"
            )
    return load_input(path, session)


def _sniff_snapshot(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"trajconv.snapshot/' in head


@cli.command()
@click.option(
    "--from",
    "source",
    default=None,
    help="harness the session comes from; leave out (or say 'snapshot') when PATH is "
    "a Snapshot file or an archive store",
)
@click.option("--to", "target", required=True, help="harness to write for")
@click.argument("path", type=StorePath(exists=True, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path), help="export folder")
@click.option("--session", default=None, help="session id inside a home or store holding several")
@click.option(
    "--snapshot",
    "snapshot_out",
    type=click.Path(path_type=Path),
    default=None,
    help="also keep the Snapshot in this file",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@write_options
@limit_options
def convert(
    source: str | None,
    target: str,
    path: Path,
    out: Path,
    session: str | None,
    snapshot_out: Path | None,
    as_json: bool,
    **kw: Any,
) -> None:
    """Read a native session and write it for another harness (read, then write).

    PATH may also be a Snapshot file or an archive store (with --session: a session
    id, whose latest Snapshot is used, or a Snapshot id); --from is then not needed.
    """
    import trajconv
    from trajconv.snapshot import io

    limits = _limits(kw)
    if source is None or source.strip().lower() == "snapshot":
        snap = _snapshot_input(path, session, source)
    else:
        snap = trajconv.read(source, path, session=session, limits=limits)
    if snapshot_out is not None:
        io.dump(snap, snapshot_out)
    export = trajconv.write(snap, target, out, allow_lossy=kw.pop("allow_lossy"), **_write_opts(kw))
    _report_export(export, as_json, snap)


@cli.command()
@click.argument("file", type=StorePath(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def verify(file: Path, as_json: bool) -> None:
    """Recompute a Snapshot's hashes; name the first broken record or artifact.

    FILE may be an archive store (a folder): every Snapshot, every artifact digest
    and the index are checked.
    """
    from trajconv.snapshot import io
    from trajconv.snapshot.fileload import verify_streamed
    from trajconv.store import artifact_check, artifact_resolver, is_url

    if is_url(file) or file.is_dir():
        _verify_store(file, as_json)
        return
    # a stored Snapshot's artifacts are in its store
    checked = verify_streamed(file, stored=artifact_check(file))  # only one that verifies
    if checked is not None:
        report = io.VerifyReport(True, checked.id, checked.records, checked.artifacts)
    else:  # parsed whole, so the first broken record or artifact is named
        doc = io.read_document(file)
        io.validate_document(doc, str(file))
        report = io.verify_document(doc, artifact_resolver(file))
    if as_json:
        _emit_json(
            {
                "file": str(file),
                "ok": report.ok,
                "id": report.snapshot_id,
                "records": report.records,
                "artifacts": report.artifacts,
                "problems": report.problems,
            }
        )
    elif report.ok:
        click.echo(
            f"ok {report.snapshot_id} ({report.records} records, {report.artifacts} artifacts)"
        )
    else:
        for p in report.problems:
            click.echo(f"{file}: {p}", err=True)
    if not report.ok:
        sys.exit(1)


@cli.command()
@click.argument("out", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="home folder to install into (default: yours)",
)
@click.option("--dry-run", is_flag=True, help="print the plan, write nothing")
def prepare(out: Path, home: Path | None, dry_run: bool) -> None:
    """Install an export (runs OUT/prepare.py with the same options)."""
    import subprocess

    argv = [sys.executable, str(out / "prepare.py")]
    if home is not None:
        argv += ["--home", str(home)]
    if dry_run:
        argv.append("--dry-run")
    sys.exit(subprocess.call(argv))


@cli.command()
def schema() -> None:
    """Print the JSON Schema of the Snapshot format (trajconv.snapshot/1)."""
    from importlib import resources

    click.echo(
        resources.files("trajconv.snapshot").joinpath("schema.json").read_text("utf-8"), nl=False
    )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def diagnostics(as_json: bool) -> None:
    """List every diagnostic code with its severity and meaning."""
    from trajconv.snapshot.diagnostics import REGISTRY

    rows: list[dict[str, Any]] = [
        {
            "code": c.code,
            "severity": c.severity,
            "side": c.side,
            "counts_units": c.units,
            "meaning": c.meaning,
        }
        for c in REGISTRY.values()
    ]
    if as_json:
        _emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['code']:<28} {r['severity']:<8} {r['side']:<7} {r['meaning']}")


@cli.command()
@click.option("--harness", default=None, help="only this harness")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="native home to list instead of the default one",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def discover(harness: str | None, home: Path | None, as_json: bool) -> None:
    """List sessions in native homes."""
    from trajconv.codecs import registry

    codecs_ = [registry.get(harness)] if harness else registry.all_codecs()
    rows: list[dict[str, Any]] = []
    coverage: list[dict[str, Any]] = []
    for c in codecs_:
        if not c.can_discover:
            continue
        root = home if home is not None else c.default_home()
        if not root.exists():
            coverage.append({"harness": c.name, "home": str(root), "status": "missing root"})
            continue
        try:
            refs = c.discover(root)
        except (OSError, TrajconvError) as exc:
            coverage.append(
                {"harness": c.name, "home": str(root), "status": f"unreadable root: {exc}"}
            )
            continue
        coverage.append(
            {"harness": c.name, "home": str(root), "status": "listable", "sessions": len(refs)}
        )
        rows.extend(r.to_json() for r in refs)
    if as_json:
        _emit_json({"coverage": coverage, "sessions": rows})
        return
    for r in rows:
        click.echo(
            f"{r['harness']:<10} {r['session_id']:<40} {r['updated_at'] or '-':<25} "
            f"{r['title'] or '-'}"
        )
    for cov in coverage:
        extra = f" ({cov['sessions']} sessions)" if "sessions" in cov else ""
        click.echo(f"# {cov['harness']}: {cov['status']}{extra} at {cov['home']}", err=True)


@cli.command()
@click.option(
    "--write",
    "write_",
    is_flag=True,
    help="run every pair on every fixture (and the native loaders installed here) "
    "and regenerate evidence/parity.json and evidence/matrix.md",
)
@click.option(
    "--check",
    "check_",
    is_flag=True,
    help="exit 1 when the evidence is stale, a pair lost records, or a pair regressed",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def parity(write_: bool, check_: bool, as_json: bool) -> None:
    """Which harness pairs are supported, and how each claim was verified."""
    from trajconv import parity as parity_mod

    if check_:
        problems = parity_mod.check()
        if as_json:
            _emit_json({"ok": not problems, "problems": problems})
        else:
            for p in problems:
                click.echo(f"parity: {p}", err=True)
            if not problems:
                click.echo("parity evidence is current")
        if problems:
            sys.exit(1)
        return
    if write_:
        from rich.console import Console

        from trajconv.loaders.verify import check_export

        console = Console(stderr=True)
        with console.status("running the conversion matrix") as status:
            data = parity_mod.build(
                loader_check=check_export, progress=lambda msg: status.update(msg)
            )
        parity_mod.write(data)
        lost = sum(1 for p in data["pairs"] if any(v["lost"] for v in p["kinds"].values()))
        click.echo(
            f"wrote {parity_mod.EVIDENCE / 'parity.json'} and matrix.md "
            f"({len(data['pairs'])} pair runs, {lost} with losses)",
            err=True,
        )
    else:
        data = parity_mod.load_evidence()
    if as_json:
        _emit_json(data)
        return
    click.echo(parity_mod.render_markdown(data), nl=False)


def _verify_store(store: Path | str, as_json: bool) -> None:
    from trajconv.store import verify_store

    report = verify_store(store)
    if as_json:
        _emit_json(report.to_json())
    elif report.ok:
        click.echo(
            f"ok {store}: {report.snapshots} Snapshots, {report.artifacts} artifacts, "
            f"{report.index_rows} index rows, {report.sessions} sessions"
        )
    else:
        for p in report.problems:
            click.echo(f"{store}: {p}", err=True)
    if not as_json:
        for note in report.notes:
            click.echo(f"# note: {note}", err=True)
    if not report.ok:
        sys.exit(1)


class _ArchiveGroup(click.Group):
    """``trajconv archive STORE`` is ``trajconv archive run STORE``; the other
    subcommands are named first (a store literally called ``log`` needs ``run``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


@cli.group(cls=_ArchiveGroup)
def archive() -> None:
    """Keep every session of this machine's native homes in one store.

    \b
    trajconv archive STORE               snapshot what changed (same as `archive run`)
    trajconv archive log STORE [SESSION] a session's Snapshot history
    trajconv archive export STORE FILE   the store as one file with a checksum manifest
    trajconv archive import FILE STORE   unpack it into a new store (refuses a damaged file)
    trajconv verify STORE                check every Snapshot, artifact and the index
    """


def _archive_progress(enabled: bool) -> Any:
    """A rich progress bar on stderr with the counts, or a no-op."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("archive"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("archive", total=None, counts="discovering")

    def tick(p: Any) -> None:
        counts = "  ".join(f"{k} {v}" for k, v in p.counts.items() if v)
        bar.update(task, completed=p.done, total=p.total or None, counts=counts)

    @contextlib.contextmanager
    def running() -> Any:
        with bar:
            yield tick

    return running()


@archive.command("run")
@click.argument("store", type=StorePath(file_okay=False, path_type=Path))
@click.option("--harness", default=None, help="only this harness")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="native home to archive instead of each harness's default one",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="read N sessions in parallel")
@click.option("--json", "as_json", is_flag=True, help="machine-readable summary")
@limit_options
def archive_run(
    store: Path, harness: str | None, home: Path | None, jobs: int, as_json: bool, **kw: Any
) -> None:
    """Snapshot every changed session of the native homes into STORE.

    A session whose files have the same size, mtime and inode as when it was last
    archived is skipped without being read. A new Snapshot is recorded as `extends`
    when the previous one's record chain is a prefix of it, else `diverged`; older
    Snapshots are kept. Native homes are only read.
    """
    from trajconv.harvest import archive as run_archive

    with _archive_progress(sys.stderr.isatty()) as tick:
        summary = run_archive(
            store, harness=harness, home=home, jobs=jobs, limits=_limits(kw), progress=tick
        )
    if as_json:
        _emit_json(summary.to_json())
    else:
        counts = summary.counts
        click.echo(
            f"archived {len(summary.outcomes)} sessions into {store} in {summary.seconds:.2f} s: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
        )
        click.echo(
            f"  wrote {summary.snapshots_written} Snapshots, {summary.artifacts_written} "
            f"artifacts ({summary.bytes_written} bytes)"
        )
        for o in summary.outcomes:
            if o.status in ("extends", "diverged"):
                click.echo(f"  {o.status:<9} {o.harness} {o.session_id} {o.snapshot_id}")
        for cov in summary.coverage:
            extra = f" ({cov['sessions']} sessions)" if "sessions" in cov else ""
            click.echo(f"# {cov['harness']}: {cov['status']}{extra} at {cov['home']}", err=True)
    for o in summary.failed:
        click.echo(f"failed {o.harness} {o.session_id}: {o.error}", err=True)
    if not summary.ok:
        sys.exit(1)


@archive.command("log")
@click.argument("store", type=StorePath(exists=True, file_okay=False, path_type=Path))
@click.argument("session", required=False)
@click.option("--harness", default=None, help="only this harness")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def archive_log(store: Path, session: str | None, harness: str | None, as_json: bool) -> None:
    """List archived sessions, or one SESSION's Snapshot history (oldest first)."""
    from trajconv.errors import UsageError
    from trajconv.store import open_store

    with open_store(store) as st:
        if session is None:
            sessions = [s for s in st.sessions() if harness is None or s["harness"] == harness]
            if as_json:
                _emit_json(sessions)
                return
            for s in sessions:
                click.echo(
                    f"{s['harness']:<10} {s['session_id']:<40} {s['snapshots']:>3} snapshot(s)  "
                    f"{s['latest_relation']:<9} {s['records']:>6} records  {s['archived_at']}"
                )
            return
        rows = st.rows(session=session, harness=harness)
    if not rows:
        raise UsageError(f"no session {session!r} in {store}")
    if as_json:
        _emit_json([r.to_json() for r in rows])
        return
    for r in rows:
        facts = "  (session facts changed)" if r.facts_changed else ""
        click.echo(
            f"{r.archived_at}  {r.relation:<9} {r.snapshot_id}  {r.records:>6} records  "
            f"{r.harness}{facts}"
        )


@archive.command("export")
@click.argument("store", type=StorePath(exists=True, file_okay=False, path_type=Path))
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def archive_export(store: Path, file: Path, as_json: bool) -> None:
    """Write STORE as one .tar.gz FILE with a sha256 manifest (the store must verify)."""
    from trajconv.store import export_store

    moved = export_store(store, file)
    if as_json:
        _emit_json(moved.to_json())
        return
    click.echo(
        f"exported {store} to {file}: {moved.files} files, {moved.bytes} bytes "
        f"({moved.snapshots} Snapshots, {moved.index_rows} index rows)"
    )


@archive.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("store", type=StorePath(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def archive_import(file: Path, store: Path, as_json: bool) -> None:
    """Unpack an exported FILE into a new STORE; a damaged file is refused."""
    from trajconv.store import import_store

    moved = import_store(file, store)
    if as_json:
        _emit_json(moved.to_json())
        return
    click.echo(
        f"imported {file} into {store}: {moved.files} files, {moved.bytes} bytes "
        f"({moved.snapshots} Snapshots, {moved.index_rows} index rows); verified"
    )


def main() -> None:
    cli.main(prog_name="trajconv")


__all__ = ["EXIT_CODES", "EXIT_USAGE", "cli", "main"]


if __name__ == "__main__":
    main()
