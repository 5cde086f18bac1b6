"""GitHub Copilot CLI codec: ``$COPILOT_HOME/session-state/<id>/events.jsonl`` + ``workspace.yaml``.

Format facts and sources: ``shared/formats/copilot-cli.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajconv.codecs.base import ExportPlan, Limits, SessionRef
from trajconv.snapshot.models import Snapshot


class CopilotCodec:
    name = "copilot"
    aliases: tuple[str, ...] = ("copilot-cli", "github-copilot")
    description = "GitHub Copilot CLI: session-state/<id>/events.jsonl + workspace.yaml"
    can_read = True
    can_write = True
    can_discover = True

    def default_home(self) -> Path:
        from trajconv.codecs.copilot import layout

        return layout.default_home()

    def discover(self, home: Path) -> list[SessionRef]:
        from trajconv.codecs.copilot.discover import discover

        return discover(home)

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot:
        from trajconv.codecs.copilot.reader import read

        return read(path, session=session, limits=limits)

    def plan(self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
        from trajconv.codecs.copilot.writer import plan

        return plan(snapshot, allow_lossy=allow_lossy, **options)


CODEC = CopilotCodec()
