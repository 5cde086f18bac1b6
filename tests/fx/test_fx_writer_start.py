"""fx writer: records before the first record time take it, found without holding turns."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import export_tree
from trajconv.codecs.common import iso_ms
from trajconv.codecs.export import emit
from trajconv.codecs.fx import CODEC, writer
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.snapshot.spool import RecordLog


def _session(times: list[str | None]) -> Snapshot:
    """User and assistant records in turns of two, record ``i`` at ``times[i]``; no session
    start, so the writer's start is the first record time."""
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="s", locator="x"), "test"
    )
    b.session = Session(id="1-2-0123456789abcdef", cwd="/work/demo")
    ev = evidence("updates.jsonl", native="test", line=1)
    for i, time in enumerate(times):
        kind = "user" if i % 2 == 0 else "assistant"
        b.add_text(kind, f"r{i}", f"text {i}", time=time, turn=i // 2, evidence=ev)
    return b.build()


_TIMES = st.lists(
    st.one_of(st.none(), st.sampled_from(["2026-01-02T03:04:05.006Z", "2026-05-06T07:08:09.010Z"])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(_TIMES)
def test_the_first_time_is_found_in_the_spooled_records_as_in_the_models(
    times: list[str | None],
) -> None:
    snap = _session(times)
    assert isinstance(snap.records, RecordLog)
    first = next((iso_ms(t) for t in times if t is not None), None)
    assert writer._first_time(snap.records) == first
    assert writer._first_time(list(snap.records)) == first


def test_turns_before_the_first_time_take_it(tmp_path: Path) -> None:
    times = [None, None, None, None, "2026-01-02T03:04:05.006Z", None]
    snap = _session(times)
    plan = CODEC.plan(snap, schema=4, allow_lossy=True)
    out = emit(plan, tmp_path / "spooled")
    events = next((out.out_dir / "home").rglob("events.jsonl")).read_bytes().splitlines()
    stamps = {orjson.loads(line)["timestamp_ms"] for line in events}
    assert stamps == {iso_ms(times[4])}
    # the same records held in memory make the same files
    held = snap.model_copy(update={"records": list(snap.records)})
    again = emit(CODEC.plan(held, schema=4, allow_lossy=True), tmp_path / "held")
    assert export_tree(out.out_dir) == export_tree(again.out_dir)


def _tool_session(times: list[str | None], arguments: object = None) -> Snapshot:
    """Turns of a user message, a call, its result and an answer, record ``i`` at
    ``times[i]``; no session start."""
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="s", locator="x"), "test"
    )
    b.session = Session(id="1-2-0123456789abcdef", cwd="/work/demo")
    ev = evidence("updates.jsonl", native="test", line=1)
    for i, time in enumerate(times):
        turn, step = divmod(i, 4)
        if step == 0:
            b.add_text("user", f"r{i}", f"ask {turn}", time=time, turn=turn, evidence=ev)
        elif step == 1:
            args = {"path": f"f{turn}"} if arguments is None else arguments
            b.add_call(f"r{i}", f"c{turn}", "read", args, time=time, turn=turn, evidence=ev)
        elif step == 2:
            b.add_result(f"r{i}", f"c{turn}", True, "out ✓", time=time, turn=turn, evidence=ev)
        else:
            b.add_text("assistant", f"r{i}", f"answer {turn}", time=time, turn=turn, evidence=ev)
    return b.build()


_TIME = st.one_of(
    st.none(), st.sampled_from(["2026-01-02T03:04:05.006Z", "2026-05-06T07:08:09.010Z"])
)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.lists(_TIME, min_size=4 * n, max_size=4 * n)))
def test_legacy_result_times_take_the_nearest_earlier_time_or_the_first(
    times: list[str | None],
) -> None:
    snap = _tool_session(times)
    plan = CODEC.plan(snap, allow_lossy=True)
    doc = orjson.loads(next(f for f in plan.files if f.path.endswith("session.json")).read())
    known = [iso_ms(t) if t is not None else None for t in times]
    first = next((ms for ms in known if ms is not None), 0)
    expected = []
    for i in range(2, len(times), 4):  # each result: its own time, else the last one before
        before = [ms for ms in known[: i + 1] if ms is not None]
        expected.append(before[-1] if before else first)
    got = [
        r["created_at_ms"]
        for entry in doc["history"]
        for step in entry.get("execution", {}).get("tool_steps", [])
        for r in step["tool_results"]
    ]
    assert got == expected


def test_arguments_keep_the_stdlib_encoding() -> None:
    """Flat arguments go through orjson, others (a float, a nested value) through the stdlib
    encoder: the text the stdlib encoder writes either way, ``1e-05`` kept."""
    for args in [
        {"path": 'a\u2028\x7f\x1f"\\ ✓', "n": 2**64 - 1, "m": -(2**63), "ok": True, "x": None},
        {"f": 1e-05, "g": [1.5, {"h": 1e16}]},
        {"_raw": 7},
        [1, "two"],
    ]:
        snap = _tool_session(["2026-01-02T03:04:05.006Z"] * 4, arguments=args)
        files = CODEC.plan(snap).files
        doc = orjson.loads(next(f for f in files if f.path.endswith("session.json")).read())
        call = doc["history"][0]["execution"]["tool_steps"][0]["tool_calls"][0]
        held = next(r for r in snap.records.dicts() if r["kind"] == "tool-call")
        want = json.dumps(held["call"]["arguments"], ensure_ascii=False, separators=(",", ":"))
        assert call["arguments_json"] == want
    assert want == '[1,"two"]'
