"""OpenCode writer: Snapshot -> an ``opencode export`` document + ``prepare.py``.

The native store is one shared SQLite database, so the export is a readout
(``opencode-export.json``, the document ``opencode export`` prints and ``opencode import``
reads, ``codecs/opencode/README.md``) and its ``prepare.py`` (``prepare_import.py``
here) installs it with the real CLI's own ``opencode import`` and checks the result with
``opencode export``.

Lowering (the codec README, "Writer"): one user message per user record (a ``text`` part); the
records that answer it become assistant messages, one per model step (a new step starts when text,
reasoning or a call follows a tool result), each with the parts ``step-start``,
``reasoning`` / ``text`` / ``tool`` in record order, ``step-finish``. A tool part holds its
call and its result: ``completed`` (output; an exit code in ``metadata.exit``, which
OpenCode's bash tool uses and the reader reads back) or ``error`` (the output as
``state.error``). Ids follow OpenCode's scheme (``ses_`` descending, ``msg_`` / ``prt_``
ascending: 12 hex digits of ``ms * 4096 + n`` then 14 base-62 characters, here derived from
the Snapshot id, never random). OpenCode cannot hold system text or observations in a
message, a tool result without its call, or per-step token counts the source lacks.
"""

from __future__ import annotations

from typing import Any

from trajconv.codecs.base import ExportPlan
from trajconv.codecs.opencode.layout import FLAVOUR
from trajconv.codecs.opencode_lineage import lower
from trajconv.snapshot.models import Snapshot

#: the OpenCode version whose document shape this writer follows
FORMAT_VERSION = FLAVOUR.format_version
#: the document ``opencode export`` prints, written beside ``prepare.py``
DOCUMENT = FLAVOUR.document


def prepare_script() -> str:
    return lower.prepare_script(FLAVOUR)


def plan(
    snapshot: Snapshot, *, allow_lossy: bool = False, cwd: str | None = None, **_options: Any
) -> ExportPlan:
    return lower.plan(snapshot, FLAVOUR, allow_lossy=allow_lossy, cwd=cwd)
