"""fx codec: reader on every fixture layout, writer (schema 1 and 4), round trips, hostile ids."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import FIXTURES, REPO, conservation, export_tree, fingerprint, projection
from trajconv.codecs.export import emit
from trajconv.codecs.fx import CODEC, layout, native
from trajconv.errors import FormatError, RefusedError, UnsafePathError, UsageError
from trajconv.snapshot import io
from trajconv.snapshot.models import (
    AssistantRecord,
    Snapshot,
    SystemRecord,
    ToolCallRecord,
    ToolResult,
    ToolResultRecord,
)

FX = FIXTURES / "fx"
SESSIONS = sorted(
    sdir
    for case in sorted(FX.iterdir())
    if case.is_dir()
    for sdir in layout.session_dirs(case / ".fx" / "sessions")
)
IDS = [p.parents[2].name for p in SESSIONS]


def _case(name: str) -> Path:
    return next(p for p in SESSIONS if p.parents[2].name == name)


def _read(name: str) -> Snapshot:
    return CODEC.read(_case(name))


def _res(snap: Snapshot, i: int) -> ToolResult:
    rec = snap.records[i]
    assert isinstance(rec, ToolResultRecord)
    return rec.result


def _text(snap: Snapshot, i: int) -> str:
    rec = snap.records[i]
    assert not isinstance(rec, ToolCallRecord | ToolResultRecord)
    return rec.text


# -- independent unit counts (what conservation checks against) ----------------------------


def _n(items: Any) -> int:
    """Items of a JSON array; anything else holds none."""
    return len(items) if isinstance(items, list) else 0


def _items(turn: Any) -> int:
    """Items of one legacy / schema-3 history turn, counted straight from the JSON."""
    kind = turn.get("kind")
    if kind not in ("assistant", "background_command", "interrupted"):
        return 1
    n = 1 + _n(turn["user"].get("images"))
    execution = turn.get("execution") or {}
    for step in execution.get("tool_steps") or []:
        n += (step.get("assistant") is not None) + _n(step.get("tool_calls"))
        n += _n(step.get("tool_results"))
    n += _n(execution.get("files"))
    n += turn.get("assistant") is not None
    n += kind == "background_command"
    if kind == "interrupted":
        n += 1 + (turn.get("tool_call") is not None)
    return int(n)


def _units(sdir: Path) -> int:
    meta = json.loads((sdir / "session.json").read_bytes())
    if meta["schema_version"] in (1, 2):
        return sum(_items(t) for t in meta["history"])
    data = (sdir / "events.jsonl").read_bytes()
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    if meta["schema_version"] == 4:
        images = 0
        for raw in lines:
            try:
                event = json.loads(raw)["event"]
            except (ValueError, KeyError):
                continue
            images += len((event.get("user") or {}).get("images") or [])
        return len(lines) + images
    units = 0
    chunks = b""
    for raw in lines:
        try:
            frame = json.loads(raw)
        except ValueError:
            units += 1  # torn
            continue
        kind, payload = frame.get("kind"), frame.get("payload")
        if kind == "history_turn_committed":
            units += _items(payload["turn"])
            continue
        units += 1
        if kind == "state_replacement_chunk":
            chunks += base64.b64decode(payload["base64"])
        elif kind == "state_replacement_committed":
            units += sum(_items(t) for t in json.loads(chunks)["history"])
            chunks = b""
    return units


# -- reader ---------------------------------------------------------------------------------


def test_fixtures_cover_every_layout_and_match_their_generator() -> None:
    schemas = {json.loads((s / "session.json").read_bytes())["schema_version"] for s in SESSIONS}
    assert schemas == {1, 2, 3, 4}
    spec = importlib.util.spec_from_file_location("fx_build", REPO / "fixtures/record/fx_build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert build.main(["--check"]) == 0


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_reader_snapshot(sdir: Path, snapshot: Any) -> None:
    snap = CODEC.read(sdir)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot
    assert io.dumps(CODEC.read(sdir)) == io.dumps(snap)  # byte-identical on every run


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_every_native_unit_is_accounted_for(sdir: Path) -> None:
    conservation(CODEC.read(sdir), _units(sdir))


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_reading_never_changes_the_native_home(sdir: Path) -> None:
    home = sdir.parents[2]
    before = fingerprint(home)
    CODEC.read(sdir)
    assert fingerprint(home) == before


def test_schema4_tools_turn_shape() -> None:
    snap = _read("schema4-tools")
    assert [r.kind for r in snap.records] == [
        "user",
        "assistant",
        "tool-call",
        "tool-call",
        "tool-result",
        "tool-result",
        "user",
        "tool-call",
        "tool-result",
        "assistant",
        "user",
        "tool-call",
        "tool-result",
        "assistant",
    ]
    assert [r.turn for r in snap.records] == [0] * 10 + [1] * 4
    steering = snap.records[6]
    assert steering.evidence.native == "steering" and steering.turn == 0
    shell, listing, missing = (_res(snap, i) for i in (4, 5, 8))
    assert (shell.call_id, shell.ok, shell.exit_code, shell.output) == (
        "call_2",
        True,
        0,
        "3 a.txt\n",
    )
    assert (listing.call_id, listing.exit_code) == ("call_1", None)
    assert (missing.ok, missing.output) == (False, "c.txt: No such file or directory")
    last_reply = snap.records[13]
    assert isinstance(last_reply, AssistantRecord)
    assert last_reply.model == "openai/gpt-5"  # from the step's provider_replay
    assert [r.id for r in snap.records][:3] == ["fx:1", "fx:2", "fx:3"]
    s = snap.session
    assert (s.title, s.cwd, s.model) == ("Count the files", "/home/dev/shop", "openai/gpt-5")
    assert snap.diagnostic_count("lifecycle-dropped") == 2
    names = {a.name for a in snap.artifacts}
    assert {"session.json", "events.jsonl"} <= names
    assert sum(n.startswith("tool-results/result-") for n in names) == 4


def test_schema4_checkpoint_and_interrupted_turn() -> None:
    snap = _read("schema4-checkpoint-interrupted")
    assert snap.diagnostic_count("compaction-state") == 1
    interrupted = next(r for r in snap.records if isinstance(r, SystemRecord))
    assert (interrupted.id, interrupted.text, interrupted.turn) == (
        "fx:10",
        "interrupted: cancelled",
        1,
    )
    assert snap.diagnostic_count("pending-tool-call") == 1
    last = _res(snap, -2)
    assert (last.ok, last.exit_code) == (True, 1)  # a test run that exits 1 is still a result


def test_schema4_crash_tail_is_counted_not_projected() -> None:
    snap = _read("schema4-crash-tail")
    assert [r.kind for r in snap.records] == ["user", "tool-call", "tool-result", "assistant"]
    assert snap.diagnostic_count("crash-tail") == 3  # user, assistant, tool_call of turn 2
    assert snap.diagnostic_count("torn-line") == 1
    assert "Europe/Berlin" in str(
        next(a.read() for a in snap.artifacts if a.name == "events.jsonl")
    )


def test_schema4_recovery_checkpoint_keeps_the_unfinished_turn(tmp_path: Path) -> None:
    sdir = tmp_path / _case("schema4-crash-tail").name
    shutil.copytree(_case("schema4-crash-tail"), sdir)
    (sdir / "recovery.json").write_text("{}")
    snap = CODEC.read(sdir)
    assert [r.kind for r in snap.records][4:] == ["user", "assistant", "tool-call"]
    assert snap.diagnostic_count("crash-tail") == 0


def test_schema3_reads_its_event_log_up_to_the_watermark() -> None:
    snap = _read("schema3-event-log")
    assert [r.id for r in snap.records][:2] == ["fx:2/user", "fx:2/s0/call0"]
    assert _res(snap, 4).exit_code == 0
    assert snap.diagnostic_count("crash-tail") == 1  # the append after the watermark
    s = snap.session
    assert (s.title, s.model, s.cwd) == (
        "Read my todo list",
        "openai/gpt-5-mini",
        "/home/dev/notes",
    )
    assert _text(snap, -1) == "interrupted: failed"


def test_schema3_migrated_by_fx_reads_its_state_replacement() -> None:
    migrated = _read("schema3-migrated")
    legacy = _read("schema1-basic")
    assert projection(migrated) == projection(legacy)
    assert migrated.records[0].id == "fx:2/h0/user"
    assert migrated.session.model == "anthropic/claude-opus-4.7"  # what fx's migration set


def test_schema3_is_never_read_as_schema4(tmp_path: Path) -> None:
    sdir = tmp_path / _case("schema3-event-log").name
    shutil.copytree(_case("schema3-event-log"), sdir)
    for mark in sdir.glob("commit.*.json"):
        mark.unlink()
    with pytest.raises(FormatError, match="watermark"):
        CODEC.read(sdir)


def test_schema3_watermark_must_match_the_log(tmp_path: Path) -> None:
    sdir = tmp_path / _case("schema3-event-log").name
    shutil.copytree(_case("schema3-event-log"), sdir)
    mark = next(sdir.glob("commit.*.json"))
    doc = json.loads(mark.read_text())
    doc["through_seq"] = 4
    mark.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="watermark"):
        CODEC.read(sdir)


def test_legacy_rich_turn_kinds() -> None:
    snap = _read("schema2-rich")
    assert snap.diagnostic_count("compaction-state") == 1
    assert snap.diagnostic_count("non-text-content") == 1  # the screenshot
    assert snap.diagnostic_count("lifecycle-dropped") == 2  # file evidence + background command
    failed = next(
        r for r in snap.records if isinstance(r, ToolResultRecord) and r.result.ok is False
    )
    assert failed.result.call_id == "call_a2"
    assert _text(snap, -2) == "Deploying now" and _text(snap, -1) == ("interrupted: failed")


def _broken_body(tmp_path: Path, how: str) -> Path:
    sdir = tmp_path / _case("schema4-tools").name
    shutil.copytree(_case("schema4-tools"), sdir)
    body = next((sdir / "tool-results").glob("result-list_files-*"))
    if how == "missing":
        body.unlink()
    else:
        body.write_bytes(body.read_bytes() + b"x")
    return sdir


@pytest.mark.parametrize("how", ["missing", "resized"])
def test_tool_result_body_must_exist_with_its_exact_size(tmp_path: Path, how: str) -> None:
    with pytest.raises(FormatError, match="result-list_files-"):
        CODEC.read(_broken_body(tmp_path, how))


@pytest.mark.parametrize("ref", ["../session.json", "/etc/passwd", "a/b.txt", "..", ""])
def test_hostile_tool_result_handle_is_rejected(tmp_path: Path, ref: str) -> None:
    sdir = tmp_path / _case("schema4-tools").name
    shutil.copytree(_case("schema4-tools"), sdir)
    log = sdir / "events.jsonl"
    good = next((sdir / "tool-results").glob("result-shell-*")).name
    log.write_text(log.read_text().replace(good, ref.replace("/", "\\/"), 1))
    with pytest.raises(FormatError, match="artifact_ref"):
        CODEC.read(sdir)


def test_unsupported_or_mismatched_session_json(tmp_path: Path) -> None:
    sdir = tmp_path / "1-2-0123456789abcdef"
    sdir.mkdir()
    (sdir / "session.json").write_text('{"schema_version":5,"id":"1-2-0123456789abcdef"}')
    with pytest.raises(FormatError, match="unsupported session schema_version 5"):
        CODEC.read(sdir)
    (sdir / "session.json").write_text('{"schema_version":4,"id":"other"}')
    with pytest.raises(FormatError, match="folder name"):
        CODEC.read(sdir)


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "nul\x00", "..", "", "sp ace"])
def test_hostile_session_ids_are_rejected(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        CODEC.read(FX / "schema4-tools", session=bad)


def test_hostile_snapshot_session_id_is_refused_by_the_writer() -> None:
    snap = _read("schema1-basic")
    bad = snap.model_copy(update={"session": snap.session.model_copy(update={"id": "../x"})})
    with pytest.raises(UnsafePathError):
        CODEC.plan(bad)


def test_discover_skips_v2_store_caches_and_invalid_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FX / "schema3-migrated" / ".fx", home / ".fx")
    sessions = home / ".fx" / "sessions"
    for name in ("V2", "bad name", ".resume-catalog"):
        (sessions / name).mkdir()
        (sessions / name / "session.json").write_text('{"schema_version":4}')
    refs = CODEC.discover(home)
    assert [r.session_id for r in refs] == ["1735000000000-1735000000000000001-0123456789abcdef"]
    assert refs[0].cwd == "/home/dev/shop"
    snap = CODEC.read(home)  # one session: no --session needed
    assert snap.source.locator == f"sessions/{refs[0].session_id}"


# -- writer ---------------------------------------------------------------------------------


def _write(snap: Snapshot, out: Path, **options: Any) -> Path:
    emit(CODEC.plan(snap, **options), out)
    return out


def _written_session(out: Path) -> Path:
    return next((out / "home" / ".fx" / "sessions").iterdir())


@pytest.mark.parametrize("schema", [1, 4])
def test_export_tree_snapshot(tmp_path: Path, snapshot: Any, schema: int) -> None:
    out = _write(_read("schema4-tools"), tmp_path / "out", schema=schema)
    assert export_tree(out) == snapshot


def test_export_tree_snapshot_of_legacy_interrupted_session(tmp_path: Path, snapshot: Any) -> None:
    # an interrupted turn with its in-flight call is what fx itself stores: no --allow-lossy
    out = _write(_read("schema1-basic"), tmp_path / "out")
    assert export_tree(out) == snapshot


def _expected(snap: Snapshot, diags: dict[str, set[str]], schema: int) -> list[tuple[Any, ...]]:
    out = []
    for rec, proj in zip(snap.records, projection(snap), strict=True):
        if rec.id in diags.get("untranslated-steering", set()):
            continue
        if schema == 1 and rec.kind == "tool-result":
            proj = (*proj[:4], None)  # legacy results have no exit status
        out.append(proj)
    return out


@pytest.mark.parametrize("schema", [1, 4])
@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_fx_round_trip_keeps_every_record(sdir: Path, tmp_path: Path, schema: int) -> None:
    snap = CODEC.read(sdir)
    plan = CODEC.plan(snap, schema=schema)
    emit(plan, tmp_path / "out")
    diags = {d.code: set(d.samples) for d in plan.diagnostics}
    if schema == 1:
        exits = sum(
            1 for r in snap.records if r.kind == "tool-result" and r.result.exit_code is not None
        )
        assert (
            plan.diagnostics
            and sum(d.count for d in plan.diagnostics if d.code == "untranslated-exit-code")
            == exits
        )
    again = CODEC.read(_written_session(tmp_path / "out"))
    assert projection(again) == _expected(snap, diags, schema)
    assert [r.turn for r in again.records] == [
        r.turn for r in snap.records if r.id not in diags.get("untranslated-steering", set())
    ]
    assert again.session.cwd == snap.session.cwd
    if schema == 4:
        assert (again.session.title, again.session.id) == (snap.session.title, snap.session.id)
        assert again.diagnostic_count("crash-tail") == 0


def test_schema4_bodies_use_native_names_and_exact_sizes(tmp_path: Path) -> None:
    sdir = _written_session(_write(_read("schema4-tools"), tmp_path / "out", schema=4))
    frames = [json.loads(x) for x in (sdir / "events.jsonl").read_text().splitlines()]
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert {f["schema_version"] for f in frames} == {3}
    results = [f["event"]["tool_result"] for f in frames if "tool_result" in f["event"]]
    assert len(results) == 4
    for res in results:
        body = (sdir / "tool-results" / res["artifact_ref"]).read_bytes()
        assert len(body) == res["stored_bytes"] == res["output_bytes"]
        a = hashlib.sha256(res["call_id"].encode()).digest()[:8].hex()
        b = hashlib.sha256(body).digest()[:8].hex()
        assert res["artifact_ref"] == f"result-{res['tool_name']}-{a}-{b}.txt"
    meta = json.loads((sdir / "session.json").read_text())
    assert list(meta) == list(native.META_FIELDS)
    # the fixture generator named its bodies the same way
    fixture_refs = {p.name for p in (_case("schema4-tools") / "tool-results").iterdir()}
    assert {r["artifact_ref"] for r in results} == fixture_refs


def test_minted_session_id_is_fx_shaped_deterministic_and_diagnosed() -> None:
    snap = _read("schema4-tools")
    other = snap.model_copy(update={"session": snap.session.model_copy(update={"id": "chat 1"})})
    first, second = CODEC.plan(other, schema=4), CODEC.plan(other, schema=4)
    assert first.session_id == second.session_id
    assert re.fullmatch(r"1736000000000-1736000000000\d{6}-[0-9a-f]{16}", first.session_id)
    assert "ids-derived" in {d.code for d in first.diagnostics}
    assert first.resume_argv == ["fx", "resume", first.session_id]
    assert "ids-derived" not in {d.code for d in CODEC.plan(snap).diagnostics}


def test_unfinished_last_turn_is_refused_unless_lossy(tmp_path: Path) -> None:
    snap = _read("schema4-tools")
    cut = snap.model_copy(update={"records": snap.records[:13]})  # ends with a tool result
    with pytest.raises(RefusedError, match="fx:14"):
        CODEC.plan(cut)
    open_call = snap.model_copy(update={"records": snap.records[:12]})
    with pytest.raises(RefusedError, match="fx:13"):
        CODEC.plan(open_call, schema=4)
    plan = CODEC.plan(open_call, schema=4, allow_lossy=True)
    assert "untranslated-pending-call" in {d.code for d in plan.diagnostics}


def test_records_before_the_first_user_message_are_refused_unless_lossy() -> None:
    """A compacted session may start with the model's acknowledgement of the summary, before
    any user message: no fx turn can hold it, so it is left out and named (lossy only)."""
    snap = _read("schema4-tools")
    answer = next(r for r in snap.records if r.kind == "assistant")
    ack = answer.model_copy(update={"id": "x:ack", "turn": None, "text": "Got it."})
    early = snap.model_copy(update={"records": (ack, *snap.records)})
    with pytest.raises(RefusedError, match="x:ack"):
        CODEC.plan(early)
    lossy = CODEC.plan(early, allow_lossy=True)
    plain = CODEC.plan(snap, allow_lossy=True)
    codes = {d.code: d.samples for d in lossy.diagnostics}
    assert codes["untranslated-assistant"] == ("x:ack",)
    assert {d.code for d in lossy.diagnostics} - {d.code for d in plain.diagnostics} == {
        "untranslated-assistant"
    }


def test_untranslatable_kinds_are_named(tmp_path: Path) -> None:
    snap = _read("schema4-tools")
    first = snap.records[1]
    extra = first.model_copy(update={"kind": "reasoning", "id": "x:r"})
    with_reasoning = snap.model_copy(
        update={"records": (snap.records[0], extra, *snap.records[1:])}
    )
    codes = {d.code: d.samples for d in CODEC.plan(with_reasoning, schema=4).diagnostics}
    assert codes["untranslated-reasoning"] == ("x:r",)
    legacy = {d.code for d in CODEC.plan(snap).diagnostics}
    assert {
        "untranslated-title",
        "untranslated-model",
        "untranslated-steering",
        "untranslated-exit-code",
    } <= legacy


def test_bad_fx_schema_option() -> None:
    with pytest.raises(UsageError, match="--fx-schema"):
        CODEC.plan(_read("schema1-basic"), schema=3)


def test_tampering_a_record_or_body_fails_verify() -> None:
    doc = orjson.loads(io.dumps(_read("schema4-tools")))
    doc["records"][4]["result"]["output"] += "!"
    report = io.verify_document(doc)
    assert not report.ok and report.problems[0].startswith("record 4 (fx:5)")
    doc = orjson.loads(io.dumps(_read("schema4-tools")))
    art = next(a for a in doc["artifacts"] if a["name"].startswith("tool-results/"))
    art["data"] = "tampered" + art["data"]
    report = io.verify_document(doc)
    assert report.problems == [f"artifact {art['name']}: bytes do not match sha256/size"]
