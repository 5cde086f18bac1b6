"""A small session's page holds its records as HTML (the browser's find and print see all of
it, with or without the script); a large one is rendered by the script a window at a time."""

from __future__ import annotations

import re

from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.views import html


def _session(n: int, long_text: str = "") -> Snapshot:
    b = SnapshotBuilder(Source(harness="t", harness_version=None, session_id="s", locator="x"), "t")
    b.session = Session(id="s", title="records")
    for i in range(n):
        ev = evidence("log.jsonl", native="test", line=i + 1)
        kind = "user" if i % 2 == 0 else "assistant"
        b.add_text(kind, f"r{i}", f"text-{i} {long_text}", time=None, turn=i // 2, evidence=ev)
    return b.build()


def _timeline(page: str) -> str:
    match = re.search(r"<main id=timeline[^>]*>(.*?)</main>", page, re.S)
    assert match is not None
    return match.group(1)


def test_a_20_record_session_is_in_the_page_as_html_whole() -> None:
    long_text = "x" * 5000  # longer than the script shows before "show all"
    page = html.render(_session(20, long_text))
    timeline = _timeline(page)
    assert timeline.count("<details") == 20
    assert all(f"text-{i} {long_text}" in timeline for i in range(20))
    assert timeline.count("class=turn") == 10
    assert '"eager":true' in page


def test_a_large_session_is_left_to_the_script() -> None:
    page = html.render(_session(html.EAGER_RECORDS + 1))
    assert _timeline(page) == ""
    assert '"eager":false' in page


def test_text_in_the_written_cards_stays_text() -> None:
    b = SnapshotBuilder(Source(harness="t", harness_version=None, session_id="s", locator="x"), "t")
    b.session = Session(id="s")
    ev = evidence("log.jsonl", native="test", line=1)
    b.add_text("user", "r0", "<script>alert(1)</script><img src=x>", time=None, turn=0, evidence=ev)
    timeline = _timeline(html.render(b.build()))
    assert "<script>" not in timeline and "<img" not in timeline
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline
