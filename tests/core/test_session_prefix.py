"""``--session`` inside a home or a store takes what a positional id takes: the id or a
unique prefix of one; a session that is not there is a usage error (exit 2), as the
README's table says (issue 33: the Gemini, Claude, Codex and OpenCode readers needed the
full id and answered exit 1)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajconv
from tests.archive import support
from tests.helpers import FIXTURES
from trajconv.cli.main import cli
from trajconv.harvest import archive

HOMES = {
    "claude": FIXTURES / "claude" / "recorded-multi-turn",
    "codex": FIXTURES / "codex" / "resumed",
    "copilot": FIXTURES / "copilot" / "multi-turn",
    "gemini": FIXTURES / "gemini" / "recorded-resume",
    "grok": FIXTURES / "grok" / "multi-turn",
    "opencode": FIXTURES / "opencode" / "recorded-tools",
}


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("harness", sorted(HOMES))
def test_a_prefix_names_the_one_session_of_a_home(harness: str) -> None:
    home = HOMES[harness]
    (ref,) = trajconv.discover(harness, home)
    code, out, err = run("read", "--from", harness, home, "--session", ref.session_id[:8])
    assert code == 0, err
    assert json.loads(out)["source"]["session_id"] == ref.session_id


@pytest.mark.parametrize("harness", sorted(HOMES))
def test_a_session_not_in_the_home_is_a_usage_error(harness: str) -> None:
    code, _, err = run("read", "--from", harness, HOMES[harness], "--session", "not-there-0")
    assert code == 2, err
    assert "not-there-0" in err


def test_a_prefix_of_two_sessions_lists_both(tmp_path: Path) -> None:
    home = support.grok_home(tmp_path / "user")
    ids = sorted(r.session_id for r in trajconv.discover("grok", home))
    shared = next(
        a[:i] for a, b in itertools.pairwise(ids) for i in range(8, 0, -1) if a[:i] == b[:i]
    )
    matching = [i for i in ids if i.startswith(shared)]
    code, _, err = run("read", "--from", "grok", home, "--session", shared)
    assert code == 2 and all(i in err for i in matching), err


def test_a_prefix_names_an_archived_session(tmp_path: Path) -> None:
    home = support.grok_home(tmp_path / "user", ["recorded-multi-turn"])
    store = tmp_path / "store"
    archive(store, harness="grok", home=home)
    (ref,) = trajconv.discover("grok", home)
    code, out, err = run(
        "convert", "--to", "codex", store, "--session", ref.session_id[:8], "--json",
        "-o", tmp_path / "out",
    )  # fmt: skip
    assert code == 0, err
    assert ref.session_id in out
    code, _, err = run("show", store, "--session", "not-there-0")
    assert code == 2 and "not-there-0" in err
