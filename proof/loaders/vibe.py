"""Mistral Vibe (PyPI ``mistral-vibe``, Apache-2.0) as a loader.

The CLI needs Python >= 3.12 (trajconv supports 3.11), so it lives in its own venv,
``tools/vibe-venv``, made from a Python 3.12+ on PATH or under pyenv
(:func:`proof.base_python`). Its wheel pins every dependency exactly, and one pin
(``certifi==2026.10.19``) may be missing from the index while its ``.post1`` release is
there: so the pinned dependencies are installed from the wheel's own ``Requires-Dist``
list, each missing exact pin replaced by the index's nearest post release, and then the
wheel itself with ``--no-deps``.

Running it offline (checked with 3.0.3): a ``config.toml`` in ``$VIBE_HOME`` (default
``~/.vibe``) naming a provider whose ``api_base`` is the loopback model server and whose
``api_key_env_var`` is empty (``vibe/core/config/vibe_schema.py``: the ``llamacpp``
default provider is built the same way) and a model on it as ``active_model``; then
``vibe -p PROMPT --output json`` prints the turn's entries (user and assistant messages
with ``sessionId``) and writes the unified store ``$VIBE_HOME/logs/session/unified/<uuid>/``.

Library code: never prints, never exits; failures are :class:`VibeLoaderError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from proof import NoPythonError, base_python, installed_version

HARNESS = "vibe"
PACKAGE = "mistral-vibe"
VERSION = "3.0.3"
VENV_NAME = "vibe-venv"
MODEL = "test-model"
"""The model name the written config gives the loopback provider."""


class VibeLoaderError(RuntimeError):
    """Mistral Vibe could not be installed or run."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def find(tools_dir: Path) -> Path | None:
    """The ``vibe`` executable when the pinned release is installed, else None."""
    venv = tools_dir / VENV_NAME
    exe = venv / "bin" / "vibe"
    if not exe.exists():
        return None
    return exe if installed_version(_python(venv), PACKAGE) == VERSION else None


