"""Everyday use (issue 24): nothing lost silently, hints and contracts that hold, finding a
session, no traceback for ordinary mistakes. One test (or a few) per item of the issue."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import FIXTURES, session_dir
from trajconv.cli.main import cli

GROK_ID = "019c0000-1111-7000-8000-00000000abcd"
GROK_SESSION = session_dir(FIXTURES / "grok" / "multi-turn", "sessions/*/*")
FIRST_PROMPT = "What files are here?"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def convert_grok(target: str, out: Path) -> tuple[int, str]:
    """The multi-turn Grok session converted for ``target`` into ``out``: exit code, stdout."""
    code, stdout, _ = run(
        "convert", "--from", "grok", "--to", target, str(GROK_SESSION), "-o", str(out)
    )
    return code, stdout


def grok_copy(tmp_path: Path) -> Path:
    """The multi-turn Grok session copied into a scratch home; its session folder."""
    sdir = tmp_path / "h" / ".grok" / "sessions" / GROK_SESSION.parent.name / GROK_SESSION.name
    shutil.copytree(GROK_SESSION, sdir)
    return sdir


# -- silent loss --------------------------------------------------------------------------

# harness folder inside a user home, and the fixture home to put there
HOMES = [
    ("grok", ".grok", FIXTURES / "grok" / "multi-turn"),
    ("copilot", ".copilot", FIXTURES / "copilot" / "multi-turn"),
    ("fx", ".fx", FIXTURES / "fx" / "schema1-basic" / ".fx"),
    ("deepagents", ".deepagents/.state", FIXTURES / "deepagents" / "multi-thread"),
]


@pytest.mark.parametrize(("harness", "folder", "fixture"), HOMES, ids=[h[0] for h in HOMES])
def test_home_is_a_user_home_or_the_harness_folder(
    harness: str, folder: str, fixture: Path, tmp_path: Path
) -> None:
    user_home = tmp_path / "home"
    shutil.copytree(fixture, user_home / folder)
    harness_folder = user_home / folder.split("/")[0]
    found = []
    for home in (user_home, harness_folder):
        code, out, _ = run("discover", "--harness", harness, "--home", str(home), "--json")
        assert code == 0
        found.append(sorted(r["session_id"] for r in json.loads(out)["sessions"]))
    assert found[0] and found[0] == found[1]
    code, out, _ = run(
        "archive", str(tmp_path / "store"), "--harness", harness, "--home", str(user_home), "--json"
    )
    summary = json.loads(out)
    assert code == 0 and summary["counts"]["failed"] == 0
    assert summary["counts"]["first"] == summary["sessions"] == len(found[0])


def _read(path: Path, *extra: str) -> tuple[int, dict[str, object], str]:
    code, out, err = run("read", "--from", "grok", str(path), *extra)
    return code, (json.loads(out) if code == 0 else {}), err


def test_a_line_with_bad_bytes_is_kept_replaced_and_counted(tmp_path: Path) -> None:
    sdir = grok_copy(tmp_path)
    journal = sdir / "updates.jsonl"
    data = journal.read_bytes()
    journal.write_bytes(data.replace(b"What files", b"What \xff files", 1))
    code, snap, err = _read(sdir)
    assert code == 0
    first = next(r for r in snap["records"] if r["kind"] == "user")  # type: ignore[attr-defined]
    assert first["text"].startswith("What \ufffd files are here?")
    diags = {d["code"]: d for d in snap["diagnostics"]}  # type: ignore[attr-defined]
    assert diags["replaced-bytes"]["count"] == 1
    assert diags["replaced-bytes"]["samples"] == ["updates.jsonl:1"]
    assert "invalid-line" not in diags
    # `read` says so on stderr, stdout stays the Snapshot
    assert "replaced-bytes x1" in err


def test_a_line_with_a_byte_order_mark_is_kept(tmp_path: Path) -> None:
    sdir = grok_copy(tmp_path)
    journal = sdir / "updates.jsonl"
    journal.write_bytes(b"\xef\xbb\xbf" + journal.read_bytes())
    code, snap, err = _read(sdir)
    assert code == 0
    first = next(r for r in snap["records"] if r["kind"] == "user")  # type: ignore[attr-defined]
    assert first["text"].startswith(FIRST_PROMPT)
    assert {d["code"] for d in snap["diagnostics"]} >= {"bom-stripped"}  # type: ignore[attr-defined]
    assert "bom-stripped x1" in err


def test_copilot_keeps_a_line_with_bad_bytes(tmp_path: Path) -> None:
    import trajconv

    src = FIXTURES / "copilot" / "multi-turn"
    shutil.copytree(src, tmp_path / "c")
    (events,) = (tmp_path / "c").glob("session-state/*/events.jsonl")
    lines = events.read_bytes().split(b"\n")
    user = next(i for i, line in enumerate(lines) if b'"user.message"' in line)
    before = trajconv.read("copilot", events.parent)
    lines[user] = lines[user].replace(b'"content":"', b'"content":"\xfe', 1)
    events.write_bytes(b"\n".join(lines))
    after = trajconv.read("copilot", events.parent)
    assert len(after.records) == len(before.records)
    assert {d.code for d in after.diagnostics} - {d.code for d in before.diagnostics} == {
        "replaced-bytes"
    }


def test_a_utf16_journal_is_a_named_error(tmp_path: Path) -> None:
    sdir = grok_copy(tmp_path)
    journal = sdir / "updates.jsonl"
    journal.write_bytes(journal.read_text("utf-8").encode("utf-16"))
    code, _, err = _read(sdir)
    assert code == 1
    assert "updates.jsonl:1: the journal is UTF-16 encoded" in err
    code, _, err = run(
        "convert", "--from", "grok", "--to", "fx", str(sdir), "-o", str(tmp_path / "o")
    )
    assert code == 1 and "UTF-16" in err and not (tmp_path / "o").exists()


def test_session_that_does_not_match_a_single_session_path_is_a_usage_error() -> None:
    other = "019c0000-9999-7000-8000-000000000000"
    code, out, err = run("read", "--from", "grok", str(GROK_SESSION), "--session", other)
    assert code == 2 and out == ""
    assert other in err and GROK_ID in err


def test_a_grok_home_with_one_session_needs_no_session(tmp_path: Path) -> None:
    home = FIXTURES / "grok" / "multi-turn"
    code, out, err = run("convert", "--to", "fx", str(home), "-o", str(tmp_path / "o"))
    assert code == 0, err
    assert f"wrote fx session {GROK_ID}" in out


def test_unknown_session_in_a_native_home_is_exit_2() -> None:
    home = FIXTURES / "grok" / "subagent"
    code, _, err = run("read", "--from", "grok", str(home), "--session", "nope")
    assert code == 2 and "no session 'nope'" in err


def test_allow_lossy_names_what_it_left_out(tmp_path: Path) -> None:
    src = session_dir(FIXTURES / "grok" / "rewind", "sessions/*/*")
    sdir = tmp_path / "s" / src.name
    sdir.mkdir(parents=True)
    lines = (src / "updates.jsonl").read_text().splitlines()
    (sdir / "updates.jsonl").write_text(lines[0] + "\n")  # the first prompt, unanswered
    (sdir / "summary.json").write_bytes((src / "summary.json").read_bytes())
    out = str(tmp_path / "o")
    code, _, err = run("convert", "--from", "grok", "--to", "fx", str(sdir), "-o", out)
    assert code == 3 and "--allow-lossy" in err
    code, _, err = run(
        "convert", "--from", "grok", "--to", "fx", str(sdir), "-o", out, "--allow-lossy"
    )
    assert code == 0
    assert "--allow-lossy: unanswered-turn x1" in err and "grok:L1" in err


# -- hints and contracts ------------------------------------------------------------------


def test_try_first_hint_is_the_writers_own(tmp_path: Path) -> None:
    out = tmp_path / "fx"
    code, stdout = convert_grok("fx", out)
    assert code == 0
    assert f"try first: HOME={out.resolve() / 'home'} fx resume" in stdout
    assert (out / "home").is_dir()
    out = tmp_path / "cursor"
    code, stdout = convert_grok("cursor", out)
    assert code == 0 and not (out / "home").exists()
    line = next(x for x in stdout.splitlines() if "try first:" in x)
    assert "H=$(mktemp -d) && python " in line and '--home "$H" && HOME="$H" cursor-agent' in line


def test_prepare_finds_dcode_python_or_fails_in_dry_run_too(tmp_path: Path) -> None:
    out = tmp_path / "da"
    assert convert_grok("deepagents", out)[0] == 0
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}  # no dcode
    dry = subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(tmp_path / "h"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert dry.returncode == 1 and "dcode" in dry.stderr and "would write" not in dry.stdout
    # a dcode whose python has the packages is used (its script names its python)
    (tmp_path / "bin").mkdir()
    fake_python = tmp_path / "bin" / "python"
    fake_python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    fake_python.chmod(0o755)
    dcode = tmp_path / "bin" / "dcode"
    dcode.write_text(f"#!{fake_python}\n")
    dcode.chmod(0o755)
    stubs = tmp_path / "stubs"
    for pkg in ("deepagents", "langgraph/checkpoint/sqlite", "langchain_core"):
        (stubs / pkg).mkdir(parents=True, exist_ok=True)
        (stubs / pkg / "__init__.py").write_text("")
    (stubs / "langgraph" / "checkpoint" / "__init__.py").write_text("")
    env = {**env, "PATH": str(tmp_path / "bin"), "PYTHONPATH": str(stubs)}
    # the stubs are on PYTHONPATH for both pythons, so hide them from this one with -I
    dry = subprocess.run(
        [sys.executable, "-I", str(out / "prepare.py"), "--home", str(tmp_path / "h"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert dry.returncode == 0, dry.stderr
    assert (
        f"using the python of dcode, which has the deepagents packages: {fake_python}" in dry.stdout
    )
    assert "would write thread" in dry.stdout and not (tmp_path / "h").exists()


def test_a_deep_agents_thread_goes_to_cursor_with_its_checkpoints_named(tmp_path: Path) -> None:
    """Checkpoint rows are Deep Agents' bookkeeping (kept in the Snapshot's artifacts); the
    records hold the conversation, so Cursor gets it, and the read side names the rows."""
    thread = FIXTURES / "deepagents" / "failed-tool"
    code, out, err = run("convert", "--to", "cursor", str(thread), "-o", str(tmp_path / "o"))
    assert code == 0, err
    assert "read   info    compaction-state x" in err
    assert "wrote cursor session" in out


# -- exit codes, overwrite policy, ordinary mistakes --------------------------------------


def _ctrl_c_reaches_it() -> None:
    """A child's SIGINT as a terminal program has it: the default, which Python turns into
    KeyboardInterrupt. A test run started in the background of a non-interactive shell
    (``cmd &``) inherits SIGINT ignored, and the Ctrl-C cases would then never see one."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_is_130_without_traceback_and_leaves_no_spool(tmp_path: Path) -> None:
    script = tmp_path / "interrupt.py"
    script.write_text(
        "import sys\n"
        "import trajconv.codecs.export as export\n"
        "def emit(plan, out):\n"
        "    raise KeyboardInterrupt\n"
        "export.emit = emit\n"
        "from trajconv.cli.main import main\n"
        "sys.argv = ['trajconv', *sys.argv[1:]]\n"
        "main()\n"
    )
    spools = tmp_path / "tmp"
    spools.mkdir()
    env = {**os.environ, "TMPDIR": str(spools)}
    args = ["convert", "--from", "grok", "--to", "fx", str(GROK_SESSION), "-o", str(tmp_path / "o")]
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        preexec_fn=_ctrl_c_reaches_it,
    )
    assert done.returncode == 130
    assert "Traceback" not in done.stderr and "interrupted" in done.stderr
    assert list(spools.iterdir()) == [] and not (tmp_path / "o").exists()


