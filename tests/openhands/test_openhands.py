"""OpenHands codec: the reader on the recorded conversations, discover, claims, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import trajconv
from tests.helpers import FIXTURES, conservation, fingerprint
from trajconv.codecs import registry
from trajconv.codecs.base import CERTAIN
from trajconv.codecs.openhands import layout
from trajconv.errors import FormatError, TrajconvError
from trajconv.snapshot import io

OPENHANDS = FIXTURES / "openhands"
CONVS = sorted(OPENHANDS.glob("recorded-*/.openhands/conversations/*"))
IDS = [p.parts[len(OPENHANDS.parts)] for p in CONVS]


def _conv(case: str) -> Path:
    (conv,) = (OPENHANDS / case / ".openhands" / "conversations").iterdir()
    return conv


def _units(conv: Path) -> int:
    """One unit an event file, the sub-agents' included."""
    own = len(layout.event_files(conv))
    return own + sum(_units(sub) for sub in layout.subagents(conv))


def _copy(tmp_path: Path, case: str = "recorded-tool-failures") -> Path:
    src = _conv(case)
    dst = tmp_path / ".openhands" / "conversations" / src.name
    shutil.copytree(src, dst)
    return dst


# -- reader ------------------------------------------------------------------------------


def test_there_are_recorded_cases() -> None:
    assert IDS == [
        "recorded-condensed",
        "recorded-exit-resume",
        "recorded-task-subagent",
        "recorded-tool-failures",
    ]


@pytest.mark.parametrize("conv", CONVS, ids=IDS)
def test_reader_snapshot(conv: Path, snapshot) -> None:
    snap = trajconv.read("openhands", conv)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("conv", CONVS, ids=IDS)
def test_every_event_is_accounted_for(conv: Path) -> None:
    conservation(trajconv.read("openhands", conv), _units(conv))


@pytest.mark.parametrize("conv", CONVS, ids=IDS)
def test_reading_never_changes_the_conversation(conv: Path) -> None:
    before = fingerprint(conv)
    first = io.dumps(trajconv.read("openhands", conv))
    assert io.dumps(trajconv.read("openhands", conv)) == first
    assert fingerprint(conv) == before


def test_tool_failures_and_exit_codes() -> None:
    snap = trajconv.read("openhands", _conv("recorded-tool-failures"))
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.ok, r.exit_code) for r in results] == [
        ("call_1", True, 0),
        ("call_2", True, 1),  # the command ran and exited 1
        ("call_3", False, None),  # the tool failed: is_error, no command ran
    ]
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]
    assert snap.session.model == "openai/scripted"
    assert snap.session.cwd == "/work/demo"


def test_non_zero_exits_and_resumed_turn() -> None:
    snap = trajconv.read("openhands", _conv("recorded-exit-resume"))
    results = [r.result for r in snap.records if r.kind == "tool-result"]
    assert [(r.call_id, r.exit_code) for r in results] == [
        ("call_1", 3),
        ("call_2", 2),
        ("call_3", 0),
        ("call_4", 1),
    ]
    assert [r.turn for r in snap.records if r.kind == "user"] == [0, 1]


def test_condensation_summary_is_a_system_record_in_place() -> None:
    snap = trajconv.read("openhands", _conv("recorded-condensed"))
    kinds = [r.kind for r in snap.records]
    assert kinds == [
        "system", "user",
        *["tool-call", "tool-result"] * 3,
        "system", "assistant", "user", "assistant",
    ]  # fmt: skip
    summary = snap.records[8]
    assert summary.evidence.native == "Condensation"


def test_task_subagent_is_a_child_linked_to_its_call() -> None:
    conv = _conv("recorded-task-subagent")
    snap = trajconv.read("openhands", conv)
    (child,) = snap.children
    (sub,) = layout.subagents(conv)
    assert child.session.id == sub.name
    assert child.session.parent_session_id == conv.name
    calls = [r for r in snap.records if r.kind == "tool-call"]
    assert [c.call.name for c in calls] == ["task"]
    assert child.parent_call_id == calls[0].call.id
    assert [r.kind for r in child.records] == [
        "system", "user", "tool-call", "tool-result", "assistant"
    ]  # fmt: skip


def test_discover_and_claims() -> None:
    codec = registry.get("openhands")
    conv = _conv("recorded-tool-failures")
    refs = codec.discover(OPENHANDS / "recorded-tool-failures")
    assert [r.session_id for r in refs] == [conv.name]
    claim = codec.claims(conv)
    assert claim is not None and claim.confidence == CERTAIN and claim.what == "session"
    assert codec.claims(conv / "events") is not None
    assert codec.claims(OPENHANDS / "recorded-tool-failures" / "README.md") is None


# -- bad input ---------------------------------------------------------------------------


def test_missing_events_folder_is_a_format_error(tmp_path: Path) -> None:
    conv = _copy(tmp_path)
    shutil.rmtree(conv / "events")
    with pytest.raises(FormatError) as err:
        trajconv.read("openhands", conv)
    assert conv.name in str(err.value) and "events" in str(err.value)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b"{not json", id="malformed"),
        pytest.param(lambda b: b'{"kind": "MessageEvent", "x": "\xff\xfe"}', id="not-utf8"),
        pytest.param(lambda b: b"[1, 2]", id="not-an-object"),
    ],
)
def test_a_damaged_event_is_a_format_error_naming_the_file(tmp_path: Path, damage) -> None:
    conv = _copy(tmp_path)
    target = layout.event_files(conv)[3]
    target.write_bytes(damage(target.read_bytes()))
    with pytest.raises(FormatError) as err:
        trajconv.read("openhands", conv)
    assert target.name in str(err.value)


def test_unknown_event_kind_is_named_not_dropped(tmp_path: Path) -> None:
    conv = _copy(tmp_path)
    target = layout.event_files(conv)[-1]
    obj = json.loads(target.read_bytes())
    obj["kind"] = "FutureEvent"
    target.write_text(json.dumps(obj))
    snap = trajconv.read("openhands", conv)
    assert "unknown-kind" in [d.code for d in snap.diagnostics]
    conservation(snap, _units(conv))


@pytest.mark.parametrize("sid", ["../../x", "..", "a/../../b"])
def test_hostile_session_ids_are_refused(tmp_path: Path, sid: str) -> None:
    _copy(tmp_path)
    with pytest.raises(TrajconvError):
        trajconv.read("openhands", tmp_path / ".openhands", session=sid)


def test_event_files_are_regular_files_by_numeric_index(tmp_path: Path) -> None:
    """Listed in one ``scandir``: by index as a number (a 6-digit index after 99999),
    never a link, a folder or a name ``EVENT_NAME`` does not match."""
    events = tmp_path / "conv" / layout.EVENTS
    events.mkdir(parents=True)
    for name in ("event-100000-abcdef01.json", "event-99999-abcdef02.json", "notes.json"):
        (events / name).write_text("{}")
    (events / "event-00001-abcdef03.json").mkdir()
    (events / "event-00002-abcdef04.json").symlink_to(events / "notes.json")
    listed = [p.name for p in layout.event_files(events.parent)]
    assert listed == ["event-99999-abcdef02.json", "event-100000-abcdef01.json"]
    assert layout.has_events(events.parent)
    assert not layout.has_events(tmp_path) and layout.event_files(tmp_path) == []
