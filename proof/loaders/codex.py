"""OpenAI Codex CLI (npm ``@openai/codex``) as a native loader: install it pinned, resume a
written session offline against the project's loopback model server, and read back what the
model was sent.

Facts used (``codecs/codex/README.md``, "Offline loader check", observed with 0.171.0 and
re-checked here):

* the npm package is a small node launcher; the Rust binary comes with the platform package
  (``@openai/codex-linux-x64`` etc., an optional dependency);
* sessions live under ``$CODEX_HOME`` (default ``~/.codex``); the CLI writes its SQLite
  state, logs and config there, so every run gets a scratch ``HOME``/``CODEX_HOME``;
* ``codex exec resume <id> "<prompt>"`` replays the rollout's ``response_item`` lines as the
  model history; a ``[model_providers.<id>]`` entry in ``config.toml`` with ``wire_api =
  "responses"`` and a loopback ``base_url`` makes the one model request go to the
  :class:`fixtures.record.modelserver.ModelServer`; the session's
  ``session_meta.model_provider`` must be absent or equal to that provider id.

Nothing here talks to an address other than 127.0.0.1. This module never prints and never
exits; failures come back as :class:`CodexLoaderError`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools
from trajconv.snapshot.models import Snapshot

if TYPE_CHECKING:
    from trajconv.codecs.base import Export

PACKAGE = "@openai/codex"
VERSION = "0.171.0"
NPM_DIR = "npm-codex"
#: the provider id the loopback config defines (and the writer's default ``model_provider``)
PROVIDER_ID = "trajconv-local"
STUB_MODEL = "stub-model"
INSTALL_HINT = (
    "Codex CLI not installed: run `python -m proof install codex` "
    f"(npm install --prefix .tools/{NPM_DIR} {PACKAGE}@{VERSION})"
)

JsonObj = dict[str, Any]


class CodexLoaderError(RuntimeError):
    """The Codex CLI could not be installed, started, or did not do what was asked."""


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    """Where the pinned install puts the ``codex`` launcher."""
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "codex"


#: variables the isolated run's Python takes from the caller: search path, locale, TLS trust
_PASS_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR")


#: the CLI's own home, a folder of the scratch home (its npm postinstall writes there too)
_HOME = {"CODEX_HOME": ".codex"}


def scratch_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment whose HOME and CODEX_HOME are the scratch ``home``."""
    own = npm.in_home(home, _HOME) | {"TERM": "dumb"}
    return npm.scratch_env(home, own | (extra or {}))


def version(exe: Path, timeout: float = 60.0) -> str:
    """``codex --version`` with a throw-away home, e.g. ``"codex-cli 0.171.0"``."""
    return npm.cli_version(exe, scratch_env, CodexLoaderError, timeout).splitlines()[-1]


def find(tools_dir: Path) -> Path | None:
    """The pinned ``codex`` under ``tools_dir`` if it runs and reports VERSION, else None."""
    exe = binary_path(tools_dir)
    if not exe.exists():
        return None
    try:
        ver = version(exe)
    except CodexLoaderError:
        return None
    return exe if ver.split()[-1:] == [VERSION] else None


def install(tools_dir: Path, timeout: float = 900.0) -> Path:
    """Install PACKAGE@VERSION into ``<tools_dir>/npm-codex`` (idempotent); return the launcher."""
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, CodexLoaderError, timeout, _HOME)


#: Codex's built-in provider id, which a config cannot redefine; its URL is set instead
BUILTIN_PROVIDER = "openai"


