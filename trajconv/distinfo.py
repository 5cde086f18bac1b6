"""Entry points and the trajconv version without importing :mod:`importlib.metadata`.

Start-up (issue 38): importing ``importlib.metadata`` (it pulls in ``email``, ``zipfile``,
``csv`` ...) and its scan of every distribution cost ``trajconv --help`` and ``trajconv
codecs`` about a third of their CPU time. This module does the same discovery with
``os.listdir`` and a line parser, in the same order, so a third-party codec registered
by an entry point in any installed distribution is found exactly as before:

* distributions are the ``*.dist-info`` / ``*.egg-info`` folders of each ``sys.path``
  entry, in ``sys.path`` order, grouped by normalized name in listing order (as
  ``importlib.metadata``'s ``Lookup``), the first of each normalized name winning (its
  ``_unique``);
* ``entry_points.txt`` is read as ``importlib.metadata``'s ``Sectioned`` reads it.

Where that model does not hold (a zip or ``.egg`` on ``sys.path``, a meta-path finder
other than ``PathFinder`` that finds distributions, an oddly cased metadata folder)
it falls back to ``importlib.metadata`` itself.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from importlib.machinery import PathFinder
from typing import Any, NamedTuple

_NORMALIZE = re.compile(r"[-_.]+")


class _Fallback(Exception):
    """The fast scan cannot promise the result ``importlib.metadata`` gives."""


class EntryPoint(NamedTuple):
    """One ``name = value`` line of a group (``value`` is ``module:attr``): a frozen value
    (a NamedTuple, not a ``@dataclass``, which would cost ``trajconv --help`` the import of
    :mod:`dataclasses` and :mod:`inspect`)."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        """The object named by ``value``, as ``importlib.metadata.EntryPoint.load``."""
        module, _, attr = self.value.partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in attr.split("[", 1)[0].strip().split("."):
            if part:
                obj = getattr(obj, part)
        return obj


def _normalize(name: str) -> str:
    return _NORMALIZE.sub("-", name).lower().replace("-", "_")


def _distributions() -> tuple[list[str], list[str]]:
    """Metadata folders: the unique distributions, in ``importlib.metadata``'s order, and
    every one found (a name shadowed further down ``sys.path`` too), as its
    ``distributions()`` yields them."""
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        raise _Fallback
    seen: set[str] = set()
    found: list[str] = []
    every: list[str] = []
    for entry in sys.path:
        root = entry or "."
        if root.lower().endswith(".egg") or os.path.isfile(root):
            raise _Fallback
        try:
            children = os.listdir(root)
        except OSError:
            continue
        groups: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                if not child.endswith((".dist-info", ".egg-info")):
                    raise _Fallback  # importlib.metadata names such a folder by its METADATA
                name = _normalize(low.rpartition(".")[0].partition("-")[0])
                groups.setdefault(name, []).append(os.path.join(entry, child))
        for name, paths in groups.items():
            every.extend(paths)
            if name not in seen:
                seen.add(name)
                found.append(paths[0])
    return found, every


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _parse(text: str, group: str) -> list[EntryPoint]:
    section = None
    out = []
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, _, value = line.partition("=")
            out.append(EntryPoint(name.strip(), value.strip(), group))
    return out


@functools.cache
def _scan_all() -> tuple[list[str], list[str]] | None:
    try:
        return _distributions()
    except _Fallback:
        return None


def _scan() -> list[str] | None:
    """The unique distributions' metadata folders; None: ask ``importlib.metadata``."""
    found = _scan_all()
    return None if found is None else found[0]


@functools.cache
def _entry_points_text(path: str) -> str | None:
    """The ``entry_points.txt`` of a metadata folder: ``""`` when it has none, None when it
    has one that cannot be read here."""
    try:
        with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as fh:
            return fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except (OSError, UnicodeDecodeError):
        return None


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of ``group`` in installed distributions, in discovery order."""
    dists = _scan()
    if dists is None:
        from importlib import metadata

        return [EntryPoint(e.name, e.value, e.group) for e in metadata.entry_points(group=group)]
    out: list[EntryPoint] = []
    for path in dists:
        text = _entry_points_text(path)
        if text:
            out.extend(_parse(text, group))
    return out


def version(name: str) -> str | None:
    """The ``Version`` of the first installed distribution called ``name`` (None: none)."""
    dists = _scan()
    if dists is not None:
        key = _normalize(name)
        for path in dists:
            if _normalize(os.path.basename(path).rpartition(".")[0].partition("-")[0]) != key:
                continue
            meta = "METADATA" if path.endswith(".dist-info") else "PKG-INFO"
            for line in (_read(os.path.join(path, meta)) or "").splitlines():
                if not line:
                    break  # the headers end at the first blank line
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
            break  # found, but no Version header: ask importlib.metadata
        else:
            return None
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


PYDANTIC_PLUGIN_GROUP = "pydantic"
"""The entry-point group pydantic loads its plugins from (``pydantic.plugin._loader``)."""


def _pydantic_plugins_registered() -> bool:
    """Whether any installed distribution may register a pydantic plugin: True unless the
    fast scan holds and no ``entry_points.txt`` of any distribution (shadowed ones too, as
    pydantic iterates ``importlib.metadata.distributions()``) has a ``pydantic`` entry."""
    found = _scan_all()
    if found is None:
        return True
    for path in found[1]:
        text = _entry_points_text(path)
        if text is None or _parse(text, PYDANTIC_PLUGIN_GROUP):
            return True  # one, or a file unreadable here: pydantic reads it itself
    return False


def spare_pydantic_plugin_scan() -> None:
    """Tell pydantic there are no plugins, when no distribution registers one.

    pydantic looks for plugins when it builds its first validator: it imports
    ``importlib.metadata`` and reads every distribution's entry points, about a tenth of a
    small conversion's CPU time (issue 38). When this module's scan, the same discovery,
    finds no ``pydantic`` entry point, the loader module is given pydantic in its place:
    its ``get_plugins()`` returns what pydantic's own would (none), so validation is
    unchanged. A registered plugin, a scan that cannot promise the result, or a loader
    already imported leave pydantic to do its own loading.
    """
    name = "pydantic.plugin._loader"
    if name in sys.modules or _pydantic_plugins_registered():
        return
    import types

    import pydantic.plugin

    plugins: dict[str, Any] = {}

    def get_plugins(*_args: Any, **_kwargs: Any) -> Any:
        return plugins.values()  # as pydantic's own when it found none

    loader = types.ModuleType(name, "No pydantic plugins are installed (trajconv.distinfo).")
    loader.__dict__.update(
        PYDANTIC_ENTRY_POINT_GROUP=PYDANTIC_PLUGIN_GROUP,
        _plugins=plugins,
        _loading_plugins=False,
        get_plugins=get_plugins,
    )
    sys.modules[name] = loader
    pydantic.plugin._loader = loader  # type: ignore[attr-defined]
