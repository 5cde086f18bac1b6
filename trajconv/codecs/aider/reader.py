"""Read an Aider ``.aider.chat.history.md`` into a Snapshot (facts: ``layout`` and README).

The file is cut into runs of lines as Aider's own ``split_chat_history_markdown`` cuts it
when it restores a history: ``#### `` lines are what the user typed (a ``user`` record),
``> `` lines are Aider's own output (an ``observation`` record: shown to the user, never
sent to the model), header lines start a run of the CLI (counted, ``lifecycle-dropped``),
and every other run of lines is the model's answer (an ``assistant`` record). Runs of blank
lines alone are formatting. Aider keeps no times with a zone and no tool calls: records have
no time, and an edit block stays in the answer's text as the model wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from trajconv.codecs.aider import layout
from trajconv.codecs.base import Limits
from trajconv.codecs.jsonl import Utf8Tally
from trajconv.errors import FormatError
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source
from trajconv.snapshot.spool import CHUNK

READER = "aider/1"
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
_VERSION = re.compile(r"^Aider v(\S+)$")


def _kind(line: str) -> str:
    if line.startswith(layout.HEADER):
        return "header"
    if line.startswith(layout.USER):
        return "user"
    if line.startswith(layout.TOOL) or line.rstrip() == ">":
        return "tool"
    if line.startswith("# "):
        return "heading"  # Aider skips it when it restores; kept with the answer it is in
    return "text"


def _unbreak(line: str, prefix: str) -> str:
    """A ``####`` or ``>`` line as it was typed or printed: prefix and hard break gone."""
    body = line[len(prefix) :] if line.startswith(prefix) else line[len(prefix.rstrip()) :]
    if body.endswith("  "):
        body = body[:-2]
    return body if body.strip() else ""


Run = tuple[str, int, "list[str] | str"]
"""A run of lines: its kind, its first line's number and its lines (a text run's joined)."""

#: the line boundaries of ``str.splitlines`` other than ``\n``
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
#: a line after the first that may be other than the model's text, with its newline; the
#: group named is its kind when its prefix tells (else :func:`_kind` says)
_MARKED = re.compile(
    f"\n(?:(?P<header>{re.escape(layout.HEADER)})|(?P<user>{re.escape(layout.USER)})"
    f"|(?P<tool>{re.escape(layout.TOOL)})|[#>])[^\n]*"
)
_MARKS = ("#", ">")


def _runs(text: str, limits: Limits, file: Path, first: int = 1) -> Iterator[Run]:
    """``text`` cut into runs as Aider cuts it: a run of lines of one kind (a header alone);
    ``first``: the number of its first line.

    Most lines are the model's text; when ``\n`` is the only line break and no line can be
    over ``max_line_bytes`` (4 UTF-8 bytes a character at most), only the ``#`` and ``>``
    lines are looked at (:func:`_marked_runs`). The runs are the same either way
    (``tests/aider``), made one at a time."""
    if len(text) * 4 <= limits.max_line_bytes and _OTHER_BREAKS.search(text) is None:
        return _marked_runs(text, first)
    return _line_runs(text, limits, file, first)


def _line_runs(text: str, limits: Limits, file: Path, first: int = 1) -> Iterator[Run]:
    return _runs_of_lines(text.splitlines(), limits, file, first)


def _runs_of_lines(lines: list[str], limits: Limits, file: Path, first: int) -> Iterator[Run]:
    max_line = limits.max_line_bytes
    block: list[str] = []
    last = ""
    start = 0
    for number, line in enumerate(lines, first):
        # a character is at most 4 UTF-8 bytes: only a line that may be too long is encoded
        if len(line) * 4 > max_line:
            limits.check("max_line_bytes", len(line.encode("utf-8", "replace")), file, number)
        kind = _kind(line) if line[:1] in _MARKS else "text"
        if kind == "heading":
            kind = "text"
        if kind == last and kind != "header":
            block.append(line)
            continue
        if last:
            yield last, start, "\n".join(block) if last == "text" else block
        block, last, start = [line], kind, number
    if last:
        yield last, start, "\n".join(block) if last == "text" else block


