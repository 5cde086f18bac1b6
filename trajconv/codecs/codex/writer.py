"""Codex CLI writer: Snapshot -> ``home/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Writes the **legacy** rollout shape (the codec README, and what the CLI keeps appending to such
a file): ``session_meta`` first (``source: "cli"`` so the picker lists it, ``model_provider``
the id the user will resume with: a mismatch refuses to resume), then per record a
``response_item`` (the history the CLI replays to the model) and, for prompts and replies,
the ``event_msg user_message`` / ``agent_message`` the picker and transcript read.
A system record the Codex reader made of a user-role message (Codex's own context such as
``<environment_context>`` or the AGENTS.md instructions) goes back as a ``user``
message, as the CLI sent it; other system text is a ``developer`` message.

Never written: ``encrypted_content`` (only the provider that issued it can read it), so
reasoning is ``untranslated-reasoning``; observations; a ``turn_context`` (the CLI takes the
model and policies from the user's config on resume). Codex output items carry no status
field: a result whose exit code or failure is known and not already printed at the head of
its text gets the header Codex's own tools print (``Process exited with code N`` /
``Exit code: N``), so the model sees it (``exit-status-in-text``); a failure so moved into
the text is also ``untranslated-tool-status`` (the model gets no status field, such as
Anthropic's ``is_error``, only the text).

The CLI's SQLite state (``state_5.sqlite``) is left alone: a rollout with no row is found by
the CLI's filesystem scan. The export's ``prepare.py`` refuses to install when the home
already has a rollout of this id or a thread-index row for it (a stale ``rollout_path`` breaks
resume).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from trajconv.codecs.base import ExportFile, ExportPlan, dropped_code
from trajconv.codecs.codex import layout, native
from trajconv.codecs.common import open_write, spooled
from trajconv.codecs.export import generic_prepare_script
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Child, Snapshot
from trajconv.snapshot.spool import Spool

#: the provider id Codex uses when config.toml names none (its built-in OpenAI provider)
DEFAULT_PROVIDER = "openai"
ORIGINATOR = "trajconv"
EPOCH = "1970-01-01T00:00:00.000Z"
#: ``evidence.native`` of a system record the reader made of a user-role context message
USER_CONTEXT = f"{native.RESPONSE_ITEM}:message:user"


#: record kinds a rollout line is written for
_WRITTEN = frozenset({"user", "assistant", "system", "tool-call", "tool-result"})


def _line(time: str, kind: str, payload: dict[str, Any]) -> bytes:
    obj = {"timestamp": time, "type": kind, "payload": payload}
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _file_time(time: str) -> tuple[str, str]:
    """``(YYYY/MM/DD, YYYY-MM-DDThh-mm-ss)`` of a Snapshot time, as the CLI names files."""
    moment = datetime.fromisoformat(time.replace("Z", "+00:00"))
    return moment.strftime("%Y/%m/%d"), moment.strftime("%Y-%m-%dT%H-%M-%S")


def _with_status(kind: str, text: str, ok: bool | None, exit_code: int | None) -> str | None:
    """The output text with the status header Codex's tools print, when it lacks one."""
    if native.exit_code_from_output(kind, text) is not None:
        return None
    if exit_code is not None:
        head = (
            f"Process exited with code {exit_code}"
            if kind == "function_call_output"
            else f"Exit code: {exit_code}"
        )
    elif ok is False:
        return native.FAILED_HEAD + text
    else:
        return None
    return f"{head}\nOutput:\n{text}"


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments  # JSON text that did not parse in the source stays as it was
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _is_patch(name: str, arguments: Any) -> bool:
    """Codex's freeform ``apply_patch`` (a ``custom_tool_call`` whose input is the patch)."""
    return (
        name == "apply_patch"
        and isinstance(arguments, dict)
        and set(arguments) == {"input"}
        and isinstance(arguments["input"], str)
    )


