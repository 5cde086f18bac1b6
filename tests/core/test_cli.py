"""The CLI: thin over the API, exit codes as documented, output as people and scripts need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import FIXTURES, session_dir
from trajconv.cli.main import cli

REWIND = session_dir(FIXTURES / "grok" / "rewind", "sessions/*/*")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_help_lists_every_command() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for command in (
        "codecs",
        "discover",
        "read",
        "write",
        "convert",
        "verify",
        "prepare",
        "parity",
        "schema",
        "diagnostics",
    ):
        assert f"  {command}" in out


def test_codecs_json_lists_the_registry() -> None:
    code, out, _ = run("codecs", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and rows["grok"]["read"] and "grok-build" in rows["grok"]["aliases"]


def test_unknown_harness_suggests_the_closest(snapshot) -> None:
    code, out, err = run("read", "--from", "grokk", str(REWIND))
    assert (code, out, err) == snapshot
    assert code == 2 and "did you mean grok?" in err


def test_read_to_stdout_then_verify(tmp_path: Path) -> None:
    code, out, _ = run("read", "--from", "grok", str(REWIND))
    assert code == 0
    snap_file = tmp_path / "s.json"
    snap_file.write_text(out)
    code, out, _ = run("verify", str(snap_file), "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    doc = json.loads(snap_file.read_text())
    doc["records"][2]["text"] = "tampered"
    snap_file.write_text(json.dumps(doc))
    code, _out, err = run("verify", str(snap_file))
    assert code == 1 and "record 2 (grok:L11): hash does not match its content" in err


def test_convert_prints_where_and_how_to_resume(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = run("convert", "--from", "grok", "--to", "grok", str(REWIND), "-o", str(out_dir))
    assert code == 0
    assert f"to {out_dir}" in out and "resume:    grok --resume" in out
    assert f"install:   python {out_dir / 'prepare.py'}" in out
    code, out, _ = run(
        "convert", "--from", "grok", "--to", "grok", str(REWIND), "-o", str(out_dir), "--json"
    )
    assert code == 3  # would replace the export just written


def test_convert_json_is_machine_readable(tmp_path: Path) -> None:
    code, out, _ = run(
        "convert",
        "--from",
        "grok",
        "--to",
        "grok",
        str(REWIND),
        "-o",
        str(tmp_path / "o"),
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["manifest"]["target"] == "grok"
    assert {d["code"] for d in doc["reader_diagnostics"]} >= {"rewound"}


def test_unfinished_turn_is_refused_with_exit_3(tmp_path: Path) -> None:
    sdir = tmp_path / "s" / REWIND.name
    sdir.mkdir(parents=True)
    first = (REWIND / "updates.jsonl").read_text().splitlines()[0]
    (sdir / "updates.jsonl").write_text(first + "\n")
    (sdir / "summary.json").write_bytes((REWIND / "summary.json").read_bytes())
    code, _out, err = run(
        "convert", "--from", "grok", "--to", "grok", str(sdir), "-o", str(tmp_path / "o")
    )
    assert code == 3 and "--allow-lossy" in err and "grok:L1" in err
    code, _out, _err = run(
        "convert",
        "--from",
        "grok",
        "--to",
        "grok",
        str(sdir),
        "-o",
        str(tmp_path / "o"),
        "--allow-lossy",
    )
    assert code == 0


@pytest.mark.parametrize("bad", ["../../x", "a/b"])
def test_hostile_session_id_is_bad_input(bad: str) -> None:
    code, _out, err = run(
        "read", "--from", "grok", str(FIXTURES / "grok" / "subagent"), "--session", bad
    )
    assert code == 1 and "cannot be used as a file name" in err


def test_limit_breach_names_the_limit_and_how_to_raise_it() -> None:
    code, _out, err = run("read", "--from", "grok", str(REWIND), "--max-line-bytes", "50")
    assert code == 1
    assert "max_line_bytes" in err and "--max-line-bytes" in err


def test_diagnostics_and_schema() -> None:
    code, out, _ = run("diagnostics", "--json")
    codes = {r["code"]: r for r in json.loads(out)}
    assert code == 0 and codes["torn-line"]["counts_units"] is True
    code, out, _ = run("schema")
    assert code == 0 and json.loads(out)["properties"]["format"]["const"] == "trajconv.snapshot/1"


def test_prepare_command_dry_run(tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    run("convert", "--from", "grok", "--to", "grok", str(REWIND), "-o", str(out_dir))
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trajconv.cli.main",
            "prepare",
            str(out_dir),
            "--home",
            str(tmp_path / "h"),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "would install" in proc.stdout
