"""``trajconv search``: every record of every session, through one incremental FTS5 index.

Homes are the project's fixture folders (a fixture case is a native home of its harness) or
copies of them; a store is made with ``trajconv archive``. Every registered codec with
fixtures is searched, without naming any.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.helpers import FIXTURES, fixture_homes
from trajconv import search as engine
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.harvest import archive
from trajconv.snapshot.spool import record_dicts

GROK = FIXTURES / "grok"


@pytest.fixture(autouse=True)
def _index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    index = tmp_path / "cache" / "search.sqlite"
    monkeypatch.setenv("TRAJCONV_SEARCH_INDEX", str(index))
    return index


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["search", *args], catch_exceptions=False)


def _word_of(snapshot: Any) -> str | None:
    """A distinctive word of a session's records (the first that has one)."""
    for r in record_dicts(snapshot.records):
        words = [w.strip(".,:;!?()[]{}\"'`") for w in engine.record_text(r).split()]
        words = [w for w in words if len(w) >= 5 and w.isascii()]
        if words:
            return max(words, key=len)
    return None


CASES = fixture_homes()


def test_every_harness_with_fixtures_is_searched() -> None:
    assert len({name for name, _ in CASES}) >= 8


@pytest.mark.parametrize(("harness", "case"), CASES, ids=[f"{h}-{c.name}" for h, c in CASES])
def test_a_word_of_each_session_finds_it(harness: str, case: Path) -> None:
    codec = registry.get(harness)
    found = (
        (ref, _word_of(codec.read(ref.path, session=ref.session_id)))
        for ref in codec.discover(case)
    )
    ref, word = next(((r, w) for r, w in found if w is not None), (None, None))
    assert ref is not None and word is not None, f"no session of {case} has text to search"
    result = run("--home", str(case), "--harness", harness, "--json", "--limit", "500", word)
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    ours = [h for h in hits if h["session_id"] == ref.session_id and h["harness"] == harness]
    assert ours, hits
    hit = ours[0]
    assert set(hit) >= {"harness", "session_id", "title", "time", "kind", "seq", "snippet", "path"}
    start, end = hit["marks"][0]
    assert hit["snippet"][start:end].casefold() == word.casefold()
    assert hit["open"][:2] == ["trajconv", "show"]


def _grok_home(tmp: Path) -> Path:
    home = tmp / ".grok"
    for case in ("multi-turn", "rewind"):
        shutil.copytree(GROK / case, home, dirs_exist_ok=True)
    return home


def test_the_second_search_reads_nothing_and_a_change_is_found_next_time(tmp_path: Path) -> None:
    home = _grok_home(tmp_path)
    docs, places, _ = engine.home_docs(["grok"], home)
    assert len(docs) == 2
    with engine.Index.open() as idx:
        first, scope = idx.refresh(docs, places)
        assert (first.indexed, first.unchanged) == (2, 0)
        again, scope2 = idx.refresh(*engine.home_docs(["grok"], home)[:2])
        assert (again.indexed, again.unchanged, again.records) == (0, 2, 0)
        assert sorted(scope) == sorted(scope2)
        assert not idx.query("zqxplorative", scope2)

    # a word written into one journal: that session alone is read again, and found
    journal = next(p for p in home.rglob("*.jsonl") if "files are here" in p.read_text())
    journal.write_text(journal.read_text().replace("files are here", "zqxplorative are here"))
    result = run("--home", str(home), "--harness", "grok", "--json", "zqxplorative")
    assert result.exit_code == 0, result.output
    assert "indexed 1 sessions" in result.stderr
    assert "1 unchanged" in result.stderr
    hits = json.loads(result.stdout)
    assert {h["path"] for h in hits} == {str(journal.parent)} or all(
        str(journal.parent) in h["path"] for h in hits
    )

    # a session removed from the home is forgotten
    shutil.rmtree(journal.parent)
    result = run("--home", str(home), "--harness", "grok", "zqxplorative")
    assert result.exit_code == 1
    assert result.stdout == ""