def test_a_closed_stdout_is_exit_0(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "trajconv.cli.main", "read", "--from", "grok", str(GROK_SESSION)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head` that has had enough, before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait() == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err


def test_one_overwrite_policy_for_snapshot_files(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    snap.write_text("keep me")
    for args in (
        ("read", "--from", "grok", str(GROK_SESSION), "-o", str(snap)),
        ("read", "--from", "grok", str(GROK_SESSION), "--out", str(snap)),
        (
            "convert",
            "--to",
            "fx",
            str(GROK_SESSION),
            "-o",
            str(tmp_path / "o"),
            "--snapshot",
            str(snap),
        ),
    ):
        code, _, err = run(*args)
        assert code == 3 and "--force" in err and snap.read_text() == "keep me"
    assert not (tmp_path / "o").exists()
    code, _, _ = run("read", "--from", "grok", str(GROK_SESSION), "-o", str(snap), "--force")
    assert code == 0 and json.loads(snap.read_text())["format"] == "trajconv.snapshot/1"


def test_force_never_replaces_a_special_file(tmp_path: Path) -> None:
    """``-o /dev/null --force`` once replaced the device by a regular file (by the atomic
    rename), for every process on the machine: a FIFO stands for it here."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run("read", "--from", "grok", str(GROK_SESSION), "-o", str(fifo), "--force")
    assert code == 2 and "not a regular file" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (("read", "--from", "grok", str(GROK_SESSION), "-o", "{tmp}"), None, "is a folder"),
        (
            ("read", "--from", "grok", str(GROK_SESSION), "-o", "{tmp}/no/s.json"),
            None,
            "does not exist",
        ),
        (("archive", "export", "{store}", "{tmp}/no/a.tar.gz"), None, "does not exist"),
        (("prepare", "{tmp}"), None, "is not a trajconv export"),
        (
            ("read", "--from", "grok", str(GROK_SESSION)),
            {"TRAJCONV_MAX_RECORDS": "lots"},
            "TRAJCONV_MAX_RECORDS='lots'",
        ),
        (
            ("read", "--from", "grok", str(GROK_SESSION), "--max-records", "-1"),
            None,
            "--max-records -1",
        ),
        (("archive", "{tmp}/st", "--harness", "grok", "--harness", "fx"), None, "given 2 times"),
        (
            ("convert", "--from", "grok", "--from", "fx", "--to", "fx", str(GROK_SESSION)),
            None,
            "'--from': given 2 times",
        ),
        (
            ("convert", "--to", "fx", "--to", "grok", str(GROK_SESSION), "-o", "{tmp}/o"),
            None,
            "'--to': given 2 times",
        ),
        (
            ("convert", "--to", "grok", str(GROK_SESSION), "-o", "{tmp}/o", "--fx-schema", "4"),
            None,
            "--fx-schema applies to --to fx only",
        ),
        (
            ("convert", "--to", "grok", str(GROK_SESSION), "-o", "{tmp}/o", "--home", "{tmp}"),
            None,
            "--home applies to --install only",
        ),
    ],
    ids=[
        "out-folder",
        "out-missing-parent",
        "export-missing-folder",
        "prepare-not-export",
        "bad-env-limit",
        "negative-limit",
        "repeated-harness",
        "repeated-from",
        "repeated-to",
        "fx-schema-to-grok",
        "home-without-install",
    ],
)
def test_ordinary_mistakes_are_named_without_traceback(
    args: tuple[str, ...], env: dict[str, str] | None, said: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    if "{store}" in args:
        assert (
            run(
                "archive",
                str(store),
                "--harness",
                "grok",
                "--home",
                str(FIXTURES / "grok" / "multi-turn"),
            )[0]
            == 0
        )
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{store}", str(store)) for a in args]
    result = CliRunner().invoke(cli, argv, env=env)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert said in result.stderr


# -- finding and converting ---------------------------------------------------------------


def _homes(tmp_path: Path) -> dict[str, str | None]:
    """A user home holding two Grok sessions, a Copilot one and the folder of a harness
    without a codec; harness variables unset so the default homes are these."""
    home = tmp_path / "home"
    for case in ("multi-turn", "rewind"):
        src = FIXTURES / "grok" / case / "sessions"
        shutil.copytree(src, home / ".grok" / "sessions", dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "copilot" / "multi-turn", home / ".copilot")
    (home / ".nohow" / "projects").mkdir(parents=True)
    unset = ("GROK_HOME", "COPILOT_HOME", "CURSOR_CONFIG_DIR")
    return {"HOME": str(home), **dict.fromkeys(unset)}


def test_discover_lists_newest_first_with_header_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trajconv import find

    # a harness no codec reads (the real table's entries get codecs as they are written)
    monkeypatch.setitem(find.HARNESS_HOMES, "nohow", (".nohow", "Nohow Agent"))
    env = _homes(tmp_path)
    result = CliRunner().invoke(cli, ["discover"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["HARNESS", "SESSION", "UPDATED", "TITLE", "PATH"]
    dates = [line.split()[2] for line in lines[1:]]
    assert len(dates) == 3 and dates == sorted(dates, reverse=True)
    assert all(line.split()[-1].startswith(env["HOME"]) for line in lines[1:])  # type: ignore[arg-type]
    assert "# nohow: Nohow Agent home found: not supported yet" in result.stderr
    assert "grok: Grok Build home found" not in result.stderr  # a codec reads it: listed
    nohow = CliRunner().invoke(cli, ["discover", "--home", f"{env['HOME']}/.nohow"], env=env)
    assert "# nohow: Nohow Agent home found: not supported yet" in nohow.stderr
    # filters
    out = CliRunner().invoke(cli, ["discover", "--json", "--limit", "1"], env=env).stdout
    (newest,) = json.loads(out)["sessions"]
    assert newest["session_id"] == lines[1].split()[1]
    out = CliRunner().invoke(cli, ["discover", "--json", "--grep", "DEMO FILES"], env=env).stdout
    assert [s["session_id"] for s in json.loads(out)["sessions"]] == [GROK_ID]
    out = CliRunner().invoke(cli, ["discover", "--json", "--cwd", "/srv/demo"], env=env).stdout
    assert {s["cwd"] for s in json.loads(out)["sessions"]} == {"/srv/demo"}
    out = CliRunner().invoke(cli, ["discover", "--json", "--since", "2999-01-01"], env=env).stdout
    assert json.loads(out)["sessions"] == []
    code, _, err = run("discover", "--since", "yesterday-ish")
    assert code == 2 and "--since" in err


def test_convert_with_only_an_id_a_prefix_or_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _homes(tmp_path)
    runner = CliRunner()
    by_id = runner.invoke(
        cli, ["convert", "--to", "fx", GROK_ID, "-o", str(tmp_path / "a")], env=env
    )
    assert by_id.exit_code == 0, by_id.output
    assert f"found grok {GROK_ID}" in by_id.stderr
    by_prefix = runner.invoke(
        cli, ["convert", "--to", "fx", GROK_ID[:23], "-o", str(tmp_path / "b")], env=env
    )
    assert by_prefix.exit_code == 0, by_prefix.output
    # a prefix several sessions share lists them, and nothing is written
    shared = runner.invoke(cli, ["convert", "--to", "fx", "0", "-o", str(tmp_path / "c")], env=env)
    assert shared.exit_code == 2 and not (tmp_path / "c").exists()
    assert "names 2 sessions" in shared.stderr and GROK_ID in shared.stderr  # the Grok two
    listed = json.loads(runner.invoke(cli, ["discover", "--json"], env=env).stdout)["sessions"]
    latest = runner.invoke(
        cli, ["convert", "--to", "fx", "--latest", "-o", str(tmp_path / "d")], env=env
    )
    assert (
        latest.exit_code == 0
        and f"found {listed[0]['harness']} {listed[0]['session_id']}" in latest.stderr
    )
    of_harness = runner.invoke(
        cli,
        ["convert", "--to", "fx", "--latest", "--from", "copilot", "-o", str(tmp_path / "e")],
        env=env,
    )
    assert of_harness.exit_code == 0 and "found copilot" in of_harness.stderr
    in_cwd = runner.invoke(
        cli,
        ["convert", "--to", "fx", "--latest", "--cwd", "/srv/demo", "-o", str(tmp_path / "g")],
        env=env,
    )
    assert in_cwd.exit_code == 0 and "found grok" in in_cwd.stderr
    # `--cwd .` is this folder, made whole for the target
    demo = tmp_path / "demo"
    demo.mkdir()
    monkeypatch.chdir(demo)
    here = runner.invoke(cli, ["convert", "--to", "fx", GROK_ID, "--cwd", ".", "-o", "h"], env=env)
    assert here.exit_code == 2  # no session of that id in the demo folder
    assert f"no session {GROK_ID!r} in {demo.resolve()} in the homes" in here.stderr
    none = runner.invoke(cli, ["convert", "--to", "fx", "ffff", "-o", str(tmp_path / "f")], env=env)
    assert none.exit_code == 2 and "no session 'ffff'" in none.stderr


def test_convert_install_writes_installs_and_prints_resume(tmp_path: Path) -> None:
    home = tmp_path / "target-home"
    args = ["convert", "--to", "fx", str(GROK_SESSION), "--install", "--home", str(home)]
    code, out, err = run(*args)
    assert code == 0, err
    assert "resume:    fx resume" in out
    assert list(home.glob(".fx/sessions/*/session.json"))
    code, out, err = run(*args)  # the session is there now: refused, exit 3
    assert code == 3, out + err


# -- an installed package (pip install ., not -e) ---------------------------------------


def test_installed_package_keeps_loaders_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trajconv.checkout
    from proof import tools_dir

    monkeypatch.delenv("TRAJCONV_TOOLS", raising=False)
    assert tools_dir() == FIXTURES.parent / ".tools"  # a source checkout: its .tools/
    monkeypatch.setattr(trajconv.checkout, "source_checkout", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert tools_dir() == tmp_path / "cache" / "trajconv" / "tools"
    monkeypatch.setenv("TRAJCONV_TOOLS", str(tmp_path / "mine"))  # still overrides
    assert tools_dir() == tmp_path / "mine"


def test_installed_package_parity_reads_package_data_or_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trajconv.parity

    monkeypatch.setattr(trajconv.parity, "source_checkout", lambda: None)
    code, _, err = run("parity", "--check")
    assert code == 2 and "clone of trajconv's source repository" in err
    # a wheel carries evidence/ as package data (pyproject force-include); the source
    # tree's package folder does not, so this is what an install without it says
    assert not (Path(trajconv.parity.__file__).parent / "evidence").exists()
    code, _, err = run("parity")
    assert code == 2 and "evidence/parity.json" in err and "source repository" in err


def test_shell_completion_completes_harness_names() -> None:
    def complete(words: str) -> list[str]:
        env = {
            **os.environ,
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
            "_TRAJCONV_COMPLETE": "bash_complete",
        }
        done = subprocess.run(
            [sys.executable, "-m", "trajconv.cli.main"], env=env, capture_output=True, text=True
        )
        return [line.split(",", 1)[1] for line in done.stdout.splitlines()]

    to_c = complete("trajconv convert --to c")
    assert {"copilot", "cursor"} <= set(to_c) and all(n.startswith("c") for n in to_c)
    assert complete("trajconv read --from gr") == ["grok"]
    assert "grok" in complete("trajconv discover --harness g")


def test_archive_progress_counts_bytes_as_well_as_sessions(tmp_path: Path) -> None:
    from trajconv.harvest import archive

    ticks = []
    home = FIXTURES / "grok" / "subagent"
    archive(tmp_path / "store", harness="grok", home=home, progress=ticks.append)
    last = [t for t in ticks if t.phase == "archive"][-1]
    journals = sum(p.stat().st_size for p in home.glob("sessions/*/*/updates.jsonl"))
    assert last.done == last.total == 2
    assert last.bytes_done == last.bytes_total == journals > 0


def test_reading_shows_bytes_read_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import time

    from rich.console import Console

    from trajconv.cli import main

    reads = iter(range(0, 10**9, 3_000_000))
    monkeypatch.setattr(main, "_bytes_read", lambda: next(reads))
    shown = io.StringIO()
    console = Console(file=shown, force_terminal=True, width=400)
    with main._reading_progress(GROK_SESSION, console):
        deadline = time.monotonic() + 600  # a hang guard: it waits for the line, not a time
        while " MB" not in shown.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert f"reading {GROK_SESSION}: " in shown.getvalue()
    assert " MB" in shown.getvalue()
    # not a terminal (as under pytest): nothing at all
    assert isinstance(main._reading_progress(GROK_SESSION), contextlib.nullcontext)


#: Ctrl-C reaches the archive's whole process group at a fixed step (the run signals its
#: own group there, as a terminal would), so the outcome never depends on how fast it runs
INTERRUPTER = """
import os, signal, sys
from concurrent.futures import ProcessPoolExecutor
import trajconv.harvest as harvest
WHEN = sys.argv[1]

def ctrl_c():
    os.killpg(0, signal.SIGINT)  # the archive and its workers, as a terminal's Ctrl-C

class Pool(ProcessPoolExecutor):
    def submit(self, *args, **kwargs):
        fut = super().submit(*args, **kwargs)
        if WHEN == "worker-starting":
            ctrl_c()  # the first worker is being started (Ctrl-C is held back there)
        return fut

harvest.ProcessPoolExecutor = Pool
reads = harvest._reads

def interrupted_reads(todo, jobs, limits):
    for n, item in enumerate(reads(todo, jobs, limits)):
        if n == 0 and WHEN == "reads-in-flight":
            ctrl_c()  # a result is back, the next reads run in the workers
        yield item
        if n == 0 and WHEN == "after-first-stored":
            ctrl_c()  # the first session is in the store
    raise SystemExit("the archive finished: Ctrl-C never arrived")

harvest._reads = interrupted_reads
from trajconv.cli.main import main
sys.argv = ["trajconv", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("when", ["worker-starting", "reads-in-flight", "after-first-stored"])
def test_ctrl_c_during_archive_with_jobs_is_130_and_leaves_no_spool(
    when: str, tmp_path: Path
) -> None:
    home = tmp_path / "home" / ".grok" / "sessions"
    for i in range(8):  # more sessions than the 2 x 2 reads in flight: the run stops half way
        shutil.copytree(GROK_SESSION, home / f"g{i}" / GROK_SESSION.name)
    spools = tmp_path / "tmp"
    spools.mkdir()
    store = tmp_path / "store"
    argv = ["archive", str(store), "--harness", "grok", "--home", str(tmp_path / "home")]
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTER, when, *argv, "--jobs", "2"],
        env={**os.environ, "TMPDIR": str(spools)},
        capture_output=True,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's Ctrl-C reaches it
        timeout=600,  # a hang guard, not a speed target
        preexec_fn=_ctrl_c_reaches_it,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "trajconv: interrupted"
    assert "Traceback" not in done.stderr
    assert list(spools.iterdir()) == []
    code, out, _ = run("verify", str(store))  # what was stored before the interrupt verifies
    assert code == 0
    stored = len(list(store.glob("snapshots/*.json")))
    assert stored == (1 if when == "after-first-stored" else 0), out


@pytest.mark.parametrize(
    ("harness", "path"),
    [
        ("grok", GROK_SESSION),
        ("grok", GROK_SESSION / "updates.jsonl"),
        ("copilot", next((FIXTURES / "copilot" / "multi-turn").glob("session-state/*"))),
        ("fx", next((FIXTURES / "fx" / "schema4-tools").glob(".fx/sessions/*/events.jsonl"))),
        ("fx", FIXTURES / "fx" / "schema1-basic"),
        ("cursor", FIXTURES / "cursor" / "multi-turn" / "store.db"),
        ("deepagents", FIXTURES / "deepagents" / "multi-thread"),
        ("claude", next((FIXTURES / "claude" / "recorded-multi-turn").glob(".claude/*/*/*.jsonl"))),
        ("claude", FIXTURES / "claude" / "recorded-multi-turn" / ".claude"),
        ("codex", next((FIXTURES / "codex" / "resumed").glob(".codex/sessions/*/*/*/*.jsonl"))),
        ("codex", FIXTURES / "codex" / "resumed"),
        ("gemini", next((FIXTURES / "gemini" / "recorded-resume").glob(".gemini/tmp/*/chats/*"))),
        ("gemini", FIXTURES / "gemini" / "recorded-resume"),
        ("opencode", FIXTURES / "opencode" / "recorded-tools" / "opencode.db"),
        ("opencode", FIXTURES / "opencode" / "legacy-json"),
        ("atif", FIXTURES / "atif" / "v1.0-minimal"),
    ],
    ids=[
        *("grok-folder", "grok-journal", "copilot", "fx-events", "fx-home", "cursor"),
        *("deepagents", "claude-transcript", "claude-home", "codex-rollout", "codex-home"),
        *("gemini-chat", "gemini-home", "opencode-db", "opencode-legacy", "atif"),
    ],
)
def test_from_is_told_from_the_files(harness: str, path: Path) -> None:
    from trajconv.find import detect

    assert detect(path) == harness


def test_a_codec_can_claim_its_paths_from_its_layout_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from trajconv import find
    from trajconv.codecs.base import CERTAIN, Claim, LazyCodec

    layout = types.ModuleType("nohow_codec.layout")
    layout.claims = lambda path: (  # type: ignore[attr-defined]
        Claim(CERTAIN, "session") if path.name == "nohow.log" else None
    )
    monkeypatch.setitem(sys.modules, "nohow_codec", types.ModuleType("nohow_codec"))
    monkeypatch.setitem(sys.modules, "nohow_codec.layout", layout)
    codec = LazyCodec("nohow", (), "a third-party codec", "nohow_codec")
    claim = codec.claims(tmp_path / "nohow.log")
    assert claim is not None and claim.confidence == CERTAIN
    assert codec.claims(GROK_SESSION) is None
    monkeypatch.setattr(find.registry, "all_codecs", lambda: [codec])
    assert find.detect(tmp_path / "nohow.log") == "nohow"


def test_ctrl_c_swallowed_by_a_finalizer_still_ends_the_run_as_interrupted() -> None:
    """Python cannot raise a KeyboardInterrupt from a finalizer (a spool's removal): it goes
    to ``sys.unraisablehook``. The run must still stop as interrupted, never exit 0."""
    program = """
import sys, weakref
import click
from trajconv.cli import main as m

@m.cli.command("finalize")
def finalize() -> None:
    class Spool: pass
    def release() -> None:
        raise KeyboardInterrupt
    spool = Spool()
    weakref.finalize(spool, release)
    del spool  # the finalizer runs here, as Ctrl-C could land in it
    import time
    while True:  # the run goes on (as the archive's next session would): it must stop
        time.sleep(0.01)
    click.echo("finished")

m.main()
"""
    done = subprocess.run(  # the timeout is a hang guard: without the fix it never ends
        [sys.executable, "-c", program, "finalize"],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_ctrl_c_reaches_it,
    )
    assert done.returncode == 130, done.stderr
    assert "finished" not in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "trajconv: interrupted"
    assert "Traceback" not in done.stderr
