"""trajconv: move a saved AI coding-agent session from one harness to another.

Public API: :func:`read`, :func:`write`, :func:`convert`, :func:`discover`,
:func:`codec`; the Snapshot model in :mod:`trajconv.snapshot`. Imports are lazy
so ``trajconv --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajconv.api import codec, convert, discover, read, write
    from trajconv.version import __version__

__all__ = ["__version__", "codec", "convert", "discover", "read", "write"]


def __getattr__(name: str) -> Any:
    if name in ("codec", "convert", "discover", "read", "write"):
        from trajconv import api

        return getattr(api, name)
    if name == "__version__":  # read from the installed metadata when first asked for
        from trajconv.version import __version__

        return __version__
    raise AttributeError(name)
