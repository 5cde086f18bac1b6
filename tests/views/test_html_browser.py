"""The HTML page in a real headless Chromium (Debian's package, driven by Playwright).

Installed by ``python -m proof install chromium``; outside CI a missing
browser skips these tests with that hint, under ``CI=true`` it fails them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proof import tools_dir
from proof.loaders import chromium
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from tests.views.support import SCRIPT, hostile, read_fixture
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.views import html, load, model

PARENT = "019c0000-3333-7000-8000-000000000001"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = chromium.find(tools_dir())
    require_loader(exe, "chromium")
    assert exe is not None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = chromium.launch(pw, exe)
        yield b
        b.close()


class Page:
    """One page opened from a file, with everything it logged and requested."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready][data-loaded]")

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())

    def clean(self) -> None:
        assert self.errors == []
        assert self.requests == [self.url]  # the page itself, nothing else
        assert self.dialogs == []


def _open(browser: Any, tmp_path: Path, snap: Snapshot | load.model.Family, name: str) -> Page:
    path = tmp_path / f"{name}.html"
    path.write_text(html.render(snap), "utf-8")
    return Page(browser, path)


def test_page_loads_counts_searches_folds_and_filters(browser: Any, tmp_path: Path) -> None:
    snap = read_fixture("grok/multi-turn")
    p = _open(browser, tmp_path, snap, "multi-turn")
    page = p.page
    assert page.locator("#count").inner_text() == str(len(snap.records))
    assert p.count("details.rec") == len(snap.records)
    assert page.locator("#snapshot-id").inner_text() == snap.id
    assert "trajconv verify" in page.locator("#verify").inner_text()
    assert p.count("#diagnostics tbody tr") == len(snap.diagnostics)

    # search finds a tool call (by its name) and only what matches
    page.fill("#search", "wc -l app.py")
    page.press("#search", "Enter")
    page.wait_for_selector("details.rec.hit")
    hits = page.locator("details.rec")
    assert hits.count() == 1 and "run_terminal_command" in hits.first.inner_text()
    assert "1 matching records" in page.locator("#status").inner_text()
    page.fill("#search", "")
    page.press("#search", "Enter")
    chromium.wait_for(
        page, f"document.querySelectorAll('details.rec').length == {len(snap.records)}"
    )

    # reasoning is folded; a click unfolds it
    reasoning = page.locator("details.rec.k-r").first
    assert reasoning.evaluate("d => d.open") is False
    reasoning.locator("summary").click()
    assert reasoning.evaluate("d => d.open") is True
    # a turn folds and unfolds
    turn0 = [r for r in snap.records if r.turn == 0]
    page.locator(".turn", has_text="Turn 0").click()
    assert p.count("details.rec[hidden]") == len(turn0)
    page.locator(".turn", has_text="Turn 0").click()
    assert p.count("details.rec[hidden]") == 0
    # fold all / unfold all
    page.click("#collapse")
    assert page.evaluate("[...document.querySelectorAll('details.rec')].every(d => !d.open)")
    page.click("#expand")
    assert page.evaluate("[...document.querySelectorAll('details.rec')].every(d => d.open)")

    # filter by record kind: only tool calls left
    for box in page.locator("input.kind").all():
        if box.get_attribute("value") != "tool-call":
            box.uncheck()
    calls = sum(r.kind == "tool-call" for r in snap.records)
    chromium.wait_for(page, f"document.querySelectorAll('details.rec').length == {calls}")
    assert p.count("details.rec.k-c") == calls
    p.clean()


def test_hostile_text_stays_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    snap = hostile()
    p = _open(browser, tmp_path, snap, "hostile")
    page = p.page
    assert page.title().startswith("title <script>")  # shown, not run
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    # the data and meta blocks, the page script and the call that starts it: no other
    assert page.evaluate("document.querySelectorAll('script').length") == 4
    result = page.locator("details.rec.k-o pre.body").inner_text()
    assert SCRIPT in result and "</script><!--" in result
    assert "\\x1b[31mRED" in result and "\\u202e" in result
    assert "failed" in page.locator("details.rec.k-o").get_attribute("class")
    p.clean()


