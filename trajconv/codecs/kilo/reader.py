"""Kilo reader: one session of ``kilo.db`` or a ``kilo export`` document -> Snapshot.

Kilo 7.7.7 keeps OpenCode's tables and part types (``README.md`` "Format"), so the rules are
OpenCode's, applied by ``trajconv.codecs.opencode_lineage.project``:

* the native unit is a part row (or a document's part); a message with no parts is one unit;
* ``text`` parts of a user message -> ``user`` (as stored: a prompt ``kilo run`` was given
  with a space in it is stored in double quotes, and the model saw it so); ``synthetic`` ones
  -> ``system``; ``ignored`` ones are counted; of an assistant message -> ``assistant`` with
  ``providerID/modelID`` as the model;
* ``reasoning`` -> ``reasoning``;
* ``tool`` -> ``tool-call`` and, for ``completed`` / ``error``, its ``tool-result``:
  ``completed`` is ok unless the bash tool's ``metadata.exit`` is non-zero (Kilo keeps a
  failing command ``completed``), ``error`` is not ok with ``state.error`` as the output;
  results follow all of their message's parts, as Kilo sends them;
* ``step-start``, ``step-finish``, ``retry``, ``snapshot``, ``patch`` -> ``lifecycle-dropped``;
  ``compaction`` -> ``compaction-state``; ``file``, ``agent``, ``subtask`` ->
  ``non-text-content``; anything else -> ``unknown-kind``; every byte stays in ``rows.jsonl``;
* record ids are ``kilo:<part id>`` (a result ``kilo:<part id>:result``);
* a child session (the ``task`` tool) is its own session: its ``parent_id`` is the
  Snapshot's ``parent_session_id``; a parent lists its children in ``children.json``, and the
  task's result (``<task id="ses_…">``) and ``metadata.sessionId`` name the child.

Kilo's own tables (``kilo_board``: the first prompt of a root session as the board's
objective; ``kilo_board_message``; ``session_message`` / ``session_input``, empty in every
session recorded here) and the ``event`` log (the same changes again, as events) are not
read: the messages and parts are the session.
"""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import Limits
from trajconv.codecs.kilo import layout
from trajconv.codecs.opencode_lineage import project
from trajconv.snapshot.models import Snapshot


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    return project.read(layout.resolve(path, session), limits or Limits(), layout.FLAVOUR)
