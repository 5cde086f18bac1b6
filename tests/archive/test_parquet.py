"""``archive export --format parquet``: the tables DuckDB queries hold what the Snapshots hold."""

from __future__ import annotations

import builtins
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

import trajconv
from trajconv import parity, parquet
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.errors import RefusedError, UsageError
from trajconv.snapshot.models import Snapshot
from trajconv.store.local import Store

HARNESSES = ("grok", "copilot", "deepagents")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, Snapshot]]]:
    """A store of every grok, copilot and deepagents fixture session; some fixtures share a
    session id, so the store holds several Snapshots of a session (the export keeps the
    latest, as ``kept`` does)."""
    root = tmp_path_factory.mktemp("parquet") / "store"
    kept: dict[tuple[str, str], Snapshot] = {}
    added = 0
    with Store.open(root, create=True, write=True) as st:
        for harness in HARNESSES:
            for fx in parity.fixture_sessions(registry.get(harness)):
                snap = trajconv.read(harness, fx.path, session=fx.session)
                st.add(snap, harness=harness, session_id=snap.session.id, fingerprint="f")
                kept[(harness, snap.session.id)] = snap
                added += 1
    assert added > len(kept)  # a session with more than one Snapshot is covered
    return root, [(h, snap) for (h, _), snap in kept.items()]


def _query(out: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW records AS SELECT * FROM read_parquet('{out}/records/**/*.parquet', "
        "hive_partitioning = true)"
    )
    con.execute(
        f"CREATE VIEW sessions AS SELECT * FROM read_parquet('{out}/sessions/**/*.parquet', "
        "hive_partitioning = true)"
    )
    return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def exported(
    store: tuple[Path, list[tuple[str, Snapshot]]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("pq") / "dataset"
    run = CliRunner().invoke(
        cli, ["archive", "export", str(store[0]), str(out), "--format", "parquet"]
    )
    assert run.exit_code == 0, run.output
    assert "as Parquet" in run.output
    return out


def _month(snap: Snapshot, archived: str) -> str:
    s = snap.session
    return (s.created_at or s.updated_at or archived)[:7]


def test_failed_tool_calls_per_harness_per_month_match_the_snapshots(
    store: tuple[Path, list[tuple[str, Snapshot]]], exported: Path
) -> None:
    root, kept = store
    with Store.open(root) as st:
        archived = {(r.harness, r.session_id): r.archived_at for r in st.rows()}
    want: Counter[tuple[str, str]] = Counter()
    for harness, snap in kept:
        month = _month(snap, archived[(harness, snap.session.id)])
        want[(harness, month)] += sum(
            1 for r in snap.records if r.kind == "tool-result" and r.result.ok is False
        )
    got = _query(
        exported,
        "SELECT harness, month, count(*) FILTER (WHERE kind = 'tool-result' AND ok = false) "
        "FROM records GROUP BY ALL",
    )
    assert {(h, m): n for h, m, n in got} == {k: v for k, v in want.items()}
    assert sum(want.values()) > 0  # the fixtures do fail some calls


def test_every_record_is_a_row_with_its_content(
    store: tuple[Path, list[tuple[str, Snapshot]]], exported: Path
) -> None:
    _root, kept = store
    rows = _query(exported, "SELECT harness, session_id, count(*) FROM records GROUP BY ALL")
    assert {(h, s): n for h, s, n in rows} == {
        (h, snap.session.id): len(snap.records) for h, snap in kept
    }
    _harness, snap = next((h, s) for h, s in kept if any(r.kind == "tool-call" for r in s.records))
    call = next(r for r in snap.records if r.kind == "tool-call")
    ((name, args),) = _query(
        exported,
        f"SELECT tool_name, arguments FROM records WHERE session_id = '{snap.session.id}' "
        f"AND record_id = '{call.id}'",
    )
    assert name == call.call.name
    import json

    assert json.loads(args) == call.call.arguments
    unnamed = sum(  # results whose call is not before them have no tool name
        1
        for _, s in kept
        for i, r in enumerate(s.records)
        if r.kind == "tool-result"
        and not any(c.kind == "tool-call" and c.call.id == r.result.call_id for c in s.records[:i])
    )
    results = _query(
        exported,
        "SELECT count(*) FROM records WHERE kind = 'tool-result' AND tool_name IS NULL",
    )
    assert results == [(unnamed,)]


def test_sessions_table_holds_the_facts_and_counts(
    store: tuple[Path, list[tuple[str, Snapshot]]], exported: Path
) -> None:
    _root, kept = store
    rows = _query(
        exported,
        "SELECT harness, session_id, title, cwd, snapshot_id, records, n_tool_call, "
        "failed_tool_results FROM sessions",
    )
    got = {(r[0], r[1]): r[2:] for r in rows}
    for harness, snap in kept:
        title, cwd, sid, count, calls, failed = got[(harness, snap.session.id)]
        assert (title, cwd, sid, count) == (
            snap.session.title,
            snap.session.cwd,
            snap.id,
            len(snap.records),
        )
        assert calls == sum(r.kind == "tool-call" for r in snap.records)
        assert failed == sum(r.kind == "tool-result" and r.result.ok is False for r in snap.records)


def test_partitions_are_harness_and_month(exported: Path) -> None:
    parts = sorted(
        p.parent.relative_to(exported / "records").as_posix()
        for p in exported.rglob("records/**/*.parquet")
    )
    assert parts and all(p.split("/")[0].startswith("harness=") for p in parts)
    assert all(p.split("/")[1].startswith("month=") and len(p.split("/")[1]) == 13 for p in parts)
    assert {p.split("/")[0] for p in parts} == {f"harness={h}" for h in HARNESSES}


def test_small_row_groups_keep_every_row(
    store: tuple[Path, list[tuple[str, Snapshot]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parquet, "ROW_GROUP", 3)
    monkeypatch.setattr(parquet, "HELD_BYTES", 100)
    with Store.open(store[0]) as st:
        done = parquet.export_parquet(st, tmp_path / "out")
    assert done.records == sum(len(s.records) for _, s in store[1])
    assert _query(tmp_path / "out", "SELECT count(*) FROM records") == [(done.records,)]


def test_an_existing_folder_is_not_replaced_and_a_failure_leaves_nothing(
    store: tuple[Path, list[tuple[str, Snapshot]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("x")
    with Store.open(store[0]) as st, pytest.raises(RefusedError):
        parquet.export_parquet(st, out)
    assert (out / "keep").read_text() == "x"

    def broken(self: Any, snapshot_id: str) -> Snapshot:
        raise OSError("disk gone")

    monkeypatch.setattr(Store, "load", broken)
    with Store.open(store[0]) as st, pytest.raises(OSError):
        parquet.export_parquet(st, tmp_path / "fresh")
    assert list(tmp_path.iterdir()) == [out]


def test_without_pyarrow_the_error_says_what_to_install(
    store: tuple[Path, list[tuple[str, Snapshot]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = builtins.__import__

    def no_arrow(name: str, *args: Any, **kw: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_arrow)
    with Store.open(store[0]) as st, pytest.raises(UsageError, match=r"trajconv\[parquet\]"):
        parquet.export_parquet(st, tmp_path / "out")
