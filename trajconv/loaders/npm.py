"""``npm install`` of a pinned native loader, with a throw-away HOME.

A package's postinstall may write into the home (Grok copies its binary into
``$GROK_HOME``), so npm runs with a scratch HOME and XDG folders. It keeps only
what it needs to reach the registry: the search path, locale, CA bundles,
proxies and ``npm_config_*``; no other variable of the caller (no API key)
reaches it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REGISTRY_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def install_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k in REGISTRY_ENV or k.lower().startswith("npm_config_")
    }
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "NO_COLOR": "1",
    }
    return env


def npm_install(
    prefix: Path,
    specs: Sequence[str],
    *,
    error: type[Exception],
    timeout: float = 600.0,
    home_env: Callable[[Path], Mapping[str, str]] | None = None,
) -> None:
    """``npm install --prefix PREFIX SPECS`` (exact versions) or raise ``error`` saying why."""
    npm = shutil.which("npm")
    if npm is None:
        raise error("npm not found on PATH; install Node.js >= 20 to get the native loaders")
    prefix.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--no-audit", "--no-fund", "--save-exact", "--prefix", str(prefix)]
    with tempfile.TemporaryDirectory(prefix="trajconv-npm-home-") as scratch:
        env = install_env(Path(scratch))
        if home_env is not None:
            env.update(home_env(Path(scratch)))
        try:
            proc = subprocess.run(
                [*argv, *specs],
                cwd=scratch,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise error(f"npm install {' '.join(specs)} failed: {exc}") from exc
    if proc.returncode != 0:
        raise error(
            f"npm install {' '.join(specs)} failed (rc {proc.returncode}): "
            f"{proc.stderr.strip()[-2000:]}"
        )
