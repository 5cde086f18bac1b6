"""ATIF codec: reader on Harbor-written and hand-made trajectories, writer validated by the
``atif`` models and Harbor's own validator, round trips, and the document export."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import atif
import pytest
from click.testing import CliRunner

import trajconv
from proof import tools_dir
from proof.loaders import harbor
from tests.conftest import require_loader
from tests.helpers import FIXTURES, conservation, export_tree, fingerprint, projection
from trajconv import parity
from trajconv.cli.main import cli
from trajconv.codecs import registry
from trajconv.codecs.atif import layout, native, stream
from trajconv.errors import EXIT_USAGE, FormatError, UsageError
from trajconv.snapshot import io
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Source

ATIF = FIXTURES / "atif"
CASES = sorted(p for p in ATIF.iterdir() if (p / "trajectory.json").is_file())
IDS = [p.name for p in CASES]


def _doc(case: str, name: str = "trajectory.json") -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ATIF / case / name).read_text("utf-8"))
    return loaded


def _steps(doc: dict[str, Any]) -> int:
    return len(doc["steps"]) + len(doc.get("subagent_trajectories") or ())


def test_fixtures_cover_every_shape() -> None:
    names = set(IDS)
    assert {"v1.0-minimal", "v1.6-multimodal", "v1.7-subagent-continued", "v1.8-audio"} <= names
    assert sum(n.startswith("harbor-") for n in names) >= 2  # written by Harbor's adapters
    versions = {_doc(n)["schema_version"] for n in names}
    assert {"ATIF-v1.0", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8"} <= versions


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reader_snapshot(case: Path, snapshot: Any) -> None:
    snap = trajconv.read("atif", case)
    assert io.verify(snap).ok
    assert json.loads(io.dumps(snap)) == snapshot


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_step_is_accounted_for(case: Path) -> None:
    snap = trajconv.read("atif", case)
    seen, doc = 0, _doc(case.name)
    while True:  # the root and every continuation file
        seen += _steps(doc)
        ref = doc.get("continued_trajectory_ref")
        if not ref:
            break
        doc = _doc(case.name, ref)
    conservation(snap, seen)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reading_never_changes_the_trajectory(case: Path) -> None:
    before = fingerprint(case)
    trajconv.read("atif", case)
    assert fingerprint(case) == before


def test_tool_status_conventions_are_read() -> None:
    snap = trajconv.read("atif", ATIF / "v1.7-subagent-continued")
    results = {r.result.call_id: r.result for r in snap.records if r.kind == "tool-result"}
    assert (results["sh-1"].ok, results["sh-1"].exit_code) == (False, None)  # Harbor's flag
    assert (results["sh-2"].ok, results["sh-2"].exit_code) == (True, 0)  # trajconv's extra
    assert results["task-1"].ok is None  # ATIF itself says nothing
    assert [r.kind for r in snap.records][-2:] == ["observation", "assistant"]  # compaction, cont.


def test_media_beside_the_document_is_kept_and_counted() -> None:
    snap = trajconv.read("atif", ATIF / "v1.6-multimodal")
    names = {a.name: a for a in snap.artifacts}
    assert names["images/dot.png"].size == (ATIF / "v1.6-multimodal/images/dot.png").stat().st_size
    assert {d.code: d.count for d in snap.diagnostics}["media-part"] == 1


def test_an_embedded_subagent_reads_as_a_child_session() -> None:
    child = trajconv.read("atif", ATIF / "v1.7-subagent-continued", session="sub-explore-1")
    assert child.session.id == "sub-explore-1"
    assert child.session.parent_session_id == "run-v17"
    assert [(r.kind, r.text) for r in child.records] == [  # type: ignore[union-attr]
        ("user", "Find the config file."),
        ("assistant", "It is config/app.yaml."),
    ]
    with pytest.raises(UsageError, match="sub-explore-1"):
        trajconv.read("atif", ATIF / "v1.7-subagent-continued", session="nope")


def test_a_trajectory_without_a_session_id_gets_a_derived_one_named() -> None:
    snap = trajconv.read("atif", ATIF / "v1.8-audio")
    assert snap.session.id.startswith("atif-")
    assert "session-id-derived" in {d.code for d in snap.diagnostics}
    assert trajconv.read("atif", ATIF / "v1.8-audio").session.id == snap.session.id


def _mutate(doc: dict[str, Any], how: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    steps = doc["steps"]
    if how == "unknown-key":
        steps[1]["bogus"] = 1
    elif how == "version":
        doc["schema_version"] = "ATIF-v2.0"
    elif how == "result-moved":  # Harbor rejects it; the atif models alone do not
        steps[2]["observation"] = steps[1].pop("observation")
    elif how == "step-gap":
        steps[1]["step_id"] = 5
    elif how == "agent-only":
        steps[0]["reasoning_content"] = "x"
    elif how == "args-not-object":
        steps[1]["tool_calls"][0]["arguments"] = ["wc"]
    return doc


BAD = {
    "unknown-key": "steps[1].bogus",
    "version": "schema_version: 'ATIF-v2.0' is not a published ATIF version",
    "result-moved": "steps[2].observation.results[0].source_call_id: 'tc-1' is not a tool call",
    "step-gap": "not sequential",
    "agent-only": "only valid on `source='agent'`",
    "args-not-object": "steps[1].tool_calls[0].arguments",
}


@pytest.mark.parametrize("how", sorted(BAD))
def test_an_invalid_trajectory_is_refused_naming_its_first_error(how: str, tmp_path: Path) -> None:
    bad = tmp_path / "trajectory.json"
    bad.write_text(json.dumps(_mutate(_doc("v1.0-minimal"), how)))
    with pytest.raises(FormatError, match="not a valid ATIF trajectory") as err:
        trajconv.read("atif", tmp_path)
    assert BAD[how] in str(err.value)
    assert str(bad) in str(err.value)


def test_harbor_rejects_what_the_reader_rejects(tmp_path: Path) -> None:
    python = harbor.find(tools_dir())
    require_loader(python, "harbor")
    assert python is not None
    files = []
    for how in sorted(BAD):
        path = tmp_path / f"{how}.json"
        path.write_text(json.dumps(_mutate(_doc("v1.0-minimal"), how)))
        files.append(path)
    assert [v.ok for v in harbor.validate(python, files)] == [False] * len(files)


@pytest.mark.parametrize(
    "text", [b"{not json", b"[]", b'{"schema_version": "ATIF-v1.7"}', "\ufeff{}".encode()]
)
def test_broken_documents_are_named_errors(text: bytes, tmp_path: Path) -> None:
    (tmp_path / "trajectory.json").write_bytes(text)
    with pytest.raises(FormatError, match=r"trajectory\.json"):
        trajconv.read("atif", tmp_path)


def test_an_escaped_emoji_is_read_a_step_at_a_time_a_lone_surrogate_refused(
    tmp_path: Path,
) -> None:
    """``json.dumps`` writes an emoji as a surrogate pair escape, which yajl decodes as orjson
    does: the document streams (was read whole, 111 MiB for 10 MB) to the records the same
    text as UTF-8 gives; a lone surrogate escape (yajl would make it ``?``) is refused."""
    doc = _doc("v1.0-minimal")
    doc["steps"][0]["message"] = "How many lines \U0001f600 has data.csv?"
    texts = []
    for name, ascii_only in (("escaped", True), ("utf8", False)):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "trajectory.json"
        path.write_text(json.dumps(doc, ensure_ascii=ascii_only), "utf-8")
        assert stream.frame(path, path, 256).whole is False
        texts.append([r.text for r in trajconv.read("atif", path).records if r.kind == "user"])
    assert texts[0] == texts[1] == ["How many lines \U0001f600 has data.csv?"]
    lone = tmp_path / "lone" / "trajectory.json"
    lone.parent.mkdir()
    lone.write_text(json.dumps(doc).replace("\\ude00", " "), "utf-8")
    assert "\\ud83d " in lone.read_text("utf-8")
    assert stream.frame(lone, lone, 256).whole is True
    with pytest.raises(FormatError, match=r"not JSON"):
        trajconv.read("atif", lone)


def _continued(tmp_path: Path, ref: str) -> Path:
    doc = _doc("v1.0-minimal")
    doc["continued_trajectory_ref"] = ref
    (tmp_path / "trajectory.json").write_text(json.dumps(doc))
    return tmp_path


@pytest.mark.parametrize("ref", ["gone.json", "../outside.json", "/etc/passwd", "https://x/y"])
def test_a_continuation_that_cannot_be_read_is_named_not_followed(ref: str, tmp_path: Path) -> None:
    (tmp_path.parent / "outside.json").write_text(json.dumps(_doc("v1.0-minimal")))
    snap = trajconv.read("atif", _mk(tmp_path, ref))
    assert {d.code: d.count for d in snap.diagnostics}["continuation-missing"] == 1
    assert len(snap.records) == len(trajconv.read("atif", ATIF / "v1.0-minimal").records)


def _mk(tmp_path: Path, ref: str) -> Path:
    folder = tmp_path / "t"
    folder.mkdir()
    return _continued(folder, ref)


def test_a_continuation_loop_is_refused(tmp_path: Path) -> None:
    _continued(tmp_path, "trajectory.json")
    with pytest.raises(FormatError, match="loops back"):
        trajconv.read("atif", tmp_path)


# -- writer --------------------------------------------------------------------------------


def _sources() -> list[parity.FixtureSession]:
    return [
        fx
        for c in registry.all_codecs()
        if c.can_read and c.name != "atif"
        for fx in parity.fixture_sessions(c)
    ]


SOURCES = _sources()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every other codec's fixture sessions written as ATIF (lossy: ATIF refuses nothing)."""
    root = tmp_path_factory.mktemp("atif-out")
    out: dict[str, Path] = {}
    for i, fx in enumerate(SOURCES):
        snap = trajconv.read(fx.harness, fx.path, session=fx.session)
        export = trajconv.write(snap, "atif", root / str(i))
        out[fx.label] = export.out_dir / layout.DOCUMENT
    return out


