"""What a reader's projection of one session keeps of its tool calls: the calls it made
records of, the ones a result answered, and at the end each unanswered call named.

A shared package, not a module of ``common``: the format pages
(:mod:`trajconv.codecs.formats`) list the diagnostic codes a codec's own modules and the
shared packages it imports name, so ``pending-tool-call`` said here is listed for each
reader that builds on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import JsonValue

    from trajconv.snapshot.builder import EvidenceFields, SnapshotBuilder


class CallProjector:
    """A reader's projection of one session: the builder ``b`` and its diagnostics ``d``,
    the current ``turn``, the tool calls made (call id -> the call's record id) and the
    call ids a result answered (``done``)."""

    def __init__(self, b: SnapshotBuilder) -> None:
        self.b = b
        self.d = b.diagnostics
        self.turn: int | None = None
        self.calls: dict[str, str] = {}  # call id -> record id
        self.done: set[str] = set()

    def add_call(
        self,
        rid: str,
        call_id: str,
        name: str,
        arguments: JsonValue,
        *,
        time: str | None,
        evidence: EvidenceFields,
    ) -> None:
        """The record ``rid`` in the current turn: the call ``call_id`` of tool ``name``,
        pending until a result answers it."""
        self.b.add_call(rid, call_id, name, arguments, time=time, turn=self.turn, evidence=evidence)
        self.calls[call_id] = rid

    def answer(
        self,
        rid: str,
        call_id: str,
        ok: bool | None,
        output: str,
        *,
        time: str | None,
        evidence: EvidenceFields,
        exit_code: int | None = None,
    ) -> None:
        """The record ``rid`` in the current turn: the result of ``call_id``, then answered."""
        self.b.add_result(
            rid,
            call_id,
            ok,
            output,
            time=time,
            turn=self.turn,
            evidence=evidence,
            exit_code=exit_code,
        )
        self.done.add(call_id)

    def finish(self) -> None:
        """Name each call no result answered a ``pending-tool-call`` (by its record id)."""
        for call_id, rid in self.calls.items():
            if call_id not in self.done:
                self.d.add("pending-tool-call", rid)