def _requires(wheel: Path, python: Path) -> list[str]:
    """The wheel's unconditional and platform-selected ``Requires-Dist`` pins."""
    script = (
        "import sys, zipfile\n"
        "from packaging.requirements import Requirement\n"
        "z = zipfile.ZipFile(sys.argv[1])\n"
        "meta = next(n for n in z.namelist() if n.endswith('.dist-info/METADATA'))\n"
        "for line in z.read(meta).decode().splitlines():\n"
        "    if line.startswith('Requires-Dist: '):\n"
        "        r = Requirement(line[15:])\n"
        "        if r.marker is None or r.marker.evaluate({'extra': ''}):\n"
        "            print(r.name + str(r.specifier))\n"
    )
    done = subprocess.run(
        [str(python), "-c", script, str(wheel)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise VibeLoaderError(f"could not read {wheel.name}'s requirements: {done.stderr}")
    return done.stdout.split()


def _post_release(pip: list[str], pin: str, env: dict[str, str]) -> str:
    """``name==V`` when the index has V, else ``name==V.postN`` (the newest such)."""
    name, _, version = pin.partition("==")
    done = subprocess.run(
        [*pip[:-2], "index", "versions", name],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    found = re.search(r"Available versions: (.*)", done.stdout)
    versions = found.group(1).split(", ") if found else []
    if version in versions:
        return pin
    posts = [v for v in versions if v.startswith(version + ".post")]
    return f"{name}=={posts[0]}" if posts else pin


def install(tools_dir: Path, *, timeout: float = 1200.0) -> Path:
    """Create ``tools_dir/vibe-venv`` with the pinned CLI; return ``vibe``. Idempotent."""
    found = find(tools_dir)
    if found is not None:
        return found
    try:
        base = base_python((3, 12))  # mistral-vibe's Requires-Python: >=3.12
    except NoPythonError as exc:
        raise VibeLoaderError(f"{PACKAGE}=={VERSION}: {exc}") from exc
    venv = tools_dir / VENV_NAME
    tools_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="trajconv-vibe-install-"))
    env = {**os.environ, "HOME": str(scratch), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        subprocess.run(
            [base, "-m", "venv", "--clear", str(venv)],
            check=True,
            capture_output=True,
            timeout=300,
            env=env,
        )
        pip = [str(_python(venv)), "-m", "pip", "install", "-q"]
        wheels = scratch / "wheels"

        def run(args: list[str]) -> None:
            done = subprocess.run(
                [*pip[:3], *args], capture_output=True, text=True, timeout=timeout, env=env
            )
            if done.returncode != 0:
                raise VibeLoaderError(f"pip {args[0]} failed: {done.stderr.strip()[-2000:]}")

        run(["download", "-q", "--no-deps", f"{PACKAGE}=={VERSION}", "-d", str(wheels)])
        (wheel,) = wheels.glob("*.whl")
        run(["install", "-q", "packaging"])
        pins = [_post_release(pip, pin, env) for pin in _requires(wheel, _python(venv))]
        run(["install", "-q", *pins])
        run(["install", "-q", "--no-deps", str(wheel)])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise VibeLoaderError(f"could not install {PACKAGE}=={VERSION}: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    exe = find(tools_dir)
    if exe is None:
        raise VibeLoaderError(f"{PACKAGE}=={VERSION} not importable after install in {venv}")
    return exe


def write_config(vibe_home: Path, base_url: str) -> Path:
    """``vibe_home/config.toml`` pointing the active model at ``base_url`` (the loopback
    model server's ``http://127.0.0.1:PORT/v1``), with no API key."""
    vibe_home.mkdir(parents=True, exist_ok=True)
    path = vibe_home / "config.toml"
    path.write_text(
        'active_model = "local"\n\n[[providers]]\nname = "loop"\n'
        f'api_base = "{base_url}"\napi_key_env_var = ""\nbackend = "generic"\n\n'
        f'[[models]]\nname = "{MODEL}"\nprovider = "loop"\nalias = "local"\n',
        encoding="utf-8",
    )
    return path


def run_prompt(
    exe: Path,
    home: Path,
    cwd: Path,
    prompt: str,
    *,
    resume: str | None = None,
    timeout: float = 180.0,
) -> subprocess.CompletedProcess[str]:
    """``vibe [--resume ID] -p PROMPT --output json`` with ``HOME=home`` in ``cwd``."""
    args = [str(exe), *(["--resume", resume] if resume else []), "-p", prompt]
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "VIBE_HOME": str(home / ".vibe"),
    }
    try:
        return subprocess.run(
            [*args, "--output", "json"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise VibeLoaderError(f"could not run vibe: {exc}") from exc


# --------------------------------------------------------------------------- continuation

JsonObj = dict[str, object]

#: the fixture continued for the baseline: calls, a failed read, a non-zero exit, a denied
#: command and a resumed second turn
CONTINUATION_CASE = ("recorded-tools", None)
#: as a continuation source, what the conversation still differs in, in the other targets
#: (besides the failures the model saw flagged): nothing seen
STILL_DIFFERENT: dict[str, int] = {}


def unified_dir(home: Path) -> Path:
    """``home/.vibe/logs/session/unified``: where ``vibe --resume`` looks a session up."""
    return home / ".vibe" / "logs" / "session" / "unified"


def _prime_plugins(home: Path) -> None:
    """Give ``home`` the CLI's plugin store (``logs/session/plugins/``): a recorded session
    pins the bundled ``vibe`` plugin by content digest and ``vibe --resume`` refuses it
    (``plugin_package_unavailable``) when the store lacks it. The store is the one the pinned
    CLI makes on its first run (same digests: checked with 3.0.3), made by one throwaway turn
    in a scratch home against the loopback model server."""
    from proof import tools_dir
    from proof.continuation import scripted_server

    exe = find(tools_dir())
    if exe is None:
        raise VibeLoaderError(
            f"{PACKAGE}=={VERSION} is not installed: python -m proof install vibe"
        )
    with tempfile.TemporaryDirectory(prefix="trajconv-vibe-plugins-") as tmp:
        scratch, cwd = Path(tmp) / "home", Path(tmp) / "cwd"
        cwd.mkdir(parents=True)
        with scripted_server(Path(tmp) / "work") as srv:
            write_config(scratch / ".vibe", srv.base_url)
            done = run_prompt(exe, scratch, cwd, "hello")
        plugins = scratch / ".vibe" / "logs" / "session" / "plugins"
        if done.returncode != 0 or not plugins.is_dir():
            raise VibeLoaderError(f"vibe made no plugin store: {done.stderr[-2000:]}")
        shutil.copytree(plugins, home / ".vibe" / "logs" / "session" / "plugins")


def install_fixture(case_dir: Path, home: Path, project: Path | None = None) -> None:
    """Copy a recorded case's ``store/<uuid>/`` folders into ``home``'s unified store, with
    the plugin store they pin (:func:`_prime_plugins`)."""
    dest = unified_dir(home)
    dest.mkdir(parents=True, exist_ok=True)
    _prime_plugins(home)
    for folder in sorted((case_dir / "store").iterdir()):
        if folder.is_dir():
            shutil.copytree(folder, dest / folder.name)


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the installed session for one ``vibe --resume ID -p PROMPT`` turn against a
    loopback ModelServer (its log in ``workdir``); the JSON bodies of the model requests.
    Vibe resumes a session by its id from any folder, so a recorded cwd that is not on this
    machine is replaced by ``workdir``."""
    from proof.continuation import main_bodies, scripted_server

    if not (unified_dir(home) / session_id / "CURRENT").is_file():
        raise VibeLoaderError(f"no session {session_id} under {unified_dir(home)}")
    run_cwd = Path(cwd) if cwd and Path(cwd).is_dir() else workdir
    with scripted_server(workdir, model=MODEL) as srv:
        write_config(home / ".vibe", srv.base_url)
        done = run_prompt(exe, home, run_cwd, prompt, resume=session_id)
    if done.returncode != 0:
        raise VibeLoaderError(f"vibe --resume exited {done.returncode}: {done.stderr[-2000:]}")
    return main_bodies(workdir / "requests.jsonl")


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Chat Completions request (``openai_items``); a tool result
    carries no error flag there (the store's ``outcome`` is not sent)."""
    from proof.continuation import openai_items

    return openai_items(body)
