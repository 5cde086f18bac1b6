"""The codec protocol (issue 32): every codec tells its own paths and homes, so the commands
need no ``--from``; formats without a home (ATIF) make no folder a home; the everyday defects
found with it. One test (or a few) per item."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import FIXTURES
from trajconv.cli.main import cli

# a session file or folder and the home holding it, for the codecs whose paths `convert`
# could not tell before (the table of five in find.py)
PATHS = {
    "claude": FIXTURES / "claude" / "recorded-multi-turn",
    "codex": FIXTURES / "codex" / "resumed",
    "gemini": FIXTURES / "gemini" / "recorded-resume",
    "opencode": FIXTURES / "opencode" / "recorded-tools",
}
FILES = {
    "claude": next(PATHS["claude"].glob(".claude/projects/*/*.jsonl")),
    "codex": next(PATHS["codex"].glob(".codex/sessions/*/*/*/rollout-*.jsonl")),
    "gemini": next(PATHS["gemini"].glob(".gemini/tmp/*/chats/session-*")),
    "opencode": PATHS["opencode"] / "opencode.db",
}


def invoke(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("harness", sorted(FILES))
def test_convert_read_and_show_tell_the_harness_of_a_session_file(
    harness: str, tmp_path: Path
) -> None:
    path = str(FILES[harness])
    code, _, err = invoke("convert", "--to", "atif", path, "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert f"as {harness} (--from to say otherwise)" in err
    code, out, err = invoke("read", path)
    assert code == 0, err
    assert json.loads(out)["source"]["harness"] == harness
    code, out, err = invoke("show", path, "--format", "markdown")
    assert code == 0, err
    assert f"as {harness}" in err and out.startswith("#")


@pytest.mark.parametrize("harness", sorted(PATHS))
def test_a_home_of_one_session_converts_without_from(harness: str, tmp_path: Path) -> None:
    code, _, err = invoke(
        "convert", "--to", "atif", str(PATHS[harness]), "-o", str(tmp_path / "out")
    )
    if harness == "opencode":  # a database of sessions: the id is asked for, never guessed
        assert code != 0 and "--session" in err
    else:
        assert code == 0, err
        assert f"as {harness}" in err


def test_a_user_home_of_several_harnesses_lists_them_never_guesses(tmp_path: Path) -> None:
    for harness in ("claude", "codex"):
        shutil.copytree(PATHS[harness], tmp_path, dirs_exist_ok=True)
    code, _, err = invoke("read", str(tmp_path))
    assert code == 2
    assert "several harnesses (claude, codex)" in err


def _grok_home(tmp_path: Path) -> dict[str, str | None]:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "grok" / "multi-turn", home / ".grok")
    return {"HOME": str(home), "GROK_HOME": None}


def test_archive_into_a_store_under_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ATIF keeps no home, so the current folder is no native home a store is refused in."""
    env = _grok_home(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, out, err = invoke("archive", "./store", env=env)
    assert code == 0, err
    assert out.startswith("archived 1 sessions into store")
    code, _, err = invoke("archive", "./store", "--harness", "atif", env=env)
    assert code == 0, err


def test_discover_of_a_home_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    for command in (["discover"], ["archive", str(tmp_path / "store")]):
        code, _, err = invoke(*command, "--home", str(tmp_path / "nonexistent"))
        assert code == 2
        assert "no such folder" in err


def test_harnesses_not_found_are_named_once_or_each_with_verbose(tmp_path: Path) -> None:
    env = _grok_home(tmp_path)
    _, _, err = invoke("discover", env=env)
    lines = err.splitlines()
    assert lines[0].startswith("# grok: listable (1 sessions) at")
    (missing,) = [line for line in lines if "no home found" in line]
    assert "claude" in missing and "codex" in missing and len(lines) == 2
    _, _, err = invoke("discover", "-v", env=env)
    assert any(line.startswith("# claude: missing root at") for line in err.splitlines())
    _, _, err = invoke("archive", str(tmp_path / "store"), env=env)
    assert sum("no home found" in line for line in err.splitlines()) == 1


def test_show_takes_an_id_a_prefix_or_latest(tmp_path: Path) -> None:
    env = _grok_home(tmp_path)
    grok_id = "019c0000-1111-7000-8000-00000000abcd"
    for given in ([grok_id], [grok_id[:13]], ["--latest"]):
        code, out, err = invoke("show", *given, "--format", "markdown", env=env)
        assert code == 0, err
        assert f"found grok {grok_id}" in err and "What files are here?" in out
    code, _, err = invoke("show", "nosuchsession", env=env)
    assert code == 2 and "no session 'nosuchsession'" in err


GROK = next((FIXTURES / "grok" / "multi-turn").glob("sessions/*/*"))


def test_each_codecs_write_options_are_flags_in_help_and_only_for_that_target(
    tmp_path: Path,
) -> None:
    from trajconv.codecs import registry

    _, help_text, _ = invoke("convert", "--help")
    flags = [o.flag(c.name) for c in registry.all_codecs() for o in c.write_options]
    assert "--deepagents-reasoning" in flags and "--codex-model-provider" in flags
    assert all(flag in help_text for flag in flags)
    for flag, value, target in (
        ("--codex-model-provider", "local", "fx"),
        ("--fx-schema", "4", "grok"),
        ("--atif-version", "1.6", "codex"),
    ):
        out = tmp_path / f"{target}-{flag}"
        code, _, err = invoke("convert", "--to", target, str(GROK), "-o", str(out), flag, value)
        assert code == 2, err
        assert f"{flag} applies to --to" in err and not out.exists()


def test_a_write_option_reaches_its_writer(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = invoke(
        "convert", "--to", "codex", str(GROK), "-o", str(out), "--codex-model-provider", "local"
    )
    assert code == 0, err
    (rollout,) = out.glob("home/.codex/sessions/*/*/*/rollout-*.jsonl")
    assert json.loads(rollout.read_text().splitlines()[0])["payload"]["model_provider"] == "local"


def test_install_without_out_leaves_no_export_folder_even_when_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)  # TMPDIR is read again
    home = tmp_path / "target-home"
    args = ["convert", "--to", "fx", str(GROK), "--install", "--home", str(home)]
    code, out, err = invoke(*args)
    assert code == 0, err
    assert "resume:    fx resume" in out and "try first" not in out
    code, _, err = invoke(*args)  # the session is there now: refused
    assert code == 3, err
    assert not list(scratch.glob("trajconv-export-*"))


def test_show_pages_with_less_told_to_show_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    from trajconv.views import command

    seen: list[str | None] = []
    monkeypatch.setattr(command, "interactive", lambda: True)
    monkeypatch.setattr(
        click, "echo_via_pager", lambda *a, **k: seen.append(os.environ.get("LESS"))
    )
    for before, after in ((None, "-R"), ("-FX", "-FX -R"), ("-FRX", "-FRX")):
        if before is None:
            monkeypatch.delenv("LESS", raising=False)
        else:
            monkeypatch.setenv("LESS", before)
        code, _, err = invoke("show", str(GROK))
        assert code == 0, err
        assert seen[-1] == after
        assert os.environ.get("LESS") == before  # put back after paging


def test_a_store_url_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    registry = importlib.import_module("fsspec.registry")._registry  # classes it imported
    monkeypatch.setitem(sys.modules, "s3fs", None)  # as if `pip install trajconv` alone
    monkeypatch.delitem(registry, "s3", raising=False)
    code, _, err = invoke("archive", "s3://bucket/store", "--home", str(FIXTURES / "grok"))
    assert code == 2, err
    assert "pip install 'trajconv[s3]'" in err
