"""Nothing is lost silently: session facts and record fields survive a write or are named.

For every source fixture and every writer target: write (lossy), re-read the export with the
target's own reader, and compare the session facts and, on records found in both (aligned by
content), the per-record model, time, tool status and exit code. Every difference must be
counted by the writer diagnostic that names it. Record kinds dropped or merged are the parity
matrix's business (``trajconv.parity.compare``); this test covers what records and sessions
carry besides their text.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trajconv import api
from trajconv.codecs import registry
from trajconv.codecs.base import exit_code_shown
from trajconv.errors import RefusedError
from trajconv.parity import FixtureSession, _reread, fixture_sessions, write_options
from trajconv.snapshot import io
from trajconv.snapshot.diagnostics import REGISTRY
from trajconv.snapshot.models import Snapshot

# fact -> (code when the source had a value that the re-read lacks or changed,
#          code when the source had none and the re-read shows one)
SESSION_FACTS: dict[str, tuple[str, str]] = {
    "title": ("untranslated-title", "defaults-assumed"),
    "cwd": ("untranslated-cwd", "cwd-missing"),
    "model": ("untranslated-model", "defaults-assumed"),
    "branch": ("untranslated-branch", "defaults-assumed"),
    "created_at": ("untranslated-time", "timestamps-synthesized"),
    "updated_at": ("untranslated-time", "timestamps-synthesized"),
    "parent_session_id": ("untranslated-parent-session", "defaults-assumed"),
}
RECORD_FIELDS: dict[str, tuple[str, str]] = {
    "model": ("untranslated-model", "model-assumed"),
    "time": ("untranslated-time", "timestamps-synthesized"),
    "ok": ("untranslated-tool-status", "tool-status-assumed"),
    "exit_code": ("untranslated-exit-code", "defaults-assumed"),
}


def _key(rec: Any) -> tuple[Any, ...]:
    """What identifies a record across a conversion: its kind and content, never its id."""
    if rec.kind == "tool-call":
        return (rec.kind, rec.call.name, json.dumps(rec.call.arguments, sort_keys=True))
    if rec.kind == "tool-result":
        return (rec.kind, rec.result.output)
    return (rec.kind, rec.text)


def _fields(rec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"time": rec.time}
    if rec.kind in ("assistant", "reasoning"):
        out["model"] = rec.model
    if rec.kind == "tool-result":
        out["ok"] = rec.result.ok
        out["exit_code"] = rec.result.exit_code
    return out


def _difference(table: dict[str, tuple[str, str]], name: str, before: Any) -> str:
    lost, invented = table[name]
    return invented if before is None else lost


def fact_losses(source: Snapshot, written: Snapshot) -> tuple[Counter[str], list[str]]:
    """The writer codes the differences between ``source`` and its re-read call for, counted,
    with a description of each difference."""
    need: Counter[str] = Counter()
    seen: list[str] = []
    src, out = list(source.records), list(written.records)
    for fact in SESSION_FACTS:
        before, after = getattr(source.session, fact), getattr(written.session, fact)
        if fact == "model" and before is None and after in {_fields(r).get("model") for r in src}:
            continue  # a reader that takes the session's model from its records: nothing new
        if before != after:
            need[_difference(SESSION_FACTS, fact, before)] += 1
            seen.append(f"session.{fact}: {before!r} -> {after!r}")
    matcher = difflib.SequenceMatcher(None, [_key(r) for r in src], [_key(r) for r in out], False)
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            a, b = src[block.a + i], out[block.b + i]
            fa, fb = _fields(a), _fields(b)
            for name, before in fa.items():
                if (
                    name == "exit_code"
                    and before is not None
                    and exit_code_shown(b.result.output, before)
                ):
                    continue  # the status is in the text the target shows its model
                if before != fb[name]:
                    need[_difference(RECORD_FIELDS, name, before)] += 1
                    seen.append(f"{a.id}.{name}: {before!r} -> {fb[name]!r}")
    return need, seen


#: (fixture, target) pairs the target refuses even with --allow-lossy, and why: Qwen Code
#: keeps no session for a folder whose encoded name is over 255 bytes (Grok's long-cwd case)
REFUSED: dict[tuple[str, str], str] = {
    ("grok/subagent#019c0000-3333-7000-8000-000000000002", "qwen"): "over 255 bytes",
}


# Writer options that select another native layout, each checked as a target of its own.
LAYOUTS: dict[str, list[dict[str, Any]]] = {"fx": [{"schema": 4}]}


def _targets() -> list[tuple[str, dict[str, Any]]]:
    """Every registered writer, each layout of its own a target."""
    return [
        (c.name, options)
        for c in registry.all_codecs()
        if c.can_write
        for options in [{}, *LAYOUTS.get(c.name, [])]
    ]


def _cases() -> list[Any]:
    return [
        pytest.param(fx, target, options, id=f"{fx.label}->{target}{_suffix(options)}")
        for src in registry.all_codecs()
        if src.can_read
        for fx in fixture_sessions(src)
        for target, options in _targets()
    ]


def _suffix(options: dict[str, Any]) -> str:
    return "".join(f"@{k}={v}" for k, v in options.items())


@functools.cache
def _source(fx: FixtureSession) -> Snapshot:
    return api.read(fx.harness, fx.path, session=fx.session)


def test_the_codes_are_registered_writer_codes() -> None:
    for table in (SESSION_FACTS, RECORD_FIELDS):
        for codes in table.values():
            assert all(REGISTRY[c].side == "writer" for c in codes)


def test_fact_losses_sees_each_kind_of_change() -> None:
    fx = next(f for f in fixture_sessions(registry.get("copilot")) if f.case == "multi-turn")
    snap = _source(fx)
    data = json.loads(io.dumps(snap))
    data["session"]["branch"] = None
    answer = next(r for r in data["records"] if r["kind"] == "assistant" and r["model"])
    answer["model"] = None
    untimed = next(r for r in data["records"] if r["time"] is not None)
    data["records"][0]["time"] = None  # the re-read gains a time the source lacked
    assert untimed is data["records"][0]
    need, _ = fact_losses(Snapshot.model_validate(data), snap)
    assert need == {"defaults-assumed": 1, "model-assumed": 1, "timestamps-synthesized": 1}
    need, _ = fact_losses(snap, Snapshot.model_validate(data))
    assert need == {"untranslated-branch": 1, "untranslated-model": 1, "untranslated-time": 1}


@pytest.mark.parametrize(("fx", "target", "options"), _cases())
def test_every_changed_fact_is_named(
    fx: FixtureSession, target: str, options: dict[str, Any], tmp_path: Path
) -> None:
    snap = _source(fx)
    given = write_options(snap)  # a cwd where the source kept none, as a user passes --cwd
    if (fx.label, target) in REFUSED:
        with pytest.raises(RefusedError, match=REFUSED[(fx.label, target)]):
            api.write(snap, target, tmp_path / "out", allow_lossy=True, **given, **options)
        return
    export = api.write(snap, target, tmp_path / "out", allow_lossy=True, **given, **options)
    written = _reread(registry.get(target), export.out_dir, export.session_id)
    need, seen = fact_losses(_with_cwd(snap, given), written)
    got = {d.code: d.count for d in export.diagnostics}
    short = {code: (n, got.get(code, 0)) for code, n in need.items() if got.get(code, 0) < n}
    assert not short, (
        f"{fx.label} -> {target}: facts changed without enough diagnostics "
        f"(code: needed, written) {short}; differences: {seen}"
    )


def _with_cwd(snap: Snapshot, given: dict[str, Any]) -> Snapshot:
    """``snap`` as the user asked for it to be written: the cwd they named is no loss."""
    if "cwd" not in given:
        return snap
    return snap.model_copy(update={"session": snap.session.model_copy(update=given)})


def _patchy(snap: Snapshot) -> Snapshot:
    """``snap`` with facts missing here and there, as sources often have them: no session
    times, a model on only some answers, some records untimed, a tool status unknown."""
    data = json.loads(io.dumps(snap))
    data["session"].update(created_at=None, updated_at=None, branch="feature/x")
    answers = [r for r in data["records"] if r["kind"] in ("assistant", "reasoning")]
    for i, rec in enumerate(answers):
        rec["model"] = "model-a" if i % 3 == 0 else (None if i % 3 == 1 else "model-b")
    for i, rec in enumerate(data["records"]):
        if i % 4 == 1:
            rec["time"] = None
        if rec["kind"] == "tool-result" and i % 2:
            rec["result"]["ok"] = None
    return Snapshot.model_validate(data)


@pytest.mark.parametrize(
    ("target", "options"),
    [
        pytest.param(target, options, id=f"{target}{_suffix(options)}")
        for target, options in _targets()
    ],
)
def test_patchy_facts_are_named(target: str, options: dict[str, Any], tmp_path: Path) -> None:
    fx = next(f for f in fixture_sessions(registry.get("copilot")) if f.case == "multi-turn")
    snap = _patchy(_source(fx))
    export = api.write(snap, target, tmp_path / "out", allow_lossy=True, **options)
    written = _reread(registry.get(target), export.out_dir, export.session_id)
    need, seen = fact_losses(snap, written)
    assert need, "the patchy session must lose something in every target"
    got = {d.code: d.count for d in export.diagnostics}
    short = {code: (n, got.get(code, 0)) for code, n in need.items() if got.get(code, 0) < n}
    assert not short, f"-> {target}: {short}; differences: {seen}"
