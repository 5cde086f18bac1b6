"""A command-line argument that is a path, or a store URL (``s3://bucket/prefix``)."""

from __future__ import annotations

from typing import Any

import click


class StorePath(click.Path):
    """``click.Path`` for a path; a ``scheme://`` URL passes through as text (a Path
    would fold its ``//``), to be opened as an object store."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from trajconv.store import is_url  # no store module: --help and codecs stay small

        if isinstance(value, str) and is_url(value):
            return value
        return super().convert(value, param, ctx)