def test_sub_agent_unfolds_under_its_call(browser: Any, tmp_path: Path) -> None:
    home = FIXTURES / "grok" / "subagent"
    snap = read_fixture(f"grok/subagent#{PARENT}")
    fam = load.native_family("grok", home, snap, load.Limits())
    assert len(fam.children) == 1
    p = _open(browser, tmp_path, fam, "subagent")
    page = p.page
    call = page.locator("details.rec.k-c")
    sub = call.locator(".sub > details")
    assert "spawned by this call" in sub.locator("summary").inner_text()
    sub.locator("summary").click()
    page.wait_for_selector(".sub details.rec")
    assert "Found 3 test files." in sub.inner_text()
    assert sub.locator("details.rec").count() == 2  # the child's user and assistant records
    assert sub.locator("a[href='#diagnostics-1']").count() == 1
    assert "lifecycle-dropped" in page.locator("#diagnostics-1").inner_text()
    assert page.locator("#count").inner_text() == str(len(snap.records))
    p.clean()


def test_search_reaches_into_a_sub_agent(browser: Any, tmp_path: Path) -> None:
    parent = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="p", locator="x"), "test"
    )
    parent.session = Session(id="p")
    ev = evidence("j", native="test", line=1)
    parent.add_text("user", "u", "delegate it", time=None, turn=0, evidence=ev)
    parent.add_call("c", "call-1", "task", {"session": "child-1"}, time=None, turn=0, evidence=ev)
    parent.add_call("d", "call-2", "task", {"other": 1}, time=None, turn=0, evidence=ev)
    child = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="child-1", locator="y"), "test"
    )
    child.session = Session(id="child-1", parent_session_id="p")
    child.add_text("assistant", "a", "the zebra is here", time=None, turn=0, evidence=ev)
    fam = model.family(parent.build(), [child.build()])
    assert fam.children[0].call_id == "call-1"
    p = _open(browser, tmp_path, fam, "search-child")
    page = p.page
    page.fill("#search", "zebra")
    page.press("#search", "Enter")
    chromium.wait_for(page, "document.querySelectorAll('.sub details.rec.hit').length == 1")
    shown = page.locator("#timeline > details.rec")
    assert shown.count() == 1 and "call-1" in shown.first.inner_text()  # the spawning call
    p.clean()


def _many(n: int) -> Snapshot:
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="big", locator="x"), "test"
    )
    b.session = Session(id="big", title="many records")
    for i in range(n):
        ev = evidence("updates.jsonl", native="test", line=i + 1)
        if i % 2:
            b.add_text("assistant", f"a{i}", f"answer {i}", time=None, turn=i // 10, evidence=ev)
        else:
            b.add_call(
                f"c{i}",
                f"call-{i}",
                "grep",
                {"pattern": f"needle-{i}"},
                time=None,
                turn=i // 10,
                evidence=ev,
            )
    return b.build()


def test_large_session_renders_in_windows(browser: Any, tmp_path: Path) -> None:
    snap = _many(4500)
    p = _open(browser, tmp_path, snap, "many")
    page = p.page
    assert page.locator("#count").inner_text() == "4500"
    first = p.count("details.rec")
    assert 0 < first < 4500  # lazily: a window, not the session
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    chromium.wait_for(page, f"document.querySelectorAll('details.rec').length > {first}")
    # search reaches records never rendered, in blocks never parsed
    page.fill("#search", "needle-4498")
    page.press("#search", "Enter")
    chromium.wait_for(page, "document.querySelectorAll('details.rec.hit').length == 1")
    assert "#4498" in page.locator("details.rec.hit").inner_text()
    p.clean()


def test_empty_session_page_starts(browser: Any, tmp_path: Path) -> None:
    """No data block calls the start: the page starts once it is read."""
    p = _open(browser, tmp_path, _many(0), "empty")
    assert p.page.locator("#count").inner_text() == "0"
    assert "0 records in view" in p.page.locator("#status").inner_text()
    p.clean()
