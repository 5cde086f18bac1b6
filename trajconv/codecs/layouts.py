"""Path walking the codecs' ``layout`` modules share (a codec's own layout names its files)."""

from __future__ import annotations

from pathlib import Path


def listing(folder: Path, pattern: str | None = None) -> list[Path]:
    """What ``folder`` holds (every entry, or the paths ``pattern`` matches below it), sorted;
    none when ``folder`` is not a folder (a home without that part)."""
    if not folder.is_dir():
        return []
    return sorted(folder.iterdir() if pattern is None else folder.glob(pattern))
