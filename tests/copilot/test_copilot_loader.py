"""The real GitHub Copilot CLI lists and loads what trajconv reads and writes.

Needs the pinned ``@github/copilot`` in the tools folder (``python -m proof install
copilot``); skipped outside CI without it, a failure under ``CI=true``. Every run copies the
session into a scratch COPILOT_HOME, runs ``copilot --acp`` with ``COPILOT_OFFLINE=true`` and a
provider URL on 127.0.0.1 where nothing listens, and asks ``session/list`` and
``session/load``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from acp.schema import SessionNotification

import trajconv
from proof import tools_dir
from proof.loaders import copilot as loader
from tests.conftest import require_loader
from tests.copilot.support import (
    CASES,
    IDS,
    expected_replay,
    exported_session,
    read,
    replay_projection,
    session_dir,
    write,
)
from tests.helpers import FIXTURES
from trajconv.codecs import registry
from trajconv.parity import DROP_CODES
from trajconv.snapshot.models import Snapshot


@pytest.fixture(scope="module")
def copilot_bin() -> Path:
    found = loader.find(tools_dir())
    require_loader(found, "copilot")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def event_validator(copilot_bin: Path) -> Any:
    """A validator for one events.jsonl line, from the installed CLI's own JSON Schema."""
    import jsonschema

    path = loader.schema_path(tools_dir())
    require_loader(path, "copilot")
    assert path is not None
    schema = json.loads(path.read_text("utf-8"))
    defs = schema["definitions"]
    by_type = {}
    for ref in defs["SessionEvent"]["anyOf"]:
        name = ref["$ref"].rsplit("/", 1)[-1]
        by_type[defs[name]["properties"]["type"]["const"]] = name
    checker = jsonschema.FormatChecker()

    def validate(obj: dict[str, Any]) -> None:
        name = by_type[obj["type"]]  # KeyError: a type this CLI version does not know
        sub = {"$ref": f"#/definitions/{name}", "definitions": defs}
        jsonschema.Draft7Validator(sub, format_checker=checker).validate(obj)

    return validate


def _title(snap: Snapshot) -> str | None:
    """What ``session/list`` shows: the workspace name, else the first user message."""
    if snap.session.title:
        return snap.session.title
    return next((r.text for r in snap.records if r.kind == "user"), None)


def _check(copilot_bin: Path, home: Path, snap: Snapshot, sid: str) -> loader.CopilotLoadResult:
    assert snap.session.cwd is not None
    result = loader.check(copilot_bin, home, sid, snap.session.cwd)
    assert result.version == loader.VERSION
    assert result.listed, f"session/list did not show {sid}: {result.stderr_tail}"
    assert result.title == _title(snap)
    assert result.cwd == snap.session.cwd
    assert result.loaded, result.load_error
    assert result.files_unchanged, (result.files_modified, result.files_removed)
    for update in result.updates:  # every replayed notification is valid ACP
        note = {"sessionId": sid, "update": update}
        SessionNotification.model_validate(note)
    return result


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cli_loads_every_written_fixture(case: Path, copilot_bin: Path, tmp_path: Path) -> None:
    snap = read(case)
    export = write(snap, tmp_path / "out", allow_lossy=True)
    result = _check(copilot_bin, export.out_dir / "home", snap, export.session_id)
    assert replay_projection(result.replay) == expected_replay(snap)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cli_loads_the_fixture_itself_as_our_reader_reads_it(
    case: Path, copilot_bin: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    sdir = session_dir(case)
    (home / ".copilot").mkdir(parents=True)
    shutil.copytree(case / "session-state", home / ".copilot" / "session-state")
    snap = read(case)
    result = _check(copilot_bin, home, snap, sdir.name)
    assert replay_projection(result.replay) == expected_replay(snap)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_written_lines_validate_against_the_cli_schema(
    case: Path, event_validator: Any, tmp_path: Path
) -> None:
    export = write(read(case), tmp_path / "out", allow_lossy=True)
    lines = (exported_session(export) / "events.jsonl").read_text("utf-8").splitlines()
    assert lines
    for line in lines:
        event_validator(json.loads(line))


def test_fixture_lines_validate_against_the_cli_schema(event_validator: Any) -> None:
    """The hand-made fixtures are valid too, except the lines they break on purpose."""
    skipped = []
    for case in CASES:
        for number, line in enumerate(
            (session_dir(case) / "events.jsonl").read_text("utf-8").split("\n"), 1
        ):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                skipped.append((case.name, number, "torn"))
                continue
            try:
                event_validator(obj)
            except KeyError:
                skipped.append((case.name, number, obj["type"]))
    assert skipped == [("compaction", 8, "session.future_feature"), ("torn-tail", 7, "torn")]


def test_cli_refuses_a_corrupt_line_and_names_it(copilot_bin: Path, tmp_path: Path) -> None:
    """The check can fail: a known event missing a required field breaks the load."""
    snap = read(CASES[0])
    export = write(snap, tmp_path / "out", allow_lossy=True)
    events = exported_session(export) / "events.jsonl"
    lines = events.read_text("utf-8").splitlines()
    user = next(i for i, line in enumerate(lines) if '"type":"user.message"' in line)
    obj = json.loads(lines[user])
    del obj["data"]["content"]
    lines[user] = json.dumps(obj, separators=(",", ":"))
    events.write_text("\n".join(lines) + "\n", "utf-8")
    assert snap.session.cwd is not None
    result = loader.check(copilot_bin, export.out_dir / "home", export.session_id, snap.session.cwd)
    assert not result.loaded
    assert result.load_error is not None and f"line {user + 1}" in result.load_error


FOREIGN = sorted(p for p in FIXTURES.glob("grok/*/sessions/*/*") if (p / "summary.json").is_file())


@pytest.mark.parametrize("src", FOREIGN, ids=[f"{p.parents[2].name}" for p in FOREIGN])
def test_cli_loads_grok_sessions_written_as_copilot(
    src: Path, copilot_bin: Path, tmp_path: Path
) -> None:
    if "grok" not in registry.names():
        pytest.skip("the grok codec is not registered in this install")
    snap = trajconv.read("grok", src)
    export = write(snap, tmp_path / "out", allow_lossy=True)
    leaving = {c for codes in DROP_CODES.values() for c in codes}  # codes of records left out
    dropped = {s for d in export.diagnostics if d.code in leaving for s in d.samples}
    kept = snap.model_copy(
        update={"records": tuple(r for r in snap.records if r.id not in dropped)}
    )
    result = _check(copilot_bin, export.out_dir / "home", kept, export.session_id)
    assert replay_projection(result.replay) == expected_replay(kept)


def test_prepare_installs_a_home_the_cli_loads(copilot_bin: Path, tmp_path: Path) -> None:
    """The whole path: export, ``prepare.py --home``, then the CLI on the installed home."""
    import stat
    import subprocess
    import sys

    snap = read(CASES[0])
    export = write(snap, tmp_path / "out", allow_lossy=True)
    home = tmp_path / "home"
    home.mkdir()
    argv = [sys.executable, str(export.out_dir / "prepare.py"), "--home", str(home)]
    first = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    sdir = home / ".copilot" / "session-state" / export.session_id
    assert stat.S_IMODE(sdir.stat().st_mode) == 0o700
    assert stat.S_IMODE((sdir / "events.jsonl").stat().st_mode) == 0o600
    again = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert again.returncode == 3  # refuses to replace the session it just installed
    result = _check(copilot_bin, home, snap, export.session_id)
    assert replay_projection(result.replay) == expected_replay(snap)
