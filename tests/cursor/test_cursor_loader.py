"""Native check: Cursor's own store reader (npm @cursor/sdk, local runtime, offline)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cursor_support import AGENTS, CWD, PLANTED_KEY, fixture_store, meta

from proof import tools_dir
from proof.loaders import cursor as loader
from tests.conftest import require_loader
from trajconv.codecs.cursor import CODEC
from trajconv.codecs.export import emit


def _node() -> Path:
    node = loader.find(tools_dir())
    require_loader(node, "cursor")
    assert node is not None
    return node


def test_sdk_reads_fixture_turns() -> None:
    _node()
    result = loader.check(fixture_store("multi-turn"), AGENTS["multi-turn"], CWD)
    assert result.ok, result.error
    assert [t.user_text for t in result.turns] == [
        "Add a README with the test command",
        "Run the tests",
    ]
    assert result.turns[0].steps[0] == (
        "thinking",
        "Check package metadata for the test command first.",
    )
    assert result.meta_changed_keys == ()
    assert PLANTED_KEY not in repr(result)


def test_sdk_reads_prepare_built_store(tmp_path: Path) -> None:
    _node()
    snap = CODEC.read(fixture_store("multi-turn"))
    out = tmp_path / "out"
    emit(CODEC.plan(snap), out)
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (store,) = home.glob(".cursor/chats/*/*/store.db")
    before = store.read_bytes()
    result = loader.check(home, AGENTS["multi-turn"], CWD)
    assert result.ok, result.error
    assert len(result.turns) == 2
    assert [s for s, _ in result.turns[0].steps] == ["thinking", "assistant", "assistant"]
    # the SDK opened a copy: it adds a blobEncryptionKey there, never to our store
    assert result.encryption_key_added
    assert store.read_bytes() == before and "blobEncryptionKey" not in meta(store)


def test_sdk_reads_lowered_store(tmp_path: Path) -> None:
    _node()
    from test_cursor_writer import _built

    snap = _built()
    out = tmp_path / "out"
    export = emit(CODEC.plan(snap), out)
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = loader.check(home, export.session_id, "/work/app")
    assert result.ok, result.error
    (turn,) = result.turns
    assert turn.kind == "agent" and turn.user_text == "run tests"
    assert turn.steps == (
        ("thinking", "use pytest"),
        ("assistant", "Running."),
        ("assistant", "One test fails."),
    )
    assert result.meta_changed_keys == ()


def test_sdk_opens_an_untitled_chat_without_rewriting_its_name(tmp_path: Path) -> None:
    """Cursor's parser requires meta["0"].name and fills in its default when it is missing;
    the writer puts that default there itself, so the store opens unchanged (issue 24)."""
    _node()
    from test_cursor_writer import _built

    export = emit(CODEC.plan(_built(title=None)), tmp_path / "out")
    assert "title-missing" in {d.code for d in export.diagnostics}
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "out" / "prepare.py"), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (store,) = home.glob(".cursor/chats/*/*/store.db")
    result = loader.check(home, export.session_id, "/work/app")
    assert result.ok, result.error
    assert result.meta_changed_keys == ()
    assert meta(store)["name"] == "New Agent"
