"""``benchmarks/generate.py`` makes, for each newer codec, a session that codec's reader
reads: ``trajconv read --from NAME`` succeeds, its Snapshot holds the records (by kind)
the generator says it wrote, and ``run.py``'s floor parses the same units."""

from __future__ import annotations

import collections
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from trajconv.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(f"bench_{name}", module)
    spec.loader.exec_module(module)
    return module


NEWER = ("aider", "atif", "kilo", "pi", "qwen", "vibe", "openhands")


@pytest.mark.parametrize("name", NEWER)
def test_a_generated_session_reads_with_the_records_the_generator_reports(
    name: str, tmp_path: Path
) -> None:
    generate, run = _module("generate"), _module("run")
    assert name in generate.HARNESSES
    out = tmp_path / "data"
    out.mkdir()
    info = generate.GENERATORS[name](out, 150_000, random.Random(11))
    snapshot = tmp_path / "snap.json"
    result = CliRunner().invoke(
        cli, ["read", "--from", name, info["read_path"], "-o", str(snapshot)]
    )
    assert result.exit_code == 0, result.output
    records = json.loads(snapshot.read_text(encoding="utf-8"))["records"]
    kinds = collections.Counter(r["kind"] for r in records)
    assert dict(kinds) == info["records"]
    assert {"user", "assistant"} <= set(kinds)
    if name != "aider":  # Aider's history holds no tool calls (its README)
        assert kinds["tool-call"] > 0 and kinds["tool-call"] == kinds["tool-result"]
    assert run.floor(info) == info["units"]
