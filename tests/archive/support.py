"""Generated native homes for the archive tests, and a way to see which files a run opens.

Grok homes are copies of ``fixtures/grok``. For every other registered codec that can
write, a home is generated through the Codec protocol only: Grok fixture Snapshots are
written as that harness's export and installed with the export's own ``prepare.py``
into a scratch HOME; the native home is then the folder of that HOME (itself or one
level below) where the codec's ``discover`` finds the sessions.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import trajconv
from tests.conftest import require_loader
from tests.helpers import FIXTURES, REPO
from trajconv.codecs import registry
from trajconv.snapshot.models import Snapshot

GROK_FIXTURES = FIXTURES / "grok"
GROWING = "recorded-multi-turn"  # a clean journal (no torn tail) with two turns

_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.path.realpath(os.fsdecode(args[0])))


sys.addaudithook(_audit)  # audit hooks cannot be removed; it records only inside opened_files()


@contextlib.contextmanager
def opened_files() -> Iterator[list[str]]:
    """Every file path opened (Python's ``open`` audit event) while the block runs."""
    global _OPENED
    found: list[str] = []
    _OPENED = found
    try:
        yield found
    finally:
        _OPENED = None


def under(paths: list[str], root: Path) -> set[str]:
    base = os.path.realpath(root) + os.sep
    return {p for p in paths if p.startswith(base)}


def grok_home(tmp: Path, cases: list[str] | None = None) -> Path:
    """A GROK_HOME holding the sessions of the given fixture cases (all by default)."""
    home = tmp / ".grok"
    for case in sorted(GROK_FIXTURES.iterdir()):
        if (case / "sessions").is_dir() and (cases is None or case.name in cases):
            shutil.copytree(case / "sessions", home / "sessions", dirs_exist_ok=True)
    return home


def grok_journal(home: Path, session_prefix: str) -> Path:
    return next(home.glob(f"sessions/*/{session_prefix}*/updates.jsonl"))


def fixture_snapshots() -> list[Snapshot]:
    sdirs = sorted(
        p for p in GROK_FIXTURES.glob("*/sessions/*/*") if (p / "summary.json").is_file()
    )
    return [trajconv.read("grok", p) for p in sdirs]


def first_turn_end(snapshot: Snapshot) -> int:
    """Records up to (not including) the first user record that follows an assistant one."""
    seen_assistant = False
    for i, rec in enumerate(snapshot.records):
        if rec.kind == "assistant":
            seen_assistant = True
        elif rec.kind == "user" and seen_assistant:
            return i
    raise AssertionError("the fixture has a single turn")


def growing_snapshot() -> Snapshot:
    sdir = next(GROK_FIXTURES.glob(f"{GROWING}/sessions/*/*/summary.json")).parent
    return trajconv.read("grok", sdir)


def _options(harness: str, user_home: Path) -> list[str]:
    """What a harness's prepare.py needs here: Gemini CLI's own cleanup would delete a
    session this old at its next start, so its prepare refuses one without ``--touch``;
    OpenCode's (and Kilo's) prepare runs the real ``opencode import`` (``kilo import``, in the
    tools folder) in the session's project folder, which does not exist here (the home stands
    in)."""
    if harness == "gemini":
        return ["--touch"]
    if harness in ("opencode", "kilo"):  # Kilo's prepare is OpenCode's (the same lineage)
        import proof

        loader = proof.loader(harness)
        assert loader is not None
        exe = loader.find(proof.tools_dir())
        # a scratch home configures no model: name the loopback one the session continues with
        model = ["--model", f"{loader.PROVIDER}/{loader.MODEL}"]
        return ["--cwd", str(user_home), *model, *([f"--{harness}", str(exe)] if exe else [])]
    return []


def writable(snapshot: Snapshot, harness: str) -> bool:
    """Whether ``harness``'s writer takes ``snapshot`` (with --allow-lossy): Qwen Code's
    refuses a cwd whose project folder name would be over 255 bytes (Grok's long-cwd case)."""
    from trajconv.errors import RefusedError

    try:
        registry.get(harness).plan(snapshot, allow_lossy=True)
    except RefusedError:
        return False
    return True


def install(
    snapshot: Snapshot, harness: str, tmp: Path, user_home: Path, **options: Any
) -> dict[str, Any]:
    """Write ``snapshot`` for ``harness`` (writer ``options``) and install it into
    ``user_home`` with prepare.py."""
    if _prepare_needs_loader(harness):
        import proof

        mod = proof.loader(harness)
        assert mod is not None
        require_loader(mod.find(proof.tools_dir()), harness)
    out = tmp / f"export-{harness}-{snapshot.id[7:19]}"
    export = trajconv.write(snapshot, harness, out, allow_lossy=True, **options)
    env = {**os.environ, "HOME": str(user_home)}
    place = user_home
    if not registry.get(harness).homes:
        # a harness with no home keeps a session in its project folder (Aider's history):
        # the user home holds one folder per project, where discover finds them
        cwd = str(options.get("cwd") or snapshot.session.cwd)
        place = user_home / "projects" / hashlib.sha256(cwd.encode()).hexdigest()[:12]
        place.mkdir(parents=True, exist_ok=True)
    # A database target's prepare.py may need the harness's own Python packages; the
    # loader installer keeps such environments under .tools/, so those are tried next.
    tools = Path(os.environ.get("TRAJCONV_TOOLS") or REPO / ".tools")
    pythons = [sys.executable, *sorted(str(p) for p in tools.glob("*/bin/python"))]
    errors = []
    for python in pythons:
        proc = subprocess.run(
            [
                python,
                str(out / "prepare.py"),
                "--home",
                str(place),
                *_options(harness, user_home),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode == 0:
            return export.manifest
        errors.append(f"{python}: {proc.stderr.strip()}")
    raise AssertionError(f"{harness} prepare.py failed with every Python: {errors}")


def find_native_home(harness: str, user_home: Path) -> Path:
    """The folder of ``user_home`` (itself or one level below) where ``harness`` finds sessions."""
    codec = registry.get(harness)
    if not codec.homes:  # the project folders install() made
        return user_home / "projects"
    candidates = [user_home, *sorted(p for p in user_home.iterdir() if p.is_dir())]
    for root in candidates:
        with contextlib.suppress(Exception):
            if codec.discover(root):
                return root
    raise AssertionError(f"{harness}: discover finds no session in the home prepare.py made")


def replace_session(
    manifest: dict[str, Any],
    ref_path: Path,
    source: tuple[Path, Path],
    target: tuple[Path, Path],
) -> None:
    """Put the session as ``source`` holds it in place of ``target``'s (a harness rewrite).

    ``source`` and ``target`` are (user home, native home). The session is what the
    export manifest lists as ``session_paths`` (home-relative) where prepare put it there;
    otherwise (a database target lists none) the file ``discover`` points at is replaced,
    with its SQLite sidecars.
    """
    listed = [(source[0] / rel, target[0] / rel) for rel in manifest["session_paths"]]
    if listed and all(dst.exists() for _src, dst in listed):
        pairs = listed
    else:  # a database, or a prepare that chose the place (Gemini's project folders)
        rel = ref_path.relative_to(target[1])
        src, dst = source[1] / rel, target[1] / rel
        pairs = [(src, dst)]
        for suffix in ("-wal", "-shm", "-journal"):
            side_src, side_dst = Path(f"{src}{suffix}"), Path(f"{dst}{suffix}")
            if side_dst.exists() and not side_src.exists():
                side_dst.unlink()
            if side_src.exists():
                pairs.append((side_src, side_dst))
    for src, dst in pairs:
        if dst.is_dir():
            shutil.rmtree(dst)
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)


def codecs_for_generated_homes() -> list[str]:
    """Every registered codec that can write, read and discover (grok included)."""
    return [
        n
        for n in registry.names()
        if (c := registry.get(n)).can_write and c.can_read and c.can_discover
    ]


def generated_home_params() -> list[Any]:
    """:func:`codecs_for_generated_homes` as test parameters: a codec whose prepare.py needs
    its real CLI (``PREPARE_NEEDS_LOADER`` in its loader module) is a ``loader`` test."""
    return [
        pytest.param(n, marks=pytest.mark.loader) if _prepare_needs_loader(n) else n
        for n in codecs_for_generated_homes()
    ]


def _prepare_needs_loader(harness: str) -> bool:
    import proof

    return bool(getattr(proof.loader(harness), "PREPARE_NEEDS_LOADER", False))


def codecs_without_generated_homes() -> list[str]:
    return [n for n in registry.names() if n not in codecs_for_generated_homes()]


def fixture_home(harness: str, tmp: Path) -> Path | None:
    """A copy of the first ``fixtures/<harness>/<case>`` folder (or a folder one level
    below it) where the codec's ``discover`` lists sessions, or ``None``."""
    codec = registry.get(harness)
    base = FIXTURES / harness
    for case in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
        for root in [case, *sorted(p for p in case.iterdir() if p.is_dir())]:
            with contextlib.suppress(Exception):
                if codec.discover(root):
                    copy = tmp / case.name
                    shutil.copytree(case, copy, symlinks=True)
                    return copy / root.relative_to(case)
    return None
