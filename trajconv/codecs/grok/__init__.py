"""Grok Build (xAI ``grok`` CLI) codec: ``$GROK_HOME/sessions/<encoded cwd>/<id>/``.

Format facts and sources: ``shared/formats/grok-build.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajconv.codecs.base import ExportPlan, Limits, SessionRef
from trajconv.snapshot.models import Snapshot


class GrokCodec:
    name = "grok"
    aliases: tuple[str, ...] = ("grok-build", "xai")
    description = "Grok Build (xAI grok CLI): updates.jsonl + summary.json per session"
    can_read = True
    can_write = True
    can_discover = True

    def default_home(self) -> Path:
        from trajconv.codecs.grok import layout

        return layout.default_home()

    def discover(self, home: Path) -> list[SessionRef]:
        from trajconv.codecs.grok.discover import discover

        return discover(home)

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot:
        from trajconv.codecs.grok.reader import read

        return read(path, session=session, limits=limits)

    def plan(self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
        from trajconv.codecs.grok.writer import plan

        return plan(snapshot, allow_lossy=allow_lossy, **options)


CODEC = GrokCodec()
