from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from types import CodeType
from typing import Any

import pytest

from proof import tools_dir


@pytest.fixture(scope="session")
def native_tools() -> os.PathLike[str]:
    """The folder where `python -m proof install` put the pinned native CLIs."""
    return tools_dir()


def require_loader(found: object, harness: str) -> None:
    """Skip outside CI with the install hint; fail under CI=true when a loader is missing.

    A test that calls this (in its body or in a fixture it uses) drives a real CLI or the
    browser: :func:`pytest_collection_modifyitems` marks it ``loader`` by itself."""
    if found:
        return
    hint = f"install it with: python -m proof install {harness}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the {harness} native loader is missing under CI; {hint}")
    pytest.skip(f"{harness} native loader not installed; {hint}")


def _names(code: CodeType) -> set[str]:
    """Global names a code object (and the functions and lambdas inside it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _names(const)
    return names


_NEEDS: dict[Callable[..., Any], bool] = {}


def _needs_a_loader(func: Callable[..., Any]) -> bool:
    """Whether ``func`` calls :func:`require_loader`, itself or through a function of its
    own module (a test's ``_node()`` helper)."""
    if func in _NEEDS:
        return _NEEDS[func]
    _NEEDS[func] = False  # a recursive helper is decided by its other calls
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    names = _names(code)
    found = "require_loader" in names or any(
        inspect.isfunction(f) and f.__module__ == func.__module__ and _needs_a_loader(f)
        for f in (func.__globals__.get(n) for n in names)
    )
    _NEEDS[func] = found
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``loader`` every test that needs a real CLI: it, or a fixture it uses, calls
    :func:`require_loader` (a test module may also say ``pytestmark = pytest.mark.loader``).
    ``pytest -m "not loader"`` is then the developer lane, and a new codec's loader tests
    join the right lane without a list."""
    del config
    for item in items:
        if not isinstance(item, pytest.Function) or item.get_closest_marker("loader"):
            continue
        funcs = [item.function]
        for defs in item._fixtureinfo.name2fixturedefs.values():
            funcs.extend(d.func for d in defs)
        if any(_needs_a_loader(f) for f in funcs):
            item.add_marker(pytest.mark.loader)
