"""fx (vercel-labs/fx) as a native loader: list and show a session with fx's own CLI, offline.

Why this loader cannot be installed from a registry (checked 2026-11-30, exact names only):

* fx ships as GitHub release tarballs fetched by ``curl -fsSL https://fx.sh/setup.sh | bash``
  (upstream README, ``.github/workflows/release.yml``); that host is not a package registry;
* npm ``fx`` is an unrelated JSON viewer (39.2.0); npm ``libfx`` (the upstream SDK name in
  ``sdk/package.json``, published by ``publish-libfx.yml``) answers 404, and its manifest is
  checked to have no ``bin`` anyway; PyPI ``fx`` is an unrelated 2014 library, ``libfx`` absent;
* the only public source snapshot reachable here is fx 0.0.5 (main @ 4a8f765), which reads
  schemas 1-3 but not schema 4 (it answers ``UnsupportedSessionSchema``), so no fx >= 0.0.8.

What works: an fx binary the user provides (fx 0.0.5 was used while building this codec),
placed at ``<tools>/fx/bin/fx`` (or named by ``$FX_BIN``). It lists and shows legacy and
``event_log_v1`` sessions without credentials or network (``fx sessions --json --all``,
``fx session <id> --json``), which is how the legacy writer's output and the fixtures were
checked. Every run gets a throw-away HOME holding a copy of the sessions (fx wants ``~/.fx`` and
its folders private, 0700/0600, and may write locks and caches there).

Library code: never prints, never exits; failures are :class:`FxLoaderError`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proof import npm
from proof.trees import hash_tree

PACKAGE = "vercel-labs/fx (built from source; not on npm or PyPI)"
VERSION = "0.0.5"
BIN_DIR = "fx"
FROM_REGISTRY = False
"""``python -m proof install`` leaves it out unless named: the binary is the user's."""
INSTALL_HINT = (
    "fx is not distributed through npm or PyPI, so this check needs an fx binary you provide: "
    "put it at .tools/fx/bin/fx or name it in FX_BIN"
)


class FxLoaderError(RuntimeError):
    """fx could not be found, started, or did not answer as expected."""


@dataclass(frozen=True)
class FxCheckResult:
    """What fx's own CLI made of one session (run on a throw-away copy)."""

    fx_version: str
    session_id: str
    listing: dict[str, Any] | None
    """``fx sessions --json --all`` parsed (``{"kind":"sessions","count",...}``)."""
    listed: dict[str, Any] | None
    """The listing entry of ``session_id``, if fx listed it."""
    detail: dict[str, Any] | None
    """``fx session <id> --json`` parsed (``kind`` ``session_detail`` or an error object)."""
    detail_rc: int
    files_before: dict[str, str] = field(default_factory=dict)
    files_after: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            self.listed is not None
            and self.detail is not None
            and self.detail.get("kind") == "session_detail"
        )


def binary_path(tools_dir: Path) -> Path:
    return tools_dir / BIN_DIR / "bin" / "fx"


def version(fx_bin: Path, timeout: float = 30.0) -> str:
    """``fx --version`` (e.g. ``0.0.5``) with a throw-away HOME."""
    return npm.cli_version(fx_bin, npm.scratch_env, FxLoaderError, timeout).split()[-1]


def find(tools_dir: Path) -> Path | None:
    """``$FX_BIN`` or ``<tools>/fx/bin/fx`` when it runs, else None."""
    env = os.environ.get("FX_BIN")
    exe = Path(env) if env else binary_path(tools_dir)
    if not exe.is_file():
        return None
    try:
        version(exe)
    except FxLoaderError:
        return None
    return exe


def install(tools_dir: Path) -> Path:
    """There is no registry package to install: return a found binary or explain why not."""
    found = find(tools_dir)
    if found is None:
        raise FxLoaderError(INSTALL_HINT)
    return found


def _private_copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True)
    for dirpath, _dirs, names in os.walk(dest):
        os.chmod(dirpath, 0o700)
        for name in names:
            path = Path(dirpath) / name
            if not path.is_symlink():
                os.chmod(path, 0o600)


def _run_json(argv: list[str], home: Path, timeout: float) -> tuple[int, dict[str, Any] | None]:
    proc = npm.run(argv, home, npm.scratch_env(home), timeout, FxLoaderError)
    try:
        value = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, None
    return proc.returncode, value if isinstance(value, dict) else None


def check(fx_bin: Path, home_dir: Path, session_id: str, timeout: float = 30.0) -> FxCheckResult:
    """List and show one session with fx's CLI, on a private throw-away copy of ``home_dir``.

    ``home_dir`` is an export's ``home/`` (holding ``.fx/sessions/<id>/``) or a fixture case.
    """
    src = home_dir / ".fx" / "sessions"
    if not src.is_dir():
        raise FxLoaderError(f"no .fx/sessions under {home_dir}")
    fx_version = version(fx_bin)
    with tempfile.TemporaryDirectory(prefix="trajconv-fx-check-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        (home / ".fx").mkdir(mode=0o700)
        _private_copy(src, home / ".fx" / "sessions")
        sdir = home / ".fx" / "sessions" / session_id
        before = hash_tree(sdir)
        _rc, listing = _run_json([str(fx_bin), "sessions", "--json", "--all"], home, timeout)
        detail_rc, detail = _run_json([str(fx_bin), "session", session_id, "--json"], home, timeout)
        after = hash_tree(sdir)
    entries = listing.get("sessions") if listing else None
    listed = next(
        (e for e in entries or [] if isinstance(e, dict) and e.get("id") == session_id), None
    )
    return FxCheckResult(fx_version, session_id, listing, listed, detail, detail_rc, before, after)
