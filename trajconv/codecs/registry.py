"""Codecs come from the ``trajconv.codecs`` entry-point group, built-ins included.

Loading is lazy: ``names()`` reads entry-point metadata only (``trajconv.distinfo``,
the same discovery as ``importlib.metadata`` without importing it); a codec module is
imported the first time it is asked for.
"""

from __future__ import annotations

import functools

from trajconv.codecs.base import Codec
from trajconv.distinfo import EntryPoint, entry_points
from trajconv.errors import UsageError

GROUP = "trajconv.codecs"


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if not found:
        raise UsageError(
            "no codecs are registered: install trajconv (pip install -e .) so its "
            "entry points exist"
        )
    return found


def names() -> list[str]:
    return sorted(_entry_points())


@functools.cache
def _load(name: str) -> Codec:
    codec = _entry_points()[name].load()
    if not isinstance(codec, Codec):
        raise UsageError(f"entry point {name!r} in {GROUP} is not a trajconv Codec")
    return codec


def all_codecs() -> list[Codec]:
    return [_load(n) for n in names()]


def get(name: str) -> Codec:
    """The codec called ``name`` or one of its aliases; 'did you mean' otherwise."""
    key = name.strip().lower()
    if key in _entry_points():
        return _load(key)
    for codec in all_codecs():
        if key in codec.aliases:
            return codec
    known = names() + [a for c in all_codecs() for a in c.aliases]
    import difflib

    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(names())}"
    raise UsageError(f"unknown harness {name!r}{hint}")
