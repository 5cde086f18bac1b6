"""Native loaders: the real harness CLIs, installed pinned into a tools folder, used to
prove that what trajconv writes is listed and loaded by the harness itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


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


LOADERS: tuple[str, ...] = (
    "grok",
    "copilot",
    "deepagents",
    "cursor",
    "harbor",
    "claude",
    "codex",
    "gemini",
    "opencode",
    "kilo",
)
"""Harnesses whose real CLI (or SDK) installs from a registry and runs offline here."""


BROWSERS: tuple[str, ...] = ("chromium",)
"""Installed by the same step but not harnesses: the browser the HTML view is tested in."""


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
