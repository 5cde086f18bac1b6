"""Aider codec: the recorded histories read as Aider restores them, written as Aider writes
them, installed by prepare.py into a project folder, and continued by the real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trajconv
from tests.aider.support import runs
from tests.conftest import require_loader
from tests.helpers import FIXTURES, conservation, projection, tiny_session
from trajconv.codecs import registry
from trajconv.codecs.aider import layout, reader
from trajconv.codecs.base import CERTAIN, Limits
from trajconv.errors import FormatError, LimitError, RefusedError, UsageError
from trajconv.find import detect

AIDER = FIXTURES / "aider"
CASES = sorted(p for p in AIDER.iterdir() if p.is_dir())
EDITS = AIDER / "recorded-edits" / "demo" / layout.HISTORY


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reader_keeps_every_run_and_matches_its_snapshot(case: Path, snapshot: Any) -> None:
    snap = trajconv.read("aider", case)
    conservation(snap, runs(case / "demo" / layout.HISTORY))
    assert snap.source.harness_version == "0.86.2"
    assert snap.session.model == "openai/scripted"
    assert snap.session.cwd == str((case / "demo").resolve())
    assert all(r.time is None for r in snap.records)  # Aider's times have no zone
    assert projection(snap) == snapshot


def test_edit_blocks_a_failed_edit_and_run_output_are_as_aider_restores_them() -> None:
    snap = trajconv.read("aider", EDITS)
    users = [r.text for r in snap.records if r.kind == "user"]  # type: ignore[union-attr]
    assert users == [
        "Change the greeting in hello.py to hello",
        "Now make it say hello world",
        "/run python3 -c \"import sys; print('boom'); sys.exit(3)\"",
        "Thanks, is that all?",
    ]
    answers = [r.text for r in snap.records if r.kind == "assistant"]  # type: ignore[union-attr]
    assert "<<<<<<< SEARCH" in answers[0] and ">>>>>>> REPLACE" in answers[0]
    # the failure report Aider printed without its "> " prefix is restored as an answer
    assert any("SearchReplaceNoExactMatch" in a for a in answers)
    shown = [r.text for r in snap.records if r.kind == "observation"]  # type: ignore[union-attr]
    assert any("Applied edit to hello.py" in s for s in shown)
    # `/run` output is never kept: the command's one line of output is in no record
    assert not any(
        line == "boom" for r in snap.records for line in str(getattr(r, "text", "")).splitlines()
    )


def test_detected_discovered_and_claimed(tmp_path: Path) -> None:
    assert detect(EDITS) == "aider"
    assert detect(EDITS.parent) == "aider"
    claim = registry.get("aider").claims(EDITS)
    assert claim is not None and claim.confidence == CERTAIN
    refs = registry.get("aider").discover(AIDER)
    assert {r.session_id for r in refs} == {trajconv.read("aider", c).session.id for c in CASES}
    assert all(r.session_id.startswith("aider-2026") for r in refs)
    with pytest.raises(UsageError, match="holds 2 Aider histories"):
        trajconv.read("aider", AIDER)
    assert (
        trajconv.read("aider", AIDER, session=refs[0].session_id).session.id == refs[0].session_id
    )


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "e" / layout.HISTORY
    empty.parent.mkdir()
    empty.write_text("\n\n")
    with pytest.raises(FormatError, match="empty Aider history"):
        trajconv.read("aider", empty)
    binary = tmp_path / "b" / layout.HISTORY
    binary.parent.mkdir()
    binary.write_bytes(b"# aider chat started at 2026-01-01 00:00:00\n\x00\x01")
    with pytest.raises(FormatError, match="NUL"):
        trajconv.read("aider", binary)
    with pytest.raises(UsageError, match="no Aider session"):
        trajconv.read("aider", EDITS.parent, session="../../x")


@pytest.mark.parametrize(
    ("tail", "encoding", "replaced"),
    [
        (b"caf\xc3\xa9 \xef\xbf\xbd\n", "utf8", False),  # UTF-8, a U+FFFD of its own
        (b"caf\xe9\n", "base64", True),  # Latin-1: not UTF-8
        (b"\xef\xbf\xbd caf\xe9\n", "base64", False),  # both: read as the old test tells
    ],
)
def test_the_history_kept_as_utf8_only_when_it_is(
    tmp_path: Path, tail: bytes, encoding: str, replaced: bool
) -> None:
    """The reader's own decoding tells the artifact's encoding (the builder does not decode)."""
    history = tmp_path / layout.HISTORY
    history.write_bytes(b"# aider chat started at 2026-01-01 00:00:00\n\n#### hi  \n\n" + tail)
    snap = trajconv.read("aider", history)
    art = snap.artifacts.get(layout.HISTORY)
    assert art is not None and art.encoding == encoding
    assert art.read() == history.read_bytes()
    assert any(d.code == "replaced-bytes" for d in snap.diagnostics) is replaced


def test_round_trip_keeps_what_the_history_holds(tmp_path: Path) -> None:
    snap = trajconv.read("aider", EDITS)
    export = trajconv.write(snap, "aider", tmp_path / "out")
    again = trajconv.read("aider", tmp_path / "out" / "home" / layout.HISTORY)
    assert projection(again) == projection(snap)
    assert export.session_id == snap.session.id == again.session.id
    # the one fact that changes: the cwd is wherever the history is put
    assert [d.code for d in export.diagnostics] == ["untranslated-cwd"]


def test_a_session_with_tools_is_written_as_text_and_names_what_the_model_loses(
    tmp_path: Path,
) -> None:
    source = next(FIXTURES.glob("claude/recorded-tool-failures"))
    snap = trajconv.read("claude", source)
    export = trajconv.write(snap, "aider", tmp_path / "out")
    codes = {d.code: d.count for d in export.diagnostics}
    calls = sum(r.kind == "tool-call" for r in snap.records)
    results = sum(r.kind == "tool-result" for r in snap.records)
    assert codes["untranslated-tool-call"] == calls > 0
    assert codes["untranslated-tool-result"] == results > 0
    again = trajconv.read("aider", tmp_path / "out" / "home" / layout.HISTORY)
    assert projection(again, ("user",)) == projection(snap, ("user",))
    assert projection(again, ("assistant",)) == projection(snap, ("assistant",))
    shown = "\n".join(r.text for r in again.records if r.kind == "observation")  # type: ignore[union-attr]
    assert "ls nothere" in shown and "No such file or directory" in shown


def test_prepare_installs_into_the_project_and_never_replaces(tmp_path: Path) -> None:
    snap = trajconv.read("aider", EDITS)
    out = tmp_path / "out"
    trajconv.write(snap, "aider", out, cwd=str(tmp_path / "repo"))
    (tmp_path / "repo").mkdir()
    run = [sys.executable, str(out / "prepare.py")]
    first = subprocess.run(run, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    installed = tmp_path / "repo" / layout.HISTORY
    assert installed.read_bytes() == (out / "home" / layout.HISTORY).read_bytes()
    again = subprocess.run(run, capture_output=True, text=True, check=False)
    assert again.returncode == 3
    assert installed.read_bytes() == (out / "home" / layout.HISTORY).read_bytes()
    elsewhere = tmp_path / "other"
    other = subprocess.run([*run, "--home", str(elsewhere)], capture_output=True, text=True)
    assert other.returncode == 0 and (elsewhere / layout.HISTORY).is_file()


def test_a_session_without_cwd_is_refused_unless_given(tmp_path: Path) -> None:
    snap = trajconv.read("aider", EDITS)
    bare = snap.model_copy(update={"session": snap.session.model_copy(update={"cwd": None})})
    with pytest.raises(RefusedError, match="no cwd"):
        trajconv.write(bare, "aider", tmp_path / "out")


def test_the_real_aider_continues_a_written_history(tmp_path: Path) -> None:
    from proof import tools_dir
    from proof.loaders import aider as loader

    exe = loader.find(tools_dir())
    require_loader(exe, "aider")
    assert exe is not None
    source = trajconv.read("claude", next(FIXTURES.glob("claude/recorded-tool-failures")))
    project = tmp_path / "project"
    project.mkdir()
    export = trajconv.write(source, "aider", tmp_path / "out", cwd=str(project))
    loader.install_export(export.out_dir, tmp_path / "home")
    bodies = loader.continue_session(
        exe, tmp_path / "home", export.session_id, str(project), "what now?", tmp_path / "w"
    )
    items = loader.request_items(bodies[-1])
    sent = [(i["kind"], i["text"]) for i in items if i["kind"] in ("user", "assistant")]
    want = [(r.kind, r.text) for r in source.records if r.kind in ("user", "assistant")]  # type: ignore[union-attr]
    assert sent[: len(want)] == want
    assert "what now?" in sent[-1][1]
    shutil.rmtree(tmp_path / "w", ignore_errors=True)


def test_two_answers_with_nothing_shown_between_are_named_as_joined(tmp_path: Path) -> None:
    """Aider restores the lines between two prompts as one answer unless its own output
    ("> " lines: a tool call or result written for the user) stands between them."""
    joined = tiny_session(
        ("user", "hi"), ("assistant", "One."), ("system", "s"), ("assistant", "Two.")
    )
    apart = tiny_session(
        ("user", "hi"),
        ("assistant", "One."),
        ("call", "shell"),
        ("result", "ok"),
        ("assistant", "Two."),
    )
    for snap, boundaries, answers in ((joined, 1, 1), (apart, 0, 2)):
        export = trajconv.write(snap, "aider", tmp_path / str(boundaries), allow_lossy=True)
        codes = {d.code: d.count for d in export.diagnostics}
        assert codes.get("untranslated-message-boundary", 0) == boundaries
        again = trajconv.read("aider", export.out_dir / "home" / layout.HISTORY)
        assert sum(r.kind == "assistant" for r in again.records) == answers


_PIECES = (
    "# aider chat started at 2026-12-06 22:32:31",
    "#### typed  ",
    "####",
    "> Aider v0.86.2  ",
    "> Model: openai/scripted with diff edit format  ",
    ">",
    "> ",
    ">>>>>>> REPLACE",
    "# a heading",
    "#not a heading",
    "plain text",
    "",
    "   ",
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40),
    st.booleans(),
)
def test_the_quick_cut_of_runs_is_the_line_by_line_cut(lines: list[str], newline: bool) -> None:
    """Runs found by searching the ``#`` / ``>`` lines are those of reading every line."""
    text = "\n".join(lines) + ("\n" if newline and lines else "")
    quick = list(reader._marked_runs(text))
    assert quick == list(reader._line_runs(text, Limits(), Path("h")))
    assert list(reader._runs(text, Limits(), Path("h"))) == quick


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from((*_PIECES, "a\rb", "x\r", "\u2028y")), max_size=40),
    st.booleans(),
    st.lists(st.booleans(), max_size=40),
    st.sampled_from((256 * 1024**2, 120)),
)
def test_runs_cut_piece_by_piece_are_the_runs_of_the_whole(
    lines: list[str], newline: bool, cuts: list[bool], max_line: int
) -> None:
    """A history read a piece of whole lines at a time is cut as the whole text is, a run
    going on in the next piece included (each piece may take the quick cut or not)."""
    text = "\n".join(lines) + ("\n" if newline and lines else "")
    pieces, start = [], 0
    for i, cut in zip([i for i, c in enumerate(text) if c == "\n"], cuts, strict=False):
        if cut:
            pieces.append(text[start : i + 1])
            start = i + 1
    pieces.append(text[start:])
    whole = list(reader._line_runs(text, Limits(), Path("h")))
    assert list(reader._text_runs(pieces, Limits(max_line_bytes=max_line), Path("h"))) == whole


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 100])
@pytest.mark.parametrize(
    "tail",
    [b"", b"caf\xe9 \xe2\x82\n\xf0\x9f\x98\x80\r\n> x  \r\n", "\ufffd \u2028 ok\n".encode()],
)
def test_a_history_read_in_small_chunks_is_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, tail: bytes
) -> None:
    """Chunks cut lines and UTF-8 sequences anywhere: the Snapshot is the same."""
    history = tmp_path / layout.HISTORY
    history.write_bytes(EDITS.read_bytes() + tail)
    want = trajconv.read("aider", history)
    monkeypatch.setattr(reader, "CHUNK", chunk)
    got = trajconv.read("aider", history)
    assert got.id == want.id and list(got.records) == list(want.records)
    assert got.diagnostics == want.diagnostics


