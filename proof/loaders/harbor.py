"""Harbor's ATIF validator as the ATIF "loader": no harness resumes an ATIF trajectory,
so the proof that what trajconv writes is ATIF is the reference implementation's verdict.

``harbor`` (PyPI, Apache-2.0) is the evaluation framework that defines ATIF (RFC 0001);
its models (``harbor/models/trajectories``) and validator
(``python -m harbor.utils.trajectory_validator FILE``, exit 0 and "Trajectory is valid")
are the authority. It requires Python >= 3.12 and pulls a whole framework (docker,
litellm, ...), while trajconv supports 3.11; the validator and models need only
pydantic (``harbor/__init__.py`` imports lazily), so the wheel is installed without its
dependencies, plus pydantic, into its own venv made from a Python 3.12+ found on PATH.
The standalone ``atif`` models, which trajconv's reader and writer use, are the second
check (``trajconv/codecs/atif/native.py``).

Library code: never prints, never exits; failures are :class:`HarborLoaderError`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import NoPythonError, base_python, installed_version
from proof import tools_dir as _tools

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

HARNESS = "atif"
"""The codec this loader proves (no harness resumes ATIF: its validator is the check)."""
PACKAGE = "harbor"
VERSION = "0.26.0"
VENV_NAME = "harbor-venv"


class HarborLoaderError(RuntimeError):
    """Harbor's validator could not be installed or run."""


@dataclass(frozen=True)
class Verdict:
    ok: bool
    errors: str
    """The validator's error list, one a line (empty when valid)."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def find(tools_dir: Path) -> Path | None:
    """The venv's python when the pinned Harbor validator is installed there, else None."""
    python = _python(tools_dir / VENV_NAME)
    if not python.exists():
        return None
    return python if installed_version(python, PACKAGE) == VERSION else None


def install(tools_dir: Path, *, timeout: float = 600.0) -> Path:
    """Create ``tools_dir/harbor-venv`` with Harbor's wheel (no dependencies) and pydantic;
    return its python. Idempotent."""
    found = find(tools_dir)
    if found is not None:
        return found
    try:
        base = base_python((3, 12))  # Harbor's Requires-Python: >=3.12
    except NoPythonError as exc:
        raise HarborLoaderError(f"{PACKAGE}=={VERSION}: {exc}") from exc
    venv = tools_dir / VENV_NAME
    tools_dir.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="trajconv-harbor-install-")
    env = {**os.environ, "HOME": scratch, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        subprocess.run(
            [base, "-m", "venv", "--clear", str(venv)],
            check=True,
            capture_output=True,
            timeout=300,
            env=env,
        )
        pip = [str(_python(venv)), "-m", "pip", "install", "-q"]
        for args in (["--no-deps", f"{PACKAGE}=={VERSION}"], ["pydantic>=2.9,<3"]):
            done = subprocess.run(
                [*pip, *args], capture_output=True, text=True, timeout=timeout, env=env
            )
            if done.returncode != 0:
                raise HarborLoaderError(f"pip install failed: {done.stderr.strip()[-2000:]}")
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarborLoaderError(f"could not install {PACKAGE}=={VERSION}: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    python = find(tools_dir)
    if python is None:
        raise HarborLoaderError(f"{PACKAGE}=={VERSION} not importable after install in {venv}")
    return python


_VALIDATE = """
import json, sys
from pathlib import Path

from proof import NoPythonError, base_python, installed_version
from harbor.utils.trajectory_validator import TrajectoryValidator
for name in sys.argv[1:]:
    v = TrajectoryValidator()
    ok = v.validate(Path(name), validate_images=True)
    print(json.dumps({"ok": bool(ok), "errors": v.get_errors()}))
"""


def validate(python: Path, trajectories: list[Path]) -> list[Verdict]:
    """Harbor's validator (``TrajectoryValidator``, what ``python -m
    harbor.utils.trajectory_validator FILE`` runs, media paths checked too) on each
    trajectory file, in one process."""
    try:
        done = subprocess.run(
            [str(python), "-c", _VALIDATE, *map(str, trajectories)],
            capture_output=True,
            text=True,
            timeout=120 + 5 * len(trajectories),
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarborLoaderError(f"could not run Harbor's validator: {exc}") from exc
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(trajectories):
        raise HarborLoaderError(f"Harbor's validator failed: {done.stderr.strip()[-2000:]}")
    verdicts = []
    for line in lines:
        found = json.loads(line)
        verdicts.append(Verdict(found["ok"], "\n".join(found["errors"])))
    return verdicts


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the validator is not installed here, else ``{"ok", "version",
    "detail"}``. No harness resumes ATIF: the check is the reference validator's verdict."""
    python = find(_tools())
    if python is None:
        return None
    (found,) = validate(python, [export.out_dir / "trajectory.json"])
    return {
        "ok": found.ok,
        "version": VERSION,
        "detail": "Harbor's trajectory validator: " + ("valid" if found.ok else found.errors),
    }