def test_every_fixture_of_every_codec_becomes_a_valid_trajectory(
    written: dict[str, Path],
) -> None:
    assert len(written) >= 20
    for label, path in written.items():
        doc = json.loads(path.read_text("utf-8"))
        atif.Trajectory.model_validate(doc)  # the standalone models
        assert native.problem(doc) is None, label
        assert doc["schema_version"] == "ATIF-v1.7"


def test_harbor_validates_every_written_trajectory(written: dict[str, Path]) -> None:
    python = harbor.find(tools_dir())
    require_loader(python, "harbor")
    assert python is not None
    verdicts = harbor.validate(python, list(written.values()))
    bad = {
        label: v.errors for (label, _), v in zip(written.items(), verdicts, strict=True) if not v.ok
    }
    assert bad == {}


WRITER_CASES = ["copilot/recorded-tool-failures", "grok/recorded-tool-failures"]


@pytest.mark.parametrize("label", WRITER_CASES)
def test_writer_export(label: str, tmp_path: Path, snapshot: Any) -> None:
    fx = next(f for f in SOURCES if f.label == label)
    snap = trajconv.read(fx.harness, fx.path, session=fx.session)
    export = trajconv.write(snap, "atif", tmp_path / "out")
    tree = export_tree(export.out_dir)
    assert set(tree) == {"trajconv-export.json", "trajectory.json"}  # no prepare.py
    assert export.manifest["prepare"] is None and export.manifest["resume"] is None
    assert tree == snapshot


