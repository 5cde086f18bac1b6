"""List Codex sessions cheaply: the head of each rollout, as the CLI's picker reads it.

The picker (``codex resume``) shows a session under its first prompt (the first
``event_msg user_message``, or the first person-typed ``response_item`` message of a file
without one) and its ``session_meta.cwd`` (the codec README); the thread index's ``title``
is used when the home has ``state_5.sqlite``. Only the first ``HEAD_BYTES`` of a rollout
are read. Newest first, by the start time in the file name.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.codex import layout, native
from trajconv.errors import FormatError
from trajconv.snapshot.builder import time_from_iso

HEAD_BYTES = 4 * 1024**2


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _titles(home: Path) -> dict[str, str]:
    from trajconv.codecs.sqlite import ReadOnly

    db = home / layout.STATE_DB
    if not db.is_file():
        return {}
    try:
        with ReadOnly(db) as con:
            rows = con.execute("SELECT id, title FROM threads").fetchall()
    except (FormatError, sqlite3.DatabaseError):
        return {}
    return {str(i): t for i, t in rows if isinstance(t, str) and t.strip()}


def head(rollout: Path) -> tuple[dict[str, Any], str | None, str | None]:
    """``(session_meta payload, first prompt, last line's timestamp)`` from the file's head
    (the timestamp only when the head is the whole file)."""
    meta: dict[str, Any] = {}
    prompt: str | None = None
    fallback: str | None = None
    last: str | None = None
    with rollout.open("rb") as fh:
        data = fh.read(HEAD_BYTES)
    for raw in data.split(b"\n"):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            continue
        p = obj["payload"]
        if isinstance(obj.get("timestamp"), str):
            last = obj["timestamp"]
        kind = obj.get("type")
        if kind == native.SESSION_META and not meta:
            meta = p
        elif kind == native.EVENT_MSG and p.get("type") == "user_message" and prompt is None:
            prompt = _text(p.get("message"))
        elif (
            kind == native.RESPONSE_ITEM
            and fallback is None
            and p.get("type") == "message"
            and p.get("role") == "user"
        ):
            text, _ = native.content_text(p.get("content"), ("input_text", "text"))
            if text and native.is_person_prompt(p, text):
                fallback = text
    whole = len(data) < HEAD_BYTES
    return meta, prompt or fallback, last if whole else None


def discover(home: Path) -> list[SessionRef]:
    root = layout.codex_home(home) or home
    titles = _titles(root)
    refs = []
    for rollout in layout.rollouts(root):
        named = layout.parse_name(rollout.name)
        assert named is not None  # rollouts() keeps only such names
        try:
            meta, prompt, last = head(rollout)
            size = rollout.stat().st_size
        except OSError:
            continue
        sid = _text(meta.get("id")) or named[1]
        first = prompt.strip().splitlines()[0] if prompt and prompt.strip() else None
        created = _text(meta.get("timestamp"))
        refs.append(
            SessionRef(
                harness="codex",
                session_id=sid,
                path=rollout,
                title=titles.get(sid) or first,
                cwd=_text(meta.get("cwd")),
                created_at=time_from_iso(created) if created else None,
                updated_at=time_from_iso(last) if last else None,
                size=size,
            )
        )
    refs.sort(key=lambda r: (named_time(r.path), r.session_id), reverse=True)
    return refs


def named_time(rollout: Path) -> str:
    named = layout.parse_name(rollout.name)
    return named[0] if named else ""
