"""Issue 34: hostile input, round three. Each test failed on the code before its fix;
``python -m tests.robustness.run`` lists them with those of issue 25."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import FIXTURES
from tests.robustness.test_hostile import GROK, _rehash, _snapshot_doc, hostile
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.errors import FormatError

INJECTED = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"


def _write_doc(doc: dict[str, Any], path: Path) -> Path:
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return path


# -- 1. the HTML viewer ------------------------------------------------------------------


@hostile(
    "a Snapshot whose source.harness is markup (<img onerror>, <script>): refused by the "
    "schema (load, verify); a page made from such a Snapshot anyway shows it as text"
)
def test_markup_harness_is_refused_and_escaped(tmp_path: Path) -> None:
    import trajconv
    from trajconv.snapshot import io
    from trajconv.views import html

    doc = _snapshot_doc()
    doc["source"]["harness"] = INJECTED
    _rehash(doc)
    file = _write_doc(doc, tmp_path / "markup.json")
    with pytest.raises(FormatError, match="source/harness"):
        io.load(file)
    assert CliRunner().invoke(cli, ["verify", str(file)]).exit_code == 1
    shown = CliRunner().invoke(cli, ["show", "--format", "html", str(file)])
    assert shown.exit_code == 1 and "<!doctype" not in shown.output
    snap = trajconv.read("grok", GROK)
    forged = snap.model_copy(
        update={"source": snap.source.model_copy(update={"harness": INJECTED})}
    )
    page = html.render(forged)
    assert INJECTED not in page and "<img" not in page


@hostile(
    "markup that escaped into the HTML page anyway (an inline <script>, an onerror "
    "handler): does not run in Chromium, the policy allows only the page's own two "
    "scripts by sha256 (was script-src 'unsafe-inline')"
)
def test_injected_script_does_not_run_in_the_browser(tmp_path: Path) -> None:
    import trajconv
    from proof import tools_dir
    from proof.loaders import chromium
    from tests.conftest import require_loader
    from trajconv.views import html

    policy = html.csp()
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    page = html.render(trajconv.read("grok", GROK))
    assert page.count("<script>") == 2  # the page script and the call that starts it
    page = page.replace("<main id=timeline", INJECTED + "<main id=timeline", 1)
    path = tmp_path / "injected.html"
    path.write_text(page, "utf-8")
    exe = chromium.find(tools_dir())
    require_loader(exe, "chromium")
    assert exe is not None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = chromium.launch(pw, exe)
        try:
            tab = browser.new_page()
            blocked: list[str] = []
            tab.on("console", lambda m: m.type == "error" and blocked.append(m.text))
            tab.goto(path.resolve().as_uri())
            tab.wait_for_selector("body[data-ready][data-loaded]")  # its own script ran
            assert tab.title() != "pwned"
            assert tab.evaluate("document.querySelectorAll('details.rec').length") > 0
        finally:
            browser.close()
    assert any("Content Security Policy" in m for m in blocked), blocked


# -- 7. impossible times -----------------------------------------------------------------

IMPOSSIBLE = ["2026-13-45T25:61:61.000Z", "2026-02-30T12:00:00.000Z", "2100-02-29T00:00:00.000Z"]


@pytest.mark.parametrize("when", IMPOSSIBLE)
@hostile(
    "a Snapshot (hashes made again) with a record time of 2026-13-45T25:61:61, 2026-02-30 "
    "or 2100-02-29: refused by the schema (load, verify) and by every writer, no traceback "
    "(verified ok and crashed 8 of 10 writers)"
)
def test_impossible_times_are_refused(tmp_path: Path, when: str) -> None:
    from trajconv.snapshot import io

    doc = _snapshot_doc()
    doc["records"][0]["time"] = when
    _rehash(doc)
    file = _write_doc(doc, tmp_path / "time.json")
    with pytest.raises(FormatError, match=r"records/0/time"):
        io.load(file)
    runner = CliRunner()
    result = runner.invoke(cli, ["verify", str(file)])
    assert result.exit_code == 1, result.output
    for codec in registry.all_codecs():
        if not codec.can_write:
            continue
        out = tmp_path / f"out-{codec.name}"
        result = runner.invoke(cli, ["write", "--to", codec.name, str(file), "-o", str(out)])
        assert result.exit_code == 1, (codec.name, result.output)
        assert isinstance(result.exception, SystemExit), (codec.name, result.exception)
        assert not out.exists()


def test_time_pattern_is_the_calendar() -> None:
    """The schema's pattern accepts exactly what ``datetime`` parses (every day of
    leap and common years, centuries included)."""
    import re
    from datetime import datetime, timedelta

    from trajconv.snapshot.models import TIME_PATTERN

    pattern = re.compile(TIME_PATTERN)
    for year in (1, 4, 100, 400, 1900, 2000, 2024, 2026, 2100, 9996, 9999):
        for month in range(1, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}T23:59:59.999Z"
                try:
                    datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
                    real = True
                except ValueError:
                    real = False
                assert bool(pattern.fullmatch(text)) == real, text
    moment = datetime(2026, 1, 1)
    for _ in range(0, 366 * 24, 7):
        moment += timedelta(minutes=61, seconds=7)
        assert pattern.fullmatch(moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    for bad in ("2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z", "0000-01-01T00:00:00.000Z"):
        assert not pattern.fullmatch(bad)


# -- 3. reader crashes -------------------------------------------------------------------


def _edit_lines(path: Path, edit: Callable[[dict[str, Any]], bool]) -> int:
    """Apply ``edit`` to every JSON line of ``path``; how many lines it changed."""
    lines = path.read_bytes().split(b"\n")
    changed = 0
    for i, line in enumerate(lines):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and edit(obj):
            lines[i] = json.dumps(obj).encode()
            changed += 1
    path.write_bytes(b"\n".join(lines))
    return changed


def _read_ok(harness: str, path: Path) -> Any:
    """Read ``path``: a Snapshot that validates and verifies (no traceback)."""
    import trajconv
    from trajconv.snapshot import io

    snap = trajconv.read(harness, path)
    assert io.verify(io.loads(io.dumps(snap))).ok
    return snap


CODEX_EDITS: dict[str, Callable[[dict[str, Any]], bool]] = {}


def _codex_edit(name: str) -> Callable[[Callable[[dict[str, Any]], bool]], Any]:
    def mark(func: Callable[[dict[str, Any]], bool]) -> Any:
        CODEX_EDITS[name] = func
        return func

    return mark


@_codex_edit("event payload.type a list")
def _event_type_list(obj: dict[str, Any]) -> bool:
    if obj.get("type") != "event_msg":
        return False
    obj["payload"]["type"] = ["token_count"]
    return True


@_codex_edit("event payload.type an object")
def _event_type_object(obj: dict[str, Any]) -> bool:
    if obj.get("type") != "event_msg":
        return False
    obj["payload"]["type"] = {"task_complete": 1}
    return True


@_codex_edit("response payload.type a list")
def _item_payload_type(obj: dict[str, Any]) -> bool:
    if obj.get("type") != "response_item":
        return False
    obj["payload"]["type"] = ["message"]
    return True


@_codex_edit("item_completed item.type a list and an object")
def _item_type(obj: dict[str, Any]) -> bool:
    p = obj.get("payload")
    if obj.get("type") != "event_msg" or p.get("type") != "item_completed":
        return False
    p["item"]["type"] = ["AgentMessage"] if len(json.dumps(p)) % 2 else {"a": ["b"]}
    return True


@_codex_edit("content_item_kinds holding lists and objects")
def _content_kinds(obj: dict[str, Any]) -> bool:
    p = obj.get("payload")
    meta = p.get("internal_chat_message_metadata_passthrough") if isinstance(p, dict) else None
    if not isinstance(meta, dict) or "content_item_kinds" not in meta:
        return False
    meta["content_item_kinds"] = [["user.text"], {"user": "text"}, "user.text"]
    return True


@pytest.mark.parametrize("edit", sorted(CODEX_EDITS))
@hostile(
    "Codex lines whose payload.type, item.type or content_item_kinds hold a list or an "
    "object: a Snapshot with the line counted as an unknown kind (was TypeError: "
    "unhashable type)"
)
def test_codex_kinds_that_are_no_names(tmp_path: Path, edit: str) -> None:
    import shutil

    src = FIXTURES / "codex" / "shell-patch"
    home = tmp_path / "home"
    shutil.copytree(src, home)
    [rollout] = home.rglob("rollout-*.jsonl")
    assert _edit_lines(rollout, CODEX_EDITS[edit]) > 0
    snap = _read_ok("codex", rollout)
    assert snap.records or snap.diagnostics


@pytest.mark.parametrize("kind", [7, [1, "x"], {"a": 1}, 1.5])
@hostile(
    "a Claude attachment whose type is a number, a list or an object (rendered to the "
    "model): a Snapshot counting it by the value's repr (was TypeError inside diagnostics)"
)
def test_claude_attachment_type_that_is_no_name(tmp_path: Path, kind: Any) -> None:
    import shutil

    src = FIXTURES / "claude" / "recorded-resume"
    home = tmp_path / "home"
    shutil.copytree(src, home)
    [journal] = [p for p in (home / ".claude" / "projects").glob("*/*.jsonl")]

    def edit(obj: dict[str, Any]) -> bool:
        if obj.get("type") != "attachment" or not isinstance(obj.get("attachment"), dict):
            return False
        obj["attachment"]["type"] = kind
        return True

    assert _edit_lines(journal, edit) > 0
    snap = _read_ok("claude", journal)
    [dropped] = [d for d in snap.diagnostics if d.code == "lifecycle-dropped"]
    assert any(repr(kind)[:40] in s for s in dropped.samples), dropped.samples


@hostile(
    "an OpenCode session row and message rows with time_created=99999999999999999: "
    "discover lists every session, show prints it (no created time), archive stores every "
    "OpenCode session of the home (discover and show crashed; archive skipped them all)"
)
def test_opencode_time_past_every_calendar(tmp_path: Path) -> None:
    import shutil
    import sqlite3

    from trajconv.harvest import archive

    src = FIXTURES / "opencode" / "recorded-subagent"
    home = tmp_path / "home"
    shutil.copytree(src, home)
    [db] = home.rglob("opencode.db")
    con = sqlite3.connect(db)
    sessions = [sid for (sid,) in con.execute("select id from session")]
    con.execute("update session set time_created = 99999999999999999")
    con.execute("update message set time_created = 99999999999999999")
    con.execute("update message set data = json_set(data, '$.time.created', 99999999999999999)")
    con.commit()
    con.close()
    codec = registry.get("opencode")
    refs = codec.discover(db.parent)
    assert sorted(r.session_id for r in refs) == sorted(sessions)
    assert all(r.created_at is None for r in refs)
    result = CliRunner().invoke(
        cli, ["discover", "--harness", "opencode", "--home", str(db.parent)]
    )
    assert result.exit_code == 0, result.output
    root = next(r for r in refs if r.session_id == sorted(sessions)[0])
    shown = CliRunner().invoke(
        cli, ["show", "--from", "opencode", str(db), "--session", root.session_id]
    )
    assert shown.exit_code == 0, shown.output
    summary = archive(tmp_path / "store", harness="opencode", home=db.parent)
    assert sorted(o.status for o in summary.outcomes) == ["first"] * len(summary.outcomes)
    assert len(summary.outcomes) >= 1


# -- 4. the JSONL secret stripper --------------------------------------------------------


@hostile(
    "a Copilot journal whose session.start spells apiKey with 20 spaces or a \\r before "
    "its colon (legal JSON): stripped with secret-dropped, absent from the Snapshot and "
    "the export (was kept: the stripper looked 15 bytes past the name for a colon)"
)
def test_secret_name_with_json_whitespace_is_dropped(tmp_path: Path) -> None:
    import shutil

    import trajconv
    from trajconv.snapshot import io

    src = next((FIXTURES / "copilot" / "multi-turn").rglob("events.jsonl")).parent
    for n, gap in enumerate([b" " * 20, b"\r", b" \t\r" * 30]):
        folder = tmp_path / f"s{n}" / src.name
        shutil.copytree(src, folder)
        journal = folder / "events.jsonl"
        first, rest = journal.read_bytes().split(b"\n", 1)
        assert first.endswith(b"}")
        planted = first[:-1] + b',"apiKey"' + gap + b':"' + PLANTED + b'"}'
        assert json.loads(planted)["apiKey"] == PLANTED.decode()
        journal.write_bytes(planted + b"\n" + rest)
        snap = trajconv.read("copilot", folder)
        assert snap.diagnostic_count("secret-dropped") == 1
        assert PLANTED not in io.dumps(snap)
        out = tmp_path / f"export{n}"
        trajconv.write(snap, "grok", out)
        assert not [p for p in out.rglob("*") if p.is_file() and PLANTED in p.read_bytes()]


PLANTED = b"sk-hostile-three-0123456789"


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    before=st.text(" \t\r", max_size=40),
    after=st.text(" \t\r", max_size=40),
    name=st.sampled_from(["apiKey", "authToken", "password", "x_token", "Authorization"]),
    pad=st.integers(0, 300),
)
def test_stripper_sees_every_whitespace_spelling(
    before: str, after: str, name: str, pad: int
) -> None:
    from trajconv.snapshot.secrets import strip_jsonl_bytes

    line = f'{{"text":"{"k" * pad}","{name}"{before}:{after}"{PLANTED.decode()}","n":1}}'
    assert json.loads(line)[name] == PLANTED.decode()
    data = b'{"a":1}\n' + line.encode() + b"\n{}\n"
    clean, dropped = strip_jsonl_bytes(data)
    assert PLANTED not in clean
    assert dropped == [f"line 2: $.{name}"]
    assert clean.count(b"\n") == 3


# -- 6. terminal injection ---------------------------------------------------------------

OSC_TITLE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"


@hostile(
    "an OpenCode session titled with OSC 0, CSI clear-screen, a C1 CSI and a bidi "
    "override, in a folder named with ESC: discover (text and --json) and the CLI's "
    "other lines show each control as \\xNN / a JSON escape (OSC 0 reached the terminal)"
)
def test_discover_neutralises_control_sequences(tmp_path: Path) -> None:
    import shutil
    import sqlite3

    src = FIXTURES / "opencode" / "recorded-tools"
    home = tmp_path / "home"
    shutil.copytree(src, home)
    [db] = home.rglob("opencode.db")
    con = sqlite3.connect(db)
    con.execute("update session set title = ?, directory = ?", (OSC_TITLE, "/w/\x1b[8m"))
    con.commit()
    con.close()
    runner = CliRunner()
    text = runner.invoke(cli, ["discover", "--harness", "opencode", "--home", str(db.parent)])
    assert text.exit_code == 0, text.output
    assert "pwned" in text.output
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in text.output
    assert "\\x1b]0;pwned\\x07" in text.output
    listed = runner.invoke(
        cli, ["discover", "--harness", "opencode", "--home", str(db.parent), "--json"]
    )
    assert listed.exit_code == 0, listed.output
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in listed.output
    [row] = json.loads(listed.output)["sessions"]
    assert row["title"] == OSC_TITLE  # the same data, escaped as JSON
    assert row["cwd"] == "/w/\x1b[8m"


# -- 8. symlinked files beside a session -------------------------------------------------

CREDENTIALS = b'{"type":"user","uuid":"u","aws_access":"AKIA-HOSTILE-THREE-0000"}\n'


@hostile(
    "a Claude subagents/agent-*.jsonl and its .meta.json that are symlinks to a "
    "credentials file outside the home (and a symlinked subagents folder): not read, named "
    "by symlink-skipped, absent from the Snapshot and the store (were copied into both)"
)
def test_claude_symlinked_subagent_files_are_skipped(tmp_path: Path) -> None:
    import shutil

    import trajconv
    from trajconv.harvest import archive
    from trajconv.snapshot import io

    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_bytes(CREDENTIALS)
    for how in ("files", "folder"):
        home = tmp_path / how
        shutil.copytree(FIXTURES / "claude" / "recorded-subagent", home)
        [transcript] = (home / ".claude" / "projects").glob("*/*.jsonl")
        folder = transcript.parent / transcript.stem / "subagents"
        if how == "files":
            for sub in sorted(folder.iterdir()):
                sub.unlink()
                sub.symlink_to(secret)
        else:
            shutil.rmtree(folder)
            (secret.parent / "subagents").mkdir()
            (secret.parent / "subagents" / "agent-a.jsonl").symlink_to(secret)
            folder.symlink_to(secret.parent / "subagents", target_is_directory=True)
        snap = trajconv.read("claude", transcript)
        assert b"AKIA-HOSTILE" not in io.dumps(snap)
        [skipped] = [d for d in snap.diagnostics if d.code == "symlink-skipped"]
        # the link is named; the sidecar of a skipped transcript is not looked at
        assert skipped.count == 1 and all("subagents" in s for s in skipped.samples)
        store = tmp_path / f"store-{how}"
        summary = archive(store, harness="claude", home=home)
        assert [o.status for o in summary.outcomes] == ["first"]
        assert not [
            p for p in store.rglob("*") if p.is_file() and b"AKIA-HOSTILE" in p.read_bytes()
        ]


@hostile(
    "an OpenCode legacy storage/ part file that is a symlink to a credentials file: not "
    "read, named by symlink-skipped (was read into the Snapshot)"
)
def test_opencode_symlinked_storage_file_is_skipped(tmp_path: Path) -> None:
    import shutil

    import trajconv
    from trajconv.snapshot import io

    secret = tmp_path / "credentials.json"
    secret.write_bytes(b'{"id":"prt_x","type":"text","text":"AKIA-HOSTILE-THREE-0000"}')
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "opencode" / "legacy-json", home)
    [ref, *_] = registry.get("opencode").discover(home)
    message = sorted((home / "storage" / "message" / ref.session_id).glob("*.json"))[0]
    part = sorted((home / "storage" / "part" / message.stem).glob("*.json"))[0]
    part.unlink()
    part.symlink_to(secret)
    snap = trajconv.read("opencode", ref.path, session=ref.session_id)
    assert b"AKIA-HOSTILE" not in io.dumps(snap)
    [skipped] = [d for d in snap.diagnostics if d.code == "symlink-skipped"]
    assert skipped.samples == (f"storage/{part.relative_to(home / 'storage').as_posix()}",)


# -- 9. show --diff on a hostile export --------------------------------------------------


@pytest.mark.parametrize(
    "manifest",
    [
        b"{}",
        b"[]",
        b"not json",
        b'{"format": "trajconv.export/1", "target": 5, "session_id": [], "session_paths": 7}',
        b'{"format": "trajconv.export/1", "target": "grok", "session_id": "s", '
        b'"session_paths": [null]}',
        b'{"format": "trajconv.export/1", "target": "grok", "session_id": "s", '
        b'"session_paths": [], "diagnostics": [{"code": 1}]}',
        "../../outside",
        "/etc",
        "symlink",
    ],
)
@hostile(
    "show --diff A EXPORT whose trajconv-export.json is {}, [], not JSON, of wrong types, "
    "or names a session path outside home/ (../.., absolute, through a symlink): a named "
    "FormatError, exit 1, nothing read outside (was a traceback; paths were not contained)"
)
def test_diff_of_a_hostile_export_manifest(tmp_path: Path, manifest: bytes | str) -> None:
    import trajconv
    from trajconv.snapshot import io

    snap = trajconv.read("grok", GROK)
    io.dump(snap, tmp_path / "a.json")
    out = tmp_path / "out"
    trajconv.write(snap, "grok", out)
    file = out / "trajconv-export.json"
    if isinstance(manifest, bytes):
        file.write_bytes(manifest)
    else:
        doc = json.loads(file.read_bytes())
        installed = out / "home" / doc["session_paths"][0]
        outside = tmp_path / "outside"
        import shutil

        shutil.copytree(installed, outside)  # a real session, to show it is not read
        if manifest == "symlink":
            (out / "home" / "link").symlink_to(outside, target_is_directory=True)
            doc["session_paths"] = ["link"]
        elif manifest == "/etc":
            doc["session_paths"] = [str(outside)]
        else:
            doc["session_paths"] = ["../../outside"]
            assert (out / "home" / doc["session_paths"][0]).resolve() == outside.resolve()
        file.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["show", "--diff", str(tmp_path / "a.json"), str(out)])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "trajconv-export.json" in result.output


# -- 5. forged store index rows ----------------------------------------------------------


@pytest.mark.parametrize("where", ["local", "object-store"])
@hostile(
    "a store index row of session X relabelled with the victim's session id (the victim's "
    "rows deleted; for an object store, the index object moved under the recomputed key "
    "hash): verify names the row, --session victim is refused, archive log prints fields "
    "inert (verified ok and served X's Snapshot as the victim's)"
)
def test_forged_index_row_is_refused(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from tests.archive.support import grok_home
    from trajconv.errors import VerifyError
    from trajconv.harvest import archive
    from trajconv.store import load_input, verify_store
    from trajconv.store.remote import session_key

    monkeypatch.setenv("TRAJCONV_CACHE", str(tmp_path / "cache"))
    home = grok_home(tmp_path / "home", ["multi-turn", "rewind"])
    root = tmp_path / "store"
    location: str | Path = root if where == "local" else f"file://{root}"
    summary = archive(location, harness="grok", home=home)
    victim, thief = sorted(o.session_id for o in summary.outcomes)
    assert load_input(location, victim).source.session_id == victim
    forged = victim + "\x1b]0;pwned\x07"
    if where == "local":
        con = sqlite3.connect(root / "index.sqlite")
        con.execute("delete from archived where session_id = ?", (victim,))
        con.execute("update archived set session_id = ? where session_id = ?", (victim, thief))
        con.execute("insert into archived select null, harness, ?, snapshot_id, fingerprint, "
                    "archived_at, relation, previous_id, records, last_hash, facts_changed, "
                    "locator from archived where session_id = ?", (forged, victim))  # fmt: skip
        con.commit()
        con.close()
    else:
        index = root / "index"
        import shutil

        shutil.rmtree(index / session_key("grok", victim))
        objects = sorted((index / session_key("grok", thief)).iterdir())
        dest = index / session_key("grok", victim)
        dest.mkdir()
        for obj in objects:
            doc = json.loads(obj.read_bytes())
            doc["session_id"] = victim
            (dest / obj.name).write_text(json.dumps(doc))
        shutil.rmtree(index / session_key("grok", thief))
        shutil.rmtree(tmp_path / "cache")
    report = verify_store(location)
    assert not report.ok
    assert any("the index was changed" in p for p in report.problems), report.problems
    with pytest.raises(VerifyError, match="the index was changed"):
        load_input(location, victim)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["convert", "--to", "fx", str(location), "--session", victim, "-o", str(out)]
    )
    assert result.exit_code == 1, result.output
    assert "the index was changed" in result.output and not out.exists()
    if where == "local":
        log = CliRunner().invoke(cli, ["archive", "log", str(root)])
        assert log.exit_code == 0, log.output
        assert "\x1b" not in log.output and "\\x1b]0;pwned\\x07" in log.output


# -- 11. large ATIF documents ------------------------------------------------------------


def _atif_peak(doc: Path) -> tuple[int, int]:
    """Records read from ``doc`` and the peak of Python's traced memory while reading."""
    import tracemalloc

    import trajconv

    tracemalloc.start()
    try:
        snap = trajconv.read("atif", doc)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return len(snap.records), peak


