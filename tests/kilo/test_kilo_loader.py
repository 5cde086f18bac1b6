"""Kilo itself (npm @kilocode/cli 7.7.7, pinned) imports, lists and continues what we write.

Few CLI runs (a start takes seconds): the recorded sub-agent session is written (the parent's
document and its child's) and installed with ``prepare.py`` (``kilo import`` of each, then
``kilo export`` checks every message and part) into one scratch home; ``kilo session list``
lists the parent; ``kilo run --session`` continues the child, and the model request carries
its conversation in order.
Every other pair (its own round trip of ``recorded-tools`` and sessions of the other
harnesses) is continued by ``tests/continuation``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import kilo as loader
from tests.conftest import require_loader
from tests.kilo.test_kilo import CHILD, ROOT, SUB_DB

PROMPT = "Summarise."  # one word: `kilo run` quotes a prompt that has spaces


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, str]]:
    exe = loader.find(tools_dir())
    require_loader(exe, "kilo")
    assert exe is not None
    root = tmp_path_factory.mktemp("kilo-loader")
    home, cwd = root / "home", root / "project"
    home.mkdir()
    cwd.mkdir()
    snap = trajconv.read("kilo", SUB_DB, session=ROOT)  # with its child, a sub-agent
    export = trajconv.write(snap, "kilo", root / "out", cwd=str(cwd))
    proc = loader.CLI.prepare(exe, export.out_dir, home)
    assert proc.returncode == 0, proc.stderr
    assert "and 1 sub-agent sessions" in proc.stdout
    return exe, home, cwd, {ROOT: proc.stdout}


def test_prepare_imports_and_the_list_shows_the_session(
    installed: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    exe, home, cwd, printed = installed
    assert f"resume in {cwd} with: kilo --session {ROOT}" in printed[ROOT]
    listed = {s["id"]: s for s in loader.session_list(exe, home, cwd)}
    assert listed[ROOT]["title"] == "Delegate a count to a sub-agent"
    assert listed[ROOT]["directory"] == str(cwd)
    back = loader.export_session(exe, home, CHILD, cwd)
    assert back["info"]["parentID"] == ROOT  # the child keeps its link


def test_continued_child_session_carries_its_conversation(
    installed: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    exe, home, cwd, _ = installed
    requests = loader.continue_session(exe, home, CHILD, str(cwd), PROMPT, tmp_path)
    assert len(requests) == 1
    seen = loader.request_items(requests[0])
    assert seen[0]["kind"] == "system"
    users = [loader.unwrap_user(i["text"])[0] for i in seen if i["kind"] == "user"]
    assert users == ["Count the .txt files in the current folder", PROMPT]
    written = trajconv.read("kilo", SUB_DB, session=CHILD)
    calls = [(i["name"], i["arguments"]) for i in seen if i["kind"] == "tool-call"]
    assert calls == [(r.call.name, r.call.arguments) for r in written.records
                     if r.kind == "tool-call"]  # fmt: skip
    results = [i["text"] for i in seen if i["kind"] == "tool-result"]
    assert results == [r.result.output for r in written.records if r.kind == "tool-result"]
    assert [i["text"] for i in seen if i["kind"] == "assistant"] == [
        "There are 2 txt files (and no md files)."
    ]
