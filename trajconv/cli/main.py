"""The ``trajconv`` command line: a thin click layer over :mod:`trajconv.api`.

Exit codes come from :mod:`trajconv.errors` (0 ok, 1 bad input, 2 usage, 3 refused).
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from trajconv.cli.echo import echo, json_text
from trajconv.cli.options import ONLY_CWD, SINCE
from trajconv.cli.storepath import StorePath
from trajconv.errors import EXIT_CODES, EXIT_INTERRUPTED, EXIT_USAGE, TrajconvError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def _emit_json(value: Any) -> None:
    click.echo(json_text(value))


def _result(result: Any, as_json: bool, line: str) -> None:
    """What a command did: ``result.to_json()`` as JSON, or ``line``."""
    if as_json:
        _emit_json(result.to_json())
    else:
        echo(line)


def _complete_harness(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of harness names (``trajconv codecs``)."""
    from trajconv.codecs import registry

    return [n for n in registry.names() if n.startswith(incomplete)]


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
    """``--allow-lossy``, ``--cwd`` and, in a :class:`_WritingCommand`, every writing codec's
    own options (before ``--cwd``), which it makes only when it parses or shows its options."""
    func = click.option(
        "--allow-lossy",
        is_flag=True,
        help="write even when the target cannot continue the session "
        "truthfully; what is left out is reported",
    )(func)
    func = click.option(
        "--cwd",
        default=None,
        help="the session's working directory: for targets that need one when the source "
        "has none; with a session id or --latest, only sessions of that folder",
    )(func)
    return func


class _WritingCommand(click.Command):
    """A command taking :func:`write_options`: the codecs' own options are made when its
    parameters are first asked for (parsing its arguments, its ``--help``), so the other
    commands and ``trajconv --help`` load no codec (issue 38)."""

    _params: list[click.Parameter]
    _codec_options_added = False

    @property
    def params(self) -> list[click.Parameter]:
        if not self._codec_options_added:
            self._codec_options_added = True
            at = next(i for i, p in enumerate(self._params) if p.name == "cwd")
            self._params[at:at] = [
                click.Option(
                    (option.flag(codec), _dest(codec, option)),
                    type=click.Choice(option.choices) if option.choices else None,
                    default=None,
                    help=f"--to {codec}: {option.help}",
                )
                for codec, option in _codec_write_options()
            ]
        return self._params

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._params = value


def _codec_write_options() -> list[tuple[str, Any]]:
    """Every writing codec's own options (``WriteOption``), as ``(codec name, option)``."""
    from trajconv.codecs import registry

    try:
        codecs = registry.all_codecs()
    except UsageError:  # nothing registered: the commands say so when they run
        return []
    return [(c.name, o) for c in codecs if c.can_write for o in c.write_options]


def _dest(codec: str, option: Any) -> str:
    return f"{codec}_{option.name}".replace("-", "_")


