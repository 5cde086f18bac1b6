"""Sub-agents inside a Snapshot: chained apart, bound into the id, streamed and verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajconv.codecs.base import ExportPlan, name_untranslated_children
from trajconv.snapshot import fileload, io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source


def _ev(line: int) -> dict[str, object]:
    return dict(evidence("main.jsonl", native="line", line=line))


def _build(with_child: bool = True) -> Snapshot:
    b = SnapshotBuilder(
        Source(harness="t", harness_version=None, session_id="s", locator="s"), "t/1"
    )
    b.add_artifact("main.jsonl", "application/x-ndjson", b'{"a":1}\n')
    b.add_text("user", "t:1", "go", time=None, turn=0, evidence=_ev(1))  # type: ignore[arg-type]
    b.add_call("t:2", "c1", "Agent", {"p": "x"}, time=None, turn=0, evidence=_ev(2))  # type: ignore[arg-type]
    if with_child:
        k = b.child(Source(harness="t", harness_version=None, session_id="k", locator="k"), "c1")
        k.session = Session(id="k", parent_session_id="s")
        k.add_text("user", "t:k1", "sub", time=None, turn=0, evidence=_ev(3))  # type: ignore[arg-type]
        k.add_text("assistant", "t:k2", "done", time=None, turn=0, evidence=_ev(4))  # type: ignore[arg-type]
    b.add_result("t:3", "c1", True, "ok", time=None, turn=0, evidence=_ev(5))  # type: ignore[arg-type]
    return b.build()


def test_a_snapshot_without_children_is_as_before() -> None:
    snap = _build(with_child=False)
    assert b'"children"' not in io.dumps(snap)
    assert "children" not in snap.model_dump(mode="json")


def test_children_stream_and_verify(tmp_path: Path) -> None:
    snap = _build()
    data = io.dumps(snap)
    path = tmp_path / "s.json"
    path.write_bytes(data)
    loaded = fileload.load_streamed(path)
    assert loaded is not None  # the streamed path takes a Snapshot with children
    assert io.dumps(loaded) == data
    assert [r.id for r in loaded.children[0].records] == ["t:k1", "t:k2"]
    checked = fileload.verify_streamed(path)
    assert checked is not None and (checked.children, checked.child_records) == (1, 2)
    report = io.verify(snap)
    assert report.ok and report.children == 1 and report.child_records == 2
    whole = io.validate_document(io.read_document(path), str(path))
    assert whole.children[0].parent_call_id == "c1"
    # the children are in the id: the same parent without them has another id
    assert _build(with_child=False).id != snap.id


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (b'"done"', b'"DONE"', "child 0 (k): record 1 (t:k2): hash does not match"),
        (b'"parent_call_id": "c1"', b'"parent_call_id": "c9"', "child 0 (k): id is"),
    ],
)
def test_a_tampered_child_fails_verify(
    tmp_path: Path, old: bytes, new: bytes, problem: str
) -> None:
    data = io.dumps(_build())
    assert data.count(old) == 1
    path = tmp_path / "s.json"
    path.write_bytes(data.replace(old, new))
    assert fileload.verify_streamed(path) is None
    report = io.verify_document(io.read_document(path))
    assert not report.ok
    assert report.problems[0].startswith(problem)


def test_a_child_linked_to_no_call_fails_verify(tmp_path: Path) -> None:
    b = SnapshotBuilder(
        Source(harness="t", harness_version=None, session_id="s", locator="s"), "t/1"
    )
    b.add_text("user", "t:1", "go", time=None, turn=0, evidence=_ev(1))  # type: ignore[arg-type]
    k = b.child(Source(harness="t", harness_version=None, session_id="k", locator="k"), "nope")
    k.session = Session(id="k", parent_session_id="s")
    snap = b.build()
    assert io.verify(snap).problems == [
        "child 0 (k): parent_call_id 'nope' is no tool call of session 's'"
    ]


def test_a_child_no_writer_carries_is_counted() -> None:
    snap = _build()
    plan = ExportPlan("s", [], [], [])
    name_untranslated_children(snap, plan)
    (diag,) = plan.diagnostics
    assert (diag.code, diag.count) == ("untranslated-subagent", 2)
    assert diag.samples == ("child k (of call c1)",)
    carried = ExportPlan("s", [], [], [], children_written=(snap.children[0].id,))
    name_untranslated_children(snap, carried)
    assert carried.diagnostics == ()
