"""fx writer: records before the first record time take it, found without holding turns."""

from __future__ import annotations

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
