"""Grok Build itself (npm @xai-official/grok, pinned) lists and replays what we write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trajconv
from proof import tools_dir
from proof.loaders import grok as grok_loader
from tests.conftest import require_loader
from tests.grok.test_grok import IDS, SESSIONS
from tests.helpers import merged_projection, session_dir


@pytest.fixture(scope="module")
def grok_bin() -> Path:
    found = grok_loader.find(tools_dir())
    require_loader(found, "grok")
    assert found is not None
    return found


def replay_projection(replay: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The replayed ACP stream in the shape of ``tests.helpers.projection``."""
    out: list[tuple[Any, ...]] = []
    roles = {
        "user_message_chunk": "user",
        "agent_message_chunk": "assistant",
        "agent_thought_chunk": "reasoning",
    }
    for note in replay:
        update = note["params"]["update"]
        kind = update["sessionUpdate"]
        if kind in roles:
            item = (roles[kind], update["content"]["text"])
            if out and out[-1][0] == item[0] and item[0] != "user":
                out[-1] = (item[0], out[-1][1] + item[1])
            else:
                out.append(item)
        elif kind == "tool_call":
            out.append(("tool-call", update["toolCallId"], update["title"], update.get("rawInput")))
            if update.get("status") in ("completed", "failed"):
                text = "".join(c["content"]["text"] for c in update.get("content", []))
                raw = update.get("rawOutput") or {}
                out.append(
                    (
                        "tool-result",
                        update["toolCallId"],
                        update["status"] == "completed",
                        text,
                        raw.get("exit_code"),
                    )
                )
    return out


def collapsed(items: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Grok's replay folds a call and its first terminal update into one ``tool_call`` sent
    where the call started (grok-native-loader.md §4.2): move each result to its call."""
    results = {i[1]: i for i in items if i[0] == "tool-result"}
    out: list[tuple[Any, ...]] = []
    for item in items:
        if item[0] == "tool-call":
            out.append(item)
            if item[1] in results:
                out.append(results[item[1]])
        elif item[0] != "tool-result":
            out.append(item)
    return out


@pytest.mark.parametrize("sdir", SESSIONS, ids=IDS)
def test_grok_lists_and_replays_written_session(sdir: Path, tmp_path: Path, grok_bin: Path) -> None:
    snap, export = trajconv.convert("grok", "grok", sdir, tmp_path / "out", allow_lossy=True)
    written = trajconv.read("grok", session_dir(export.out_dir, "home/.grok/sessions/*/*"))
    result = grok_loader.check(
        grok_bin, export.out_dir / "home", export.session_id, written.session.cwd or ""
    )
    assert result.listed, result.stderr_tail
    assert result.title == (snap.session.title or None)
    assert result.listed_cwd == snap.session.cwd
    assert result.load_ok, result.load_error
    kinds = ("user", "assistant", "reasoning", "tool-call", "tool-result")
    assert replay_projection(result.replay) == collapsed(merged_projection(written, kinds))
    # the written chat history stays as we wrote it (Grok keeps a hand-written one)
    assert "chat_history.jsonl" not in result.files_added
