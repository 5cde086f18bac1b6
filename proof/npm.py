"""``npm install`` of a pinned native loader, and the scratch home every native CLI runs in.

A package's postinstall may write into the home (Grok copies its binary into
``$GROK_HOME``), so npm runs with a scratch HOME and XDG folders. It keeps only
what it needs to reach the registry: the search path, locale, CA bundles,
proxies and ``npm_config_*``; no other variable of the caller (no API key)
reaches it. A CLI run (:func:`scratch_env`) keeps less still: no proxy, since
the CLIs only talk to loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
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


#: what a native CLI run takes from the caller: search path, locale, time zone, TLS trust
RUN_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def scratch_env(
    home: Path, extra: Mapping[str, str] | None = None, *, passed: Collection[str] = RUN_ENV
) -> dict[str, str]:
    """The environment of a run around the scratch ``home``: the caller's ``passed``
    variables only (no API key, no real HOME), HOME and the XDG folders inside ``home``, no
    colour; then ``extra`` (a CLI's own home variable and switches)."""
    env = {k: v for k, v in os.environ.items() if k in passed}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "NO_COLOR": "1",
    }
    return env | dict(extra or {})


def in_home(home: Path, dirs: Mapping[str, str]) -> dict[str, str]:
    """Each variable of ``dirs`` naming its folder inside the scratch ``home``."""
    return {var: str(home / rel) for var, rel in dirs.items()}


def install_env(home: Path) -> dict[str, str]:
    npm = {k: v for k, v in os.environ.items() if k.lower().startswith("npm_config_")}
    return scratch_env(home, npm, passed=REGISTRY_ENV)


def run(
    argv: Sequence[str | Path],
    cwd: Path | str,
    env: Mapping[str, str],
    timeout: float,
    error: type[Exception],
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``argv`` in ``cwd`` with only ``env``, its output captured as text; ``error`` saying
    why when it cannot start or does not end within ``timeout`` seconds. Stdin is
    ``/dev/null``, or a pipe holding ``stdin`` and then closed when it is given."""
    try:
        return subprocess.run(
            [str(a) for a in argv],
            cwd=cwd,
            env=dict(env),
            **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(f"cannot run {' '.join(str(a) for a in argv[:3])}: {exc}") from exc


def cli_version(
    exe: Path,
    env: Callable[[Path], Mapping[str, str]],
    error: type[Exception],
    timeout: float = 60.0,
) -> str:
    """``EXE --version`` run in a throw-away home and folder (``env`` gives the environment
    around it): what it printed, stripped, or ``error`` saying why there is nothing."""
    with tempfile.TemporaryDirectory(prefix="trajconv-version-") as tmp:
        proc = run([exe, "--version"], tmp, env(Path(tmp)), timeout, error)
    out = proc.stdout.strip()
    if proc.returncode != 0 or not out:
        raise error(
            f"{exe} --version failed (rc {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-500:]}"
        )
    return out


def package_version(prefix: Path, package: str) -> str | None:
    """The version of npm ``package`` installed under ``prefix``, or None."""
    pkg = prefix / "node_modules" / package / "package.json"
    try:
        value = json.loads(pkg.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


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
        proc = run([*argv, *specs], scratch, env, timeout, error)
    if proc.returncode != 0:
        raise error(
            f"npm install {' '.join(specs)} failed (rc {proc.returncode}): "
            f"{proc.stderr.strip()[-2000:]}"
        )


def install_pinned(
    find: Callable[[Path], Path | None],
    tools_dir: Path,
    npm_dir: str,
    spec: str,
    error: type[Exception],
    timeout: float = 600.0,
    home_dirs: Mapping[str, str] | None = None,
) -> Path:
    """The CLI ``find`` finds under ``tools_dir``, after ``npm install SPEC`` into the prefix
    ``tools_dir/npm_dir`` when it finds none (idempotent); ``error`` when it still finds none.
    ``home_dirs``: variables naming a folder of the scratch home (a postinstall writes there)."""
    found = find(tools_dir)
    prefix = tools_dir.absolute() / npm_dir
    if found is None:
        npm_install(
            prefix,
            [spec],
            error=error,
            timeout=timeout,
            home_env=lambda home: in_home(home, home_dirs or {}),
        )
        found = find(tools_dir)
    if found is None:
        raise error(f"npm install {spec} finished, but {prefix} holds no working CLI of it")
    return found
