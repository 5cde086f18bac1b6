from __future__ import annotations

import os

import pytest

from trajconv.loaders import tools_dir


@pytest.fixture(scope="session")
def native_tools() -> os.PathLike[str]:
    """The folder where `python -m trajconv.loaders install` put the pinned native CLIs."""
    return tools_dir()


def require_loader(found: object, harness: str) -> None:
    """Skip outside CI with the install hint; fail under CI=true when a loader is missing."""
    if found:
        return
    hint = f"install it with: python -m trajconv.loaders install {harness}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the {harness} native loader is missing under CI; {hint}")
    pytest.skip(f"{harness} native loader not installed; {hint}")
