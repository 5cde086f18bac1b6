"""The trajconv version, from the installed distribution (read without importing
``importlib.metadata``: see :mod:`trajconv.distinfo`)."""

from trajconv.distinfo import version

__version__ = version("trajconv") or "0.0.0+source"  # None: a source tree without install