def test_failed_calls_keep_their_status_and_place(tmp_path: Path) -> None:
    snap = trajconv.read("copilot", FIXTURES / "copilot/recorded-tool-failures")
    export = trajconv.write(snap, "atif", tmp_path / "out")
    back = trajconv.read("atif", export.out_dir)
    want = [
        (r.result.call_id, r.result.ok, r.result.exit_code)
        for r in snap.records
        if r.kind == "tool-result"
    ]
    got = [
        (r.result.call_id, r.result.ok, r.result.exit_code)
        for r in back.records
        if r.kind == "tool-result"
    ]
    assert got == want and any(ok is False for _, ok, _ in want)
    codes = {d.code: d.count for d in export.diagnostics}
    assert codes["untranslated-tool-status"] == len(want)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_atif_round_trip_keeps_every_record(case: Path, tmp_path: Path) -> None:
    snap = trajconv.read("atif", case)
    export = trajconv.write(snap, "atif", tmp_path / "out")
    back = trajconv.read("atif", export.out_dir)
    assert projection(back) == projection(snap)
    assert back.session == snap.session


@pytest.mark.parametrize("version", [v.removeprefix("ATIF-v") for v in layout.VERSIONS])
def test_every_version_can_be_written_and_validates(version: str, tmp_path: Path) -> None:
    snap = trajconv.read("atif", ATIF / "v1.7-subagent-continued")
    export = trajconv.write(snap, "atif", tmp_path / "out", version=version)
    doc = json.loads((export.out_dir / "trajectory.json").read_text("utf-8"))
    assert doc["schema_version"] == f"ATIF-v{version}"
    assert native.problem(doc) is None
    back = trajconv.read("atif", export.out_dir)
    codes = {d.code for d in export.diagnostics}
    if version in ("1.0", "1.1"):  # no observations on system steps before 1.2
        assert "untranslated-observation" in codes
        assert [r.kind for r in back.records].count("observation") == 0
    else:
        assert projection(back) == projection(snap)


