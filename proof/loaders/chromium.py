"""A real headless Chromium, driven by Playwright, to test the HTML view
(``trajconv show --format html``) the way a person opens it. Not a harness.

Both come from package registries, never from a CDN:

* the browser is Debian's ``chromium`` package (``apt-get install chromium``, as root;
  ``apt-cache policy chromium`` shows the version the distribution has);
* the driver is PyPI ``playwright`` (a test extra): its wheel ships the Node driver
  that talks to the browser. ``playwright install`` is never run: it downloads
  browsers from a CDN, which is neither a registry nor reachable here.

``TRAJCONV_CHROMIUM`` names another Chromium binary. :func:`launch` starts it with
flags that keep it off the network (no sync, updates or background fetches).

Library code: never prints, never exits; failures are :class:`ChromiumLoaderError`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

HARNESS = None
"""Not a harness: the browser the HTML view is tested in (installed by the same step)."""
PACKAGE = "chromium (Debian apt, the distribution's version) + playwright (PyPI)"
VERSION = "1.65.2"
"""Playwright's version, pinned in the test extra; the browser is the distribution's."""
APT_PACKAGE = "chromium"
ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
INSTALL_HINT = (
    "install Debian's chromium (as root: apt-get update && apt-get install chromium) or "
    "name a Chromium binary in TRAJCONV_CHROMIUM, and playwright from PyPI "
    "(pip install -e '.[test]')"
)


class ChromiumLoaderError(RuntimeError):
    """Chromium or Playwright could not be found or installed."""


def find(tools: Path) -> Path | None:
    """The Chromium binary, when Playwright is importable too (``tools`` is unused: the
    browser is a system package)."""
    del tools
    if importlib.util.find_spec("playwright") is None:
        return None
    named = os.environ.get("TRAJCONV_CHROMIUM")
    candidates = [named] if named else ["/usr/bin/chromium", shutil.which("chromium")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return Path(candidate)
    return None


def install(tools: Path) -> Path:
    """Install Debian's chromium with apt-get when missing (root only); check Playwright."""
    found = find(tools)
    if found is not None:
        return found
    if importlib.util.find_spec("playwright") is None:
        raise ChromiumLoaderError(f"playwright is not installed; {INSTALL_HINT}")
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise ChromiumLoaderError(
            f"no chromium and no apt-get as root to install it; {INSTALL_HINT}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update", "-q"], [apt, "install", "-y", "-q", APT_PACKAGE]):
        proc = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise ChromiumLoaderError(f"{' '.join(argv)} failed: {' / '.join(tail)}")
    found = find(tools)
    if found is None:
        raise ChromiumLoaderError(f"apt-get installed {APT_PACKAGE} but no binary was found")
    return found


def launch(playwright: Any, exe: Path) -> Any:
    """A headless Chromium browser from a running ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=str(exe), headless=True, args=list(ARGS))


def wait_for(page: Any, expression: str, timeout: float = 60.0) -> Any:
    """Poll ``expression`` in ``page`` until it is truthy (its value) or ``timeout`` s pass.

    Playwright's ``wait_for_function`` evaluates a string with ``eval`` in the page,
    which the view's Content-Security-Policy forbids; ``page.evaluate`` goes through
    the DevTools protocol, which the policy does not govern.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise ChromiumLoaderError(f"timed out after {timeout:.0f} s waiting for {expression}")
        time.sleep(0.02)