HOSTILE = [
    '"',
    '"unclosed',
    "*",
    "NEAR(a b",
    "AND",
    "OR NOT",
    "-",
    "-x",
    "col:x",
    "text:demo",
    "^demo",
    "a" * 5000,
    "é" * 3000,
    "\x1b]0;owned\x07",
    "'; DROP TABLE sessions; --",
    "{demo}",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_end_with_0_or_1_and_no_traceback(query: str, tmp_path: Path) -> None:
    home = _grok_home(tmp_path)
    result = CliRunner().invoke(cli, ["search", "--home", str(home), "--", query])
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if result.exit_code == 1:
        assert result.stdout == ""
    assert "\x1b]" not in result.stdout


def test_queries_are_text_quotes_and_operators_match_literally(tmp_path: Path) -> None:
    home = tmp_path / ".grok"
    shutil.copytree(GROK / "multi-turn", home)
    journal = next(home.rglob("*.jsonl"))
    text = journal.read_text()
    assert "files are here" in text
    planted = 'cx1-t2 ENOENT test_upload.py \\"quoted AND\\" NEAR(x) col:x'
    journal.write_text(text.replace("files are here", planted, 1))
    for query in ("cx1-t2", "enoent", "test_upload.py", "upload", '"quoted', "AND", "NEAR(x)"):
        result = run("--home", str(home), "--json", query)
        assert result.exit_code == 0, (query, result.output)
        assert any(query.casefold() in h["snippet"].casefold() for h in json.loads(result.stdout))
    # every word must be there, in any order; a word that is not there finds nothing
    assert run("--home", str(home), "ENOENT", "cx1-t2").exit_code == 0
    assert run("--home", str(home), "ENOENT", "cx1-t3").exit_code == 1
    # --syntax hands the engine its own syntax, and a query it refuses is a usage error
    assert run("--home", str(home), "--syntax", "enoent OR zzzzzz").exit_code == 0
    assert run("--home", str(home), "--syntax", "NEAR(").exit_code == 2


def test_kind_and_since_narrow_the_hits(tmp_path: Path) -> None:
    home = _grok_home(tmp_path)
    everything = json.loads(run("--home", str(home), "--json", "--limit", "500", "app.py").stdout)
    kinds = {h["kind"] for h in everything}
    assert len(kinds) > 1
    for kind in kinds:
        only = json.loads(
            run("--home", str(home), "--json", "--limit", "500", "--kind", kind, "app.py").stdout
        )
        assert only and {h["kind"] for h in only} == {kind}
    assert run("--home", str(home), "--since", "2999-01-01", "app.py").exit_code == 1
    assert run("--home", str(home), "--since", "tomorrow", "app.py").exit_code == 2


def test_a_session_that_cannot_be_read_is_skipped_and_named_and_the_rest_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _grok_home(tmp_path)
    damaged, kept = sorted(p.parent for p in home.rglob("updates.jsonl"))
    journal = damaged / "updates.jsonl"
    journal.write_text(journal.read_text() + '{"pad": "' + "x" * 4096 + '"}\n')
    (kept / "updates.jsonl").write_text(
        (kept / "updates.jsonl").read_text().replace("question", "files are here")
    )
    monkeypatch.setenv("TRAJCONV_MAX_LINE_BYTES", "2048")  # the padded line breaks the limit
    result = run("--home", str(home), "--json", "files are here")
    assert f"skipped grok {damaged.name}" in result.stderr
    assert result.exit_code == 0
    assert {h["session_id"] for h in json.loads(result.stdout)} == {kept.name}


def test_a_damaged_index_is_rebuilt(tmp_path: Path, _index: Path) -> None:
    home = _grok_home(tmp_path)
    assert run("--home", str(home), "app.py").exit_code == 0
    _index.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{_index}{suffix}").unlink(missing_ok=True)
    result = run("--home", str(home), "app.py")
    assert result.exit_code == 0
    assert "rebuilt" in result.stderr
    with sqlite3.connect(_index) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2


def test_a_store_is_searched_and_a_tampered_snapshot_is_named(tmp_path: Path) -> None:
    home = _grok_home(tmp_path)
    store = tmp_path / "store"
    assert archive(store, harness="grok", home=home).ok
    result = run("--store", str(store), "--json", "app.py")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert {h["store"] for h in hits} == {str(store)}
    assert hits[0]["open"] == ["trajconv", "show", str(store), "--session", hits[0]["session_id"]]

    # a tampered Snapshot in another store is skipped and named, never indexed
    other = tmp_path / "other"
    assert archive(other, harness="grok", home=home).ok
    doc = next((other / "snapshots").glob("*.json"))
    doc.write_text(doc.read_text().replace("demo", "dxmo", 1))
    result = run("--store", str(other), "--json", "dxmo")
    assert "skipped grok" in result.stderr
    assert result.exit_code == 1


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run("--home", str(tmp_path / "nowhere"), "demo").exit_code == 2
    assert run("--home", str(tmp_path), "   ").exit_code == 2
    assert CliRunner().invoke(cli, ["search"]).exit_code == 2
    assert CliRunner().invoke(cli, ["search", "--kind", "nothing", "x"]).exit_code == 2


def test_terminal_output_is_inert_and_names_the_command(tmp_path: Path) -> None:
    home = tmp_path / ".grok"
    shutil.copytree(GROK / "multi-turn", home)
    journal = next(home.rglob("*.jsonl"))
    hostile = "files \\u001b]0;owned\\u0007"
    journal.write_text(journal.read_text().replace("files are here", hostile, 1))
    result = run("--home", str(home), "owned")
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "trajconv show --from grok" in result.stdout


def test_snippets_mark_every_match() -> None:
    snippet, marks = engine.make_snippet("x" * 100 + " Upload then upload again", ["upload"])
    assert snippet.startswith("…")
    assert [snippet[s:e] for s, e in marks] == ["Upload", "upload"]


def test_discover_grep_finds_sessions_by_what_they_hold(tmp_path: Path) -> None:
    home = _grok_home(tmp_path)

    def listed(*args: str) -> list[str]:
        result = CliRunner().invoke(cli, ["discover", "--home", str(home), "--json", *args])
        assert result.exit_code == 0, result.output
        return [s["session_id"] for s in json.loads(result.stdout)["sessions"]]

    everything = listed()
    assert len(everything) == 2
    # "second question" is in a record of one session, not in either title
    (holder,) = listed("--grep", "second question")
    assert holder in everything
    assert listed("--grep", "zqxnothing") == []
    # a title still matches, as before
    assert len(listed("--grep", "rewind demo")) == 1
    assert CliRunner().invoke(cli, ["discover", "--grep", " "]).exit_code == 2


def test_a_sub_agents_records_are_found_and_named_as_its_own() -> None:
    from trajconv.snapshot.builder import SnapshotBuilder, evidence
    from trajconv.snapshot.models import Session, Source

    def ev(line: int) -> Any:
        return evidence("main.jsonl", native="line", line=line)

    b = SnapshotBuilder(
        Source(harness="t", harness_version=None, session_id="s", locator="s"), "t/1"
    )
    b.add_artifact("main.jsonl", "application/x-ndjson", b"{}\n")
    b.add_text("user", "t:1", "look around", time=None, turn=0, evidence=ev(1))
    b.add_call("t:2", "c1", "Agent", {"prompt": "explore"}, time=None, turn=0, evidence=ev(2))
    kid = b.child(Source(harness="t", harness_version=None, session_id="k", locator="k"), "c1")
    kid.session = Session(id="k", parent_session_id="s")
    kid.add_text("assistant", "t:k1", "the zqxchild found it", time=None, turn=0, evidence=ev(3))
    b.add_result("t:3", "c1", True, "done", time=None, turn=0, evidence=ev(4))
    snap = b.build()
    doc = engine.Doc("p\0s", "fp1", "t", "s", None, None, None, "/x", None, lambda: snap)
    with engine.Index.open() as idx:
        _done, scope = idx.refresh([doc], ["p"])
        (hit,) = idx.query("zqxchild", scope)
    assert (hit.session_id, hit.child, hit.kind, hit.seq) == ("s", "k", "assistant", 0)


def test_redact_keeps_no_secret_in_clear_in_its_index(tmp_path: Path, _index: Path) -> None:
    home = tmp_path / ".grok"
    shutil.copytree(GROK / "multi-turn", home)
    journal = next(home.rglob("*.jsonl"))
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    journal.write_text(journal.read_text().replace("files are here", f"files {token}", 1))
    result = run("--home", str(home), "--redact", "--json", "REDACTED:github-token")
    assert result.exit_code == 0, result.output
    assert token not in result.stdout
    assert run("--home", str(home), "--redact", token).exit_code == 1
    redacted_index = _index.with_name("search-redacted.sqlite")
    assert redacted_index.is_file()
    stored = b"".join(
        Path(f"{redacted_index}{s}").read_bytes()
        for s in ("", "-wal")
        if Path(f"{redacted_index}{s}").exists()
    )
    assert token.encode() not in stored
    # without --redact the plain index (another file) finds it as it is
    assert run("--home", str(home), token).exit_code == 0


def test_an_index_damaged_inside_is_rebuilt_on_the_way(tmp_path: Path, _index: Path) -> None:
    home = _grok_home(tmp_path)
    assert run("--home", str(home), "app.py").exit_code == 0
    with sqlite3.connect(_index) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(_index.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the first one garbage
    _index.write_bytes(bytes(data))
    result = run("--home", str(home), "app.py")
    assert result.exit_code == 0, result.output
    assert "rebuilt" in result.stderr


def _many_docs(count: int, fail_at: int | None = None) -> list[engine.Doc]:
    """``count`` docs of one place holding the same fixture session (``fail_at``: that
    one's reading is interrupted)."""
    codec = registry.get("grok")
    (ref,) = codec.discover(GROK / "multi-turn")
    snap = codec.read(ref.path, session=ref.session_id)

    def load(i: int) -> Any:
        if i == fail_at:
            raise KeyboardInterrupt
        return snap

    return [
        engine.Doc(
            key=f"{engine.place('home', 'bench')}\0{i}",
            fingerprint="1",
            harness="grok",
            session_id=f"s{i}",
            title=None,
            cwd=None,
            updated_at=None,
            path=f"/bench/{i}",
            store=None,
            load=lambda i=i: load(i),
        )
        for i in range(count)
    ]


def _statements(idx: engine.Index) -> list[str]:
    said: list[str] = []
    idx.conn.set_trace_callback(said.append)
    return said


def test_a_cold_build_commits_in_batches_and_its_statements_grow_with_the_sessions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(engine, "COMMIT_EVERY", 4)
    counts = {}
    for n in (0, 5, 10):
        with engine.Index.open(tmp_path / f"i{n}.sqlite") as idx:
            said = _statements(idx)
            done, _scope = idx.refresh(_many_docs(n), [engine.place("home", "bench")])
            assert done.indexed == n
            assert said.count("COMMIT") == -(-n // 4)  # not one commit per session
            # one look at what the index holds, whatever the number of sessions
            assert sum(s.startswith("SELECT") for s in said) == 1
            # the statements trajconv issues (FTS5's own, "-- ...", aside)
            ours = [s for s in said if not s.startswith("--")]
            counts[n] = sum(s not in ("BEGIN DEFERRED", "COMMIT") for s in ours)
    assert counts[10] - counts[5] == counts[5] - counts[0]  # the same work per session


def test_an_interrupted_build_keeps_what_it_committed_and_reads_the_rest_next_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(engine, "COMMIT_EVERY", 2)
    places = [engine.place("home", "bench")]
    with engine.Index.open(tmp_path / "i.sqlite") as idx, pytest.raises(KeyboardInterrupt):
        idx.refresh(_many_docs(6, fail_at=3), places)
    with engine.Index.open(tmp_path / "i.sqlite") as idx:
        done, scope = idx.refresh(_many_docs(6), places)
        # sessions 0 and 1 were committed; 2 was written but not committed: read again
        assert (done.indexed, done.unchanged, done.removed) == (4, 2, 0)
        hits = idx.query("README", scope, limit=None)
        assert {h.session_id for h in hits} == {f"s{i}" for i in range(6)}


def test_show_grep_shows_the_newest_session_discover_grep_lists(tmp_path: Path) -> None:
    home = _grok_home(tmp_path)

    def listed(text: str) -> list[str]:
        result = CliRunner().invoke(
            cli, ["discover", "--home", str(home), "--json", "--grep", text]
        )
        assert result.exit_code == 0, result.output
        return [s["session_id"] for s in json.loads(result.stdout)["sessions"]]

    def shown(*args: str) -> Result:
        return CliRunner().invoke(cli, ["show", str(home), "--format", "markdown", *args])

    for text in ("second question", "README", "rewind demo", "files"):
        ids = listed(text)
        assert ids, text
        result = shown("--grep", text)
        assert result.exit_code == 0, result.output
        assert ids[0] in result.stdout
        assert all(other not in result.stdout for other in ids[1:])
        assert f"# --grep {text!r}: grok {ids[0]}" in result.stderr
    # the records that hold it are named; a session found by its title alone says so
    result = shown("--grep", "second question")
    assert "# --grep: 1 records hold 'second question': Turn " in result.stderr
    assert "no record holds 'rewind demo' (its title does)" in shown("--grep", "rewind demo").stderr
    # none: a usage error, as an unknown session is, with nothing on stdout
    result = shown("--grep", "zqxnothing")
    assert result.exit_code == 2 and result.stdout == ""
    assert "no session in" in result.stderr
    for args in (
        ["--grep", " "],
        ["--grep", "files", "--latest"],
        ["--grep", "x", "--session", "y"],
    ):
        assert shown(*args).exit_code == 2
    not_a_home = next(home.rglob("updates.jsonl"))
    assert CliRunner().invoke(cli, ["show", str(not_a_home), "--grep", "files"]).exit_code == 2
