"""The proof rig: the real harness CLIs, installed pinned into a tools folder, used to prove
that what trajconv writes is listed, loaded and continued by the harness itself.

It lives beside the product in the source repository and is not part of the wheel:
``trajconv`` imports nothing from here at module level (``trajconv parity --write`` loads it
lazily and says so when it is absent). The tests, ``python -m proof install`` and the
fixture recorders use it.

A harness's loader is one module ``proof/loaders/<name>.py``; nothing lists it. Every module
there that defines ``PACKAGE``, ``VERSION``, ``install(tools)`` and ``find(tools)`` is a
loader (:func:`all_loaders`); ``docs/adding-a-codec.md`` ("The rig") says what else it may
define.
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

#: what makes a module of ``proof/loaders/`` a loader
REQUIRED = ("PACKAGE", "VERSION", "install", "find")


def tools_dir() -> Path:
    """Where pinned native loaders are installed: ``TRAJCONV_TOOLS``, else a source
    checkout's git-ignored ``.tools/``, else the user's cache folder (never site-packages)."""
    from trajconv.checkout import source_checkout

    env = os.environ.get("TRAJCONV_TOOLS")
    if env:
        return Path(env)
    checkout = source_checkout()
    if checkout is not None:
        return checkout / ".tools"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("trajconv")) / "tools"


@functools.cache
def all_loaders() -> dict[str, ModuleType]:
    """Every loader module of ``proof/loaders/``, by module name (what ``python -m proof
    install NAME`` takes), sorted."""
    package = importlib.import_module("proof.loaders")
    found: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{package.__name__}.{info.name}")
        if all(hasattr(mod, attr) for attr in REQUIRED):
            found[info.name] = mod
    return found


def harness_of(mod: ModuleType) -> str | None:
    """The codec a loader proves (``HARNESS``, default its module name); ``None`` for a tool
    that is not a harness (the browser the HTML view is tested in)."""
    name: str | None = getattr(mod, "HARNESS", mod.__name__.rsplit(".", 1)[-1])
    return name


@functools.cache
def harness_loaders() -> dict[str, ModuleType]:
    """The loaders of harnesses, by codec name (``atif`` is proved by Harbor's validator)."""
    out: dict[str, ModuleType] = {}
    for mod in all_loaders().values():
        harness = harness_of(mod)
        if harness is not None:
            out[harness] = mod
    return out


def loader(harness: str) -> ModuleType | None:
    """The loader module that proves ``harness`` (a codec name), if the rig has one."""
    return harness_loaders().get(harness)


def installs_by_default(mod: ModuleType) -> bool:
    """Whether a bare ``python -m proof install`` installs it: every loader whose package
    comes from a registry (``FROM_REGISTRY``, default true; fx's binary is the user's)."""
    return bool(getattr(mod, "FROM_REGISTRY", True))


def installed_version(python: Path, package: str) -> str | None:
    """The version of ``package`` installed for the interpreter ``python`` (a loader's
    own venv), or ``None`` when it is absent or the interpreter does not run."""
    try:
        out = subprocess.run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


class NoPythonError(RuntimeError):
    """No interpreter in the version window a loader's package asks for."""


def base_python(lowest: tuple[int, int], below: tuple[int, int] | None = None) -> str:
    """An interpreter whose version is at least ``lowest`` and, when given, below ``below``,
    for a loader whose package needs a Python trajconv itself does not (its own venv).

    Looked for on PATH (``python3.N``), then under pyenv's versions, whose PATH shims answer
    only for the versions selected, so an installed one may be reachable only under
    ``$PYENV_ROOT``."""
    top = below or (3, 99)
    minors = range(lowest[1], top[1]) if lowest[0] == top[0] == 3 else range(0)
    names = [f"python3.{m}" for m in reversed(minors)]
    found = [p for p in (shutil.which(n) for n in names) if p is not None]
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found += [str(p) for p in sorted(root.glob("3.*/bin/python3"), reverse=True)]
    check = f"import sys; print({lowest} <= sys.version_info[:2] < {top})"
    for python in found:
        try:
            done = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0 and done.stdout.strip() == "True":
            return python
    window = f">={lowest[0]}.{lowest[1]}" + (f",<{top[0]}.{top[1]}" if below else "")
    raise NoPythonError(f"no working Python {window} is on PATH or under pyenv")
