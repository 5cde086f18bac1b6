"""The diagnostics registry (docs/design.md §4): every code, its severity and meaning, in one place.

Reader codes say what was not projected into records; ``units=True`` marks the
codes whose count is a number of native units (lines, events, blobs, messages),
so that conservation holds: units seen = units in records + unit-counting
diagnostics. Writer codes start with ``untranslated-`` or say what the writer
had to derive. Samples name places (``updates.jsonl:12``, record ids), never
conversation text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from trajconv.snapshot.models import Diagnostic

Severity = Literal["info", "warning", "error"]
Side = Literal["reader", "writer"]
MAX_SAMPLES = 5
MAX_NAMES = 32


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity
    meaning: str
    units: bool = False
    """True when the count is a number of native units left out of records."""
    side: Side = "reader"


_TABLE: dict[tuple[Side, bool, Severity], dict[str, str]] = {
    # (side, whether the count is a number of native units, severity): {code: meaning}
    # reader: native units left out of records, counted (``units``)
    ("reader", True, "info"): {
        "blank-line": "blank line in a line-oriented log, skipped",
        "lifecycle-dropped": "lifecycle, telemetry or UI-state unit with no conversational content",
        "superseded-progress": "non-terminal tool progress update, folded into its call",
        "rewound": "unit on a branch the user rewound; kept in artifacts, not in records",
        "redacted-content": "encrypted or redacted content, kept in artifacts, never decoded",
        "merged-chunk": "streamed chunk merged into the record of its first chunk",
        "duplicate-message": "the same message written again, deduplicated by its id",
        "compaction-state": "compaction or checkpoint state, kept in artifacts",
        "not-resumed-file": (
            "line of a session file the harness does not resume from (another file of the same "
            "session holds the conversation), kept in artifacts"
        ),
        "aborted-message": (
            "assistant message that ended in an error or was aborted, which the harness does not "
            "send its model again; kept in artifacts"
        ),
        "empty-content": "unit with no text or call to project",
        "non-text-content": "image, audio or resource block kept in artifacts, not projected",
        "nested-namespace": (
            "state rows of a subgraph or subagent namespace; kept in artifacts, not projected"
        ),
    },
    ("reader", True, "warning"): {
        "torn-line": "line that is not complete JSON (a torn or partial write), skipped",
        "invalid-line": "line that is not valid UTF-8 or not a valid record, skipped",
        "unknown-kind": "native unit of a kind this reader does not know, kept in artifacts",
        "repeated-terminal-result": "terminal tool update after the first one for the same call",
        "orphan-tool-result": "tool result or update for a call the session never made",
        "orphan-part": "part of a message that is not in the store, kept in artifacts",
        "crash-tail": "unfinished tail of a crashed write, which the harness itself drops",
        "pending-writes": (
            "writes of an unfinished step, not yet part of the saved state; kept in artifacts"
        ),
    },
    # reader: facts about the session, not unit counts
    ("reader", False, "info"): {
        "media-part": "image or audio part of a message, kept in artifacts, not projected",
        "session-id-derived": "the source names no session id; the id is derived from its bytes",
        "block-dropped": (
            "image, orphan result or redacted block inside a message that gave other records; kept "
            "in artifacts, not projected"
        ),
        "ids-not-unique": "native ids repeat, so record ids come from positions",
        "bom-stripped": "line starting with a UTF-8 byte-order mark, kept without the mark",
        "secret-dropped": "credential-like field left out of the Snapshot",
        "secret-redacted": (
            "secrets found in the session's text were replaced by [REDACTED:<kind>] and its native "
            "bytes (artifacts) left out (--redact; counted by kind)"
        ),
        "context-not-projected": (
            "text the harness put around or before the user's messages for the model (date, "
            "workspace facts, reminders) is kept in artifacts, not in the records"
        ),
        "repeated-result-replayed": (
            "a second copy of a tool result that the harness also sends its model (so its model "
            "saw the result twice) is not a record; a target shows the result once"
        ),
        "provider-ids-not-projected": (
            "ids a model provider gave a message's parts (Responses-API items) or the message's "
            "name are kept in artifacts, not in the records; a target is written without them"
        ),
    },
    ("reader", False, "warning"): {
        "subagent-separate": (
            "sub-agent this reader keeps as a session of its own, not as a child of this Snapshot: "
            "a conversion of this session does not carry it (convert it by the id the sample "
            "names)"
        ),
        "subagent-unlinked": (
            "sub-agent whose spawning call is not among the session's tool calls: kept as a child "
            "without a parent_call_id"
        ),
        "continuation-missing": (
            "the file that continues this session is absent or outside its folder; not read"
        ),
        "metadata-missing": "metadata sidecar absent; session facts left null",
        "metadata-invalid": "metadata sidecar unreadable; session facts left null",
        "pending-tool-call": "tool call with no result in the source",
        "chain-break": "native id/parent chain is broken at this unit",
        "symlink-skipped": (
            "file beside the session that is a symbolic link (it may point anywhere): not read"
        ),
        "replaced-bytes": (
            "line with bytes that are not UTF-8, kept with each such byte replaced by U+FFFD"
        ),
    },
    # writer: what the target cannot hold, or had to derive
    ("writer", False, "info"): {
        "system-not-sent": (
            "system text is kept in the target's files, but its CLI does not send it to the model "
            "when the session is continued"
        ),
        "user-read-as-context": (
            "a user message that opens as the target's own injected context does (Claude Code's "
            "<system-reminder>) is sent to the model as written, but the target's reader takes it "
            "for the harness's context, not a prompt"
        ),
        "untranslated-exit-code": "process exit status the target cannot hold was left out",
        "untranslated-model": "model name the target cannot hold was left out",
        "untranslated-time": "timestamps the target cannot hold were left out",
        "untranslated-title": "session title the target cannot hold was left out",
        "untranslated-branch": "git branch the target cannot hold was left out",
        "untranslated-parent-session": "parent session id the target cannot hold was left out",
        "defaults-assumed": (
            "fields the target requires and the source lacks were set to the target's own defaults"
        ),
        "untranslated-artifact": "native sidecar bytes the target cannot hold were left out",
        "untranslated-message-boundary": (
            "consecutive messages of one role become one message in the target"
        ),
        "reordered-result": "tool result moved next to its call, where the target needs it",
        "untranslated-note-kind": (
            "an error or warning note is written as an info note: the target's error and warning "
            "events need fields the Snapshot does not hold (error type, status code)"
        ),
        "ids-derived": "ids the target needs were derived deterministically from the Snapshot",
        "title-missing": "the source has no title; the target shows none",
        "exit-status-in-text": (
            "the target's tool output has no status field; the exit code or failure heads the "
            "output text, as its own tools print it"
        ),
        "reasoning-as-text": (
            "the target replays reasoning as reasoning only to the model that wrote it; any other "
            "model continuing the session gets it as assistant text, joined with its step's text"
        ),
        "codex-model-provider": (
            "the Codex session names this model_provider; Codex resumes it only under that "
            "provider (writer option model_provider)"
        ),
        "model-assumed": (
            "a record without a model reads back with the model of its message or of an earlier one"
        ),
        "context-as-system": (
            "system text (context the source's harness may have sent inside a user message) is "
            "sent to the target's model as a system message"
        ),
        "time-stamped-on-load": (
            "records without a time are written without one; the target's CLI gives them the time "
            "it loads them (in memory, never saved)"
        ),
    },
    ("writer", False, "warning"): {
        "untranslated-reasoning": "reasoning the target cannot hold was left out",
        "untranslated-subagent": (
            "records of a sub-agent session the target cannot hold as a child were left out "
            "(counted by record; samples name the child session)"
        ),
        "untranslated-system": "system text the target cannot hold was left out",
        "untranslated-observation": "observation the target cannot hold was left out",
        "untranslated-tool-call": (
            "a tool call the target holds as text shown to the user only (a text-only history): "
            "its model is not sent it"
        ),
        "untranslated-tool-result": (
            "a tool result the target holds as text shown to the user only (a text-only history): "
            "its model is not sent it"
        ),
        "untranslated-assistant": "assistant text the target cannot hold was left out",
        "untranslated-tool-status": "tool success flag the target cannot hold was left out",
        "untranslated-cwd": (
            "working directory the target cannot hold as it is was left out or changed"
        ),
        "user-read-as-command": (
            "a user message that opens as a command does (Gemini CLI's / or ?) is kept in the "
            "target's files, but its CLI neither sends it to the model nor reads it as a prompt"
        ),
        "untranslated-steering": (
            "user guidance given inside a running turn, which the target cannot hold, was left out"
        ),
        "untranslated-tool-arguments": (
            'tool arguments that are not a JSON object were written as {"_raw": text}'
        ),
        "unlinked-result": "tool result whose call is not in the session, written without its link",
        "untranslated-pending-call": "tool call without a result was left out",
        "unanswered-turn": (
            "the last turn has no final answer and was written so (--allow-lossy); the target sees "
            "it unanswered"
        ),
        "untranslated-orphan-result": "tool result without its call was left out",
        "timestamps-synthesized": "the target needs times the source lacks; derived, not real",
        "tool-status-assumed": (
            "the source does not say whether a tool succeeded; the target needs a status"
        ),
        "cwd-missing": "the source has no working directory; the target needs one",
        "target-prompt-missing": (
            "the target keeps its own system prompt in the session, which the source lacks: it is "
            "written empty, so the continued agent runs without its harness's instructions"
        ),
    },
}
_CODES: tuple[Code, ...] = tuple(
    Code(code, severity, meaning, units=units, side=side)
    for (side, units, severity), codes in _TABLE.items()
    for code, meaning in codes.items()
)

REGISTRY: dict[str, Code] = {c.code: c for c in _CODES}


def lookup(code: str) -> Code:
    try:
        return REGISTRY[code]
    except KeyError:
        raise KeyError(f"unregistered diagnostic code {code!r}") from None


class Diagnostics:
    """Collects counted diagnostics with a bounded sample of places."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._samples: dict[str, list[str]] = {}
        self._names: dict[str, dict[str, int]] = {}

    def add(
        self, code: str, sample: str | None = None, count: int = 1, *, name: str | None = None
    ) -> None:
        """Count ``count`` occurrences of ``code``; ``name`` tallies native kind names."""
        if code not in REGISTRY:
            lookup(code)  # the error
        if count <= 0:
            return
        self._counts[code] = self._counts.get(code, 0) + count
        if name is not None:
            if type(name) is not str:  # a native kind that is a number or a list (issue 34)
                name = repr(name)[:40]
            names = self._names.setdefault(code, {})
            if name in names or len(names) < MAX_NAMES:
                names[name] = names.get(name, 0) + count
        if sample is not None:
            samples = self._samples.setdefault(code, [])
            if len(samples) < MAX_SAMPLES and sample not in samples:
                samples.append(sample)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        for d in diagnostics:
            self.add(d.code, count=d.count)
            samples = self._samples.setdefault(d.code, [])
            for s in d.samples:
                if len(samples) < MAX_SAMPLES and s not in samples:
                    samples.append(s)

    def count(self, code: str) -> int:
        return self._counts.get(code, 0)

    def __bool__(self) -> bool:
        return bool(self._counts)

    def to_models(self) -> tuple[Diagnostic, ...]:
        out = []
        for code in sorted(self._counts):
            c = REGISTRY[code]
            out.append(
                Diagnostic(
                    code=code,
                    severity=c.severity,
                    count=self._counts[code],
                    message=c.meaning,
                    samples=self._sample_list(code),
                )
            )
        return tuple(out)

    def _sample_list(self, code: str) -> tuple[str, ...]:
        named = self._names.get(code)
        if named:
            return tuple(f"{n}: {c}" for n, c in sorted(named.items()))
        return tuple(self._samples.get(code, ()))


def unit_count(diagnostics: Iterable[Diagnostic]) -> int:
    """Native units accounted for by diagnostics (the conservation term)."""
    return sum(d.count for d in diagnostics if REGISTRY.get(d.code, _UNKNOWN).units)


_UNKNOWN = Code("?", "info", "?", units=False)
