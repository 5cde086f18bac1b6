"""OpenCode reader: one session of ``opencode.db``, the legacy ``storage/`` JSON files or an
``opencode export`` document -> Snapshot.

Format facts: ``codecs/opencode/README.md`` (OpenCode 1.18.33). Rules:

* the native unit is a part (row or file); a message with no parts is one unit itself;
* ``text`` parts of a user message -> ``user`` (``synthetic`` ones, injected by the harness,
  -> ``system``; ``ignored`` ones, never sent to the model, are counted); of an assistant
  message -> ``assistant`` with ``providerID/modelID`` as the model;
* ``reasoning`` -> ``reasoning``;
* ``tool`` -> ``tool-call`` (``callID``, ``tool``, ``state.input``) and, for a ``completed``
  or ``error`` state, its ``tool-result``: ``completed`` is ok unless the bash tool's
  ``metadata.exit`` is non-zero (OpenCode keeps a failing command ``completed``, the spec's
  2026-12 observations), ``error`` is not ok with ``state.error`` as the output; results
  follow all of their message's parts, as OpenCode sends them to the model;
  ``pending`` / ``running`` calls have no result (``pending-tool-call``);
* ``step-start``, ``step-finish``, ``retry``, ``snapshot``, ``patch`` -> ``lifecycle-dropped``;
  ``compaction`` -> ``compaction-state``; ``file``, ``agent``, ``subtask`` ->
  ``non-text-content``; anything else -> ``unknown-kind``; every byte stays in the
  ``rows.jsonl`` artifact (or the export document);
* an assistant message's ``error`` ({name, data.message}) -> a ``system`` record;
* record ids are ``opencode:<part id>`` (a tool's result ``opencode:<part id>:result``);
* a part row whose message row is missing (``orphan-part``) is kept in ``rows.jsonl``;
* a sub-session (task tool) is its own session: its ``parent_id`` is the Snapshot's
  ``parent_session_id``, and a parent lists its children in ``children.json``.
"""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.base import Limits
from trajconv.codecs.opencode import layout
from trajconv.codecs.opencode_lineage import project
from trajconv.snapshot.models import Snapshot

READER = "opencode/1"
HARNESS = "opencode"


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    return project.read(layout.resolve(path, session), limits or Limits(), layout.FLAVOUR)
