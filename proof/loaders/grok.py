"""Grok Build's real CLI as a native loader: install it pinned, list and replay a session.

Facts used here are from ``proof/loaders/grok.py`` (observed on grok 1.0.41):

* the npm postinstall writes into ``$GROK_HOME`` (default ``~/.grok``), so the install runs with
  a scratch ``HOME`` and ``GROK_HOME``;
* every ``grok`` start writes into ``$GROK_HOME`` too, so every run here gets a throw-away one;
* ``grok agent stdio`` speaks ACP as one JSON-RPC object per line; ``session/list`` and the
  ``session/load`` replay (notifications with ``params._meta.isReplay``) work offline. The load
  only answers success when some model carries a credential, so the scratch ``config.toml`` names
  a custom model after the summary's ``current_model_id`` with a dummy key and every endpoint on
  loopback (nothing listens there; no inference happens during a load);
* loading writes into the session (adds ``chat_history.jsonl`` when missing, and with a key also
  appends a ``background_tasks`` line and rewrites ``summary.json``), so the session is always
  copied into the scratch home first and never loaded in place.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proof import npm
from proof import tools_dir as _tools
from proof.jsonrpc import StdioRpc
from proof.trees import hash_tree
from trajconv.codecs.grok import layout

if TYPE_CHECKING:
    from trajconv.codecs.base import Export
    from trajconv.snapshot.models import Snapshot

PACKAGE = "@xai-official/grok"
VERSION = "1.0.41"

#: folder under the tools dir that holds the npm prefix
NPM_DIR = "npm-grok"

#: a loopback address where nothing listens (discard port); every endpoint points here
OFFLINE_BASE_URL = "http://127.0.0.1:9/v1"

JsonObj = dict[str, Any]


class GrokLoaderError(RuntimeError):
    """The Grok CLI could not be installed, started, or did not answer in time."""


@dataclass(frozen=True)
class GrokLoadResult:
    """What Grok's own loader made of one session (all from a throw-away copy)."""

    grok_version: str
    session_id: str
    #: the session appears in ACP ``session/list`` for its cwd
    listed: bool
    #: ``title`` of the listed entry (Grok: ``generated_title``, else ``session_summary``)
    title: str | None
    #: ``cwd`` of the listed entry
    listed_cwd: str | None
    #: the whole listed entry as Grok sent it
    list_entry: JsonObj | None
    #: ``session/update`` / ``_x.ai/session/update`` notifications marked ``isReplay``, in order
    replay: list[JsonObj]
    #: every notification seen during the load call (replay and live), in order
    load_notifications: list[JsonObj]
    #: ``result`` of ``session/load`` (None on error)
    load_result: JsonObj | None
    #: ``error`` of ``session/load`` (None on success)
    load_error: JsonObj | None
    #: ``totalCount`` of ``_x.ai/session/updates`` (raw lines after rewind filtering)
    raw_update_count: int | None
    #: the error of ``_x.ai/session/updates`` (it fails for the whole file on one torn line)
    raw_updates_error: JsonObj | None
    #: sha256 of every file in the copied session dir, before and after the load (relative paths)
    files_before: dict[str, str] = field(default_factory=dict)
    files_after: dict[str, str] = field(default_factory=dict)
    #: the last few KB of the agent's stderr, for diagnosing a failure
    stderr_tail: str = ""

    @property
    def load_ok(self) -> bool:
        return self.load_result is not None

    @property
    def files_added(self) -> list[str]:
        return sorted(set(self.files_after) - set(self.files_before))

    @property
    def files_removed(self) -> list[str]:
        return sorted(set(self.files_before) - set(self.files_after))

    @property
    def files_modified(self) -> list[str]:
        return sorted(
            p
            for p in self.files_before
            if p in self.files_after and self.files_before[p] != self.files_after[p]
        )

    @property
    def files_changed(self) -> bool:
        return self.files_before != self.files_after


# --------------------------------------------------------------------------- install / find


def binary_path(tools_dir: Path) -> Path:
    """Where the pinned install puts the ``grok`` launcher (a link to the native binary)."""
    return tools_dir.absolute() / NPM_DIR / "node_modules" / ".bin" / "grok"


