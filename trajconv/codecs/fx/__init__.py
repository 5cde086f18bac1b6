"""fx (vercel-labs/fx) codec: ``~/.fx/sessions/<id>/`` in every layout fx has written.

Format facts and sources: ``shared/formats/fx.md``; the codec's README.md beside this file
states its input contract, what the reader does not project and what the writer cannot hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajconv.codecs.base import ExportPlan, Limits, SessionRef
from trajconv.snapshot.models import Snapshot


class FxCodec:
    name = "fx"
    aliases: tuple[str, ...] = ("vercel-fx", "fx-cli")
    description = "Vercel fx: ~/.fx/sessions/<id>/ (legacy schema 1/2, event_log_v1, schema 4)"
    can_read = True
    can_write = True
    can_discover = True

    def default_home(self) -> Path:
        from trajconv.codecs.fx import layout

        return layout.default_home()

    def discover(self, home: Path) -> list[SessionRef]:
        from trajconv.codecs.fx.discover import discover

        return discover(home)

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot:
        from trajconv.codecs.fx.reader import read

        return read(path, session=session, limits=limits)

    def plan(self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
        from trajconv.codecs.fx.writer import plan

        return plan(snapshot, allow_lossy=allow_lossy, **options)


CODEC = FxCodec()
