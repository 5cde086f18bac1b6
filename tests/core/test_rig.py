"""The product does not carry its proof rig: ``trajconv/`` imports ``proof`` only lazily,
the rig finds its loaders by module (no list), and ``parity`` says what it needs."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import proof
from tests.helpers import FIXTURES

ROOT = FIXTURES.parent


def _module_level_imports(tree: ast.Module) -> list[str]:
    """Modules imported outside any function body (what importing the module pays for)."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Import):
                names.extend(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names.append(child.module)
            visit(child)

    visit(tree)
    return names


def test_the_product_imports_nothing_from_the_rig_at_module_level() -> None:
    offenders = []
    for path in sorted((ROOT / "trajconv").rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"), str(path))
        for name in _module_level_imports(tree):
            if name == "proof" or name.startswith("proof."):
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert not offenders
    assert not (ROOT / "trajconv" / "loaders").exists()


def test_importing_the_cli_loads_no_rig_module() -> None:
    code = (
        "import sys, trajconv.cli.main, trajconv.parity, trajconv.views, trajconv.api;"
        "print(sorted(m for m in sys.modules if m == 'proof' or m.startswith('proof.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "[]"


def test_every_loader_module_is_found_without_a_list() -> None:
    found = proof.all_loaders()
    files = {
        p.stem for p in (ROOT / "proof" / "loaders").glob("*.py") if not p.stem.startswith("_")
    }
    assert set(found) == files  # every module there is a loader (PACKAGE/VERSION/install/find)
    for mod in found.values():
        assert isinstance(mod.PACKAGE, str) and isinstance(mod.VERSION, str)
        assert callable(mod.install) and callable(mod.find)
    harnesses = proof.harness_loaders()
    assert proof.loader("atif") is found["harbor"]  # HARNESS names the codec it proves
    assert "chromium" not in harnesses and "harbor" not in harnesses  # not a harness / renamed
    assert not proof.installs_by_default(found["fx"])  # fx's binary is the user's own
    from trajconv.codecs import registry

    assert set(harnesses) <= set(registry.names())


def test_parity_check_names_the_rig_when_it_is_not_importable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli

    monkeypatch.setitem(sys.modules, "proof", None)  # import proof raises ModuleNotFoundError
    result = CliRunner().invoke(cli, ["parity", "--check"])
    assert result.exit_code == 2
    assert "source checkout with the proof rig" in result.output
    assert "proof/" in result.output
