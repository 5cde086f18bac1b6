"""Sub-agents of recorded sessions: read as children of the Snapshot, carried by every target
that holds children, counted by every other, for every pair (docs/design.md §2-§3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trajconv
from tests.subagents.support import IDS, SOURCES, carried, read
from trajconv.codecs import registry
from trajconv.parity import _reread, write_options
from trajconv.snapshot import fileload, io

TARGETS = [c.name for c in registry.all_codecs() if c.can_write]
#: the writers that write sub-agents as the target's own children
CHILD_WRITERS = {"claude", "codex", "opencode", "kilo", "qwen", "openhands"}


def test_every_child_writer_says_its_format_holds_children() -> None:
    assert all(registry.get(name).capabilities.subagents for name in CHILD_WRITERS)


@pytest.mark.parametrize(("label", "harness", "path", "session"), SOURCES, ids=IDS)
def test_children_are_read_linked_to_their_spawning_call(
    label: str, harness: str, path: Path, session: str | None
) -> None:
    snap = read(harness, path, session)
    assert snap.children, f"{label}: no sub-agent read"
    calls = {r.call.id for r in snap.records if r.kind == "tool-call"}
    for child in snap.children:
        assert child.session.parent_session_id == snap.session.id
        assert child.parent_call_id in calls
        assert child.records
        assert {r.evidence.artifact for r in child.records} <= {a.name for a in snap.artifacts}
    report = io.verify(snap)
    assert report.ok and report.children == len(snap.children)


@pytest.mark.parametrize(("label", "harness", "path", "session"), SOURCES, ids=IDS)
def test_a_tampered_child_is_named_by_verify(
    label: str, harness: str, path: Path, session: str | None, tmp_path: Path
) -> None:
    snap = read(harness, path, session)
    doc = json.loads(io.dumps(snap))
    rec = next(r for r in doc["children"][0]["records"] if r["kind"] == "user")
    rec["text"] += " (edited)"
    file = tmp_path / "tampered.json"
    file.write_bytes(json.dumps(doc, indent=2).encode())
    assert fileload.verify_streamed(file) is None
    report = io.verify_document(io.read_document(file))
    child = snap.children[0].session.id
    assert report.problems[0].startswith(f"child 0 ({child}): record {rec['seq']}")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("label", "harness", "path", "session"), SOURCES, ids=IDS)
def test_every_child_record_is_in_the_export_or_counted(
    label: str, harness: str, path: Path, session: str | None, target: str, tmp_path: Path
) -> None:
    snap = read(harness, path, session)
    total = snap.child_records()
    export = trajconv.write(snap, target, tmp_path / "out", allow_lossy=True, **write_options(snap))
    counted = sum(d.count for d in export.diagnostics if d.code == "untranslated-subagent")
    codec = registry.get(target)
    if target not in CHILD_WRITERS:
        # the format may have children (Capabilities.subagents), but this writer does not
        # write them yet: every record of every child is named
        assert counted == total
        return
    # a target with children writes each as its own child and reads it back so
    assert counted == 0
    again = _reread(codec, export.out_dir, export.session_id)
    assert len(again.children) == len(snap.children)
    for was, now in zip(snap.children, again.children, strict=True):
        # a result's text may gain the status header the target's tools print
        # (exit-status-in-text): the source's text is its end
        got, want = carried(now), carried(was)
        assert [g[:-1] if g[0] == "tool-result" else g for g in got] == [
            w[:-1] if w[0] == "tool-result" else w for w in want
        ]
        assert all(
            g[-1].endswith(w[-1]) for g, w in zip(got, want, strict=True) if g[0] == "tool-result"
        )
        assert now.session.parent_session_id == again.session.id
    if target == harness:  # a round trip keeps the link to the spawning call
        assert [c.parent_call_id for c in again.children] == [
            c.parent_call_id for c in snap.children
        ]


ARCHIVED = [s for s in SOURCES if s[1] in ("claude", "codex")]


@pytest.mark.parametrize(
    ("label", "harness", "path", "session"), ARCHIVED, ids=[s[0] for s in ARCHIVED]
)
def test_the_archive_keeps_the_children_and_verify_names_a_tampered_one(
    label: str, harness: str, path: Path, session: str | None, tmp_path: Path
) -> None:
    from trajconv.harvest import archive
    from trajconv.store import load_input, verify_store

    snap = read(harness, path, session)
    home = path.parents[3] if harness == "claude" else path
    store = tmp_path / "store"
    archive(store, harness=harness, home=home)
    stored = load_input(store, snap.session.id)
    assert stored.id == snap.id
    assert [carried(c) for c in stored.children] == [carried(c) for c in snap.children]
    assert verify_store(store).ok
    doc_path = next(p for p in (store / "snapshots").glob("*.json") if snap.id[7:] in p.name)
    doc = json.loads(doc_path.read_text("utf-8"))
    rec = next(r for r in doc["children"][0]["records"] if r["kind"] == "user")
    rec["text"] += " (edited)"
    doc_path.write_text(json.dumps(doc, indent=2), "utf-8")
    report = verify_store(store)
    assert not report.ok
    child = snap.children[0].session.id
    assert any(f"child 0 ({child}): record {rec['seq']}" in p for p in report.problems), (
        report.problems
    )


def test_a_grok_sub_agent_kept_apart_is_named_in_its_parent() -> None:
    """Grok Build keeps a sub-agent as a session of its own; its parent's Snapshot does not
    hold it, and says so, naming the child to convert."""
    from tests.helpers import FIXTURES

    home = FIXTURES / "grok" / "subagent"
    parent = trajconv.read("grok", home, session="019c0000-3333-7000-8000-000000000001")
    assert not parent.children
    (diag,) = [d for d in parent.diagnostics if d.code == "subagent-separate"]
    assert diag.samples == ("subagents/019c0000-3333-7000-8000-000000000002",)
    child = trajconv.read("grok", home, session="019c0000-3333-7000-8000-000000000002")
    assert child.session.parent_session_id == parent.session.id
