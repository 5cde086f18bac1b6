"""Kilo writer: Snapshot -> a ``kilo export`` document + ``prepare.py``.

The native store is one shared SQLite database, so the export is a readout
(``kilo-export.json``, the document ``kilo export`` prints and ``kilo import`` reads) whose
``prepare.py`` installs it with the real CLI's own ``kilo import`` and checks it with ``kilo
export`` (``README.md`` "Writing"). The lowering is OpenCode's
(``trajconv.codecs.opencode_lineage.lower``): one user message per user record, one assistant
message per model step with ``step-start`` / ``reasoning`` / ``text`` / ``tool`` /
``step-finish`` parts, a tool part holding its call and result (``completed`` with an exit
code in ``metadata.exit``, or ``error``), OpenCode-shaped ids derived from the source session;
messages name Kilo's default agent ``code``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from trajconv.codecs.base import ExportPlan
from trajconv.codecs.kilo.layout import FLAVOUR
from trajconv.codecs.opencode_lineage import lower
from trajconv.snapshot.models import Snapshot

#: the document ``kilo export`` prints, written beside ``prepare.py``
DOCUMENT = FLAVOUR.document


def plan(
    snapshot: Snapshot,
    *,
    allow_lossy: bool = False,
    cwd: str | None = None,
    agent: str | None = None,
    **_options: Any,
) -> ExportPlan:
    """``agent``: the agent the messages name (default Kilo's ``code``; ``--kilo-agent``)."""
    flavour = dataclasses.replace(FLAVOUR, agent=agent) if agent else FLAVOUR
    return lower.plan(snapshot, flavour, allow_lossy=allow_lossy, cwd=cwd)