@hostile(
    "ATIF documents of 1 MB and 4 MB: the peak of Python's memory while reading grows by "
    "under a quarter of the 3 MB between them (parsed whole, it grew by several times "
    "that: 100 MB of small steps took 1.5 GB); the steps are streamed"
)
def test_large_atif_memory_is_bounded(tmp_path: Path) -> None:
    import trajconv
    from tests.robustness.hostile import atif_document

    small = atif_document(tmp_path / "small" / "trajectory.json", 1 << 20)
    large = atif_document(tmp_path / "large" / "trajectory.json", 4 << 20)
    trajconv.read("atif", small)  # imports and caches first
    n_small, peak_small = _atif_peak(small)
    n_large, peak_large = _atif_peak(large)
    assert n_large > 3 * n_small
    grown = peak_large - peak_small
    assert grown < (large.stat().st_size - small.stat().st_size) // 4, (peak_small, peak_large)


@hostile(
    "ATIF document with 100,000 nested arrays inside a member (200 KB): refused as nested "
    "more than max_json_depth, with memory capped at 2 GB (the streaming parser's dotted "
    "prefixes grew with the depth: 23 GB, and the kernel killed the robustness run)"
)
@pytest.mark.parametrize("where", ["extra", "steps"])
def test_deeply_nested_atif_is_refused_in_bounded_memory(tmp_path: Path, where: str) -> None:
    import trajconv
    from tests.robustness.cases import _memory_cap
    from tests.robustness.hostile import atif_document

    doc = atif_document(tmp_path / "t" / "trajectory.json", 4_000)
    data = orjson.loads(doc.read_bytes())
    deep = b"[" * 100_000 + b"]" * 100_000
    if where == "extra":
        head, brace = orjson.dumps(data)[:-1], b"}"
        doc.write_bytes(head + b',"extra":' + deep + brace)
    else:
        text = orjson.dumps(data)
        doc.write_bytes(text.replace(b'"steps":[', b'"steps":[' + deep + b",", 1))
    with _memory_cap(2 << 30), pytest.raises(FormatError, match="nested more than 256"):
        trajconv.read("atif", doc)


