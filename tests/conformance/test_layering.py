"""What the codec protocol promises about the package's shape: the centre names no harness
(detection, homes and options belong to the codecs) and no codec imports another (what two
need is in a shared module of ``trajconv/codecs/``)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO
from trajconv.codecs import registry

PACKAGE = REPO / "trajconv"
#: the codec packages: those with an entry point (a shared package such as
#: ``codecs/opencode_lineage``, which two codecs build on, is not one)
CODECS = sorted(
    p.name
    for p in (PACKAGE / "codecs").iterdir()
    if (p / "__init__.py").is_file() and p.name in registry.names()
)
CENTRE = ("cli", "find.py", "api.py", "harvest.py", "views", "store", "snapshot")


def _files(part: str) -> list[Path]:
    base = PACKAGE / part
    return [base] if base.is_file() else sorted(base.rglob("*.py"))


def test_the_centre_names_no_harness() -> None:
    hits = [
        f"{f.relative_to(REPO)}:{node.lineno} {node.value!r}"
        for part in CENTRE
        for f in _files(part)
        for node in ast.walk(ast.parse(f.read_text("utf-8")))
        if isinstance(node, ast.Constant) and node.value in CODECS
    ]
    assert not hits, hits


def test_no_codec_imports_another() -> None:
    hits = []
    for name in CODECS:
        for f in _files(f"codecs/{name}"):
            for node in ast.walk(ast.parse(f.read_text("utf-8"))):
                modules = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                for module in modules:
                    parts = module.split(".")
                    other = (
                        parts[2] if parts[:2] == ["trajconv", "codecs"] and len(parts) > 2 else ""
                    )
                    if other in CODECS and other != name:
                        hits.append(f"{f.relative_to(REPO)}:{node.lineno} {module}")
    assert not hits, hits
