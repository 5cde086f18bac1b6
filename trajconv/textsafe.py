"""Text made inert for a terminal, a bidi algorithm or a viewer (no dependencies, so the
CLI can use it before anything heavy is imported)."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls: a terminal acts on them (ANSI
# escapes start with ESC), so they are shown as \xNN. Bidirectional controls and
# invisible marks reorder or hide text ("Trojan Source"), so they are shown as \uNNNN.
CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every control a terminal, a bidi algorithm or a viewer would act on
    made visible (``\\x1b``, ``\\u202e``); a CR before a newline is dropped."""
    return CONTROL.sub(_visible, text.replace("\r\n", "\n"))
