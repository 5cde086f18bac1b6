"""Native loaders: the real harness CLIs, installed pinned into a tools folder, used to
prove that what trajconv writes is listed and loaded by the harness itself."""

from __future__ import annotations

import os
from pathlib import Path


def tools_dir() -> Path:
    """Where pinned native loaders are installed (git-ignored); ``TRAJCONV_TOOLS`` overrides."""
    env = os.environ.get("TRAJCONV_TOOLS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".tools"


LOADERS: tuple[str, ...] = ("grok", "copilot", "deepagents", "cursor")
"""Harnesses whose real CLI (or SDK) installs from a registry and runs offline here."""

BROWSERS: tuple[str, ...] = ("chromium",)
"""Installed by the same step but not harnesses: the browser the HTML view is tested in."""
