"""What the Aider tests share: native units counted apart from the reader."""

from __future__ import annotations

from pathlib import Path

from trajconv.codecs.aider import layout


def runs(path: Path) -> int:
    """Runs of lines of one kind in a history (what Aider's ``split_chat_history_markdown``
    cuts), blank-only runs of answer text left out (Aider drops them too)."""
    found: list[tuple[str, list[str]]] = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if line.startswith(layout.HEADER):
            found.append(("header", [line]))
            continue
        tool = line.startswith("> ") or line.rstrip() == ">"  # not an edit block's ">>>>>>>"
        kind = "user" if line.startswith("#### ") else "tool" if tool else "text"
        if found and found[-1][0] == kind:
            found[-1][1].append(line)
        else:
            found.append((kind, [line]))
    return sum(1 for kind, lines in found if kind != "text" or "".join(lines).strip())
