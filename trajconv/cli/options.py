"""Options that more than one command module takes, worded once."""

from __future__ import annotations

import click

ONLY_CWD = click.option(
    "--cwd", default=None, help="only sessions whose working directory is this one"
)
"""``--cwd`` as a filter of the sessions listed or searched."""

SINCE = click.option(
    "--since", default=None, help="only sessions updated since a date, a time or an age (3d, 12h)"
)
