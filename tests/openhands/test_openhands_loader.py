"""The OpenHands loader drives the real CLI offline against the loopback model server:
``--resume`` of a recorded conversation sends its history to the model (checked in the
request, not by the exit code: the CLI exits 0 on an empty conversation too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.continuation import PROMPT, conversation
from proof.loaders import openhands as loader
from tests.conftest import require_loader
from tests.helpers import FIXTURES, run_prepare
from trajconv.codecs.openhands.writer import ERROR_HEADER


@pytest.fixture(scope="module")
def exe() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "openhands")
    assert found is not None
    return found


KINDS = ("user", "assistant", "tool-call", "tool-result")


def _said(r: Any) -> object:
    if r.kind == "tool-call":
        return r.call.name
    return r.result.output if r.kind == "tool-result" else r.text


def test_resuming_a_recorded_conversation_sends_its_history(exe: Path, tmp_path: Path) -> None:
    case, _ = loader.CONTINUATION_CASE
    home = tmp_path / "home"
    loader.install_fixture(FIXTURES / "openhands" / case, home)
    (conv,) = loader.conversations_dir(home).iterdir()
    snap = trajconv.read("openhands", conv)
    bodies = loader.continue_session(exe, home, conv.name, "", PROMPT, tmp_path / "work")
    assert len(bodies) == 1, "exactly one model request for the resumed turn"
    earlier, found = conversation(loader.request_items(bodies[0]), PROMPT)
    assert found
    # the reader's tool-result text is what the model was sent (``to_llm_content``)
    got = [(i["kind"], i["name" if i["kind"] == "tool-call" else "text"]) for i in earlier]
    assert [g for g in got if g[0] in KINDS] == [
        (r.kind, _said(r)) for r in snap.records if r.kind in KINDS
    ]


def test_a_conversation_without_events_is_refused(exe: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (loader.conversations_dir(home) / ("0" * 32)).mkdir(parents=True)
    with pytest.raises(loader.OpenHandsLoaderError, match="no conversation"):
        loader.continue_session(exe, home, "0" * 32, "", PROMPT, tmp_path / "work")


@pytest.mark.parametrize("source", ["openhands", "grok"])
def test_the_cli_resumes_a_written_conversation(exe: Path, tmp_path: Path, source: str) -> None:
    """A written conversation resumes from its events/ alone: the model is sent every earlier
    user message, call and result; the CLI writes its own base_state.json and only appends
    events, leaving the written ones as they are."""
    from proof.continuation import read_fixture
    from tests.helpers import fingerprint

    snap = read_fixture(source)
    export = trajconv.write(snap, "openhands", tmp_path / "out", allow_lossy=True)
    home = tmp_path / "home"
    done = run_prepare(export.out_dir, home)
    assert done.returncode == 0, done.stderr
    conv = loader.conversations_dir(home) / export.session_id
    written = fingerprint(conv / "events")
    bodies = loader.continue_session(exe, home, export.session_id, "", PROMPT, tmp_path / "work")
    earlier, found = conversation(loader.request_items(bodies[-1]), PROMPT)
    assert found
    sent = [(i["kind"], i.get("name") or i.get("text")) for i in earlier if i["kind"] in KINDS]
    # a failed result of another harness reaches the model under the SDK's error header
    header = "" if source == "openhands" else ERROR_HEADER
    want = [
        (
            r.kind,
            header + r.result.output if r.kind == "tool-result" and not r.result.ok else _said(r),
        )
        for r in snap.records
        if r.kind in KINDS
    ]
    assert sent == want
    assert (conv / "base_state.json").is_file()
    after = fingerprint(conv / "events")
    assert {k: v for k, v in after.items() if k in written} == written
    assert len(after) > len(written)
