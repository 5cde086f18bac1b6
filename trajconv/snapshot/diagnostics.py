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
MAX_SAMPLES = 5
MAX_NAMES = 32


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity
    meaning: str
    units: bool = False
    """True when the count is a number of native units left out of records."""
    side: Literal["reader", "writer"] = "reader"


def _r(code: str, severity: Severity, meaning: str, *, units: bool = True) -> Code:
    return Code(code, severity, meaning, units=units, side="reader")


def _w(code: str, severity: Severity, meaning: str) -> Code:
    return Code(code, severity, meaning, units=False, side="writer")


_CODES: tuple[Code, ...] = (
    # reader: units left out of records, counted
    _r("blank-line", "info", "blank line in a line-oriented log, skipped"),
    _r("torn-line", "warning", "line that is not complete JSON (a torn or partial write), skipped"),
    _r("invalid-line", "warning", "line that is not valid UTF-8 or not a valid record, skipped"),
    _r(
        "unknown-kind",
        "warning",
        "native unit of a kind this reader does not know, kept in artifacts",
    ),
    _r(
        "lifecycle-dropped",
        "info",
        "lifecycle, telemetry or UI-state unit with no conversational content",
    ),
    _r("superseded-progress", "info", "non-terminal tool progress update, folded into its call"),
    _r(
        "repeated-terminal-result",
        "warning",
        "terminal tool update after the first one for the same call",
    ),
    _r("orphan-tool-result", "warning", "tool result or update for a call the session never made"),
    _r("orphan-part", "warning", "part of a message that is not in the store, kept in artifacts"),
    _r("rewound", "info", "unit on a branch the user rewound; kept in artifacts, not in records"),
    _r(
        "redacted-content",
        "info",
        "encrypted or redacted content, kept in artifacts, never decoded",
    ),
    _r("merged-chunk", "info", "streamed chunk merged into the record of its first chunk"),
    _r("duplicate-message", "info", "the same message written again, deduplicated by its id"),
    _r("compaction-state", "info", "compaction or checkpoint state, kept in artifacts"),
    _r(
        "not-resumed-file",
        "info",
        "line of a session file the harness does not resume from (another file of the same "
        "session holds the conversation), kept in artifacts",
    ),
    _r(
        "aborted-message",
        "info",
        "assistant message that ended in an error or was aborted, which the harness does not "
        "send its model again; kept in artifacts",
    ),
    _r(
        "subagent-separate",
        "warning",
        "sub-agent this reader keeps as a session of its own, not as a child of this Snapshot: "
        "a conversion of this session does not carry it (convert it by the id the sample names)",
        units=False,
    ),
    _r(
        "subagent-unlinked",
        "warning",
        "sub-agent whose spawning call is not among the session's tool calls: kept as a child "
        "without a parent_call_id",
        units=False,
    ),
    _r(
        "crash-tail",
        "warning",
        "unfinished tail of a crashed write, which the harness itself drops",
    ),
    _r("empty-content", "info", "unit with no text or call to project"),
    _r(
        "non-text-content",
        "info",
        "image, audio or resource block kept in artifacts, not projected",
    ),
    # reader: facts about the session, not unit counts
    _r(
        "media-part",
        "info",
        "image or audio part of a message, kept in artifacts, not projected",
        units=False,
    ),
    _r(
        "session-id-derived",
        "info",
        "the source names no session id; the id is derived from its bytes",
        units=False,
    ),
    _r(
        "continuation-missing",
        "warning",
        "the file that continues this session is absent or outside its folder; not read",
        units=False,
    ),
    _r(
        "metadata-missing",
        "warning",
        "metadata sidecar absent; session facts left null",
        units=False,
    ),
    _r(
        "metadata-invalid",
        "warning",
        "metadata sidecar unreadable; session facts left null",
        units=False,
    ),
    _r("pending-tool-call", "warning", "tool call with no result in the source", units=False),
    _r("chain-break", "warning", "native id/parent chain is broken at this unit", units=False),
    _r(
        "block-dropped",
        "info",
        "image, orphan result or redacted block inside a message that gave other records; "
        "kept in artifacts, not projected",
        units=False,
    ),
    _r(
        "symlink-skipped",
        "warning",
        "file beside the session that is a symbolic link (it may point anywhere): not read",
        units=False,
    ),
    _r(
        "ids-not-unique",
        "info",
        "native ids repeat, so record ids come from positions",
        units=False,
    ),
    _r(
        "replaced-bytes",
        "warning",
        "line with bytes that are not UTF-8, kept with each such byte replaced by U+FFFD",
        units=False,
    ),
    _r(
        "bom-stripped",
        "info",
        "line starting with a UTF-8 byte-order mark, kept without the mark",
        units=False,
    ),
    _r("secret-dropped", "info", "credential-like field left out of the Snapshot", units=False),
    _r(
        "secret-redacted",
        "info",
        "secrets found in the session's text were replaced by [REDACTED:<kind>] and its native "
        "bytes (artifacts) left out (--redact; counted by kind)",
        units=False,
    ),
    _r(
        "pending-writes",
        "warning",
        "writes of an unfinished step, not yet part of the saved state; kept in artifacts",
    ),
    _r(
        "nested-namespace",
        "info",
        "state rows of a subgraph or subagent namespace; kept in artifacts, not projected",
    ),
    _r(
        "context-not-projected",
        "info",
        "text the harness put around or before the user's messages for the model (date, "
        "workspace facts, reminders) is kept in artifacts, not in the records",
        units=False,
    ),
    _r(
        "repeated-result-replayed",
        "info",
        "a second copy of a tool result that the harness also sends its model (so its model "
        "saw the result twice) is not a record; a target shows the result once",
        units=False,
    ),
    _r(
        "provider-ids-not-projected",
        "info",
        "ids a model provider gave a message's parts (Responses-API items) or the message's "
        "name are kept in artifacts, not in the records; a target is written without them",
        units=False,
    ),
    # writer
    _w("untranslated-reasoning", "warning", "reasoning the target cannot hold was left out"),
    _w(
        "untranslated-subagent",
        "warning",
        "records of a sub-agent session the target cannot hold as a child were left out "
        "(counted by record; samples name the child session)",
    ),
    _w("untranslated-system", "warning", "system text the target cannot hold was left out"),
    _w("untranslated-observation", "warning", "observation the target cannot hold was left out"),
    _w(
        "untranslated-tool-call",
        "warning",
        "a tool call the target holds as text shown to the user only (a text-only history): "
        "its model is not sent it",
    ),
    _w(
        "untranslated-tool-result",
        "warning",
        "a tool result the target holds as text shown to the user only (a text-only history): "
        "its model is not sent it",
    ),
    _w(
        "system-not-sent",
        "info",
        "system text is kept in the target's files, but its CLI does not send it to the model "
        "when the session is continued",
    ),
    _w("untranslated-assistant", "warning", "assistant text the target cannot hold was left out"),
    _w(
        "user-read-as-context",
        "info",
        "a user message that opens as the target's own injected context does (Claude Code's "
        "<system-reminder>) is sent to the model as written, but the target's reader takes it "
        "for the harness's context, not a prompt",
    ),
    _w(
        "untranslated-tool-status",
        "warning",
        "tool success flag the target cannot hold was left out",
    ),
    _w("untranslated-exit-code", "info", "process exit status the target cannot hold was left out"),
    _w("untranslated-model", "info", "model name the target cannot hold was left out"),
    _w("untranslated-time", "info", "timestamps the target cannot hold were left out"),
    _w("untranslated-title", "info", "session title the target cannot hold was left out"),
    _w("untranslated-branch", "info", "git branch the target cannot hold was left out"),
    _w(
        "untranslated-cwd",
        "warning",
        "working directory the target cannot hold as it is was left out or changed",
    ),
    _w(
        "user-read-as-command",
        "warning",
        "a user message that opens as a command does (Gemini CLI's / or ?) is kept in the "
        "target's files, but its CLI neither sends it to the model nor reads it as a prompt",
    ),
    _w(
        "untranslated-parent-session",
        "info",
        "parent session id the target cannot hold was left out",
    ),
    _w(
        "untranslated-steering",
        "warning",
        "user guidance given inside a running turn, which the target cannot hold, was left out",
    ),
    _w(
        "defaults-assumed",
        "info",
        "fields the target requires and the source lacks were set to the target's own defaults",
    ),
    _w(
        "untranslated-artifact", "info", "native sidecar bytes the target cannot hold were left out"
    ),
    _w(
        "untranslated-message-boundary",
        "info",
        "consecutive messages of one role become one message in the target",
    ),
    _w(
        "untranslated-tool-arguments",
        "warning",
        'tool arguments that are not a JSON object were written as {"_raw": text}',
    ),
    _w(
        "unlinked-result",
        "warning",
        "tool result whose call is not in the session, written without its link",
    ),
    _w(
        "reordered-result",
        "info",
        "tool result moved next to its call, where the target needs it",
    ),
    _w(
        "untranslated-note-kind",
        "info",
        "an error or warning note is written as an info note: the target's error and warning "
        "events need fields the Snapshot does not hold (error type, status code)",
    ),
    _w("untranslated-pending-call", "warning", "tool call without a result was left out"),
    _w(
        "unanswered-turn",
        "warning",
        "the last turn has no final answer and was written so (--allow-lossy); "
        "the target sees it unanswered",
    ),
    _w("untranslated-orphan-result", "warning", "tool result without its call was left out"),
    _w(
        "timestamps-synthesized",
        "warning",
        "the target needs times the source lacks; derived, not real",
    ),
    _w(
        "ids-derived",
        "info",
        "ids the target needs were derived deterministically from the Snapshot",
    ),
    _w("title-missing", "info", "the source has no title; the target shows none"),
    _w(
        "exit-status-in-text",
        "info",
        "the target's tool output has no status field; the exit code or failure heads "
        "the output text, as its own tools print it",
    ),
    _w(
        "reasoning-as-text",
        "info",
        "the target replays reasoning as reasoning only to the model that wrote it; any other "
        "model continuing the session gets it as assistant text, joined with its step's text",
    ),
    _w(
        "codex-model-provider",
        "info",
        "the Codex session names this model_provider; Codex resumes it only under that "
        "provider (writer option model_provider)",
    ),
    _w(
        "model-assumed",
        "info",
        "a record without a model reads back with the model of its message or of an earlier one",
    ),
    _w(
        "tool-status-assumed",
        "warning",
        "the source does not say whether a tool succeeded; the target needs a status",
    ),
    _w("cwd-missing", "warning", "the source has no working directory; the target needs one"),
    _w(
        "target-prompt-missing",
        "warning",
        "the target keeps its own system prompt in the session, which the source lacks: it is "
        "written empty, so the continued agent runs without its harness's instructions",
    ),
    _w(
        "context-as-system",
        "info",
        "system text (context the source's harness may have sent inside a user message) is "
        "sent to the target's model as a system message",
    ),
    _w(
        "time-stamped-on-load",
        "info",
        "records without a time are written without one; the target's CLI gives them the time "
        "it loads them (in memory, never saved)",
    ),
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
        lookup(code)
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
