"""``trajconv dataset``: training data in four formats, redaction that fails closed, the same
bytes however the work is spread (here, in processes, on a real Dask cluster on loopback).

Sources are the project's fixture sessions of every harness (a fixture case is a native
home of its harness), found without naming any; planted secrets go into a Snapshot made
with the builder, in every field a row can carry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from tests.helpers import fixture_homes
from trajconv import dataset as ds
from trajconv import redact
from trajconv.cli.main import cli
from trajconv.harvest import archive
from trajconv.snapshot import io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Source

HOMES = fixture_homes()
HOME_ARGS = [arg for _name, case in HOMES for arg in ("--home", str(case))]

#: one secret of every kind the redaction knows, as a session would show it
SECRETS = {
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "aws-secret-key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github-token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "slack-token": "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "stripe-access-key": "sk_live_abcdefghijklmnopqrstuvwx",
    "openai-key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
    "anthropic-key": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-_abcdef",
    "google-api-key": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "huggingface-token": "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "json-web-token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private-key": "MIIEowIBAAKCAQEA7bq98jhxPRIVATEBODY",
    "secret-keyword": "hunter2hunter2",
    "basic-auth-credentials": "s3cr3tpassw0rd",
}


def _shown(kind: str, value: str) -> str:
    """How a secret appears in session text."""
    if kind == "private-key":
        return f"-----BEGIN RSA PRIVATE KEY-----\n{value}\n-----END RSA PRIVATE KEY-----"
    if kind == "aws-secret-key":
        return f"aws_secret_access_key = {value}"
    if kind == "secret-keyword":
        return f"password = '{value}'"
    if kind == "basic-auth-credentials":
        return f"git clone https://me:{value}@example.invalid/repo"
    return f"export TOKEN={value}"


def _ev(line: int) -> Any:
    return evidence("planted.jsonl", native="line", line=line)


def planted(tmp: Path) -> Path:
    """A Snapshot file whose every field holds every secret, with a sub-agent."""
    every = "\n".join(_shown(k, v) for k, v in SECRETS.items())
    src = Source(harness="planted", harness_version=None, session_id="s1", locator="s1")
    b = SnapshotBuilder(src, "planted/1")
    b.add_artifact("planted.jsonl", "application/x-ndjson", b"{}\n")
    b.session = Session(id="s1", title=f"title {SECRETS['github-token']}", model="m")
    b.add_text("user", "p:1", f"prompt\n{every}", time=None, turn=0, evidence=_ev(1))
    b.add_text("reasoning", "p:2", f"thinking {every}", time=None, turn=0, evidence=_ev(2))
    args = {"command": every, "env": {"api_key": SECRETS["openai-key"]}}
    b.add_call("p:3", "c1", "Bash", args, time=None, turn=0, evidence=_ev(3))
    kid = b.child(
        Source(harness="planted", harness_version=None, session_id="k1", locator="k"), "c1"
    )
    kid.session = Session(id="k1", parent_session_id="s1")
    kid.add_text("user", "p:k1", f"sub-agent task {every}", time=None, turn=0, evidence=_ev(4))
    kid.add_text("assistant", "p:k2", f"sub-agent done {every}", time=None, turn=0, evidence=_ev(5))
    b.add_result("p:4", "c1", False, f"output\n{every}", time=None, turn=0, evidence=_ev(6))
    b.add_text("assistant", "p:5", f"answer {every}", time=None, turn=0, evidence=_ev(7))
    b.add_call("p:6", "c2", "Read", {"path": "x"}, time=None, turn=0, evidence=_ev(8))
    path = tmp / "planted.json"
    path.write_bytes(io.dumps(b.build()))
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["dataset", *args], catch_exceptions=False)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_fixtures_of_many_harnesses_are_sources() -> None:
    assert len({name for name, _ in HOMES}) >= 8


@pytest.fixture(scope="module")
def every_format(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("formats")
    out = {}
    for fmt in ds.formats():
        result = run(*HOME_ARGS, "--format", fmt, "-o", str(base / fmt))
        assert result.exit_code == 0, result.output
        out[fmt] = base / fmt
    return out


def _manifest(folder: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
    return manifest


def test_openai_lines_validate_and_each_call_is_answered_once(
    every_format: dict[str, Path],
) -> None:
    lines = _lines(every_format["openai"] / "openai.jsonl")
    manifest = _manifest(every_format["openai"])
    ok = [e for e in manifest["sessions"] if "error" not in e]
    assert len(lines) == len(ok) > 20
    harnesses = {line["metadata"]["harness"] for line in lines}
    assert harnesses == {name for name, _ in HOMES}
    for line, entry in zip(lines, ok, strict=True):
        assert ds.validate_openai(line) == [], line["metadata"]
        assert line["metadata"]["snapshot_id"] == entry["snapshot_id"]
        assert len(line["messages"]) == entry["messages"]
    assert any(m.get("tool_calls") for line in lines for m in line["messages"])


def test_sharegpt_lines_validate(every_format: dict[str, Path]) -> None:
    lines = _lines(every_format["sharegpt"] / "sharegpt.jsonl")
    assert lines
    for line in lines:
        assert ds.validate_sharegpt(line) == []
    kinds = {t["from"] for line in lines for t in line["conversations"]}
    assert {"human", "gpt", "function_call", "observation"} <= kinds


def test_parquet_reads_in_pyarrow_and_duckdb(every_format: dict[str, Path]) -> None:
    import duckdb
    import pyarrow.parquet as pq

    path = every_format["parquet"] / "sessions.parquet"
    table = pq.read_table(path)
    openai = _lines(every_format["openai"] / "openai.jsonl")
    assert table.num_rows == len(openai)
    assert {"harness", "model", "turns", "tool_calls", "failed_calls", "truncated"} <= set(
        table.column_names
    )
    first = table.slice(0, 1).to_pylist()[0]
    assert [m["role"] for m in first["messages"]] == [m["role"] for m in openai[0]["messages"]]
    calls = sum(line["metadata"]["tool_calls"] for line in openai)
    ((got,),) = duckdb.sql(f"SELECT sum(tool_calls) FROM read_parquet('{path}')").fetchall()
    assert got == calls


def test_parquet_loads_with_hugging_face_datasets(every_format: dict[str, Path]) -> None:
    import datasets

    path = every_format["parquet"] / "sessions.parquet"
    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert len(loaded) == len(_lines(every_format["openai"] / "openai.jsonl"))


def test_document_formats_read_back_as_valid_documents(every_format: dict[str, Path]) -> None:
    from trajconv.codecs import registry

    for fmt in ds.document_formats():
        docs = sorted((every_format[fmt] / fmt).glob("*.json"))
        assert len(docs) == len(_lines(every_format["openai"] / "openai.jsonl"))
        codec = registry.get(fmt)
        for doc in docs:
            snap = codec.read(doc)  # the codec's reader validates the document
            assert snap.records


def test_planted_secrets_are_gone_from_every_format_and_counted(tmp_path: Path) -> None:
    source = planted(tmp_path)
    for fmt in ds.formats():
        out = tmp_path / fmt
        result = run(str(source), "--format", fmt, "-o", str(out))
        assert result.exit_code == 0, result.output
        manifest = _manifest(out)
        written = b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())
        for kind, value in SECRETS.items():
            assert value.encode() not in written, (fmt, kind)
        assert b"[REDACTED:" in written
        counted: dict[str, int] = {}
        for entry in manifest["sessions"]:
            for kind, n in entry["redactions"].items():
                counted[kind] = counted.get(kind, 0) + n
        assert set(SECRETS) <= set(counted), (fmt, counted)


def test_no_redact_keeps_them(tmp_path: Path) -> None:
    out = tmp_path / "raw"
    assert (
        run(str(planted(tmp_path)), "--format", "openai", "-o", str(out), "--no-redact").exit_code
        == 0
    )
    written = (out / "openai.jsonl").read_text()
    assert SECRETS["github-token"] in written
    assert _manifest(out)["redaction"] is False


def test_a_field_that_cannot_be_scanned_is_dropped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redact, "MAX_FIELD", 64)
    out = tmp_path / "bounded"
    assert run(str(planted(tmp_path)), "--format", "openai", "-o", str(out)).exit_code == 0
    line = _lines(out / "openai.jsonl")[0]
    assert line["messages"][0]["content"] == "[REDACTED:unscanned]"
    assert _manifest(out)["sessions"][0]["redactions"]["unscanned"] > 0

    def broken(text: str) -> list[tuple[str, str]]:
        raise RuntimeError("detector failed")

    monkeypatch.setattr(redact, "MAX_FIELD", 16 * 1024 * 1024)
    monkeypatch.setattr(redact, "find_secrets", broken)
    out = tmp_path / "broken"
    assert run(str(planted(tmp_path)), "--format", "openai", "-o", str(out)).exit_code == 0
    for m in _lines(out / "openai.jsonl")[0]["messages"]:
        assert m["content"] in (None, "[REDACTED:unscanned]")


def test_sub_agents_are_rows_of_their_own_linked_to_the_parent(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert run(str(planted(tmp_path)), "--format", "openai", "-o", str(out)).exit_code == 0
    parent, child = _lines(out / "openai.jsonl")
    assert parent["metadata"]["session_id"] == "s1"
    assert (child["metadata"]["session_id"], child["metadata"]["parent_session_id"]) == ("k1", "s1")
    assert child["metadata"]["parent_call_id"] == "c1"
    # what the formats have no place for is counted: reasoning, the call never answered
    left = _manifest(out)["sessions"][0]["left_out"]
    assert left == {"pending-call": 1, "reasoning": 1}
    assert ds.validate_openai(parent) == []


def test_a_damaged_snapshot_in_a_store_is_named_and_the_rest_written(tmp_path: Path) -> None:
    home = next(case for name, case in HOMES if name == "grok" and "multi-turn" in case.name)
    store = tmp_path / "store"
    assert archive(store, home=home, harness="grok").ok
    other = next(case for name, case in HOMES if name == "grok" and "tool-failures" in case.name)
    assert archive(store, home=other, harness="grok").ok
    doc = sorted((store / "snapshots").glob("*.json"))[0]
    doc.write_text(doc.read_text().replace('"text": "', '"text": "tampered ', 1))
    out = tmp_path / "o"
    result = run("--store", str(store), "--format", "openai", "-o", str(out))
    assert result.exit_code == 0, result.output
    entries = _manifest(out)["sessions"]
    assert len(entries) == 2
    assert sum("error" in e for e in entries) == 1
    assert len(_lines(out / "openai.jsonl")) == 1


def test_processes_give_the_same_bytes(tmp_path: Path) -> None:
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}"
        assert (
            run(*HOME_ARGS[:12], "--format", "openai", "-o", str(out), "--jobs", jobs).exit_code
            == 0
        )
        outs.append(out)
    for name in ("openai.jsonl", "manifest.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_a_dask_cluster_gives_the_same_bytes(tmp_path: Path) -> None:
    import distributed

    local = tmp_path / "local"
    assert run(*HOME_ARGS[:12], "--format", "sharegpt", "-o", str(local)).exit_code == 0
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        out = tmp_path / "dask"
        result = run(
            *HOME_ARGS[:12],
            "--format",
            "sharegpt",
            "-o",
            str(out),
            "--scheduler",
            cluster.scheduler_address,
        )
        assert result.exit_code == 0, result.output
    for name in ("sharegpt.jsonl", "manifest.json"):
        assert (local / name).read_bytes() == (out / name).read_bytes()


def test_refusals_and_usage(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("mine")
    source = str(planted(tmp_path))
    result = CliRunner().invoke(cli, ["dataset", source, "--format", "openai", "-o", str(taken)])
    assert result.exit_code == 3 and (taken / "x").read_text() == "mine"
    assert CliRunner().invoke(cli, ["dataset", source, "--format", "csv", "-o", "o"]).exit_code == 2
    assert CliRunner().invoke(cli, ["dataset", "--format", "openai", "-o", "o"]).exit_code == 2
    bad = CliRunner().invoke(
        cli,
        [
            "dataset",
            source,
            "--format",
            "openai",
            "-o",
            str(tmp_path / "d"),
            "--scheduler",
            "tcp://127.0.0.1:9",
        ],
    )
    assert bad.exit_code == 2 and not (tmp_path / "d").exists()


def test_the_redactor_widens_a_partial_find_to_the_whole_token() -> None:
    red = redact.Redactor()
    assert red.text("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 end") == (
        "token [REDACTED:github-token] end"
    )
    assert red.text("plain words and /usr/lib/python3.11/site-packages") == (
        "plain words and /usr/lib/python3.11/site-packages"
    )
    long_line = "x " * 40_000 + SECRETS["github-token"] + " y" * 40_000
    assert SECRETS["github-token"] not in red.text(long_line)  # found across windows
    assert (
        orjson.dumps(red.json({"password": "hunter2hunter2"}))
        == b'{"password":"[REDACTED:secret-keyword]"}'
    )


def test_convert_and_show_redact_for_sharing(tmp_path: Path) -> None:
    source = str(planted(tmp_path))
    out = tmp_path / "export"
    result = CliRunner().invoke(
        cli,
        [
            "convert",
            source,
            "--to",
            "claude",
            "-o",
            str(out),
            "--redact",
            "--allow-lossy",
            "--cwd",
            "/work/x",
        ],
    )
    assert result.exit_code == 0, result.output
    written = b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())
    assert b"[REDACTED:" in written
    for kind, value in SECRETS.items():
        assert value.encode() not in written, kind
    assert "secret-redacted" in result.output + result.stderr
    shown = CliRunner().invoke(cli, ["show", source, "--format", "markdown", "--redact"])
    assert shown.exit_code == 0, shown.output
    assert "[REDACTED:" in shown.stdout
    for kind, value in SECRETS.items():
        assert value not in shown.stdout, kind
    plain = CliRunner().invoke(cli, ["show", source, "--format", "markdown"])
    assert SECRETS["github-token"] in plain.stdout


def test_harbor_validates_every_atif_row(every_format: dict[str, Path]) -> None:
    from proof import tools_dir
    from proof.loaders import harbor
    from tests.conftest import require_loader

    python = harbor.find(tools_dir())
    require_loader(python, "harbor")
    assert python is not None
    docs = sorted((every_format["atif"] / "atif").glob("*.json"))
    assert docs
    verdicts = harbor.validate(python, docs)
    assert [v.errors for v in verdicts if not v.ok] == []
