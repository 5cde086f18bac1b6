"""Whether trajconv runs from its source repository (a clone, an editable install) or
from an installed package, which has no ``fixtures/``, ``evidence/`` or ``.tools/``."""

from __future__ import annotations

from pathlib import Path


def source_checkout() -> Path | None:
    """The repository folder trajconv runs from, or ``None`` when installed as a package."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "fixtures").is_dir():
        return root
    return None