def test_a_history_with_other_line_breaks_is_cut_line_by_line(tmp_path: Path) -> None:
    """``\\r\\n`` (and the other breaks ``splitlines`` knows) take the line-by-line cut."""
    text = "#### hi  \r\n\r\nthe answer\r\n> Tokens: 1  \r\n"
    assert list(reader._runs(text, Limits(), Path("h"))) == [
        ("user", 1, ["#### hi  "]),
        ("text", 2, "\nthe answer"),
        ("tool", 4, ["> Tokens: 1  "]),
    ]
    with pytest.raises(LimitError, match="max_line_bytes"):
        list(reader._runs(text, Limits(max_line_bytes=12), Path("h")))


@pytest.mark.parametrize("before", [0, 300])
def test_the_banners_version_heads_the_chain_early_or_late(tmp_path: Path, before: int) -> None:
    """The version is in the source the chain starts from, whether the first banner comes
    before any record is spooled or after hundreds (a history trajconv wrote, continued by
    Aider): the hashes verify either way."""
    from trajconv.snapshot.io import verify

    head = "# aider chat started at 2026-01-01 00:00:00\n\n"
    turns = "".join(f"#### question {i}  \n\nanswer {i}\n\n" for i in range(before))
    banner = "# aider chat started at 2026-01-02 00:00:00\n\n> Aider v0.86.2  \n\n"
    history = tmp_path / layout.HISTORY
    history.write_text(head + turns + banner + "#### last  \n\nthe end\n")
    snap = trajconv.read("aider", history)
    assert snap.source.harness_version == "0.86.2"
    assert len(snap.records) == 2 * before + 3
    report = verify(snap)
    assert report.ok, report.problems