def _write_body(
    records: Iterable[Any],
    out: BinaryIO,
    drop: set[str],
    diags: Diagnostics,
    start: str | None,
) -> tuple[str | None, str | None]:
    """The rollout lines after ``session_meta``, one pass over ``records``; returns the
    session's start (``start``, else the first record time) and the last line's time."""
    last = start
    custom: set[str] = set()  # call ids written as custom_tool_call
    written = last  # the time of the last line written: the re-read's updated_at
    for rec in records:
        if rec.time is not None:
            last = rec.time
            start = start or rec.time
        time = rec.time or last or EPOCH
        if rec.id in drop:
            diags.add(dropped_code(rec.kind), rec.id)
            continue
        if rec.kind not in _WRITTEN:
            diags.add(f"untranslated-{rec.kind}", rec.id)
            continue
        written = time
        if rec.time is None:  # the line takes the time before it (or the epoch)
            diags.add("timestamps-synthesized", rec.id)
        if rec.kind == "assistant" and rec.model is not None:
            # no turn_context is written: the CLI uses the configured model
            diags.add("untranslated-model", rec.id)
        if rec.kind in ("user", "assistant", "system"):
            role = {"user": "user", "assistant": "assistant", "system": "developer"}[rec.kind]
            if rec.kind == "system" and rec.evidence.native == USER_CONTEXT:
                role = "user"  # Codex's own context (<environment_context>, AGENTS.md)
            part = "output_text" if rec.kind == "assistant" else "input_text"
            message = {
                "type": "message",
                "role": role,
                "content": [{"type": part, "text": rec.text}],
            }
            out.write(_line(time, native.RESPONSE_ITEM, message))
            if rec.kind == "user":
                event = {"type": "user_message", "message": rec.text, "images": []}
                out.write(_line(time, native.EVENT_MSG, event))
            elif rec.kind == "assistant":
                event = {"type": "agent_message", "message": rec.text}
                out.write(_line(time, native.EVENT_MSG, event))
        elif rec.kind == "tool-call":
            call = rec.call
            item: dict[str, Any]
            if _is_patch(call.name, call.arguments):
                assert isinstance(call.arguments, dict)
                custom.add(call.id)
                item = {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call.id,
                    "name": call.name,
                    "input": call.arguments["input"],
                }
            else:
                item = {
                    "type": "function_call",
                    "name": call.name,
                    "arguments": _arguments_text(call.arguments),
                    "call_id": call.id,
                }
            out.write(_line(time, native.RESPONSE_ITEM, item))
        elif rec.kind == "tool-result":
            res = rec.result
            kind = "custom_tool_call_output" if res.call_id in custom else "function_call_output"
            text = _with_status(kind, res.output, res.ok, res.exit_code)
            if text is not None:
                diags.add("exit-status-in-text", rec.id)
            failed = native.output_failed(kind, text or res.output)
            if res.ok is not None and (
                # the status a reader finds in the text is not the recorded one, or a
                # failure is in the text only: the model gets no status field
                failed is None or failed == res.ok or (text is not None and not res.ok)
            ):
                diags.add("untranslated-tool-status", rec.id)
            item = {"type": kind, "call_id": res.call_id, "output": text or res.output}
            out.write(_line(time, native.RESPONSE_ITEM, item))
    return start, written


