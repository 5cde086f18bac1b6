"""Grok codec: reader on hand-made and recorded fixtures, writer, round trips."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest
from acp.schema import SessionNotification

import trajconv
from tests.helpers import (
    FIXTURES,
    REPO,
    conservation,
    export_tree,
    fingerprint,
    merged_projection,
    session_dir,
)
from trajconv.codecs.base import continuity
from trajconv.codecs.grok import layout
from trajconv.codecs.jsonl import count_units
from trajconv.errors import RefusedError, UnsafePathError, UsageError
from trajconv.snapshot import io

GROK = FIXTURES / "grok"
SESSIONS = sorted(p for p in GROK.glob("*/sessions/*/*") if (p / "summary.json").is_file())
IDS = [f"{p.parents[2].name}/{p.name[:13]}" for p in SESSIONS]
ACP_SCHEMA = REPO / "tests" / "data" / "acp" / "agentclientprotocol-sdk-2.4.0.v1.schema.json"


def test_fixtures_cover_handmade_and_recorded_cases() -> None:
    cases = {p.parents[2].name for p in SESSIONS}
    assert {"multi-turn", "rewind", "subagent"} <= cases
    assert any(c.startswith("recorded-") for c in cases)


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_reader_snapshot(sdir: Path, snapshot) -> None:
    snap = trajconv.read("grok", sdir)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_every_journal_line_is_accounted_for(sdir: Path) -> None:
    snap = trajconv.read("grok", sdir)
    conservation(snap, count_units((sdir / "updates.jsonl").read_bytes()))


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_reading_never_changes_the_native_home(sdir: Path) -> None:
    home = sdir.parents[2]
    before = fingerprint(home)
    trajconv.read("grok", sdir)
    assert fingerprint(home) == before


def test_multi_turn_rules() -> None:
    sdir = next(GROK.glob("multi-turn/sessions/*/*"))
    snap = trajconv.read("grok", sdir)
    kinds = [r.kind for r in snap.records]
    assert kinds == [
        "user",
        "reasoning",
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
        "assistant",
        "user",
        "tool-call",
        "tool-result",
        "assistant",
    ]
    # chunks of one prompt join with no separator; agent chunks too
    assert snap.records[0].text == "What files are here? Also count lines in app.py."
    assert snap.records[6].text == "Two files: app.py and README.md; wc failed."
    # a shell that exits 2 is still ok for Grok; the exit status is kept apart
    shell = snap.records[5].result
    assert (shell.ok, shell.exit_code) == (True, 2)
    assert snap.records[9].result.ok is False
    # ids are unique although eventId suffixes repeat after the resume
    event_ids = [
        json.loads(x)["params"]["_meta"]["eventId"]
        for x in (sdir / "updates.jsonl").read_text().splitlines()
        if x.startswith("{") and x.endswith("}}}")
    ]
    assert len(set(event_ids)) < len(event_ids)
    assert len({r.id for r in snap.records}) == len(snap.records)
    assert snap.records[7].evidence.native_id == f"{snap.session.id}-42"
    for code, count in [
        ("repeated-terminal-result", 1),
        ("torn-line", 2),
        ("unknown-kind", 2),
        ("superseded-progress", 3),
        ("blank-line", 1),
    ]:
        assert snap.diagnostic_count(code) == count, code
    assert snap.session.title == "List the demo files" and snap.session.branch == "main"


def test_rewind_keeps_the_live_branch_and_counts_the_dead_one() -> None:
    snap = trajconv.read("grok", next(GROK.glob("rewind/sessions/*/*")))
    assert [r.text for r in snap.records] == [
        "first question",
        "first answer",
        "second question, asked again",
        "a better second answer",
    ]
    assert [r.turn for r in snap.records] == [0, 0, 1, 1]
    assert snap.diagnostic_count("rewound") == 7
    journal = next(a for a in snap.artifacts if a.name == "updates.jsonl")
    assert b"third answer" in journal.read()  # the dead branch stays in artifacts


def test_subagent_child_knows_its_parent_and_long_cwd() -> None:
    child = next(p for p in GROK.glob("subagent/sessions/explore-*/*") if p.is_dir())
    snap = trajconv.read("grok", child)
    assert snap.session.parent_session_id == "019c0000-3333-7000-8000-000000000001"
    assert snap.session.cwd == (child.parent / ".cwd").read_text()
    assert layout.encode_cwd(snap.session.cwd) == child.parent.name


def test_discover_lists_sessions_with_summary_only(tmp_path: Path) -> None:
    refs = trajconv.discover("grok", GROK / "subagent")
    assert {r.session_id for r in refs} == {
        "019c0000-3333-7000-8000-000000000001",
        "019c0000-3333-7000-8000-000000000002",
    }
    bare = tmp_path / "sessions" / "%2Fx" / "11111111-1111-4111-8111-111111111111"
    bare.mkdir(parents=True)
    (bare / "updates.jsonl").write_text("")
    assert trajconv.discover("grok", tmp_path) == []  # no summary.json: absent, as Grok does


def test_a_home_with_many_sessions_needs_session(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--session"):  # exit 2, as in a store
        trajconv.read("grok", GROK / "subagent")
    snap = trajconv.read("grok", GROK / "subagent", session="019c0000-3333-7000-8000-000000000002")
    assert snap.source.locator.startswith("sessions/explore-")


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "nul\x00", "..", ""])
def test_hostile_session_ids_are_rejected(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        trajconv.read("grok", GROK / "subagent", session=bad)


def test_missing_or_broken_summary_costs_metadata_not_transcript(tmp_path: Path) -> None:
    src = next(GROK.glob("rewind/sessions/*/*"))
    sdir = tmp_path / "s" / src.name
    sdir.mkdir(parents=True)
    (sdir / "updates.jsonl").write_bytes((src / "updates.jsonl").read_bytes())
    (sdir / "summary.json").write_text("{not json")
    snap = trajconv.read("grok", sdir)
    assert len(snap.records) == 4 and snap.session.title is None
    assert snap.diagnostic_count("metadata-invalid") == 1


# -- writer ------------------------------------------------------------------------------


def _convert(sdir: Path, out: Path, **kw: object) -> tuple[trajconv.snapshot.Snapshot, Path]:
    snap, export = trajconv.convert("grok", "grok", sdir, out, **kw)
    return snap, export.out_dir


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_writer_lines_validate_against_acp(sdir: Path, tmp_path: Path) -> None:
    _snap, out = _convert(sdir, tmp_path / "out", allow_lossy=True)
    schema = json.loads(ACP_SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(
        {"$defs": schema["$defs"], "$ref": "#/$defs/SessionNotification"}
    )
    lines = next(out.glob("home/.grok/sessions/*/*/updates.jsonl")).read_text().splitlines()
    assert lines
    for line in lines:
        env = json.loads(line)
        assert list(env)[-2:] == ["method", "params"]
        assert env["method"] == "session/update"
        validator.validate(env["params"])
        dumped = SessionNotification.model_validate(env["params"]).model_dump(
            by_alias=True, exclude_unset=True, mode="json"
        )
        assert dumped == env["params"]


HOLDS = ("user", "assistant", "reasoning", "tool-call", "tool-result")


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_grok_round_trip_keeps_every_record(sdir: Path, tmp_path: Path) -> None:
    snap, export = trajconv.convert("grok", "grok", sdir, tmp_path / "out", allow_lossy=True)
    again = trajconv.read("grok", session_dir(export.out_dir, "home/.grok/sessions/*/*"))
    found = continuity(snap)
    drop = set(found.pending) | set(found.orphans)
    kept = snap.model_copy(update={"records": tuple(r for r in snap.records if r.id not in drop)})
    assert merged_projection(again, HOLDS) == merged_projection(kept, HOLDS)
    written = {d.code: d.count for d in export.diagnostics}
    for kind in ("system", "observation"):
        assert written.get(f"untranslated-{kind}", 0) == sum(r.kind == kind for r in snap.records)
    assert again.session.title == snap.session.title and again.session.cwd == snap.session.cwd


def test_export_tree_snapshot(tmp_path: Path, snapshot) -> None:
    sdir = next(GROK.glob("multi-turn/sessions/*/*"))
    _snap, out = _convert(sdir, tmp_path / "out")
    assert export_tree(out) == snapshot


def test_chat_history_puts_the_user_message_before_its_tool_calls(tmp_path: Path) -> None:
    sdir = next(GROK.glob("subagent/sessions/%2F*/*"))
    _snap, out = _convert(sdir, tmp_path / "out")
    items = [
        json.loads(x)
        for x in next(out.glob("home/.grok/sessions/*/*/chat_history.jsonl"))
        .read_text()
        .splitlines()
    ]
    assert [i["type"] for i in items] == ["user", "assistant", "tool_result", "assistant"]
    assert items[1]["tool_calls"][0]["id"] == "call_s"


def test_chat_history_is_what_grok_itself_sends_the_model(tmp_path: Path) -> None:
    """Reasoning goes into the history Grok replays to the model, prompts in <user_query>,
    as in the history Grok wrote itself (issue 23: it had no reasoning entries)."""
    sdir = next(GROK.glob("recorded-multi-turn/sessions/*/*"))
    _snap, out = _convert(sdir, tmp_path / "out")

    def history(path: Path) -> list[dict[str, object]]:
        return [json.loads(x) for x in path.read_text().splitlines()]

    mine = history(next(out.glob("home/.grok/sessions/*/*/chat_history.jsonl")))
    injected = ("<user_info>", "<system-reminder>")  # Grok's context entries, not prompts
    grok_own = [
        i
        for i in history(sdir / "chat_history.jsonl")
        if i["type"] != "system"
        and not (i["type"] == "user" and i["content"][0]["text"].startswith(injected))  # type: ignore[index]
    ]
    assert [i["type"] for i in mine] == [i["type"] for i in grok_own]
    assert [i for i in mine if i["type"] == "reasoning"] == [
        i for i in grok_own if i["type"] == "reasoning"
    ]
    assert [i["content"] for i in mine if i["type"] == "user"] == [
        i["content"] for i in grok_own if i["type"] == "user"
    ]


def test_unfinished_turn_is_refused_unless_lossy(tmp_path: Path) -> None:
    src = next(GROK.glob("rewind/sessions/*/*"))
    sdir = tmp_path / "s" / src.name
    sdir.mkdir(parents=True)
    lines = (src / "updates.jsonl").read_text().splitlines()
    (sdir / "updates.jsonl").write_text("\n".join(lines[:1]) + "\n")
    (sdir / "summary.json").write_bytes((src / "summary.json").read_bytes())
    with pytest.raises(RefusedError, match="grok:L1"):
        trajconv.convert("grok", "fx" if False else "grok", sdir, tmp_path / "o1")
    assert not (tmp_path / "o1").exists()
    trajconv.convert("grok", "grok", sdir, tmp_path / "o2", allow_lossy=True)
    assert (tmp_path / "o2" / "trajconv-export.json").is_file()


def test_planted_credentials_never_reach_snapshot_or_export(tmp_path: Path) -> None:
    src = next(GROK.glob("rewind/sessions/*/*"))
    sdir = tmp_path / "sessions" / src.parent.name / src.name
    sdir.mkdir(parents=True)
    (sdir / "updates.jsonl").write_bytes((src / "updates.jsonl").read_bytes())
    summary = json.loads((src / "summary.json").read_text())
    summary["api_key"] = "xai-PLANTED-SECRET-1"
    summary["auth"] = {"access_token": "PLANTED-SECRET-2", "user": "me"}
    (sdir / "summary.json").write_text(json.dumps(summary))
    (sdir / "tool_state.json").write_text(json.dumps({"mcp": [{"password": "PLANTED-SECRET-3"}]}))
    snap, export = trajconv.convert("grok", "grok", sdir, tmp_path / "out")
    dumped = io.dumps(snap).decode()
    assert "PLANTED-SECRET" not in dumped
    assert snap.diagnostic_count("secret-dropped") == 3
    assert "$.auth.access_token" in " ".join(s for d in snap.diagnostics for s in d.samples)
    for path in export.out_dir.rglob("*"):
        if path.is_file():
            assert b"PLANTED-SECRET" not in path.read_bytes(), path
    assert io.verify(snap).ok


def test_journal_lines_are_written_byte_for_byte_as_json_writes_them() -> None:
    from trajconv.codecs.grok.writer import _dumps, _line_bytes

    every_char = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    for value in (
        {"text": every_char, "n": -(2**63), "m": 2**64 - 1, "ok": True, "none": None},
        {"big": 2**70, "list": [1, {"a": "b"}]},
    ):
        assert _line_bytes(value) == (_dumps(value) + "\n").encode()


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_journal_read_in_small_chunks_reads_the_same(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trajconv.codecs import jsonl
    from trajconv.snapshot import builder

    sdir = next(GROK.glob("rewind/sessions/*/*"))
    whole = trajconv.read("grok", sdir)
    monkeypatch.setattr(jsonl, "CHUNK", chunk)  # lines and the marker span chunk ends
    monkeypatch.setattr(builder, "CHUNK", chunk)  # the copy, which the marker scan watches
    assert trajconv.read("grok", sdir).id == whole.id


def test_streamed_lines_are_cut_and_counted_like_in_memory_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trajconv.codecs import jsonl
    from trajconv.codecs.base import Limits
    from trajconv.errors import LimitError
    from trajconv.snapshot.diagnostics import Diagnostics

    data = b'{"a":1}\n\n  \n{"a":\n\xff\n[1]\n{"b":"' + b"x" * 40 + b'"}\n{"c":2}'
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(jsonl, "CHUNK", 3)

    def run(
        read: Callable[..., Iterator[object]], source: object, limit: int
    ) -> tuple[object, dict[str, int]]:
        diags = Diagnostics()
        try:
            got: object = list(read(source, "j", diags, Limits(max_line_bytes=limit)))
        except LimitError as exc:
            got = str(exc)
        return got, {d.code: d.count for d in diags.to_models()}

    for limit in (8, 30, 1000):
        assert run(jsonl.iter_file_objects, path, limit) == run(jsonl.iter_objects, data, limit)


def test_tool_results_keep_the_text_grok_showed_the_model() -> None:
    """A result's output is the history's text (exit status line, listing text), not the
    journal's display form or rawOutput JSON (issue 23, class 3); injected context is named."""
    sdir = next(GROK.glob("recorded-multi-turn/sessions/*/*"))
    snap = trajconv.read("grok", sdir)
    outputs = {r.result.call_id: r.result.output for r in snap.records if r.kind == "tool-result"}
    assert outputs["call_mt_1"] == "- /work/demo/src/\n  - app.py\n  - util.py"
    assert outputs["call_mt_2"] == "exit: 0\n4 src/app.py\n"
    assert outputs["call_mt_4"] == "The file src/util.py has been updated successfully."
    codes = {d.code: d.count for d in snap.diagnostics}
    assert codes["context-not-projected"] == 2  # <user_info> and <system-reminder>
