"""`trajconv show --diff A B`: a source and the re-read of its export, each difference
with the diagnostic that named it, and a loss no diagnostic names shown as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajconv
from tests.views.support import read_fixture
from trajconv.cli.main import cli
from trajconv.snapshot import io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Snapshot, Source
from trajconv.views import diff


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("diff")
    snap = read_fixture("grok/multi-turn")
    io.dump(snap, work / "src.json")
    trajconv.write(snap, "fx", work / "out", allow_lossy=True)
    return work / "src.json", work / "out"


def test_diff_of_a_conversion_names_every_difference(
    exported: tuple[Path, Path], snapshot: object
) -> None:
    src, out = exported
    res = CliRunner().invoke(cli, ["show", "--diff", str(src), str(out), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    rows = report["rows"]
    dropped = [r for r in rows if r["status"] == "dropped"]
    # fx cannot hold reasoning: the one reasoning record is dropped, and the writer said so
    assert [r["a"] for r in dropped] == ["grok:L4"]
    assert [n["code"] for n in dropped[0]["named_by"]] == ["untranslated-reasoning"]
    assert dropped[0]["named_by"][0]["names_record"] is True
    exit_row = next(r for r in rows if "exit code" in r["fields"])
    assert {n["code"] for n in exit_row["named_by"]} == {"untranslated-exit-code"}
    assert report["counts"]["not named"] == 0
    assert not any(r["not_named"] for r in rows)
    md = CliRunner().invoke(cli, ["show", "--diff", str(src), str(out), "--format", "markdown"])
    assert md.exit_code == 0
    assert md.output == snapshot  # type: ignore[comparison-overlap]
    text = CliRunner().invoke(cli, ["show", "--diff", str(src), str(out)])
    assert "untranslated-reasoning" in text.output and "1 dropped" in text.output


def _snap(texts: list[tuple[str, str]], sid: str = "s") -> Snapshot:
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id=sid, locator="x"), "test"
    )
    for i, (kind, text) in enumerate(texts):
        ev = evidence("j", native="test", line=i + 1)
        b.add_text(kind, f"r{i}", text, time=None, turn=0, evidence=ev)
    return b.build()


def test_a_loss_no_diagnostic_names_is_shown_as_one() -> None:
    a = _snap([("user", "hi"), ("system", "be brief"), ("assistant", "hello"), ("user", "bye")])
    b = _snap([("user", "hi"), ("assistant", "hello!"), ("user", "bye")])
    d = diff.diff(a, b)
    statuses = [(r.status, r.lost) for r in d.rows]
    assert ("dropped", True) in statuses  # the system record, which nothing named
    changed = next(r for r in d.rows if r.status == "changed")
    assert changed.fields == ("text",) and changed.unnamed == ("text",)
    assert d.counts["not named"] == 2
    for view in (diff.render_text(d), diff.render_markdown(d), diff.render_html(d)):
        assert "NOT NAMED" in view
    assert '<tr class="d-dropped lost">' in diff.render_html(d)  # marked, not only said
    assert diff.render_markdown(d) == diff.render_markdown(diff.diff(a, b))  # pure


def test_diff_rejects_a_folder_that_is_no_export(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["show", "--diff", str(tmp_path), str(tmp_path)])
    assert res.exit_code == 2 and "export folders" in res.output


def test_the_codex_writers_exit_status_rewrites_are_named(tmp_path: Path) -> None:
    """Issue 33: the Codex writer puts a result's exit status and failure in its output text
    and says so (``exit-status-in-text``); the diff showed each such change NOT NAMED."""
    snap = read_fixture("grok/recorded-tool-failures")
    io.dump(snap, tmp_path / "src.json")
    export = trajconv.write(snap, "codex", tmp_path / "out")
    assert any(d.code == "exit-status-in-text" for d in export.diagnostics)
    res = CliRunner().invoke(
        cli, ["show", "--diff", str(tmp_path / "src.json"), str(tmp_path / "out"), "--json"]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    rewritten = [r for r in report["rows"] if "content" in r["fields"]]
    assert rewritten
    for row in rewritten:
        assert "exit-status-in-text" in {n["code"] for n in row["named_by"]}
        assert "content" not in row["unnamed_fields"]
    assert report["counts"]["not named"] == 0
