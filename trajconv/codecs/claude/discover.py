"""List Claude Code sessions cheaply: every ``projects/<key>/<id>.jsonl`` (and its sub-agents).

``home`` may be a user home (holding ``.claude``) or the ``.claude`` folder itself; the default
home honours ``$CLAUDE_CONFIG_DIR``. Newest first. The title is what the ``claude --resume``
picker shows (observed with 2.1.332: ``last-prompt.lastPrompt``, else the first prompt); a
title the user or the CLI gave (``custom-title``, ``ai-title``) comes first, as in the reader.
Only the lines a listing needs are parsed: titles, the first prompt and the first ``cwd``;
times come from a regex over each line (the picker ages sessions by line timestamps).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.claude import layout, native
from trajconv.snapshot.builder import time_from_iso

_STAMP = re.compile(rb'"timestamp":"([0-9T:.Z+-]{10,40})"')
_TITLE_KEYS = {
    "custom-title": "customTitle",
    "ai-title": "aiTitle",
    "last-prompt": "lastPrompt",
    "summary": "summary",
}
_WANTED = tuple(f'"type":"{t}"'.encode() for t in (*_TITLE_KEYS, "user"))


def _obj(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _prompt(obj: dict[str, Any]) -> str | None:
    """The person's words of a user line, or None for tool results and harness text."""
    if obj.get("isMeta") is True or isinstance(obj.get("origin"), dict):
        return None
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    text = native.text_of(content) if isinstance(content, str | list) else None
    if not text or not text.strip() or native.HARNESS_TEXT.match(text):
        return None
    return text.strip()


def _ref(path: Path, session_id: str) -> SessionRef | None:
    titles: dict[str, str] = {}
    first_prompt: str | None = None
    cwd: str | None = None
    first: bytes | None = None
    last: bytes | None = None
    try:
        with path.open("rb") as fh:
            for raw in fh:
                stamp = _STAMP.search(raw)
                if stamp:
                    first = min(first or stamp.group(1), stamp.group(1))
                    last = max(last or stamp.group(1), stamp.group(1))
                if cwd is None and b'"cwd":"' in raw:
                    cwd = native.str_or_none(_obj(raw).get("cwd"))
                if not any(w in raw for w in _WANTED):
                    continue
                obj = _obj(raw)
                kind = obj.get("type")
                if kind == "user":
                    if first_prompt is None:
                        first_prompt = _prompt(obj)
                elif isinstance(kind, str) and kind in _TITLE_KEYS:
                    text = native.str_or_none(obj.get(_TITLE_KEYS[kind]))
                    if text is not None:
                        titles[kind] = text.strip()
            size = fh.tell()
    except OSError:
        return None
    title = next((titles[k] for k in native.TITLE_TYPES if k in titles), first_prompt)
    return SessionRef(
        harness="claude",
        session_id=session_id,
        path=path,
        title=title,
        cwd=cwd,
        created_at=time_from_iso(first.decode()) if first else None,
        updated_at=time_from_iso(last.decode()) if last else None,
        size=size,
    )


def discover(home: Path) -> list[SessionRef]:
    refs: list[SessionRef] = []
    for transcript in layout.transcripts(layout.config_dir(home)):
        ref = _ref(transcript, transcript.stem)
        if ref is not None:
            refs.append(ref)
        for sub in layout.subagent_files(transcript):
            child = _ref(sub, sub.stem)
            if child is not None:
                refs.append(child)
    refs.sort(key=lambda r: (r.updated_at or "", r.session_id), reverse=True)
    return refs
