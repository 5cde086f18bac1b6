"""`trajconv show`: text and Markdown of every fixture, purity, sub-agents, hostile text."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajconv
from tests.helpers import FIXTURES
from tests.subagents.support import IDS as SUBAGENT_IDS
from tests.subagents.support import SOURCES as SUBAGENT_SOURCES
from tests.views.support import ANSI, BIDI, SCRIPT, fixtures, hostile, read_fixture
from trajconv import views
from trajconv.cli.main import cli
from trajconv.snapshot import io
from trajconv.views import html, markdown, model, terminal

LABELS = [fx.label for fx in fixtures()]
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
PARENT = "019c0000-3333-7000-8000-000000000001"
CHILD = "019c0000-3333-7000-8000-000000000002"


@pytest.mark.parametrize("label", LABELS)
def test_text_and_markdown_of_every_fixture(label: str, snapshot: object) -> None:
    snap = read_fixture(label)
    text = terminal.render(snap)
    md = markdown.render(snap)
    assert text == snapshot(name="text")  # type: ignore[operator]
    assert md == snapshot(name="markdown")  # type: ignore[operator]
    # what must be there whatever the layout: the id, every tool call, every diagnostic
    for view in (text, md):
        assert snap.id in view
        for d in snap.diagnostics:
            assert d.code in view
    # the sub-agents the Snapshot holds are shown too, under their calls
    calls = [r.call for r in snap.all_records() if r.kind == "tool-call"]
    for call in calls:
        assert f"`{markdown._code(call.name)}` · `{markdown._code(call.id)}`" in md
    results = [r.result for r in snap.all_records() if r.kind == "tool-result"]
    assert md.count("**Result** of ") == len(results)
    assert md.count("**FAILED**") == sum(model.failed(r) for r in results)
    assert "spawning call not found" not in md or not snap.children
    turns = {r.turn for r in snap.records}
    assert len(re.findall(r"^## (Turn \d+|Outside a turn)$", md, re.M)) >= len(turns)


def test_fixture_list_covers_every_codec() -> None:
    assert {label.split("/")[0] for label in LABELS} >= {"grok", "copilot", "cursor", "fx"}
    assert len(LABELS) >= 20


@pytest.mark.parametrize("fmt", views.FORMATS)
def test_views_are_pure(fmt: str, tmp_path: Path) -> None:
    """Same Snapshot -> same bytes: twice in a row, and from the Snapshot read back."""
    snap = read_fixture("grok/multi-turn")
    first = views.render(snap, fmt)
    assert views.render(snap, fmt) == first
    io.dump(snap, tmp_path / "s.json")
    again = io.load(tmp_path / "s.json")
    assert again.id == snap.id
    assert views.render(again, fmt) == first


def test_long_output_is_cut_with_a_count() -> None:
    snap = read_fixture("grok/recorded-long-output")
    long = max((r.result.output for r in snap.records if r.kind == "tool-result"), key=len)
    assert long.count("\n") > 1000
    c = model.clip(long)
    assert c.head and c.tail and c.chars_cut > 0
    assert c.head + long[len(c.head) : len(long) - len(c.tail)] + c.tail == long
    note = c.note
    assert note is not None and f"{c.lines_cut:,} lines" in note
    for view in (terminal.render(snap), markdown.render(snap)):
        assert note in view
        assert "1000\n" not in view  # the middle of seq 1..2000 is cut
    assert note not in markdown.render(snap, full=True)
    assert "\n1000\n" in markdown.render(snap, full=True)


def test_reasoning_is_folded_unless_full() -> None:
    snap = read_fixture("grok/multi-turn")
    reasoning = [r.text for r in snap.records if r.kind == "reasoning"]
    assert reasoning
    text = terminal.render(snap)
    assert "folded; --full unfolds" in text
    assert "▾ reasoning" in terminal.render(snap, full=True)
    assert "<details><summary>Reasoning" in markdown.render(snap)


def test_sub_agent_nested_under_its_call() -> None:
    home = FIXTURES / "grok" / "subagent"
    out = CliRunner().invoke(
        cli, ["show", "--from", "grok", str(home), "--session", PARENT, "--format", "markdown"]
    )
    assert out.exit_code == 0, out.output
    md = out.output
    call = md.index("**Tool call** `spawn_subagent` · `call_s`")
    sub = md.index(f"> **Sub-agent** `{CHILD}`")
    result = md.index("**Result** of `spawn_subagent`")
    assert call < sub < result
    assert "updates.jsonl names it at line 3, inside this call" in md
    assert "> Found 3 test files." in md  # the child's own record, quoted under the call
    # a session folder alone has no siblings: no sub-agent, nothing invented
    folder = next((home / "sessions").glob(f"*/{PARENT}"))
    alone = CliRunner().invoke(cli, ["show", "--from", "grok", str(folder), "--format", "markdown"])
    assert alone.exit_code == 0 and "Sub-agent" not in alone.output


def test_hostile_text_is_inert_in_text_and_markdown() -> None:
    snap = hostile()
    for view in (terminal.render(snap), terminal.render(snap, color=True), markdown.render(snap)):
        assert "\x1b]0;title" not in view and "\x1b[31mRED" not in view
        assert "\\x1b[31mRED\\x1b[0m\\x1b]0;title\\x07" in view
        assert not any(ch in view for ch in BIDI_CONTROLS)
        assert "\\u202e\\u2066" in view
    md = markdown.render(snap)
    prose = re.sub(r"^(`{3,})[a-z]*\n.*?^\1$", "", md, flags=re.S | re.M)
    assert "<script" not in prose and "<img" not in prose and "</script" not in prose
    assert "&lt;script>" in prose
    assert SCRIPT in md  # verbatim inside a fenced block, where it is text
    assert ANSI not in md and BIDI not in md


def test_hostile_text_is_inert_in_html() -> None:
    snap = hostile()
    page = html.render(snap)
    # every <script> is ours: the data blocks, the meta block and the page script
    scripts = re.findall(r"<script[^>]*>", page)
    assert all(s == "<script>" or 'type="application/json"' in s for s in scripts)
    assert page.count("<script>") == 2  # the page script and the call that starts it
    assert page.count("</script>") == len(scripts)
    assert "<script>trajconvStart()</script>" in page
    tags = _Tags()
    tags.feed(page)
    assert "img" not in tags.names and not tags.handlers  # no planted element or handler
    assert "\x1b" not in page and not any(ch in page for ch in BIDI_CONTROLS)
    assert "&lt;script&gt;" in page  # the title, escaped in the static header
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def test_show_cli_writes_each_format_and_refuses_to_replace(tmp_path: Path) -> None:
    snap = read_fixture("grok/multi-turn")
    path = tmp_path / "s.json"
    io.dump(snap, path)
    runner = CliRunner()
    for fmt in views.FORMATS:
        out = tmp_path / f"view.{fmt}"
        res = runner.invoke(cli, ["show", str(path), "--format", fmt, "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert out.read_text("utf-8") == views.render(snap, fmt)
        again = runner.invoke(cli, ["show", str(path), "--format", fmt, "-o", str(out)])
        assert again.exit_code == 3 and "refusing to replace" in again.output
    piped = runner.invoke(cli, ["show", str(path)])
    assert piped.exit_code == 0 and piped.output == terminal.render(snap)
    assert "\x1b" not in piped.output  # plain text when piped
    js = runner.invoke(cli, ["show", str(path), "--json"])
    assert js.exit_code == 0 and io.loads(js.output.encode()).id == snap.id
    bad = runner.invoke(cli, ["show"])
    assert bad.exit_code == 2 and "say what to show" in bad.output


def test_sub_agent_nested_from_a_store(tmp_path: Path) -> None:
    from trajconv.harvest import archive

    store = tmp_path / "store"
    summary = archive(store, harness="grok", home=FIXTURES / "grok" / "subagent")
    assert summary.ok
    out = CliRunner().invoke(cli, ["show", str(store), "--session", PARENT, "--format", "markdown"])
    assert out.exit_code == 0, out.output
    md = out.output
    assert md.index("`spawn_subagent` · `call_s`") < md.index(f"> **Sub-agent** `{CHILD}`")
    assert md.count("**Sub-agent**") == 1


@pytest.mark.parametrize("label", LABELS)
def test_html_page_carries_every_record(label: str) -> None:
    """The page's data blocks hold each record once, in order, with its hash."""
    snap = read_fixture(label)
    page = html.render(snap)
    blocks = re.findall(r'<script type="application/json" id="d0-\d+">(.*?)</script>', page, re.S)
    data = [item for block in blocks for item in json.loads(block)]
    assert [d["h"] for d in data] == [r.hash for r in snap.records]
    meta = json.loads(re.search(r'id="meta">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert meta["sessions"][0]["count"] == len(snap.records)
    assert f"<span id=count>{len(snap.records)}</span>" in page


def test_text_on_a_terminal_goes_through_the_pager(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import os

    from trajconv.views import command

    paged: list[tuple[str, bool]] = []

    def pager(pieces: object, color: bool) -> None:
        paged.append(("".join(pieces), color))  # type: ignore[call-overload]

    monkeypatch.setattr(command, "interactive", lambda: True)
    monkeypatch.setattr(command.click, "echo_via_pager", pager)
    monkeypatch.setattr(command.shutil, "get_terminal_size", lambda: os.terminal_size((72, 20)))
    snap = read_fixture("grok/multi-turn")
    io.dump(snap, tmp_path / "s.json")
    res = CliRunner().invoke(cli, ["show", str(tmp_path / "s.json")])
    assert res.exit_code == 0 and res.output == ""
    [(text, color)] = paged
    assert color and "\x1b[" in text  # styled for the pager (less -R)
    assert text == terminal.render(snap, width=72, color=True)


@pytest.mark.parametrize(
    ("label", "harness", "path", "session"), SUBAGENT_SOURCES, ids=SUBAGENT_IDS
)
def test_a_held_sub_agent_is_shown_once_under_its_spawning_call(
    label: str, harness: str, path: Path, session: str | None
) -> None:
    snap = trajconv.read(harness, path, session=session)
    (child,) = snap.children
    call = next(
        r.call for r in snap.records if r.kind == "tool-call" and r.call.id == child.parent_call_id
    )
    # from the native home too, which also lists the child as a session of its own
    # (another source: its own session path)
    home = {"claude": path.parents[3], "codex": path, "opencode": path.parent}.get(harness, path)
    shown = CliRunner().invoke(
        cli, ["show", "--from", harness, str(home), "--session", snap.session.id,
              "--format", "markdown"],
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    for md in (markdown.render(snap), shown.output):
        head = f"`{markdown._code(call.name)}` · `{markdown._code(call.id)}`"
        box = f"> **Sub-agent** `{child.session.id}`"
        assert md.count(box) == 1  # shown once: the home's own copy is not added again
        result = md.index(f"**Result** of `{markdown._code(call.name)}`")
        assert md.index(head) < md.index(box) < result
        assert "spawning call not found" not in md
