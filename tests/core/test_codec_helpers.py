"""The helpers codecs share in ``trajconv/codecs/``: a whole file as a JSON object, the
session facts a target cannot hold, a write's opening, and a reader's tool calls."""

from __future__ import annotations

import pytest

from trajconv.codecs.common import json_document, name_unheld, start_write
from trajconv.codecs.tool_calls import CallProjector
from trajconv.errors import FormatError, RefusedError
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import Session, Source


def _builder() -> SnapshotBuilder:
    return SnapshotBuilder(
        Source(harness="t", harness_version="1", session_id="s", locator="s"), "t"
    )


def test_a_json_document_is_an_object_or_a_format_error_naming_the_file() -> None:
    assert json_document(b'{"a": 1}', "meta.json") == {"a": 1}
    with pytest.raises(FormatError, match="not JSON") as bad:
        json_document(b"{", "meta.json")
    assert bad.value.file == "meta.json"
    with pytest.raises(FormatError) as other:
        json_document(b"[1]", "meta.json", "an event holds no object")
    assert (other.value.file, other.value.reason) == ("meta.json", "an event holds no object")


def test_only_the_facts_a_session_holds_are_named_unheld() -> None:
    diags = Diagnostics()
    session = Session(id="s", branch="main", title="", parent_session_id=None, model="m")
    name_unheld(
        diags,
        session,
        {
            "untranslated-branch": None,
            "untranslated-title": "title",
            "untranslated-parent-session": "parent",
            "untranslated-model": "the model",
        },
    )
    named = {d.code: d.samples for d in diags.to_models()}
    assert named == {"untranslated-branch": ("main",), "untranslated-model": ("the model",)}


def test_a_write_without_a_cwd_is_refused_naming_the_flag() -> None:
    snapshot = _builder().build()
    with pytest.raises(RefusedError, match="pass --cwd DIR"):
        start_write(snapshot, "pi", allow_lossy=False, cwd=None)
    diags, drop, workdir = start_write(snapshot, "pi", allow_lossy=False, cwd="/work")
    assert (workdir, drop, diags.to_models()) == ("/work", set(), ())


def test_a_call_no_result_answers_is_pending_by_its_record() -> None:
    proj = CallProjector(_builder())
    proj.turn = 0
    ev = evidence("log", native="x", line=1)
    proj.add_call("r1", "call-1", "shell", {}, time=None, evidence=ev)
    proj.add_call("r2", "call-2", "shell", {}, time=None, evidence=ev)
    proj.answer("r3", "call-1", True, "ok", time=None, evidence=ev, exit_code=0)
    assert proj.calls == {"call-1": "r1", "call-2": "r2"} and proj.done == {"call-1"}
    proj.finish()
    pending = [d for d in proj.d.to_models() if d.code == "pending-tool-call"]
    assert [(d.count, d.samples) for d in pending] == [(1, ("r2",))]
    snapshot = proj.b.build()
    assert [(r.kind, r.turn) for r in snapshot.records] == [
        ("tool-call", 0),
        ("tool-call", 0),
        ("tool-result", 0),
    ]