#: the CLI's own home, a folder of the scratch home (its npm postinstall writes there too)
_HOME = {"GROK_HOME": ".grok"}


def scratch_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment whose HOME and GROK_HOME are the scratch ``home``."""
    own = npm.in_home(home, _HOME)
    return npm.scratch_env(home, own | dict(extra or {}))


def version(grok_bin: Path, timeout: float = 60.0) -> str:
    """``grok --version`` run with a throw-away home, e.g. ``"grok 1.0.41 (4220f3b224a6)"``."""
    out = npm.cli_version(grok_bin, scratch_env, GrokLoaderError, timeout)
    if not out.startswith("grok "):
        raise GrokLoaderError(f"{grok_bin} --version printed {out[-500:]!r}, not grok's version")
    return out


def find(tools_dir: Path) -> Path | None:
    """The pinned ``grok`` under ``tools_dir`` if it runs and reports VERSION, else None."""
    exe = binary_path(tools_dir)
    if not exe.exists():
        return None
    try:
        ver = version(exe)
    except GrokLoaderError:
        return None
    return exe if ver.split()[1:2] == [VERSION] else None


def install(tools_dir: Path, timeout: float = 600.0) -> Path:
    """Install PACKAGE@VERSION into ``<tools_dir>/npm-grok`` (idempotent); return the binary.

    The npm postinstall decompresses the native binary and copies it into ``$GROK_HOME/bin``;
    HOME and GROK_HOME point at a scratch dir that is deleted afterwards, so it writes nowhere
    real.
    """
    spec = f"{PACKAGE}@{VERSION}"
    return npm.install_pinned(find, tools_dir, NPM_DIR, spec, GrokLoaderError, timeout, _HOME)


# --------------------------------------------------------------------------- offline config


def offline_config(
    model_id: str, base_url: str = OFFLINE_BASE_URL, api_backend: str | None = None
) -> str:
    """A loopback-only ``config.toml`` for ``grok`` (every service URL points at 127.0.0.1).

    ``model_id`` should be the session's ``current_model_id``: otherwise a load announces
    ``model_auto_switched`` and rewrites the summary's model. The ``api_key`` only has to exist
    (it makes ``initialize`` pick the ``xai.api_key`` auth method); it is sent only to
    ``base_url``.
    """
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    q = json.dumps  # TOML basic strings accept JSON string escapes for these values
    lines = [
        "[cli]",
        "auto_update = false",
        "",
        "[features]",
        'telemetry = "off"',
        "session_recap = false",
        "campaigns = false",
        "",
        "[endpoints]",
        f"cli_chat_proxy_base_url = {q(base_url)}",
        f"models_base_url = {q(base_url)}",
        f"models_list_url = {q(base_url.rstrip('/') + '/models')}",
        f"xai_api_base_url = {q(base_url)}",
        f"feedback_base_url = {q(root)}",
        f"managed_config_url = {q(root)}",
        f"trace_upload_url = {q(root)}",
        "",
        "[models]",
        f"default = {q(model_id)}",
        "",
        f"[model.{q(model_id)}]",
        f"model = {q(model_id)}",
        f"base_url = {q(base_url)}",
        'name = "Offline stub"',
        'api_key = "dummy-not-a-key"',
        "context_window = 128000",
    ]
    if api_backend is not None:
        lines.append(f"api_backend = {q(api_backend)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- check


def _locate_session(sessions: Path, session_id: str, cwd: str) -> Path | None:
    first = sessions / layout.encode_cwd(cwd) / session_id
    if (first / "summary.json").is_file():
        return first
    for group in sorted(p for p in sessions.iterdir() if p.is_dir()):
        cand = group / session_id
        if (cand / "summary.json").is_file():
            return cand
    return None


def _model_id(session_dir: Path) -> str:
    try:
        summary = json.loads((session_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "grok-build"
    model = summary.get("current_model_id") if isinstance(summary, dict) else None
    return model if isinstance(model, str) and model else "grok-build"


def check(
    grok_bin: Path, home_dir: Path, session_id: str, cwd: str, timeout: float = 60.0
) -> GrokLoadResult:
    """List and load one session with Grok's own loader, on a throw-away copy.

    ``home_dir`` is an export's ``home/`` folder: it holds ``.grok/sessions/<encoded cwd>/<id>/``
    (a folder holding ``sessions/`` directly, i.e. a GROK_HOME, is accepted too). The whole
    ``sessions`` tree is copied into a fresh scratch GROK_HOME with the offline config; ``grok
    agent stdio`` is run in a scratch directory and asked ``initialize``, ``session/list`` (cwd),
    ``_x.ai/session/updates`` and ``session/load``. ``timeout`` bounds each request.
    """
    src_sessions = home_dir.absolute() / ".grok" / "sessions"
    if not src_sessions.is_dir():
        src_sessions = home_dir.absolute() / "sessions"
    if not src_sessions.is_dir():
        raise GrokLoaderError(f"no .grok/sessions under {home_dir}")
    grok_bin = grok_bin.absolute()
    home_dir = home_dir.absolute()
    grok_version = version(grok_bin)
    with tempfile.TemporaryDirectory(prefix="trajconv-grok-load-") as tmp:
        scratch = Path(tmp)
        home = scratch / "home"
        grok_home = home / ".grok"
        spawn_dir = scratch / "spawn"
        spawn_dir.mkdir()
        grok_home.mkdir(parents=True)
        shutil.copytree(src_sessions, grok_home / "sessions", symlinks=True)
        session_dir = _locate_session(grok_home / "sessions", session_id, cwd)
        (grok_home / "config.toml").write_text(
            offline_config(_model_id(session_dir) if session_dir else "grok-build"),
            encoding="utf-8",
        )
        before = hash_tree(session_dir)
        rpc = StdioRpc(
            [str(grok_bin), "agent", "stdio"],
            cwd=spawn_dir,
            env=scratch_env(home),
            error=GrokLoaderError,
        )
        try:
            init, _ = rpc.call(
                "initialize", {"protocolVersion": 1, "clientCapabilities": {}}, timeout
            )
            if "error" in init:
                raise GrokLoaderError(f"initialize failed: {init['error']}")
            listed, _ = rpc.call("session/list", {"cwd": cwd}, timeout)
            entry: JsonObj | None = None
            for item in (listed.get("result") or {}).get("sessions") or []:
                if isinstance(item, dict) and item.get("sessionId") == session_id:
                    entry = item
                    break
            raw, _ = rpc.call(
                "_x.ai/session/updates", {"sessionId": session_id, "cwd": cwd}, timeout
            )
            raw_result = raw.get("result")
            raw_count = raw_result.get("totalCount") if isinstance(raw_result, dict) else None
            load, notes = rpc.call(
                "session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []}, timeout
            )
        finally:
            rpc.close()
        stderr_tail = rpc.stderr_tail
        after = hash_tree(session_dir)
    replay = [
        n
        for n in notes
        if n.get("method") in ("session/update", "_x.ai/session/update")
        and isinstance(n.get("params"), dict)
        and (n["params"].get("_meta") or {}).get("isReplay") is True
    ]
    title = entry.get("title") if entry else None
    listed_cwd = entry.get("cwd") if entry else None
    return GrokLoadResult(
        grok_version=grok_version,
        session_id=session_id,
        listed=entry is not None,
        title=title if isinstance(title, str) else None,
        listed_cwd=listed_cwd if isinstance(listed_cwd, str) else None,
        list_entry=entry,
        replay=replay,
        load_notifications=notes,
        load_result=load.get("result") if isinstance(load.get("result"), dict) else None,
        load_error=load.get("error") if isinstance(load.get("error"), dict) else None,
        raw_update_count=raw_count if isinstance(raw_count, int) else None,
        raw_updates_error=raw.get("error") if isinstance(raw.get("error"), dict) else None,
        files_before=before,
        files_after=after,
        stderr_tail=stderr_tail,
    )


# --------------------------------------------------------------------------- continuation

#: Grok 1.0.41 sends the reasoning of its own sessions back (``reasoning_content`` on the
#: assistant messages of a resumed chat; reasoning items over the Responses API)
#: the continuation fixture (``fixtures/grok/<case>``) and its session (one per case)
CONTINUATION_CASE = ("recorded-multi-turn", None)
#: as a continuation source, what the conversation still differs in, in the targets that pin
#: it (PINS_DIFFERENCES), besides the failures the model saw flagged: Grok's injected
#: context entries are kept in artifacts, not records
STILL_DIFFERENT: dict[str, int] = {"context-not-projected": 2}
#: the pair test holds every source's STILL_DIFFERENT into this target
PINS_DIFFERENCES = True
REPLAYS_REASONING = True


def install_fixture(case_dir: Path, home: Path) -> None:
    """Place a recorded fixture (a GROK_HOME holding ``sessions/``) into ``home/.grok``."""
    shutil.copytree(case_dir / "sessions", home / ".grok" / "sessions", symlinks=True)


def continue_session(
    exe: Path, home: Path, session_id: str, cwd: str, prompt: str, workdir: Path
) -> list[JsonObj]:
    """Resume the session under ``home/.grok`` through ACP and send one prompt.

    ``grok agent stdio``: ``session/load`` (with the session's own cwd, which need not exist
    here) then ``session/prompt``; the config's custom model (the session's
    ``current_model_id``) points at a loopback ModelServer whose log is in ``workdir``.
    Grok's title / turn-summary requests are answered by the recorder's side rules and left out.
    """
    from fixtures.record.grok import _side_rules
    from proof.continuation import main_bodies, scripted_server

    grok_home = home / ".grok"
    session_dir = _locate_session(grok_home / "sessions", session_id, cwd)
    if session_dir is None:
        raise GrokLoaderError(f"no session {session_id} under {grok_home / 'sessions'}")
    model = _model_id(session_dir)
    spawn = workdir / "spawn"
    spawn.mkdir(parents=True, exist_ok=True)
    side = _side_rules({"title": "Continued session"})
    with scripted_server(workdir, side=side, model=model) as srv:
        (grok_home / "config.toml").write_text(
            offline_config(model, base_url=srv.base_url), encoding="utf-8"
        )
        rpc = StdioRpc(
            [str(exe.absolute()), "agent", "stdio"],
            cwd=spawn,
            env=scratch_env(home),
            error=GrokLoaderError,
        )
        try:
            init, _ = rpc.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}}, 60)
            if "error" in init:
                raise GrokLoaderError(f"initialize failed: {init['error']}")
            load, _ = rpc.call(
                "session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []}, 60
            )
            if "error" in load:
                raise GrokLoaderError(f"session/load failed: {load['error']}")
            answer, _ = rpc.call(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": prompt}]},
                180,
            )
            if "error" in answer:
                raise GrokLoaderError(f"session/prompt failed: {answer['error']}")
        finally:
            rpc.close()
    return main_bodies(workdir / "requests.jsonl")


#: context entries Grok 1.0.41 puts into the history as user messages of their own
_CONTEXT_PREFIXES = ("<user_info>", "<system-reminder>")


def unwrap_user(text: str) -> tuple[str, str | None]:
    """Grok wraps every prompt in ``<user_query>`` (a delimiter) and injects context entries."""
    if text.startswith(_CONTEXT_PREFIXES):
        return "", text
    head, tail = "<user_query>\n", "\n</user_query>"
    if text.startswith(head) and text.endswith(tail):
        return text[len(head) : -len(tail)], None
    return text, None


def request_items(body: JsonObj) -> list[JsonObj]:
    """What the model saw in one Grok request (Chat Completions or Responses)."""
    from proof.continuation import openai_items

    return openai_items(body)


def verify_export(export: Export, written: Snapshot) -> dict[str, Any] | None:
    """``trajconv parity --write``'s check of one written export (``proof.verify``):
    ``None`` when the CLI is not installed here, else ``{"ok", "version", "detail"}``."""
    exe = find(_tools())
    if exe is None:
        return None
    r = check(exe, export.out_dir / "home", export.session_id, written.session.cwd or "")
    texts = sum(r_.kind in ("user", "assistant", "reasoning") for r_ in written.records)
    replayed_texts = sum(
        n["params"]["update"]["sessionUpdate"]
        in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
        for n in r.replay
    )
    ok = r.listed and r.load_ok and replayed_texts >= texts
    return {
        "ok": ok,
        "version": r.grok_version,
        "detail": f"listed={r.listed} load_ok={r.load_ok} replayed={len(r.replay)}",
    }
