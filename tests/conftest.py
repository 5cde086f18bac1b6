from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from types import CodeType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from proof import tools_dir

# No test depends on how fast this machine is: Hypothesis neither fails an example that
# takes long (its 200 ms deadline) nor a strategy that is slow to draw on a loaded machine.
settings.register_profile("steady", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("steady")


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


def parallel_clis() -> int:
    """How many real CLIs one test process runs at once (the continuation pairs' thread
    pool): two per core it has to itself, the cores shared among the xdist workers
    (``pytest -n``), so that the pool and xdist do not both fill the same cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, 2 * (cores or 1) // max(1, workers))


def _shares_a_fixture(item: pytest.Function) -> bool:
    """Whether the test uses a module- or session-scoped fixture of the suite (a CLI
    installed once, the pairs continued once): its module then runs on one xdist worker."""
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for d in defs:
            if d.scope in ("module", "package", "session") and d.func.__module__.startswith(
                "tests."
            ):
                return True
    return False


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``loader`` every test that needs a real CLI: it, or a fixture it uses, calls
    :func:`require_loader` (a test module may also say ``pytestmark = pytest.mark.loader``).
    ``pytest -m "not loader"`` is then the developer lane, and a new codec's loader tests
    join the right lane without a list. Under xdist (``-n N --dist loadgroup``) the tests
    that share a module- or session-scoped fixture run on one worker (one ``xdist_group``
    per module), so no expensive fixture is built twice; the rest spread one by one."""
    grouping = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        if not item.get_closest_marker("loader"):
            funcs = [item.function]
            for defs in item._fixtureinfo.name2fixturedefs.values():
                funcs.extend(d.func for d in defs)
            if any(_needs_a_loader(f) for f in funcs):
                item.add_marker(pytest.mark.loader)
        if grouping and not item.get_closest_marker("xdist_group") and _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
