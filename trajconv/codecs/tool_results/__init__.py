"""What a JSONL reader checks of a tool result before it makes a record of it.

A shared package, not a module of ``common``: the format pages
(:mod:`trajconv.codecs.formats`) list the diagnostic codes a codec's own modules and the
shared packages it imports name, so the codes said here are listed for each reader that
uses it.
"""

from __future__ import annotations

from collections.abc import Container

from trajconv.codecs.common import LineUnit


def answered(
    unit: LineUnit, call_id: object, calls: Container[str], done: Container[str]
) -> str | None:
    """The call a tool result of ``unit``'s line answers, or None after dropping the result:
    ``orphan-tool-result`` for a call the session never made (or no call id),
    ``repeated-terminal-result`` for a call already answered."""
    if not isinstance(call_id, str) or call_id not in calls:
        unit.drop("orphan-tool-result")
        return None
    if call_id in done:
        unit.drop("repeated-terminal-result")
        return None
    return call_id
