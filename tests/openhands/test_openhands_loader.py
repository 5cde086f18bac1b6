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
from tests.helpers import FIXTURES


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
