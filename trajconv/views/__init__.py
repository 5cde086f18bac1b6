"""Views of a session for people: terminal text, Markdown, one HTML page, and a diff.

Each view is a pure function of Snapshots (``trajconv show``): the same Snapshot gives
byte-identical Markdown and HTML, and the same text at the same width. Built on the
Snapshot alone, so every codec, present and future, can be shown.
"""

from __future__ import annotations

from collections.abc import Iterator

from trajconv.snapshot.models import Snapshot
from trajconv.views.model import Family

FORMATS = ("text", "markdown", "html")


def chunks(
    family: Family | Snapshot,
    fmt: str,
    *,
    full: bool = False,
    width: int = 100,
    color: bool = False,
) -> Iterator[str]:
    """The view ``fmt`` (one of :data:`FORMATS`) in pieces, a record or block at a time."""
    if fmt == "text":
        from trajconv.views import terminal

        return terminal.chunks(family, width=width, color=color, full=full)
    if fmt == "markdown":
        from trajconv.views import markdown

        return markdown.chunks(family, full=full)
    if fmt == "html":
        from trajconv.views import html

        return html.chunks(family)
    raise ValueError(f"unknown view format {fmt!r}; one of {', '.join(FORMATS)}")


def render(family: Family | Snapshot, fmt: str, **options: object) -> str:
    return "".join(chunks(family, fmt, **options))  # type: ignore[arg-type]


__all__ = ["FORMATS", "Family", "chunks", "render"]