def _meta_line(
    sid: str,
    start: str,
    cwd: str,
    provider: str,
    branch: str | None,
    parent: tuple[str, int] | None = None,
) -> bytes:
    """The ``session_meta`` line; a spawned thread's names its parent ``(thread, depth)`` as
    0.171.0 writes it for a sub-agent (``parent_thread_id`` and a ``source.subagent.
    thread_spawn``; codecs/codex/README.md), the agent's nickname, path and role unknown."""
    meta: dict[str, Any] = {"id": sid}
    if parent is not None:
        meta["parent_thread_id"] = parent[0]
    meta |= {
        "timestamp": start,
        "cwd": cwd,
        "originator": ORIGINATOR,
        # required by the CLI's session_meta parser; no Codex version wrote this file
        "cli_version": "",
        "source": "cli",
        "model_provider": provider,
    }
    if parent is not None:
        spawn = {
            "parent_thread_id": parent[0],
            "depth": parent[1] + 1,
            "agent_path": None,
            "agent_nickname": None,
            "agent_role": None,
        }
        meta["source"] = {"subagent": {"thread_spawn": spawn}}
        meta["thread_source"] = "subagent"
    if branch is not None:
        meta["git"] = {"branch": branch}
    return _line(start, native.SESSION_META, meta)


def _child_thread(snapshot: Snapshot, child: Child, diags: Diagnostics) -> str:
    """A sub-agent's thread id: its own when it is a UUID, else derived (``ids-derived``)."""
    if layout.is_uuid(child.session.id):
        return str(uuid.UUID(child.session.id))
    diags.add("ids-derived", f"thread id of sub-agent {child.session.id}")
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"trajconv:{snapshot.id}:codex-thread:{child.id}"))


def _with_head(head: bytes, body: Path, spool: Spool) -> Callable[[], Iterator[bytes]]:
    def chunks() -> Iterator[bytes]:
        yield head
        yield from spooled(body, spool)()

    return chunks


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    model_provider: str | None = None,
    **_options: Any,
) -> ExportPlan:
    diags, drop, workdir, sid = open_write(snapshot, "codex", allow_lossy=allow_lossy, cwd=cwd)
    # the provider the session is written for; prepare.py binds the one the home it installs
    # into configures, unless the user named one (then it refuses a home configured otherwise)
    kept = None if model_provider else source_provider(snapshot)
    provider = model_provider or kept or DEFAULT_PROVIDER
    binding = "explicit" if model_provider else "source" if kept else "home"
    diags.add("codex-model-provider", f"session_meta.model_provider={provider}")
    session = snapshot.session

    spool = Spool()
    body_path = spool.new_file("rollout-body.jsonl")
    with body_path.open("wb") as out:
        start, written = _write_body(snapshot.records, out, drop, diags, session.created_at)
    if session.created_at is None:
        diags.add("timestamps-synthesized", "session_meta.timestamp")
    start = start or EPOCH
    if session.updated_at is None:
        diags.add("timestamps-synthesized", "updated_at (the last line's time)")
    elif session.updated_at != (written or start):
        diags.add("untranslated-time", "updated_at (the last line's time)")
    if session.model is not None:
        diags.add("untranslated-model", "turn_context.model (the CLI uses the configured model)")
    if session.title is not None:
        diags.add("untranslated-title", "the picker shows the first prompt")
    if session.parent_session_id is not None:
        diags.add("untranslated-parent-session", "a legacy session_meta has no parent")

    head = _meta_line(sid, start, workdir, provider, session.branch)
    chunks = _with_head(head, body_path, spool)
    day, stamp = _file_time(start)
    rel = f".codex/{layout.SESSIONS}/{day}/rollout-{stamp}-{sid}.jsonl"
    files = [ExportFile(f"home/{rel}", chunks, 0o600)]
    paths = [rel]
    # sub-agents: spawned rollouts of their own, whose session_meta names the parent thread
    threads = {session.id: (sid, 0)}
    children: list[str] = []
    for child in snapshot.children:
        parent = threads.get(child.session.parent_session_id or "")
        if parent is None:
            continue  # its spawner is not written: counted as untranslated-subagent
        kid = _child_thread(snapshot, child, diags)
        threads.setdefault(child.session.id, (kid, parent[1] + 1))
        kid_path = spool.new_file(f"rollout-{kid}.jsonl")
        with kid_path.open("wb") as out:
            kid_start, _ = _write_body(child.records, out, set(), diags, child.session.created_at)
        kid_start = kid_start or start
        kid_cwd = child.session.cwd or workdir
        kid_head = _meta_line(kid, kid_start, kid_cwd, provider, child.session.branch, parent)
        kid_day, kid_stamp = _file_time(kid_start)
        kid_rel = f".codex/{layout.SESSIONS}/{kid_day}/rollout-{kid_stamp}-{kid}.jsonl"
        files.append(ExportFile(f"home/{kid_rel}", _with_head(kid_head, kid_path, spool), 0o600))
        paths.append(kid_rel)
        children.append(child.id)
    return ExportPlan(
        session_id=sid,
        files=files,
        session_paths=paths,
        children_written=tuple(children),
        diagnostics=diags.to_models(),
        prepare_script=prepare_script(provider, binding),
        notes=[
            _binding_note(provider, binding),
            f"run the resume command in {workdir}, or use `codex resume --all`",
        ],
    )


