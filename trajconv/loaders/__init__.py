"""Native loaders: the real harness CLIs, installed pinned into a tools folder, used to
prove that what trajconv writes is listed and loaded by the harness itself."""

from __future__ import annotations

import os
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


LOADERS: tuple[str, ...] = ("grok", "copilot", "deepagents", "cursor")
"""Harnesses whose real CLI (or SDK) installs from a registry and runs offline here."""