@pytest.mark.parametrize(
    "edit",
    ["step-id", "agent-only-field", "source-call-id", "not-json-tail", "lone-surrogate"],
)
def test_streamed_atif_is_checked_as_a_whole_document(tmp_path: Path, edit: str) -> None:
    """The streamed reader refuses what the whole-document check refused, step by step."""
    import trajconv
    from tests.robustness.hostile import atif_document

    doc = atif_document(tmp_path / "t" / "trajectory.json", 40_000, message=50)
    data = doc.read_bytes()
    if edit == "step-id":
        data = data.replace(b'"step_id":7,', b'"step_id":70,', 1)
    elif edit == "agent-only-field":
        data = data.replace(b'"step_id":5,"source":"user",', b'"step_id":5,"source":"user",'
                            b'"model_name":"m",', 1)  # fmt: skip
    elif edit == "source-call-id":
        data = data.replace(b'"source_call_id":"c8"', b'"source_call_id":"c6"', 1)
    elif edit == "not-json-tail":
        data += b" trailing"
    else:
        data = data.replace(b'"step_id":9,"source":"user","message":"', b'"step_id":9,'
                            b'"source":"user","message":"\\ud800', 1)  # fmt: skip
    doc.write_bytes(data)
    with pytest.raises(FormatError, match=r"trajectory\.json"):
        trajconv.read("atif", doc)


