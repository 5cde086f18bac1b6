"""Load a written export with the real harness, one uniform verdict per target.

Used by ``trajconv parity --write``: ``check_export(target, export, written)``
returns ``None`` when the target has no native loader installed here, else
``{"ok", "version", "detail"}``. ``written`` is the export read back by the
target's own reader; the loader must list the session and replay as many
conversational items as that reader found.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from trajconv.codecs.base import Export
from trajconv.loaders import tools_dir
from trajconv.snapshot.models import Snapshot

Verdict = dict[str, Any]


def _grok(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import grok

    exe = grok.find(tools_dir())
    if exe is None:
        return None
    r = grok.check(exe, export.out_dir / "home", export.session_id, written.session.cwd or "")
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


def _copilot(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import copilot

    exe = copilot.find(tools_dir())
    if exe is None:
        return None
    r = copilot.check(exe, export.out_dir / "home", export.session_id, written.session.cwd or "")
    ok = r.listed and r.loaded and r.files_before == r.files_after
    return {
        "ok": ok,
        "version": r.version,
        "detail": f"listed={r.listed} loaded={r.loaded} replayed={len(r.updates)}"
        + (f" error={r.load_error}" if r.load_error else ""),
    }


def _deepagents(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import deepagents

    if deepagents.find(tools_dir()) is None:
        return None
    r = deepagents.check(export.out_dir, tools_dir())
    return {"ok": r.ok, "version": deepagents.VERSION, "detail": str(r.outcomes)}


def _cursor(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import cursor

    if cursor.find(tools_dir()) is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trajconv-cursor-home-") as home:
        # The export is a readout; its prepare.py builds the store Cursor opens, filed under
        # the session's cwd (a scratch project when the source kept none, as ATIF does).
        cwd = written.session.cwd or str(Path(home) / "project")
        subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", home]
            + ([] if written.session.cwd else ["--cwd", cwd]),
            check=True,
            capture_output=True,
            timeout=120,
        )
        r = cursor.check(Path(home), export.session_id, cwd, tools_dir=tools_dir())
    return {
        "ok": r.ok and r.error is None,
        "version": r.sdk_version,
        "detail": f"messages={len(r.messages)} turns={len(r.turns)}"
        + (f" error={r.error}" if r.error else ""),
    }


def _atif(export: Export, written: Snapshot) -> Verdict | None:
    """No harness resumes ATIF: the check is the reference validator's verdict."""
    from trajconv.loaders import harbor

    python = harbor.find(tools_dir())
    if python is None:
        return None
    (found,) = harbor.validate(python, [export.out_dir / "trajectory.json"])
    return {
        "ok": found.ok,
        "version": harbor.VERSION,
        "detail": "Harbor's trajectory validator: " + ("valid" if found.ok else found.errors),
    }


def _claude(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import claude

    exe = claude.find(tools_dir())
    if exe is None:
        return None
    r = claude.check(exe, export.out_dir / "home", export.session_id, written)
    return {
        "ok": r["ok"],
        "version": claude.VERSION,
        "detail": f"resumed; request items={r['items']} expected={r['expected']}",
    }


def _codex(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import codex

    exe = codex.find(tools_dir())
    if exe is None:
        return None
    prompt = "Continue."
    with tempfile.TemporaryDirectory(prefix="trajconv-codex-verify-") as work:
        bodies = codex.continue_session(
            exe, export.out_dir / "home", export.session_id, written.session.cwd or "", prompt,
            Path(work) / "run",
        )  # fmt: skip
    want = [*codex.snapshot_items(written), {"kind": "user", "text": prompt}]
    got = codex.conversation(codex.request_items(bodies[-1])) if bodies else []
    return {
        "ok": len(bodies) == 1 and got == want,
        "version": codex.VERSION,
        "detail": f"requests={len(bodies)} items={len(got)}/{len(want)} (resumed in codex exec)",
    }


def _gemini(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import gemini

    exe = gemini.find(tools_dir())
    if exe is None:
        return None
    prompt = "Continue."
    r = gemini.check(exe, export.out_dir / "home", export.session_id, prompt)
    same = gemini.seen_items(r.items) == gemini.expected_items(written.records, prompt)
    return {
        "ok": r.listed and len(r.requests) == 1 and same,
        "version": r.version,
        "detail": f"listed={r.listed} requests={len(r.requests)} history_matches={same}",
    }


def _opencode(export: Export, written: Snapshot) -> Verdict | None:
    from trajconv.loaders import opencode

    exe = opencode.find(tools_dir())
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="trajconv-opencode-home-") as scratch:
        home, cwd = Path(scratch) / "home", Path(scratch) / "project"
        home.mkdir()
        cwd.mkdir()
        # prepare.py runs the real `opencode import` and checks it with `opencode export`
        subprocess.run(
            [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home),
             "--cwd", str(cwd), "--opencode", str(exe)],
            check=True, capture_output=True, timeout=600, env=opencode.scratch_env(home),
        )  # fmt: skip
        listed = any(
            s.get("id") == export.session_id for s in opencode.session_list(exe, home, cwd)
        )
        requests = opencode.continue_session(
            exe, home, export.session_id, str(cwd), "Continue.", Path(scratch) / "work"
        )
    seen = opencode.request_items(requests[0]) if requests else []
    held = sum(r.kind in ("user", "tool-call", "tool-result") for r in written.records)
    replayed = sum(i["kind"] in ("user", "tool-call", "tool-result") for i in seen) - 1
    return {
        "ok": listed and replayed == held,
        "version": opencode.VERSION,
        "detail": f"listed={listed} requests={len(requests)} replayed={replayed} held={held}",
    }


CHECKS = {
    "codex": _codex,
    "grok": _grok,
    "copilot": _copilot,
    "deepagents": _deepagents,
    "cursor": _cursor,
    "atif": _atif,
    "claude": _claude,
    "gemini": _gemini,
    "opencode": _opencode,
}


def check_export(target: str, export: Export, written: Snapshot) -> Verdict | None:
    fn = CHECKS.get(target)
    if fn is None:
        return None
    try:
        return fn(export, written)
    except Exception as exc:  # a loader that crashes is a failed check, recorded as such
        return {"ok": False, "version": None, "detail": f"{type(exc).__name__}: {exc}"}
