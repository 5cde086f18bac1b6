"""Every line the CLI prints, made inert for the terminal it may reach.

Session titles, paths, ids and error messages come from native files and store
indexes: an OSC or CSI sequence in one would retitle, clear or rewrite the user's
terminal (issue 34: ``discover`` printed OSC 0 as it was). :func:`echo` shows each
control as ``\\xNN`` / ``\\uNNNN`` as the views do (:func:`trajconv.textsafe.inert`);
:func:`json_text` writes them as JSON escapes, so ``--json`` output stays the same data.
"""

from __future__ import annotations

import re
from typing import Any

import click

from trajconv.textsafe import inert

# what json.dumps(ensure_ascii=False) leaves raw: DEL, C1 controls, bidi controls, BOM
_RAW_IN_JSON = "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"


def echo(message: object = "", *, nl: bool = True, err: bool = False) -> None:
    click.echo(inert(str(message)), nl=nl, err=err)


def json_text(value: Any) -> str:
    """``value`` as indented JSON text with no control a terminal acts on (:mod:`json` and
    the pattern only when a command prints JSON: start-up, issue 38)."""
    import json

    text = json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub(_RAW_IN_JSON, lambda m: f"\\u{ord(m.group()):04x}", text)