def offline_config(base_url: str, provider: str = PROVIDER_ID, model: str = STUB_MODEL) -> str:
    """``config.toml`` that sends every model request to ``base_url`` (loopback).

    ``provider`` is the id the session's ``session_meta.model_provider`` names (the CLI
    refuses to resume under another): a ``[model_providers.<id>]`` entry, or for the built-in
    ``openai`` its ``openai_base_url`` (the CLI then tries a WebSocket first: the server's 426
    makes it use HTTPS at once, where a 404 cost five reconnects, ~7 s; observed with 0.171.0).
    """
    q = json.dumps  # TOML basic strings accept JSON string escapes for these values
    lines = [f"model = {q(model)}", f"model_provider = {q(provider)}"]
    if provider == BUILTIN_PROVIDER:
        lines.append(f"openai_base_url = {q(base_url)}")
    else:
        lines += [
            "",
            f"[model_providers.{q(provider)}]",
            'name = "trajconv loopback"',
            f"base_url = {q(base_url)}",
            'wire_api = "responses"',
            'env_key = "TRAJCONV_STUB_KEY"',
        ]
    return "\n".join([*lines, ""])


# --------------------------------------------------------------------------- isolated runs

#: the repository root (``fixtures.record.modelserver`` is imported from there)
REPO = Path(__file__).resolve().parents[2]