def source_provider(snapshot: Snapshot) -> str | None:
    """The ``session_meta.model_provider`` of a Codex source's rollout (its first line, in
    the Snapshot's artifact), so a round trip keeps it; ``None`` for another source."""
    if snapshot.source.harness != "codex":
        return None
    name = Path(snapshot.source.locator).name
    art = next((a for a in snapshot.artifacts if a.name == name), None)
    if art is None:
        return None
    head = b""
    for chunk in art.chunks():
        head += chunk
        if b"\n" in head or len(head) > 1 << 22:
            break
    try:
        meta = json.loads(head.split(b"\n", 1)[0]).get("payload")
    except (ValueError, AttributeError):
        return None
    value = meta.get("model_provider") if isinstance(meta, dict) else None
    return value if isinstance(value, str) and value else None


def _binding_note(provider: str, binding: str) -> str:
    if binding == "explicit":
        return (
            f"session_meta.model_provider is {provider!r} (--codex-model-provider): prepare.py "
            "refuses a home whose config.toml configures another, since Codex cannot resume a "
            "thread under another provider"
        )
    was = "the source session's" if binding == "source" else "Codex's default"
    return (
        f"session_meta.model_provider is {provider!r} ({was}); prepare.py binds the provider "
        "the home's config.toml configures (Codex cannot resume a thread under another) and "
        "says so; --codex-model-provider ID fixes one instead"
    )