def _marked(text: str) -> Iterator[tuple[int, int, str]]:
    """Where each ``#`` or ``>`` line of ``text`` starts and ends (its newline excluded),
    and its kind (``heading`` as ``text``)."""
    if text[:1] in _MARKS:
        stop = text.find("\n")
        stop = len(text) if stop < 0 else stop
        kind = _kind(text[:stop])
        yield 0, stop, "text" if kind == "heading" else kind
    for found in _MARKED.finditer(text):
        start, stop = found.span()
        kind = found.lastgroup or _kind(found.group()[1:])
        yield start + 1, stop, "text" if kind == "heading" else kind


def _marked_runs(text: str, first: int = 1) -> Iterator[Run]:
    """:func:`_line_runs` of a text whose only line break is ``\n``, finding its ``#`` and
    ``>`` lines by a search: a text run is then a slice of ``text``."""
    pending: tuple[str, int, list[str]] | None = None  # the open run of marked lines
    opened = -1  # where the open text run starts (-1: none is open)
    opened_at = 0  # its first line's number
    pos = 0  # where the first line not yet placed starts
    number = first  # its line number
    count = text.count
    for start, stop, kind in _marked(text):
        if start > pos or kind == "text":  # a text line (before this one, or this one)
            if opened < 0:
                if pending is not None:
                    yield pending
                    pending = None
                opened, opened_at = pos, number
            number += count("\n", pos, start)
        if kind != "text":
            if opened >= 0:
                yield "text", opened_at, text[opened : start - 1]
                opened = -1
            if pending is not None and pending[0] == kind and kind != "header":
                pending[2].append(text[start:stop])
            else:
                if pending is not None:
                    yield pending
                pending = (kind, number, [text[start:stop]])
        number += 1
        pos = stop + 1
    if pos < len(text) and opened < 0:  # text lines after the last marked line
        if pending is not None:
            yield pending
            pending = None
        opened, opened_at = pos, number
    if opened >= 0:
        yield "text", opened_at, text[opened : len(text) - 1 if text.endswith("\n") else len(text)]
    elif pending is not None:
        yield pending


def _text_runs(pieces: Iterable[str], limits: Limits, file: Path) -> Iterator[Run]:
    """:func:`_runs` of the text ``pieces`` make, each piece whole lines (all but the last
    ending with a line break): each piece is cut on its own and a run going on in the next
    piece is joined with its rest, so no more than a piece and a run are held."""
    held: Run | None = None
    parts: list[str] = []  # the held text run's pieces
    first = 1
    for piece in pieces:
        if len(piece) * 4 <= limits.max_line_bytes and _OTHER_BREAKS.search(piece) is None:
            runs = _marked_runs(piece, first)
            first += piece.count("\n")
        else:
            lines = piece.splitlines()
            runs = _runs_of_lines(lines, limits, file, first)
            first += len(lines)
        for run in runs:
            kind, _number, block = run
            if held is not None:
                if kind == held[0] and kind != "header":  # only across two pieces
                    if isinstance(block, str):
                        parts.append(block)
                    else:
                        assert isinstance(held[2], list)
                        held[2].extend(block)
                    continue
                yield (held[0], held[1], "\n".join(parts)) if parts else held
            held = run
            parts = [block] if isinstance(block, str) else []
    if held is not None:
        yield (held[0], held[1], "\n".join(parts)) if parts else held


class _Copy:
    """Whether the history holds a NUL byte, told while it is copied."""

    def __init__(self) -> None:
        self.nul = False

    def watch(self, chunk: bytes) -> None:
        if not self.nul and b"\x00" in chunk:
            self.nul = True


_REPLACEMENT = "\ufffd".encode()


def _holds_replacement(copy: Path) -> bool:
    """Whether ``copy`` holds the UTF-8 bytes of U+FFFD as they are (the replacement
    character in the file itself); read again only for a history that is not UTF-8."""
    tail = b""
    with copy.open("rb", buffering=0) as fh:
        while chunk := fh.read(CHUNK):
            if _REPLACEMENT in tail + chunk[:2] or _REPLACEMENT in chunk:
                return True
            tail = chunk[-2:]
    return False