# -- 2 and 10. prepare scripts in a hostile or full home ---------------------------------

PREPARE_TARGETS = {"grok": [], "claude": [], "gemini": ["--touch"], "cursor": ["--cwd", "/srv/w"]}
"""Targets whose prepare.py runs here without a harness CLI, and the options it needs."""


def _export(tmp: Path, target: str) -> Path:
    import trajconv

    out = tmp / f"export-{target}"
    if not out.exists():
        trajconv.write(trajconv.read("grok", GROK), target, out, allow_lossy=True)
    return out


def _prepare_module(out: Path, name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, out / "prepare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize("target", sorted(PREPARE_TARGETS))
@hostile(
    "prepare.py on a full disk (the write of its last file fails with ENOSPC; for Grok "
    "and Gemini also a real 2 KB file-size limit in a subprocess), with a stale "
    ".prepare-tmp of an earlier run in the way: exit 1 naming the path, no traceback, "
    "nothing left in the home, the rerun installs (was a traceback, a hidden temp left "
    "and a rerun refused)"
)
def test_prepare_on_a_full_disk_cleans_up(tmp_path: Path, target: str) -> None:
    import errno
    import os
    import resource
    import signal
    import subprocess
    import sys

    out = _export(tmp_path, target)
    options = PREPARE_TARGETS[target]
    scratch = tmp_path / "scratch"
    prepare = _prepare_module(out, f"prepare_{target}_scratch")
    prepare.main(["--home", str(scratch), *options])
    installed = sorted(p for p in scratch.rglob("*") if p.is_file())
    assert installed
    home = tmp_path / "home"
    last = home / installed[-1].relative_to(scratch)
    last.parent.mkdir(parents=True)
    (last.parent / f".{last.name}.prepare-tmp").write_bytes(b"stale")  # a killed run's
    before = {p.relative_to(home).as_posix() for p in home.rglob("*")}

    prepare = _prepare_module(out, f"prepare_{target}_full")
    real = prepare.file_chunks

    def full(path: Path, *, tail: bytes = b"") -> Any:
        if path.name != last.name:  # the other files are written: the disk fills up now
            yield from real(path, tail=tail)
            return
        yield next(iter(real(path)))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    prepare.file_chunks = full
    with pytest.raises(SystemExit) as exited:
        prepare.main(["--home", str(home), *options])
    assert exited.value.code == 1
    left = {p.relative_to(home).as_posix() for p in home.rglob("*")}
    assert left <= before - {f"{last.relative_to(home).parent.as_posix()}/.{last.name}.prepare-tmp"}

    if target in ("grok", "gemini"):

        def small_files() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

        proc = subprocess.run(
            [sys.executable, str(out / "prepare.py"), "--home", str(home), *options],
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            preexec_fn=small_files,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "cannot write" in proc.stderr and "File too large" in proc.stderr, proc.stderr
        assert not [p for p in home.rglob("*.prepare-tmp")]
        assert not [p for p in home.rglob("*") if p.is_file()]

    again = subprocess.run(
        [sys.executable, str(out / "prepare.py"), "--home", str(home), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    # the same files as a first install (the times --touch records and SQLite's pages aside)
    assert sorted(_files(home)) == sorted(_files(scratch))
    assert not [p for p in home.rglob("*.prepare-tmp")]


def _swap(home: Path, rel: str, outside: Path) -> None:
    """Replace ``home/rel`` (a folder, or a name not there yet) by a symlink to a folder
    outside the home laid out as it was (so a write through the link would succeed);
    the folder itself goes aside (the prepare may still hold it open: a write into it is
    no escape, it is the folder it opened inside the home)."""
    import shutil

    where = home / rel
    dest = outside / f"{len(list(outside.iterdir()))}"
    if where.is_dir() and not where.is_symlink():
        shutil.copytree(where, dest, symlinks=True)
        where.rename(outside.parent / f"aside-{dest.name}")
    else:
        dest.mkdir()
        where.parent.mkdir(parents=True, exist_ok=True)  # the folders above it, as prepare would
    where.symlink_to(dest, target_is_directory=True)


@pytest.mark.parametrize("target", sorted(PREPARE_TARGETS))
@hostile(
    "prepare.py with a folder of its install path swapped for a symlink to outside the "
    "home at each of its file-system calls in turn (every folder, every call: a bounded "
    "count, no timing): no write ever lands outside (Gemini's escaped 1 run in 40; "
    "Cursor, Deep Agents and OpenCode did not walk with O_NOFOLLOW)"
)
def test_prepare_symlink_swap_race_never_escapes(
    tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    out = _export(tmp_path, target)
    options = PREPARE_TARGETS[target]
    scratch = tmp_path / "scratch"
    _prepare_module(out, f"race_{target}_scratch").main(["--home", str(scratch), *options])
    folders = sorted(p.relative_to(scratch).as_posix() for p in scratch.rglob("*") if p.is_dir())
    assert folders
    hooked = ("open", "mkdir", "replace", "unlink", "stat", "rmdir", "rename", "lstat")
    real = {name: getattr(os, name) for name in hooked}
    state = {"calls": 0, "at": -1, "swap": "", "busy": False}

    def hook(name: str) -> Any:
        def call(*args: Any, **kw: Any) -> Any:
            if not state["busy"]:
                state["calls"] += 1
                if state["calls"] == state["at"]:
                    state["busy"] = True
                    try:
                        for n, f in real.items():
                            setattr(os, n, f)
                        _swap(Path(state["home"]), str(state["swap"]), Path(state["outside"]))
                        state["moved"] = _files(Path(state["outside"]))
                    finally:
                        for n in hooked:
                            setattr(os, n, hooks[n])
                        state["busy"] = False
            return real[name](*args, **kw)

        return call

    hooks = {name: hook(name) for name in hooked}
    runs = escapes = 0
    failed: list[str] = []
    for rel in folders:
        at = 1
        while True:
            run = tmp_path / f"run-{runs}"
            assert not run.exists(), (
                runs,
                rel,
                at,
                sorted(p.name for p in tmp_path.iterdir())[-5:],
            )
            home, outside = run / "home", run / "outside"
            home.mkdir(parents=True)
            outside.mkdir()
            prepare = _prepare_module(out, f"race_{target}_{runs}")
            state.update(calls=0, at=at, swap=rel, home=str(home), outside=str(outside), moved={})
            for n in hooked:
                monkeypatch.setattr(os, n, hooks[n])
            try:
                prepare.main(["--home", str(home), *options])
            except SystemExit as exc:
                assert exc.code in (1, 3), exc.code
            finally:
                monkeypatch.undo()
            assert all(getattr(os, n) is real[n] for n in hooked), (rel, at)
            swapped = state["calls"] >= at
            runs += 1
            if not swapped:
                break  # the run ended before that call: every call of this folder was tried
            # what the swap moved outside stays as it was: no write lands there
            if _files(outside) != state["moved"]:
                escapes += 1
                now = _files(outside)
                changed = sorted(set(now) ^ set(state["moved"])) + [
                    k for k in now if k in state["moved"] and now[k] != state["moved"][k]
                ]
                failed.append(f"{rel} at call {at}: {changed}")
            at += 1
    assert escapes == 0, failed
    assert runs > len(folders) * 5