_BIND = '''

#: the provider the rollout was written for, and why: explicit (the user named it), source
#: (a Codex session's own) or home (no provider known: Codex's default)
WRITTEN_PROVIDER = __PROVIDER__
BINDING = __BINDING__


def configured_provider(home: Path) -> tuple[str, str]:
    """The model provider Codex uses in ``home`` (config.toml ``model_provider``, or that of
    the ``profile`` it selects; ``openai`` when it names none) and where that was read."""
    config = home / ".codex" / "config.toml"
    if not config.is_file():
        return "openai", f"Codex's built-in default: {config} is absent"
    text = config.read_text("utf-8")
    try:
        import tomllib

        data = tomllib.loads(text)
    except ImportError:  # Python < 3.11: the top-level key only
        import re

        head = re.split(r"(?m)^\\s*\\[", text, maxsplit=1)[0]
        found = re.search(r'(?m)^\\s*model_provider\\s*=\\s*"([^"]+)"', head)
        data = {"model_provider": found.group(1)} if found else {}
    except ValueError as exc:
        fail(1, f"cannot read {config}: {exc}")
    profile = data.get("profile")
    chosen = (data.get("profiles") or {}).get(profile) if isinstance(profile, str) else None
    if isinstance(chosen, dict) and isinstance(chosen.get("model_provider"), str):
        return chosen["model_provider"], f"configured in {config}, profile {profile!r}"
    value = data.get("model_provider")
    if isinstance(value, str) and value:
        return value, f"configured in {config}"
    return "openai", f"Codex's built-in default: {config} names no model_provider"


def codex_bind(home: Path, plan: list, dry_run: bool) -> list:
    """Bind ``session_meta.model_provider`` to the provider the home configures, so the CLI
    can resume the session ("Cannot change this thread's model provider" otherwise)."""
    import atexit
    import shutil
    import tempfile

    configured, where = configured_provider(home)
    if configured == WRITTEN_PROVIDER:
        print(f"model_provider {configured!r} kept ({where})")
        return plan
    if BINDING == "explicit":
        fail(3, f"refusing to install: the session was written for model provider "
             f"{WRITTEN_PROVIDER!r} (--codex-model-provider), but the home's is "
             f"{configured!r} ({where}), and Codex cannot resume a thread under another; "
             f"write it with --codex-model-provider {configured} or configure "
             f"model_provider = {json.dumps(WRITTEN_PROVIDER)}")
    named = "the source session" if BINDING == "source" else "the export"
    print(f"binds model_provider {configured!r} ({where}); {named} named "
          f"{WRITTEN_PROVIDER!r}, which Codex would refuse to resume under it")
    if dry_run:
        return plan
    scratch = Path(tempfile.mkdtemp(prefix="trajconv-codex-bind-"))
    atexit.register(shutil.rmtree, scratch, True)
    bound = []
    for src, dst, mode in plan:
        if dst.name.startswith("rollout-") and dst.suffix == ".jsonl":
            with src.open("rb") as fh:
                first = json.loads(fh.readline())
                first["payload"]["model_provider"] = configured
                copy = scratch / dst.name
                with copy.open("wb") as out:
                    out.write(json.dumps(first, ensure_ascii=False, separators=(",", ":"))
                              .encode() + b"\\n")
                    shutil.copyfileobj(fh, out)
            src = copy
        bound.append((src, dst, mode))
    return bound
'''


_CHECK = '''

def codex_checks(home: Path, manifest: dict) -> None:
    """Codex: no other rollout of this id, no thread-index row for it (a stale row breaks
    resume: the CLI trusts ``threads.rollout_path``)."""
    import sqlite3

    sid = manifest["session_id"]
    base = home / ".codex"
    found = sorted(base.glob(f"sessions/*/*/*/rollout-*-{sid}.jsonl"))
    found += sorted(base.glob(f"archived_sessions/rollout-*-{sid}.jsonl"))
    if found:
        fail(3, f"refusing to install: Codex already has session {sid} at {found[0]}")
    db = base / "state_5.sqlite"
    if db.is_file():
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                row = con.execute(
                    "SELECT rollout_path FROM threads WHERE id = ?", (sid,)
                ).fetchone()
            finally:
                con.close()
        except sqlite3.Error as exc:
            fail(1, f"cannot read Codex's thread index {db}: {exc}")
        if row is not None:
            fail(3, f"refusing to install: {db} already lists thread {sid} at {row[0]}; "
                 "remove that session first (a stale row breaks `codex resume`)")
'''


def prepare_script(provider: str = DEFAULT_PROVIDER, binding: str = "home") -> str:
    """The generic prepare.py plus the Codex checks, run before anything is written, and
    the provider binding, run on the install plan."""
    script = generic_prepare_script()
    anchor = "    plan = [\n"
    bind_at = "    dirs = [(inside(home"
    if anchor not in script or bind_at not in script:
        raise RuntimeError("prepare template has no install plan anchor")  # fail loudly
    script = script.replace(anchor, "    codex_checks(home, manifest)\n" + anchor, 1)
    bind_call = "    plan = codex_bind(home, plan, args.dry_run)\n"
    script = script.replace(bind_at, bind_call + bind_at, 1)
    bind = _BIND.replace("__PROVIDER__", json.dumps(provider)).replace(
        "__BINDING__", json.dumps(binding)
    )
    marker = '\n\nif __name__ == "__main__":'
    return script.replace(marker, (bind + _CHECK).rstrip("\n") + "\n" + marker, 1)
