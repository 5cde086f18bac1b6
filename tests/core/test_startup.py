"""What a command imports (issue 38): start-up is mostly import time, so these guard it.

Structural, not timed: each command runs in its own interpreter, which prints the modules
it loaded when it ends; ``benchmarks/run.py --startup`` measures the time itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GROK_SESSIONS = ROOT / "fixtures" / "grok" / "recorded-multi-turn" / "sessions"

PROGRAM = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
sys.argv = ["trajconv", *sys.argv[1:]]
from trajconv.cli.main import main
main()
"""

#: what no command that lists or converts needs: the archive store (and its SQLite and
#: tar), the Snapshot file reader/writer and its checker, the terminal UI, the views,
#: JSON Schema
HEAVY = (
    "trajconv.store.local",
    "trajconv.store.remote",
    "trajconv.snapshot.io",
    "trajconv.snapshot.fileload",
    "trajconv.views",
    "trajconv.harvest",
    "trajconv.search",
    "trajconv.parity",
    "rich",
    "sqlite3",
    "tarfile",
    "jsonschema",
)
#: and what a conversion does not need either: the store's object backends, the commands
#: kept in modules of their own
NOT_FOR_CONVERT = (*HEAVY, "trajconv.store.backend", "trajconv.cli.search", "trajconv.cli.dataset")


def _modules(*args: str, cwd: Path) -> set[str]:
    """The modules ``trajconv ARGS`` had loaded when it ended (it must succeed)."""
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, cwd=cwd
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return set(json.loads(run.stderr.strip().splitlines()[-1]))


def _codec_modules(modules: set[str]) -> set[str]:
    """Modules inside a codec's package (``trajconv.codecs.grok.reader``), not the package."""
    return {m for m in modules if m.startswith("trajconv.codecs.") and m.count(".") > 2}


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("args", [("--help",), ("codecs",), ("convert", "--help")])
def test_help_and_codecs_import_no_models(args: tuple[str, ...], tmp_path: Path) -> None:
    """Listing commands or codecs builds no pydantic model, reads no codec's modules and
    does not import ``importlib.metadata`` (nor ``difflib``, wanted only for a typo)."""
    modules = _modules(*args, cwd=tmp_path)
    # nor importlib.metadata (trajconv.distinfo reads the entry points and the version)
    assert (
        _loaded(modules, ("pydantic", "trajconv.snapshot", "importlib.metadata", "difflib", *HEAVY))
        == []
    )
    assert _codec_modules(modules) == set()  # each codec's package (its CODEC) only


def test_a_conversion_imports_only_its_two_codecs_and_no_store(tmp_path: Path) -> None:
    modules = _modules(
        "convert", "--from", "grok", "--to", "fx", str(GROK_SESSIONS), "-o", "out", cwd=tmp_path
    )
    assert (tmp_path / "out" / "prepare.py").is_file()  # it did convert
    assert _loaded(modules, NOT_FOR_CONVERT) == []
    assert {m.split(".")[2] for m in _codec_modules(modules)} == {"grok", "fx"}
    # pydantic's plugin lookup is spared too, unless a pydantic plugin is installed
    from trajconv import distinfo

    plugins = distinfo._pydantic_plugins_registered()
    assert bool(_loaded(modules, ("importlib.metadata",))) == plugins


def test_a_snapshot_file_outside_a_store_is_verified_and_written_without_the_store(
    tmp_path: Path,
) -> None:
    # verify FILE and write FILE of a file that is not STORE/snapshots/FILE need no store
    modules = _modules("read", "--from", "grok", str(GROK_SESSIONS), "-o", "s.json", cwd=tmp_path)
    assert (tmp_path / "s.json").is_file()
    store = ("trajconv.store.local", "trajconv.store.remote", "sqlite3", "tarfile")
    for args in (
        ("verify", "s.json"),
        ("write", "--to", "fx", "s.json", "--cwd", "/srv/x", "--allow-lossy", "-o", "out"),
    ):
        modules = _modules(*args, cwd=tmp_path)
        assert _loaded(modules, store) == [], args
    assert (tmp_path / "out" / "prepare.py").is_file()


FROZEN = """
import atexit, gc, sys
atexit.register(lambda: print(gc.get_freeze_count(), file=sys.stderr))
sys.argv = ["trajconv", *sys.argv[1:]]
from trajconv.cli.main import main
main()
"""


def test_a_command_in_its_own_process_freezes_its_imports_and_in_a_callers_does_not(
    tmp_path: Path,
) -> None:
    """Imports stay out of the collector's full passes in trajconv's own process only:
    frozen objects are never freed, which a process running the commands (click's test
    runner, a caller's program) must not be left with."""
    import gc

    from click.testing import CliRunner

    from trajconv.cli.main import cli

    args = ("read", "--from", "grok", str(GROK_SESSIONS), "-o")
    run = subprocess.run(
        [sys.executable, "-c", FROZEN, *args, "own.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stderr.strip().splitlines()[-1]) > 10_000  # pydantic, the models, click

    before = gc.get_freeze_count()
    result = CliRunner().invoke(cli, [*args, str(tmp_path / "runner.json")])
    assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == before
    assert (tmp_path / "own.json").read_bytes() == (tmp_path / "runner.json").read_bytes()
