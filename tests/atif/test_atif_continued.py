"""An evaluation run's trajectory, converted, is continued in the real CLIs with every call
and its error in the model's request (the parity hook: ``proof.verify``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import trajconv
from proof import loader, tools_dir
from proof.verify import check_export
from tests.conftest import require_loader
from tests.helpers import FIXTURES
from trajconv import parity
from trajconv.codecs import registry

RUN = FIXTURES / "atif" / "harbor-grok-tool-failures"  # written by Harbor's own adapter


@pytest.mark.parametrize("target", ["claude", "codex"])
def test_a_trajectory_with_failed_calls_continues_with_every_call_and_error(
    target: str, tmp_path: Path
) -> None:
    found = loader(target)
    assert found is not None
    require_loader(found.find(tools_dir()), target)
    source = trajconv.read("atif", RUN)
    export = trajconv.write(source, target, tmp_path / "out", cwd="/work/demo")
    written = parity._reread(registry.get(target), export.out_dir, export.session_id)
    calls = [(r.call.name, r.call.arguments) for r in source.records if r.kind == "tool-call"]
    assert [(r.call.name, r.call.arguments) for r in written.records if r.kind == "tool-call"] == (
        calls
    )
    outputs = " ".join(r.result.output for r in written.records if r.kind == "tool-result")
    for text in ("does not exist", "No such file", "not executed"):  # the three failures
        assert text in outputs
    verdict = check_export(target, export, written)
    assert verdict is not None and verdict["ok"], verdict