def test_an_unknown_version_is_a_usage_error(tmp_path: Path) -> None:
    snap = trajconv.read("atif", ATIF / "v1.0-minimal")
    with pytest.raises(UsageError, match="not a published ATIF version"):
        trajconv.write(snap, "atif", tmp_path / "out", version="2.0")


def test_arguments_that_are_not_an_object_are_wrapped_and_named(tmp_path: Path) -> None:
    b = SnapshotBuilder(Source(harness="t", harness_version="1", session_id="s", locator="s"), "t")
    ev = evidence("log", native="x", line=1)
    b.add_text("user", "t:1", "go", time=None, turn=None, evidence=ev)
    b.add_call("t:2", "c1", "shell", ["ls", "-l"], time=None, turn=None, evidence=ev)
    b.add_result("t:3", "c1", True, "a", time=None, turn=None, evidence=ev)
    b.add_text("assistant", "t:4", "done", time=None, turn=None, evidence=ev)
    export = trajconv.write(b.build(), "atif", tmp_path / "out")
    doc = json.loads((export.out_dir / "trajectory.json").read_text("utf-8"))
    assert doc["steps"][1]["tool_calls"][0]["arguments"] == {"_raw": '["ls", "-l"]'}
    assert {d.code for d in export.diagnostics} >= {"untranslated-tool-arguments"}
    assert "timestamp" not in doc["steps"][0]  # nothing invented


def test_cli_says_there_is_nothing_to_install(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = CliRunner().invoke(
        cli,
        ["convert", "--from", "atif", "--to", "atif", str(ATIF / "v1.0-minimal"), "-o", str(out)],
    )
    assert run.exit_code == 0, run.output
    assert "prepare.py" not in run.output and "nothing to install" in run.output
    assert not (out / "prepare.py").exists()
    again = CliRunner().invoke(cli, ["prepare", str(out)])
    assert again.exit_code == EXIT_USAGE
    assert "document export" in again.output


@pytest.mark.parametrize("target", ["grok", "copilot", "deepagents"])
def test_an_evaluation_run_converts_with_every_call_and_its_error(
    target: str, tmp_path: Path
) -> None:
    src = trajconv.read("atif", ATIF / "harbor-grok-tool-failures")
    assert src.session.cwd is None  # Harbor keeps no cwd: the user names one
    export = trajconv.write(src, target, tmp_path / "out", cwd="/work/demo")
    back = parity._reread(registry.get(target), export.out_dir, export.session_id)
    calls = [(r.call.name, r.call.arguments) for r in src.records if r.kind == "tool-call"]
    assert [(r.call.name, r.call.arguments) for r in back.records if r.kind == "tool-call"] == calls
    outputs = [r.result.output for r in back.records if r.kind == "tool-result"]
    assert any("No such file" in o for o in outputs)  # the failed ls, as Harbor kept it