def _pieces(copy: Path, utf8: Utf8Tally) -> Iterator[str]:
    """The text of ``copy`` in pieces of whole lines (about a chunk each), decoded as
    decoding it whole decodes it (a piece ends after a ``\n``, which is never inside a
    UTF-8 sequence); ``utf8`` learns whether every byte was UTF-8."""

    def text(data: bytes | memoryview) -> str:
        try:
            return str(data, "utf-8")
        except UnicodeDecodeError:
            utf8.ok = False
            return str(data, "utf-8", "replace")

    held: list[bytes] = []  # a line longer than the chunks read so far
    with copy.open("rb", buffering=0) as fh:
        while chunk := fh.read(CHUNK):
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                held.append(chunk)
                continue
            if held:
                held.append(chunk[:cut])
                yield text(b"".join(held))
                held.clear()
            else:
                yield text(memoryview(chunk)[:cut])
            if cut < len(chunk):
                held.append(chunk[cut:])
    if held:
        yield text(b"".join(held))
    utf8.complete = True


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    file = layout.resolve(path, session)
    found = layout.session_id(file)
    if found is None:
        raise FormatError(file, "an empty Aider history")
    sid, derived = found
    if file.name != layout.HISTORY and layout.first_stamp(file) is None:
        raise FormatError(
            file,
            f"not an Aider history: not {layout.HISTORY} and not opening with {layout.HEADER!r}",
        )
    b = SnapshotBuilder(
        Source(harness="aider", harness_version=None, session_id=sid, locator=layout.HISTORY),
        READER,
    )
    utf8 = Utf8Tally()  # the decoding below tells the builder, which need not decode again
    seen = _Copy()
    blob = b.add_artifact_file(
        layout.HISTORY,
        "text/markdown",
        file,
        limits.max_session_bytes,
        "max_session_bytes",
        utf8=utf8.verdict,
        watch=seen.watch,
    )
    copy = blob.whole_file
    assert copy is not None
    if seen.nul:
        raise FormatError(file, "not an Aider history: it holds NUL bytes")
    model: str | None = None
    version: str | None = None
    turn = -1
    for kind, number, block in _text_runs(_pieces(copy, utf8), limits, file):
        ev = evidence(layout.HISTORY, line=number, native=kind)
        if kind == "header":
            b.diagnostics.add("lifecycle-dropped", f"{layout.HISTORY}:{number}", name="run-start")
            continue
        if kind == "user":
            turn += 1
            typed = "\n".join(_unbreak(x, layout.USER) for x in block)
            b.add_text("user", f"aider:L{number}", typed, time=None, turn=turn, evidence=ev)
        elif kind == "tool":
            shown = [_unbreak(x, layout.TOOL) for x in block]
            for x in shown:
                model = model or (m.group(1) if (m := _MODEL.match(x)) else None)
                if version is None and (v := _VERSION.match(x)) is not None:
                    version = v.group(1)
                    # the source heads the hash chain: completed before records are spooled
                    # (the first banner comes first), the builder need not chain them again
                    b.source = b.source.model_copy(update={"harness_version": version})
            b.add_text(
                "observation",
                f"aider:L{number}",
                "\n".join(shown),
                time=None,
                turn=max(turn, 0) if turn >= 0 else None,
                evidence=ev,
            )
        else:
            answer = block.strip("\n") if isinstance(block, str) else ""
            if not answer.strip():
                continue  # blank lines between runs: formatting
            b.add_text(
                "assistant",
                f"aider:L{number}",
                answer,
                time=None,
                turn=max(turn, 0) if turn >= 0 else None,
                evidence=ev,
                model=model,
            )
    if not utf8.ok and not _holds_replacement(copy):
        b.diagnostics.add("replaced-bytes", layout.HISTORY)
    if derived:
        b.diagnostics.add("ids-derived", "session id from the history's first line")
    if b.record_count == 0:
        raise FormatError(file, "an Aider history with no message in it")
    b.session = Session(id=sid, cwd=str(file.parent.resolve()), model=model)
    return b.build()
