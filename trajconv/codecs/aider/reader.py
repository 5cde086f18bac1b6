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
from pathlib import Path

from trajconv.codecs.aider import layout
from trajconv.codecs.base import Limits
from trajconv.errors import FormatError
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source

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
    blob = b.add_artifact_file(
        layout.HISTORY, "text/markdown", file, limits.max_session_bytes, "max_session_bytes"
    )
    copy = blob.whole_file
    assert copy is not None
    raw = copy.read_bytes()
    if b"\x00" in raw:
        raise FormatError(file, "not an Aider history: it holds NUL bytes")
    text = raw.decode("utf-8", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in raw:
        b.diagnostics.add("replaced-bytes", layout.HISTORY)
    lines = text.splitlines()
    model: str | None = None
    version: str | None = None
    runs: list[tuple[str, int, list[str]]] = []  # (kind, first line number, lines)
    for number, line in enumerate(lines, 1):
        limits.check("max_line_bytes", len(line.encode("utf-8", "replace")), file, number)
        kind = _kind(line)
        if kind == "heading":
            kind = "text"
        if runs and runs[-1][0] == kind and kind != "header":
            runs[-1][2].append(line)
        else:
            runs.append((kind, number, [line]))
    turn = -1
    for kind, number, block in runs:
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
                version = version or (v.group(1) if (v := _VERSION.match(x)) else None)
            b.add_text(
                "observation",
                f"aider:L{number}",
                "\n".join(shown),
                time=None,
                turn=max(turn, 0) if turn >= 0 else None,
                evidence=ev,
            )
        else:
            answer = "\n".join(block).strip("\n")
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
    if derived:
        b.diagnostics.add("ids-derived", "session id from the history's first line")
    if b.record_count == 0:
        raise FormatError(file, "an Aider history with no message in it")
    b.source = b.source.model_copy(update={"harness_version": version})
    b.session = Session(id=sid, cwd=str(file.parent.resolve()), model=model)
    return b.build()