def _write_opts_for(target: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The write options for ``target``: ``--cwd`` and the target codec's own options, each
    under the keyword its writer takes; one given for another codec is a usage error."""
    from trajconv.codecs import registry

    name = registry.get(target).name
    opts: dict[str, Any] = {}
    cwd = kwargs.pop("cwd")
    if cwd is not None:
        opts["cwd"] = cwd
    for codec, option in _codec_write_options():
        value = kwargs.pop(_dest(codec, option), None)
        if value is None:
            continue
        if codec != name:
            raise UsageError(f"{option.flag(codec)} applies to --to {codec} only, not to {name}")
        opts[option.name] = value
    return opts


def _diag_lines(diagnostics: Any, side: str) -> list[str]:
    return [f"  {side:<6} {d.severity:<7} {d.code} x{d.count}" for d in diagnostics]


def _print_diagnostics(read: Any = (), written: Any = ()) -> None:
    """Every command's diagnostics go to stderr, so stdout stays the result."""
    lines = _diag_lines(read, "read") + _diag_lines(written, "write")
    if lines:
        echo("diagnostics (counts; `trajconv diagnostics` explains each code):", err=True)
        for line in lines:
            echo(line, err=True)


def _report_lossy(export: Any) -> None:
    """What ``--allow-lossy`` left out or kept unanswered, by record id (on stderr)."""
    from trajconv.api import LOSSY_CODES

    found = [d for d in export.diagnostics if d.code in LOSSY_CODES]
    notes = [n for n in export.manifest.get("notes", []) if n.startswith("--allow-lossy")]
    if not found and not notes:
        echo("--allow-lossy: nothing had to be left out", err=True)
    for d in found:
        more = f" and {d.count - len(d.samples)} more" if d.count > len(d.samples) else ""
        echo(
            f"--allow-lossy: {d.code} x{d.count} ({d.message}): {', '.join(d.samples)}{more}",
            err=True,
        )
    for note in notes:
        echo(note, err=True)


def _report_export(
    export: Any, as_json: bool, snapshot: Any = None, allow_lossy: bool = False, kept: bool = True
) -> None:
    """What was written, and how to install and resume it; ``kept`` False for a scratch
    export that goes once it is installed (no install or try-first line to run later)."""
    if allow_lossy:
        _report_lossy(export)
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
    import shlex

    out = export.out_dir.resolve()
    resume = " ".join(shlex.quote(a) for a in export.resume_argv)
    echo(f"wrote {export.target} session {export.session_id} to {out}")
    echo(f"  snapshot:  {export.snapshot_id}")
    if export.installable and not kept:
        echo("  install:   now (--install); the export folder is removed after it")
        echo(f"  resume:    {resume}")
    elif export.installable:
        echo(f"  install:   python {shlex.quote(str(out / 'prepare.py'))}")
        echo(f"  resume:    {resume}")
        echo(f"  try first: {export.try_first()}")
    for note in export.manifest.get("notes", []):
        echo(f"  note:      {note}")
    _print_diagnostics(snapshot.diagnostics if snapshot is not None else (), export.diagnostics)


def _check_new_file(path: Path, force: bool) -> None:
    """A Snapshot file may be written at ``path``: checked before any reading is done."""
    from trajconv.errors import RefusedError

    if path.is_dir():
        raise UsageError(f"{path} is a folder; name the Snapshot file to write")
    if not path.parent.is_dir():
        raise UsageError(f"{path}: the folder {path.parent} does not exist")
    if path.exists() and not path.is_file():
        # --force replaces the file by a rename: a device such as /dev/null would become a
        # regular file for every process on the machine (seen, run as root)
        raise UsageError(f"{path} is not a regular file; name a Snapshot file to write")
    if path.exists() and not force:
        raise RefusedError(f"{path} exists; refusing to replace it (pass --force to replace it)")


def _dump_snapshot(snap: Any, path: Path, force: bool) -> None:
    """Write a Snapshot file; an existing file is replaced only with ``--force``."""
    from trajconv.snapshot import io

    _check_new_file(path, force)
    io.dump(snap, path)


@contextlib.contextmanager
def _interrupts_kept() -> Iterator[list[BaseException]]:
    """Keep a Ctrl-C that Python could not raise: it arrived while a finalizer ran (a spool's
    removal) and went to ``sys.unraisablehook``. It is collected, so the run ends as
    interrupted, never with exit 0, and delivered again a moment later from a timer thread
    (raised in the hook it would be lost again) so the run stops at its next step. Other
    unraisable errors pass on."""
    lost: list[BaseException] = []
    timers: list[threading.Timer] = []
    before = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            lost.append(unraisable.exc_value)
            timers.append(threading.Timer(0.05, _thread.interrupt_main))
            timers[-1].start()
        else:
            before(unraisable)

    sys.unraisablehook = hook
    try:
        yield lost
    finally:
        sys.unraisablehook = before
        for timer in timers:
            timer.cancel()
            timer.join()


_LAZY_COMMANDS = {"dataset": "trajconv.cli.dataset", "search": "trajconv.cli.search"}
"""Command name -> the module that defines it (under the same name)."""


class _Cli(click.Group):
    """Turns trajconv's own errors into a one-line message and the documented exit code.

    The commands kept in modules of their own (:data:`_LAZY_COMMANDS`) are imported when
    named or listed (``--help``), so a conversion does not load them (issue 38)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _LAZY_COMMANDS and cmd_name not in self.commands:
            import importlib

            command = getattr(importlib.import_module(_LAZY_COMMANDS[cmd_name]), cmd_name)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _interrupts_kept() as lost:
                result = super().invoke(ctx)
            if lost:  # Ctrl-C landed in a finalizer, which Python may not raise from
                raise KeyboardInterrupt
            return result
        except TrajconvError as exc:
            echo(f"trajconv: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            # spools are removed as their owners unwind; an export is staged, never half
            echo("trajconv: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            _quiet_stdout()  # the reader (`| head`) has all it wanted
            ctx.exit(0)
        except OSError as exc:  # a file the user named: a folder, unreadable, disk full
            where = f"{exc.filename}: " if exc.filename else ""
            echo(f"trajconv: error: {where}{exc.strerror or exc}", err=True)
            ctx.exit(1)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test runner's buffer)
        pass


JSON = click.option("--json", "as_json", is_flag=True, help="machine-readable output")


def _json_opt(help_text: str) -> Callable[[F], F]:
    """``--json`` with a help text of its own."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def _out_opt(dest: str, help_text: str, *, required: bool = False) -> Callable[[F], F]:
    """``-o``/``--out``/``--output``: the file or folder a command writes, as ``dest``."""
    return click.option(
        "-o",
        "--out",
        "--output",
        dest,
        type=click.Path(path_type=Path),
        default=None,
        required=required,
        help=help_text,
    )


def _home_opt(help_text: str) -> Callable[[F], F]:
    """``--home``: a home folder given in place of the default one."""
    return click.option(
        "--home", type=click.Path(file_okay=False, path_type=Path), default=None, help=help_text
    )


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trajconv")
def cli() -> None:
    """Move a saved AI coding-agent session from one harness to another.

    Read a native session into a hashed Snapshot, write it as native files for
    another harness plus a prepare script, and resume it there.

    \b
    Exit codes: 0 ok, 1 bad input, 2 usage error, 3 refused (not portable / would overwrite),
    130 interrupted.
    """


@cli.command()
@JSON
@click.option(
    "--write-docs",
    "docs_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="write a page per codec and an index into DIR (docs/formats in the repository)",
)
def codecs(as_json: bool, docs_dir: Path | None) -> None:
    """List the registered codecs (harnesses) and what each can do."""
    from trajconv.codecs import registry

    if docs_dir is not None:
        from trajconv.codecs import formats

        for page in formats.write(docs_dir):
            echo(f"wrote {page}", err=True)
        return

    def line(r: dict[str, Any]) -> str:
        caps = ",".join(k for k in ("read", "write", "discover") if r[k])
        aliases = f" ({', '.join(r['aliases'])})" if r["aliases"] else ""
        return f"{r['name']:<11} {caps:<20} {r['description']}{aliases}"

    _rows(
        [
            {
                "name": c.name,
                "aliases": list(c.aliases),
                "read": c.can_read,
                "write": c.can_write,
                "discover": c.can_discover,
                "description": c.description,
            }
            for c in registry.all_codecs()
        ],
        as_json,
        line,
    )


def _rows(rows: list[dict[str, Any]], as_json: bool, line: Callable[[dict[str, Any]], str]) -> None:
    """A listing: the rows as JSON, or one ``line`` each."""
    if as_json:
        _emit_json(rows)
        return
    for r in rows:
        echo(line(r))


def _harness_opt(
    *decls: str, help_text: str, required: bool = False, multiple: bool = False
) -> Callable[[F], F]:
    """An option naming a harness, completing the registered names. Repeated only where
    several make sense: a repeated single one is a usage error, not a silent last-one-wins."""

    def once(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if not multiple and isinstance(value, tuple):
            if len(value) > 1:
                raise click.BadParameter(f"given {len(value)} times; name one harness")
            return value[0] if value else None
        return value

    return click.option(
        *decls,
        default=None,
        multiple=True,
        required=required,
        callback=once,
        shell_complete=_complete_harness,
        help=help_text,
    )


VERBOSE = click.option(
    "-v", "--verbose", is_flag=True, help="name every home looked at, found or not"
)

SESSION = click.option(
    "--session", default=None, help="session id inside a home or store holding several"
)

REDACT = click.option(
    "--redact",
    is_flag=True,
    help="replace secrets (keys, tokens, passwords) in every text by [REDACTED:<kind>] and "
    "leave the native bytes out: for sharing",
)

FORCE = click.option(
    "--force",
    is_flag=True,
    help="replace an existing Snapshot file (read -o, convert --snapshot); "
    "an export folder or an installed session is never replaced",
)


@cli.command()
@_harness_opt(
    "--from",
    "source",
    help_text="harness the session comes from; told from PATH's files when left out",
)
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@_out_opt("output", "Snapshot file (default: stdout); an existing one is kept unless --force")
@SESSION
@FORCE
@limit_options
def read(
    source: str | None,
    path: Path,
    output: Path | None,
    session: str | None,
    force: bool,
    **kw: Any,
) -> None:
    """Read a native session into a Snapshot (its diagnostics on stderr)."""
    from trajconv import find
    from trajconv.snapshot import io

    _imports_settled()
    if output is not None:
        _check_new_file(output, force)
    with _reading_progress(path):
        loaded = find.load(str(path), source=source, session=session, limits=_limits(kw))
    _say(loaded.note)
    snap = loaded.snapshot
    if output is None:
        io.write(snap, sys.stdout.buffer)
    else:
        _dump_snapshot(snap, output, force)
        echo(f"wrote {output} ({len(snap.records)} records, {snap.id})", err=True)
    _print_diagnostics(snap.diagnostics)


_OWNS_PROCESS = False
"""Set by :func:`main`: the process ends with the command (not a caller's, or a test's)."""


def _imports_settled() -> None:
    """What a command imported before its work (pydantic and the Snapshot models, with
    ``trajconv.api`` or ``trajconv.snapshot.io``; click) lives until the process ends:
    keep it out of the collector's full passes, which otherwise walk it again while a
    reader allocates (some 5% of a 10 MB read; issue 38). Only in trajconv's own process:
    frozen objects are never collected, which a caller invoking the commands in its
    process (click's test runner) would not want."""
    if _OWNS_PROCESS:
        gc.freeze()


def _say(note: str | None) -> None:
    if note is not None:
        echo(note, err=True)


@cli.command(cls=_WritingCommand)
@_harness_opt("--to", "target", help_text="harness to write for", required=True)
@click.argument("snapshot", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_out_opt("out", "export folder (a new one)", required=True)
@JSON
@write_options
def write(target: str, snapshot: Path, out: Path, as_json: bool, **kw: Any) -> None:
    """Write a Snapshot as an export for another harness (native files + prepare.py)."""
    from trajconv import api
    from trajconv.store import load_input  # the store itself only for a stored one

    _imports_settled()
    snap = load_input(snapshot)  # a Snapshot in a store gets its artifacts from the store
    lossy = kw.pop("allow_lossy")
    export = api.write(snap, target, out, allow_lossy=lossy, **_write_opts_for(target, kw))
    _report_export(export, as_json, allow_lossy=lossy)


def _install(export: Any, home: Path | None, as_json: bool) -> None:
    """Run the export's prepare.py into ``home`` (default: the real one); it refuses to
    replace a session. Its output goes to stderr when stdout carries JSON."""
    import subprocess

    argv = [sys.executable, str(export.out_dir / "prepare.py")]
    if home is not None:
        argv += ["--home", str(home)]
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    echo(done.stdout, nl=False, err=as_json)
    if done.returncode != 0:
        sys.exit(done.returncode)


@cli.command(cls=_WritingCommand)
@_harness_opt(
    "--from",
    "source",
    help_text="harness the session comes from; told from PATH's files when left out, and "
    "not needed (or 'snapshot') when PATH is a Snapshot file or an archive store",
)
@_harness_opt("--to", "target", help_text="harness to write for", required=True)
@click.argument("path", required=False)
@_out_opt("out", "export folder (with --install, a new temporary one when left out)")
@SESSION
@click.option(
    "--latest",
    is_flag=True,
    help="the newest session of the default homes (with --from and --cwd: of that harness, "
    "of that folder)",
)
@click.option(
    "--snapshot",
    "snapshot_out",
    type=click.Path(path_type=Path),
    default=None,
    help="also keep the Snapshot in this file",
)
@REDACT
@click.option(
    "--install",
    is_flag=True,
    help="also install the export (run its prepare.py) into your home or --home; "
    "refuses to replace a session",
)
@_home_opt("with --install: the home to install into (default: yours)")
@FORCE
@JSON
@write_options
@limit_options
def convert(
    source: str | None,
    target: str,
    path: str | None,
    out: Path | None,
    session: str | None,
    latest: bool,
    snapshot_out: Path | None,
    install: bool,
    home: Path | None,
    force: bool,
    redact: bool,
    as_json: bool,
    **kw: Any,
) -> None:
    """Read a session and write it for another harness (read, then write).

    \b
    PATH is a native session, a native home (with --session), a Snapshot file
    or an archive store (with --session: a session id, whose latest Snapshot is
    used, or a Snapshot id). In place of PATH: a session id or a unique prefix of
    one, or --latest; the default homes of every codec are searched (--from and
    --cwd narrow the search). --from is told from PATH's files when left out.
    \b
    --install writes the export and installs it in one step, then prints the
    command that resumes the session.
    """
    import tempfile

    from trajconv import api, find

    _imports_settled()
    if out is None and not install:
        raise UsageError("name the export folder with -o OUT (or pass --install)")
    if home is not None and not install:
        raise UsageError("--home applies to --install only")
    limits = _limits(kw)
    opts = _write_opts_for(target, kw)
    if "cwd" in opts:  # `--cwd .` picks sessions of this folder; a target needs it whole
        opts["cwd"] = os.path.abspath(opts["cwd"])
    lossy = kw.pop("allow_lossy")
    if snapshot_out is not None:
        _check_new_file(snapshot_out, force)
    # with --install and no -o, the export is written to a scratch folder that goes once
    # prepare.py ran (or refused)
    scratch = Path(tempfile.mkdtemp(prefix="trajconv-export-")) if out is None else None
    try:
        with _reading_progress(Path(path) if path else None):
            loaded = find.load(
                path,
                source=source,
                session=session,
                latest=latest,
                cwd=opts.get("cwd"),
                limits=limits,
            )
            _say(loaded.note)
            snap = loaded.snapshot
            if redact:
                from trajconv.redact import redacted

                snap = redacted(snap)
            if snapshot_out is not None:
                _dump_snapshot(snap, snapshot_out, force)
            where = scratch / "export" if scratch is not None else out
            assert where is not None  # no -o is a usage error without --install
            export = api.write(snap, target, where, allow_lossy=lossy, **opts)
        _report_export(export, as_json, snap, allow_lossy=lossy, kept=scratch is None)
        if install:
            _install(export, home, as_json)
    finally:
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


@cli.command()
@click.argument("file", type=StorePath(exists=True, path_type=Path))
@JSON
def verify(file: Path, as_json: bool) -> None:
    """Recompute a Snapshot's hashes; name the first broken record or artifact.

    FILE may be an archive store (a folder): every Snapshot, every artifact digest
    and the index are checked.
    """
    from trajconv.snapshot import io
    from trajconv.snapshot.fileload import verify_streamed
    from trajconv.store import artifact_check, artifact_resolver, is_url

    _imports_settled()
    if is_url(file) or file.is_dir():
        _verify_store(file, as_json)
        return
    # a stored Snapshot's artifacts are in its store
    checked = verify_streamed(file, stored=artifact_check(file))  # only one that verifies
    if checked is not None:
        report = io.VerifyReport(
            True,
            checked.id,
            checked.records,
            checked.artifacts,
            children=checked.children,
            child_records=checked.child_records,
        )
    else:  # parsed whole, so the first broken record or artifact is named
        doc = io.read_document(file)
        io.validate_document(doc, str(file), check=False)
        report = io.verify_document(doc, artifact_resolver(file))
    kids = (
        f", {report.children} sub-agents with {report.child_records} records"
        if report.children
        else ""
    )
    _say_verified(
        file,
        report.ok,
        report.problems,
        as_json=as_json,
        json_value={
            "file": str(file),
            "ok": report.ok,
            "id": report.snapshot_id,
            "records": report.records,
            "artifacts": report.artifacts,
            "children": report.children,
            "child_records": report.child_records,
            "problems": report.problems,
        },
        ok_line=f"ok {report.snapshot_id} ({report.records} records, {report.artifacts} "
        f"artifacts{kids})",
    )


def _say_verified(
    where: Path | str,
    ok: bool,
    problems: Iterable[str],
    *,
    as_json: bool,
    json_value: Any,
    ok_line: str,
    notes: Iterable[str] = (),
) -> None:
    """What ``verify`` found: the JSON, or the ``ok`` line or each problem (on stderr) and
    then each note; it exits 1 when something is broken."""
    if as_json:
        _emit_json(json_value)
    elif ok:
        echo(ok_line)
    else:
        for p in problems:
            echo(f"{where}: {p}", err=True)
    if not as_json:
        for note in notes:
            echo(f"# note: {note}", err=True)
    if not ok:
        sys.exit(1)


@cli.command()
@click.argument("path", required=False)
@_harness_opt(
    "--from", "source", help_text="harness PATH comes from; told from its files when left out"
)
@SESSION
@click.option(
    "--latest",
    is_flag=True,
    help="the newest session of the default homes (with --from: of that harness)",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "html"]),
    default="text",
    help="text (rich, paged on a terminal), markdown, or html (one self-contained page)",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="write to FILE"
)
@click.option("--full", is_flag=True, help="unfold reasoning; show long text and output whole")
@REDACT
@click.option(
    "--diff",
    "diff_paths",
    nargs=2,
    type=click.Path(exists=True, path_type=Path),
    default=None,
    metavar="A B",
    help="compare two Snapshot files or export folders, record by record",
)
@click.option(
    "--grep",
    "grep",
    default=None,
    metavar="TEXT",
    help="show the newest session whose title or any record holds every word of TEXT, as "
    "`discover --grep` lists them (through the index of `trajconv search`), and name its "
    "records that hold it on stderr; PATH, if given, is the home to look in",
)
@_json_opt("the Snapshot (or the diff) as JSON")
@limit_options
def show(**kw: Any) -> None:
    """See a session: in the terminal, as Markdown, or as one self-contained HTML page.

    PATH is a native session or home (its harness told from its files, or --from), a
    Snapshot file or an archive store (with --session); in place of PATH, a session id, a
    unique prefix of one, or --latest, as for `convert`. Sub-agent sessions found beside it
    (a native home or a store) are nested under the tool call that spawned them. --diff A B
    shows two Snapshots side by side (e.g. a source and the re-read of its export folder):
    what was dropped or changed, and the diagnostic that named each difference.
    --grep TEXT picks the session by what it holds: the newest of those `discover --grep
    TEXT` lists (of the default homes, or of PATH, a home; --from narrows to a harness).

    \b
    trajconv show ~/.grok --session ID                  paged text on a terminal
    trajconv show --latest                              the newest session anywhere
    trajconv show --grep "ENOENT upload"                the newest session holding both
    trajconv show SNAPSHOT.json --format markdown > session.md
    trajconv show SNAPSHOT.json --format html -o session.html
    trajconv show --diff SNAPSHOT.json EXPORT_DIR
    """
    from trajconv.views.command import show as run

    limits = _limits(kw)
    run(limits=limits, **kw)


@cli.command()
@click.argument("out", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_home_opt("home folder to install into (default: yours)")
@click.option("--dry-run", is_flag=True, help="print the plan, write nothing")
def prepare(out: Path, home: Path | None, dry_run: bool) -> None:
    """Install an export (runs OUT/prepare.py with the same options)."""
    import subprocess

    from trajconv.codecs.export import MANIFEST, check_files

    if not (out / MANIFEST).is_file():
        raise UsageError(
            f"{out} is not a trajconv export (no {MANIFEST}); "
            "`trajconv write` or `convert` makes one"
        )
    if not (out / "prepare.py").is_file():
        raise UsageError(
            f"{out} is a document export (nothing installs it); convert it on with "
            "trajconv convert --from <its format> --to HARNESS"
        )
    check_files(out)  # prepare.py checks the files it installs, but not itself
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

    echo(resources.files("trajconv.snapshot").joinpath("schema.json").read_text("utf-8"), nl=False)


@cli.command()
@JSON
def diagnostics(as_json: bool) -> None:
    """List every diagnostic code with its severity and meaning."""
    from trajconv.snapshot.diagnostics import REGISTRY

    _rows(
        [
            {
                "code": c.code,
                "severity": c.severity,
                "side": c.side,
                "counts_units": c.units,
                "meaning": c.meaning,
            }
            for c in REGISTRY.values()
        ],
        as_json,
        lambda r: f"{r['code']:<28} {r['severity']:<8} {r['side']:<7} {r['meaning']}",
    )


def _grep_sessions(listing: Any, refs: list[Any], text: str) -> list[Any]:
    """The sessions of ``refs`` whose title holds ``text`` or one of whose records holds
    every word of it; sessions the index could not read are named on stderr."""
    from trajconv import search

    found, done = search.grep_refs(listing, refs, text)
    for who, reason in done.skipped:
        echo(f"# --grep skipped {who}: {reason}", err=True)
    return found


@cli.command()
@_harness_opt("--harness", help_text="only this harness (repeat for several)", multiple=True)
@_home_opt(
    "list this home (a user home, or a harness folder such as ~/.grok) instead of the default ones"
)
@ONLY_CWD
@SINCE
@click.option(
    "--grep",
    "grep",
    default=None,
    help="only sessions whose title or any record holds every word of TEXT (through the "
    "index of `trajconv search`)",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="at most N sessions")
@JSON
@VERBOSE
def discover(
    harness: tuple[str, ...],
    home: Path | None,
    cwd: str | None,
    since: str | None,
    grep: str | None,
    limit: int | None,
    as_json: bool,
    verbose: bool,
) -> None:
    """List sessions in native homes, newest first, with the path to pass to `convert`.

    A home of a harness trajconv has no codec for is named as found but not supported.
    """
    from trajconv import find

    listing = find.list_sessions(harness or None, home)
    since_at = find.parse_since(since) if since is not None else None
    refs = find.select(listing.sessions, cwd=cwd, since=since_at)
    if grep is not None:
        refs = _grep_sessions(listing, refs, grep)
    refs = refs[:limit]
    rows = [r.to_json() for r in refs]
    if as_json:
        _emit_json({"coverage": listing.coverage, "sessions": rows})
        return
    if rows:
        echo(f"{'HARNESS':<10} {'SESSION':<40} {'UPDATED':<24} {'TITLE':<30} PATH")
    for r in rows:
        title = r["title"] or "-"
        title = title if len(title) <= 30 else title[:29] + "…"
        echo(
            f"{r['harness']:<10} {r['session_id']:<40} "
            f"{r['updated_at'] or r['created_at'] or '-':<24} {title:<30} {r['path']}"
        )
    for line in find.coverage_lines(listing.coverage, verbose):
        echo(line, err=True)


@cli.command()
@click.option(
    "--write",
    "write_",
    is_flag=True,
    help="run every pair on every fixture (and the native loaders installed here: load each "
    "export, and continue each pair's continuation fixture for one turn in the real CLI) "
    "and regenerate evidence/parity.json and evidence/matrix.md",
)
@click.option(
    "--check",
    "check_",
    is_flag=True,
    help="exit 1 when the evidence is stale, a pair lost records, or a pair regressed",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="with --write: pairs run at once, in worker processes",
)
@JSON
def parity(write_: bool, check_: bool, jobs: int, as_json: bool) -> None:
    """Which harness pairs are supported, and how each claim was verified."""
    from trajconv import parity as parity_mod

    if check_ or write_:
        parity_mod.needs_checkout("--check" if check_ else "--write")
    if check_:
        problems = parity_mod.check()
        if as_json:
            _emit_json({"ok": not problems, "problems": problems})
        else:
            for p in problems:
                echo(f"parity: {p}", err=True)
            if not problems:
                echo("parity evidence is current")
        if problems:
            sys.exit(1)
        return
    if write_:
        from rich.console import Console

        check_export = parity_mod.rig("--write", "verify").check_export

        console = Console(stderr=True)
        with console.status("running the conversion matrix") as status:
            data = parity_mod.build(
                loader_check=check_export,
                progress=lambda msg: status.update(msg),
                jobs=jobs,
                continuation=True,
            )
        parity_mod.write(data)
        lost = sum(1 for p in data["pairs"] if any(v["lost"] for v in p["kinds"].values()))
        echo(
            f"wrote {parity_mod.EVIDENCE / 'parity.json'} and matrix.md "
            f"({len(data['pairs'])} pair runs, {lost} with losses)",
            err=True,
        )
    else:
        data = parity_mod.load_evidence()
    if as_json:
        _emit_json(data)
        return
    echo(parity_mod.render_markdown(data), nl=False)


def _verify_store(store: Path | str, as_json: bool) -> None:
    from trajconv.store import verify_store

    report = verify_store(store)
    _say_verified(
        store,
        report.ok,
        report.problems,
        as_json=as_json,
        json_value=report.to_json(),
        ok_line=f"ok {store}: {report.snapshots} Snapshots, {report.artifacts} artifacts, "
        f"{report.index_rows} index rows, {report.sessions} sessions",
        notes=report.notes,
    )


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
        TextColumn("{task.fields[size]}"),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("archive", total=None, counts="discovering", size="")

    def tick(p: Any) -> None:
        counts = "  ".join(f"{k} {v}" for k, v in p.counts.items() if v)
        size = f"{_mb(p.bytes_done)}/{_mb(p.bytes_total)} MB" if p.bytes_total else ""
        bar.update(task, completed=p.done, total=p.total or None, counts=counts, size=size)

    @contextlib.contextmanager
    def running() -> Any:
        with bar:
            yield tick

    return running()


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


def _bytes_read() -> int | None:
    """Bytes this process has read so far (Linux ``/proc/self/io``), else ``None``."""
    try:
        with open("/proc/self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _reading_progress(path: Path | None, console: Any = None) -> Any:
    """On a terminal, a line on stderr with the bytes read while a session is read and
    written (``read``, ``convert``); a no-op elsewhere."""
    import contextlib
    import threading

    if console is None:
        if not sys.stderr.isatty():
            return contextlib.nullcontext()
        from rich.console import Console

        console = Console(stderr=True)
    start = _bytes_read()

    @contextlib.contextmanager
    def running() -> Any:
        stop = threading.Event()
        with console.status(f"reading {path or 'the session'}") as status:

            def update() -> None:
                while not stop.wait(0.2):
                    now = _bytes_read()
                    if start is not None and now is not None:
                        status.update(f"reading {path or 'the session'}: {_mb(now - start)} MB")

            worker = threading.Thread(target=update, daemon=True)
            worker.start()
            try:
                yield
            finally:
                stop.set()
                worker.join()

    return running()


@archive.command("run")
@click.argument("store", type=StorePath(file_okay=False, path_type=Path))
@_harness_opt("--harness", help_text="only this harness")
@_home_opt("native home to archive instead of each harness's default one")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="read N sessions in parallel")
@_json_opt("machine-readable summary")
@VERBOSE
@limit_options
def archive_run(
    store: Path,
    harness: str | None,
    home: Path | None,
    jobs: int,
    as_json: bool,
    verbose: bool,
    **kw: Any,
) -> None:
    """Snapshot every changed session of the native homes into STORE.

    A session whose files have the same size, mtime and inode as when it was last
    archived is skipped without being read. A new Snapshot is recorded as `extends`
    when the previous one's record chain is a prefix of it, else `diverged`; older
    Snapshots are kept. Native homes are only read.
    """
    from trajconv import find
    from trajconv.harvest import archive as run_archive

    with _archive_progress(sys.stderr.isatty()) as tick:
        summary = run_archive(
            store, harness=harness, home=home, jobs=jobs, limits=_limits(kw), progress=tick
        )
    if as_json:
        _emit_json(summary.to_json())
    else:
        counts = summary.counts
        echo(
            f"archived {len(summary.outcomes)} sessions into {store} in {summary.seconds:.2f} s: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
        )
        echo(
            f"  wrote {summary.snapshots_written} Snapshots, {summary.artifacts_written} "
            f"artifacts ({summary.bytes_written} bytes)"
        )
        for o in summary.outcomes:
            if o.status in ("extends", "diverged"):
                echo(f"  {o.status:<9} {o.harness} {o.session_id} {o.snapshot_id}")
        for line in find.coverage_lines(summary.coverage, verbose):
            echo(line, err=True)
    for o in summary.failed:
        echo(f"failed {o.harness} {o.session_id}: {o.error}", err=True)
    if not summary.ok:
        sys.exit(1)


@archive.command("log")
@click.argument("store", type=StorePath(exists=True, file_okay=False, path_type=Path))
@click.argument("session", required=False)
@click.option("--harness", default=None, help="only this harness")
@JSON
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
                echo(
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
        echo(
            f"{r.archived_at}  {r.relation:<9} {r.snapshot_id}  {r.records:>6} records  "
            f"{r.harness}{facts}"
        )


@archive.command("export")
@click.argument("store", type=StorePath(exists=True, file_okay=False, path_type=Path))
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["tar.gz", "parquet"]),
    default="tar.gz",
    show_default=True,
    help="tar.gz: the store as one checked file (import restores it); parquet: a folder "
    "with the sessions and records tables, for DuckDB, Spark or any Arrow engine",
)
@JSON
def archive_export(store: Path, file: Path, fmt: str, as_json: bool) -> None:
    """Write STORE as one .tar.gz FILE with a sha256 manifest (the store must verify),
    or with --format parquet as a Parquet dataset in the folder FILE.

    The Parquet dataset holds each session's latest Snapshot: sessions/ and records/,
    partitioned by harness and month (harness=H/month=YYYY-MM/part-0.parquet).
    """
    from trajconv.store import export_store, open_store

    if fmt == "parquet":
        from trajconv.parquet import export_parquet

        with open_store(store) as st:
            done = export_parquet(st, file)
        _result(
            done,
            as_json,
            f"exported {store} to {file} as Parquet: {done.sessions} sessions, "
            f"{done.records} records in {len(done.partitions)} partitions (sessions/, records/)",
        )
        return
    if not file.parent.is_dir():
        raise UsageError(f"{file}: the folder {file.parent} does not exist")
    moved = export_store(store, file)
    _result(
        moved,
        as_json,
        f"exported {store} to {file}: {moved.files} files, {moved.bytes} bytes "
        f"({moved.snapshots} Snapshots, {moved.index_rows} index rows)",
    )


@archive.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("store", type=StorePath(file_okay=False, path_type=Path))
@JSON
def archive_import(file: Path, store: Path, as_json: bool) -> None:
    """Unpack an exported FILE into a new STORE; a damaged file is refused."""
    from trajconv.store import import_store

    moved = import_store(file, store)
    _result(
        moved,
        as_json,
        f"imported {file} into {store}: {moved.files} files, {moved.bytes} bytes "
        f"({moved.snapshots} Snapshots, {moved.index_rows} index rows); verified",
    )


def main() -> None:
    global _OWNS_PROCESS
    _OWNS_PROCESS = True
    cli.main(prog_name="trajconv")


__all__ = ["EXIT_CODES", "EXIT_USAGE", "cli", "main"]


if __name__ == "__main__":
    main()
