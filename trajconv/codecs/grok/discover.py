"""List Grok sessions cheaply: only ``summary.json`` is read, as Grok's own listing does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.grok import layout
from trajconv.snapshot.builder import time_from_iso

MAX_SUMMARY = 16 * 1024**2


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def discover(home: Path) -> list[SessionRef]:
    refs = []
    for sdir in layout.session_dirs(home):
        summary_path = sdir / layout.SUMMARY
        try:
            if summary_path.stat().st_size > MAX_SUMMARY:
                continue
            summary = orjson.loads(summary_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # Grok treats a session whose summary does not parse as absent
        if not isinstance(summary, dict):
            continue
        info = summary.get("info") if isinstance(summary.get("info"), dict) else {}
        journal = sdir / layout.UPDATES
        refs.append(
            SessionRef(
                harness="grok",
                session_id=sdir.name,
                path=sdir,
                title=_text(summary.get("generated_title"))
                or _text(summary.get("session_summary")),
                cwd=_text(info.get("cwd")) if isinstance(info, dict) else None,
                created_at=time_from_iso(summary["created_at"])
                if isinstance(summary.get("created_at"), str)
                else None,
                updated_at=time_from_iso(summary["updated_at"])
                if isinstance(summary.get("updated_at"), str)
                else None,
                size=journal.stat().st_size if journal.is_file() else None,
            )
        )
    return refs
