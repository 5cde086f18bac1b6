"""Issue 34: hostile input, round three. Each test failed on the code before its fix;
``python -m tests.robustness.run`` lists them with those of issue 25."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.robustness.test_hostile import GROK, _rehash, _snapshot_doc, hostile
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.errors import FormatError

INJECTED = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"


def _write_doc(doc: dict[str, Any], path: Path) -> Path:
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return path


# -- 1. the HTML viewer ------------------------------------------------------------------


@hostile(
    "a Snapshot whose source.harness is markup (<img onerror>, <script>): refused by the "
    "schema (load, verify); a page made from such a Snapshot anyway shows it as text"
)
def test_markup_harness_is_refused_and_escaped(tmp_path: Path) -> None:
    import trajconv
    from trajconv.snapshot import io
    from trajconv.views import html

    doc = _snapshot_doc()
    doc["source"]["harness"] = INJECTED
    _rehash(doc)
    file = _write_doc(doc, tmp_path / "markup.json")
    with pytest.raises(FormatError, match="source/harness"):
        io.load(file)
    assert CliRunner().invoke(cli, ["verify", str(file)]).exit_code == 1
    shown = CliRunner().invoke(cli, ["show", "--format", "html", str(file)])
    assert shown.exit_code == 1 and "<!doctype" not in shown.output
    snap = trajconv.read("grok", GROK)
    forged = snap.model_copy(
        update={"source": snap.source.model_copy(update={"harness": INJECTED})}
    )
    page = html.render(forged)
    assert INJECTED not in page and "<img" not in page


@hostile(
    "markup that escaped into the HTML page anyway (an inline <script>, an onerror "
    "handler): does not run in Chromium, the policy allows only the page's own two "
    "scripts by sha256 (was script-src 'unsafe-inline')"
)
def test_injected_script_does_not_run_in_the_browser(tmp_path: Path) -> None:
    import trajconv
    from tests.conftest import require_loader
    from trajconv.loaders import chromium, tools_dir
    from trajconv.views import html

    policy = html.csp()
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    page = html.render(trajconv.read("grok", GROK))
    assert page.count("<script>") == 2  # the page script and the call that starts it
    page = page.replace("<main id=timeline", INJECTED + "<main id=timeline", 1)
    path = tmp_path / "injected.html"
    path.write_text(page, "utf-8")
    exe = chromium.find(tools_dir())
    require_loader(exe, "chromium")
    assert exe is not None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = chromium.launch(pw, exe)
        try:
            tab = browser.new_page()
            blocked: list[str] = []
            tab.on("console", lambda m: m.type == "error" and blocked.append(m.text))
            tab.goto(path.resolve().as_uri())
            tab.wait_for_selector("body[data-ready][data-loaded]")  # its own script ran
            assert tab.title() != "pwned"
            assert tab.evaluate("document.querySelectorAll('details.rec').length") > 0
        finally:
            browser.close()
    assert any("Content Security Policy" in m for m in blocked), blocked


# -- 7. impossible times -----------------------------------------------------------------

IMPOSSIBLE = ["2026-13-45T25:61:61.000Z", "2026-02-30T12:00:00.000Z", "2100-02-29T00:00:00.000Z"]


@pytest.mark.parametrize("when", IMPOSSIBLE)
@hostile(
    "a Snapshot (hashes made again) with a record time of 2026-13-45T25:61:61, 2026-02-30 "
    "or 2100-02-29: refused by the schema (load, verify) and by every writer, no traceback "
    "(verified ok and crashed 8 of 10 writers)"
)
def test_impossible_times_are_refused(tmp_path: Path, when: str) -> None:
    from trajconv.snapshot import io

    doc = _snapshot_doc()
    doc["records"][0]["time"] = when
    _rehash(doc)
    file = _write_doc(doc, tmp_path / "time.json")
    with pytest.raises(FormatError, match=r"records/0/time"):
        io.load(file)
    runner = CliRunner()
    result = runner.invoke(cli, ["verify", str(file)])
    assert result.exit_code == 1, result.output
    for codec in registry.all_codecs():
        if not codec.can_write:
            continue
        out = tmp_path / f"out-{codec.name}"
        result = runner.invoke(cli, ["write", "--to", codec.name, str(file), "-o", str(out)])
        assert result.exit_code == 1, (codec.name, result.output)
        assert isinstance(result.exception, SystemExit), (codec.name, result.exception)
        assert not out.exists()


def test_time_pattern_is_the_calendar() -> None:
    """The schema's pattern accepts exactly what ``datetime`` parses (every day of
    leap and common years, centuries included)."""
    import re
    from datetime import datetime, timedelta

    from trajconv.snapshot.models import TIME_PATTERN

    pattern = re.compile(TIME_PATTERN)
    for year in (1, 4, 100, 400, 1900, 2000, 2024, 2026, 2100, 9996, 9999):
        for month in range(1, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}T23:59:59.999Z"
                try:
                    datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
                    real = True
                except ValueError:
                    real = False
                assert bool(pattern.fullmatch(text)) == real, text
    moment = datetime(2026, 1, 1)
    for _ in range(0, 366 * 24, 7):
        moment += timedelta(minutes=61, seconds=7)
        assert pattern.fullmatch(moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    for bad in ("2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z", "0000-01-01T00:00:00.000Z"):
        assert not pattern.fullmatch(bad)