def _loopback_up() -> None:
    """Bring ``lo`` up inside a fresh network namespace (``unshare -rn`` leaves it down)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))


#: every HTTP(S) request not for the loopback model server goes to a dead loopback port: the
#: CLI's telemetry export and plugin sync (0.171.0) then fail at once instead of waiting on a
#: name lookup that cannot succeed in the network namespace (about 5 s at exit, observed)
DEAD_PROXY = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def _serve_and_run(job: JsonObj) -> JsonObj:
    """Start the scripted model server, write the loopback config, run each codex argv.

    ``job``: ``{"exe", "home", "cwd", "log", "steps", "side", "runs": [[arg, ...], ...],
    "timeout", "provider", "model", "extra_config"}``. Returns ``{"runs": [{"rc", "stdout",
    "stderr"}], "consumed", "overrun"}``.
    """
    from fixtures.record.modelserver import ModelServer

    home = Path(job["home"])
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    results: list[JsonObj] = []
    with ModelServer(list(job["steps"]), Path(job["log"]), side=list(job.get("side") or [])) as srv:
        config = offline_config(srv.base_url, job.get("provider", PROVIDER_ID), job["model"])
        (codex_home / "config.toml").write_text(
            config + str(job.get("extra_config") or ""), encoding="utf-8"
        )
        extra = {
            "TRAJCONV_STUB_KEY": "dummy-not-a-key",
            "CODEX_API_KEY": "dummy-not-a-key",
            **DEAD_PROXY,
        }
        if job.get("gitconfig"):
            extra["GIT_CONFIG_GLOBAL"] = str(job["gitconfig"])
        env = scratch_env(home, extra)
        for args in job["runs"]:
            try:
                proc = subprocess.run(
                    [str(job["exe"]), *args],
                    cwd=str(job["cwd"]),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=float(job.get("timeout", 180)),
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                results.append({"rc": None, "stdout": "", "stderr": str(exc)})
                break
            results.append({"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr})
            if proc.returncode != 0:
                break
        return {"runs": results, "consumed": srv.consumed, "overrun": srv.overrun}


def run_offline(job: JsonObj, *, isolate: bool = True) -> JsonObj:
    """Run :func:`_serve_and_run` inside ``unshare -rn`` (loopback only) when the system
    allows it, else in this process. The answer says which (``network_isolated``).

    Without a network namespace the CLI could reach other addresses on its own (0.171.0 runs
    ``git ls-remote https://github.com/openai/plugins.git`` at start-up), so the job's git
    config maps every https URL to a dead loopback port either way.
    """
    from proof.loaders.cursor import _unshare_prefix

    job = dict(job)
    workdir = Path(job["log"]).parent
    workdir.mkdir(parents=True, exist_ok=True)
    gitconfig = workdir / "gitconfig"
    gitconfig.write_text('[url "http://127.0.0.1:9/"]\n\tinsteadOf = https://\n', encoding="utf-8")
    job["gitconfig"] = str(gitconfig)
    prefix = _unshare_prefix() if isolate else []
    if not prefix:
        local = _serve_and_run(job)
        local["network_isolated"] = False
        return local
    job_file = workdir / "job.json"
    out_file = workdir / "job-answer.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k in _PASS_ENV}
    env["PYTHONPATH"] = str(REPO)
    timeout = float(job.get("timeout", 180)) * (len(job["runs"]) + 1)
    argv = [*prefix, sys.executable, "-m", "proof.loaders.codex", str(job_file), str(out_file)]
    proc = npm.run(argv, REPO, env, timeout, CodexLoaderError)
    if proc.returncode != 0 or not out_file.is_file():
        raise CodexLoaderError(
            f"isolated codex run exited {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        )
    answer: JsonObj = json.loads(out_file.read_text(encoding="utf-8"))
    answer["network_isolated"] = True
    return answer


# --------------------------------------------------------------------------- continuation

CONTINUE_REPLY = "Continued."

#: the recorded fixture whose continuation is the codex baseline: two turns (the second one
#: added by ``codex exec resume``), three shell calls of which ``false`` exited 1, reasoning
CONTINUATION_CASE = ("resumed", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: its
#: <environment_context> message is a system record, which Grok and Deep Agents cannot hold
#: and Copilot does not send
STILL_DIFFERENT: dict[str, int] = {"untranslated-system": 1}


def install_fixture(case_dir: Path, home: Path) -> None:
    """Place a recorded fixture's rollouts (``.codex/sessions``) into ``home/.codex``; its
    reduced thread index stays behind (the CLI finds a rollout by scanning, and builds its
    own ``state_5.sqlite``)."""
    for sub in ("sessions", "archived_sessions"):
        if (case_dir / ".codex" / sub).is_dir():
            shutil.copytree(case_dir / ".codex" / sub, home / ".codex" / sub, symlinks=True)


def _rollout(codex_home: Path, session_id: str) -> Path:
    found = sorted(codex_home.glob(f"sessions/*/*/*/rollout-*-{session_id}.jsonl"))
    found += sorted(codex_home.glob(f"archived_sessions/rollout-*-{session_id}.jsonl"))
    if not found:
        raise CodexLoaderError(f"no rollout for {session_id} under {codex_home}")
    return found[0]


def session_provider(rollout: Path) -> str:
    """``session_meta.model_provider`` of a rollout (the CLI's default id when absent)."""
    with rollout.open("rb") as fh:
        first = fh.readline()
    try:
        meta = json.loads(first).get("payload") or {}
    except (ValueError, AttributeError):
        meta = {}
    value = meta.get("model_provider") if isinstance(meta, dict) else None
    return value if isinstance(value, str) and value else BUILTIN_PROVIDER


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[dict[str, Any]]:
    """Resume the installed session (already under ``home``) in the real CLI for one turn
    with ``prompt``, against a ModelServer on 127.0.0.1 started here (its request log in
    ``workdir``); return the JSON bodies of the main-conversation model requests, in order.

    ``home/.codex`` is copied into ``workdir`` first (the CLI appends to the rollout and
    writes its databases), so ``home`` is never changed. ``codex exec resume`` runs in a
    scratch folder, or in ``cwd`` when it exists here. 0.171.0 makes no side requests in
    ``exec``; only ``POST .../responses`` bodies are returned (the ``GET`` of a WebSocket
    attempt is not a model request).
    """
    workdir = Path(workdir).absolute()
    scratch_home = workdir / "home"
    if scratch_home.exists():
        raise CodexLoaderError(f"{scratch_home} exists; continue_session needs a fresh workdir")
    shutil.copytree(Path(home) / ".codex", scratch_home / ".codex", symlinks=True)
    provider = session_provider(_rollout(scratch_home / ".codex", session_id))
    run_cwd = Path(cwd) if cwd and Path(cwd).is_dir() else workdir / "cwd"
    run_cwd.mkdir(parents=True, exist_ok=True)
    log = workdir / "requests.jsonl"
    job = {
        "exe": str(Path(exe).absolute()),
        "home": str(scratch_home),
        "cwd": str(run_cwd),
        "log": str(log),
        "steps": [{"text": CONTINUE_REPLY}],
        "model": "gpt-5.5",
        "provider": provider,
        "runs": [["exec", "resume", "--skip-git-repo-check", session_id, prompt]],
        "timeout": 180,
    }
    answer = run_offline(job)
    run = answer["runs"][0]
    if run["rc"] != 0:
        raise CodexLoaderError(f"codex exec resume exited {run['rc']}: {run['stderr'][-2000:]}")
    bodies: list[dict[str, Any]] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        body = entry.get("body")
        if (
            entry.get("method") == "POST"
            and str(entry.get("path", "")).split("?")[0].rstrip("/").endswith("/responses")
            and isinstance(body, dict)
        ):
            bodies.append(body)
    return bodies


def legacy_rollouts(exe: Path, home: Path, workdir: Path) -> list[dict[str, Any]]:
    """``codex migrate-rollouts --json`` (no ``--apply``: nothing is changed) on a copy of
    ``home/.codex``: the legacy-shape rollouts the CLI recognises, each with its
    ``thread_id``, ``rollout_path`` and ``status`` (``eligible``). No model is involved."""
    workdir = Path(workdir).absolute()
    scratch_home = workdir / "home"
    shutil.copytree(Path(home) / ".codex", scratch_home / ".codex", symlinks=True)
    (workdir / "cwd").mkdir(parents=True, exist_ok=True)
    job = {
        "exe": str(Path(exe).absolute()),
        "home": str(scratch_home),
        "cwd": str(workdir / "cwd"),
        "log": str(workdir / "requests.jsonl"),
        "steps": [],
        "model": STUB_MODEL,
        "runs": [["migrate-rollouts", "--json"]],
        "timeout": 120,
    }
    run = run_offline(job)["runs"][0]
    if run["rc"] != 0:
        raise CodexLoaderError(
            f"codex migrate-rollouts exited {run['rc']}: {run['stderr'][-2000:]}"
        )
    outcomes = json.loads(run["stdout"]).get("outcomes")
    return [o for o in outcomes if isinstance(o, dict)] if isinstance(outcomes, list) else []


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)


#: 0.171.0 sends the reasoning items of its own rollouts back to the model (their readable
#: ``summary``; ``encrypted_content`` too when the rollout has it), observed in the request
#: of the continued ``resumed`` fixture
REPLAYS_REASONING = True


def _is_context(item: dict[str, Any]) -> bool:
    """A message the harness adds: developer text or a user-role harness tag."""
    from trajconv.codecs.codex.native import is_person_prompt

    role = item.get("role")
    if role == "developer" or role == "system":
        return True
    return role == "user" and not is_person_prompt(item, _parts_text(item.get("content")))


def _turn_context(inputs: list[dict[str, Any]]) -> set[int]:
    """Positions of the context the CLI put before the last prompt for the new turn (its
    developer instructions and ``<environment_context>`` when the cwd or settings differ
    from the rollout's, observed with 0.171.0): harness text of this run, not the session's."""
    last = next(
        (
            n
            for n in range(len(inputs) - 1, -1, -1)
            if inputs[n].get("type", "message") == "message"
            and inputs[n].get("role") == "user"
            and not _is_context(inputs[n])
        ),
        None,
    )
    out: set[int] = set()
    if last is None:
        return out
    n = last - 1
    while n >= 0 and inputs[n].get("type", "message") == "message" and _is_context(inputs[n]):
        out.add(n)
        n -= 1
    return out


def unwrap_user(text: str) -> tuple[str, str | None]:
    """A user-role message the CLI injected (``<environment_context>``, AGENTS.md
    instructions, ``<turn_aborted>`` and the other harness tags) is all context; a prompt is
    sent as typed, unwrapped."""
    from trajconv.codecs.codex.native import HARNESS_TAGS

    if text.lstrip().startswith(HARNESS_TAGS):
        return "", text
    return text, None


def request_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model saw in one Responses request body, as conversation items in order.

    Responses output items have no error field, so ``error`` is always None: the output
    text alone tells the model a call failed (the exit line Codex's tools print at its head,
    ``Process exited with code N`` / ``Exit code: N``, or the failure head trajconv's writer
    puts there; :func:`trajconv.codecs.codex.native.output_failed` reads it).
    """
    from trajconv.codecs.codex.native import parse_arguments

    items: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        items.append({"kind": "system", "text": instructions})
    inputs = [i for i in body.get("input") or [] if isinstance(i, dict)]
    fresh = _turn_context(inputs)
    for n, item in enumerate(inputs):
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            text = _parts_text(item.get("content"))
            if role == "assistant":
                mapped = "assistant"
            elif role == "user" and n not in fresh:
                # the person's prompt, or context the session holds (``unwrap_user``)
                mapped = "user"
            else:
                mapped = "system"  # developer text, and the context the CLI adds for this turn
            items.append({"kind": mapped, "text": text})
        elif kind == "reasoning":
            parts = [*(item.get("summary") or []), *(item.get("content") or [])]
            items.append(
                {"kind": "reasoning", "text": "\n\n".join(_parts_text([p]) for p in parts)}
            )
        elif kind in ("function_call", "custom_tool_call"):
            if kind == "function_call":
                args = parse_arguments(item.get("arguments"))
                if isinstance(args, str):
                    args = {"_raw": args}
            else:
                args = {"input": item.get("input")}
            call_id = item.get("call_id")
            items.append(
                {
                    "kind": "tool-call",
                    "name": str(item.get("name") or ""),
                    "arguments": args,
                    "id": call_id if isinstance(call_id, str) else None,
                }
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else _parts_text(output)
            call_id = item.get("call_id")
            items.append(
                {
                    "kind": "tool-result",
                    "call_id": call_id if isinstance(call_id, str) else None,
                    "text": text,
                    "error": None,
                }
            )
    return items


def snapshot_items(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The conversation of a (written) Snapshot as :func:`request_items` reports it: what a
    continued request must carry, in order (system text and reasoning aside)."""
    out: list[dict[str, Any]] = []
    for r in snapshot.records:
        if r.kind in ("user", "assistant"):
            out.append({"kind": r.kind, "text": r.text})
        elif r.kind == "tool-call":
            args = r.call.arguments
            out.append(
                {
                    "kind": "tool-call",
                    "name": r.call.name,
                    "arguments": {"_raw": args} if isinstance(args, str) else args,
                    "id": r.call.id,
                }
            )
        elif r.kind == "tool-result":
            res = r.result
            out.append(
                {"kind": "tool-result", "call_id": res.call_id, "text": res.output, "error": None}
            )
    return out


def conversation(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``request_items`` without the harness's system text, its user-role context
    (``unwrap_user``) and reasoning."""
    return [
        i
        for i in items
        if i["kind"] not in ("system", "reasoning")
        and not (i["kind"] == "user" and not unwrap_user(str(i["text"]))[0])
    ]


def _main(argv: list[str]) -> int:
    """``python -m proof.codex JOB.json ANSWER.json`` (run by :func:`run_offline`
    inside a network namespace)."""
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    _loopback_up()
    answer = _serve_and_run(job)
    Path(argv[1]).write_text(json.dumps(answer), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    prompt = "Continue."
    with tempfile.TemporaryDirectory(prefix="trajconv-codex-verify-") as work:
        bodies = continue_session(
            exe, export.out_dir / "home", export.session_id, written.session.cwd or "", prompt,
            Path(work) / "run",
        )  # fmt: skip
    want = [*snapshot_items(written), {"kind": "user", "text": prompt}]
    got = conversation(request_items(bodies[-1])) if bodies else []
    return {
        "ok": len(bodies) == 1 and got == want,
        "version": VERSION,
        "detail": f"requests={len(bodies)} items={len(got)}/{len(want)} (resumed in codex exec)",
    }
