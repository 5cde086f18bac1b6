"""Deep Agents Code (``deepagents-code``, CLI ``dcode``) codec.

Threads live in ``~/.deepagents/.state/sessions.db`` (LangGraph checkpoints).

Format facts and sources: ``shared/formats/deepagents.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
Reading needs ``langgraph-checkpoint`` (LangGraph's serializer), imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trajconv.codecs.base import ExportPlan, Limits, SessionRef
from trajconv.snapshot.models import Snapshot


class DeepAgentsCodec:
    name = "deepagents"
    aliases: tuple[str, ...] = ("deepagents-code", "dcode", "deep-agents")
    description = (
        "Deep Agents Code (dcode): LangGraph checkpoints in ~/.deepagents/.state/sessions.db"
    )
    can_read = True
    can_write = True
    can_discover = True

    def default_home(self) -> Path:
        from trajconv.codecs.deepagents import layout

        return layout.default_home()

    def discover(self, home: Path) -> list[SessionRef]:
        from trajconv.codecs.deepagents.discover import discover

        return discover(home)

    def read(
        self, path: Path, *, session: str | None = None, limits: Limits | None = None
    ) -> Snapshot:
        from trajconv.codecs.deepagents.reader import read

        return read(path, session=session, limits=limits)

    def plan(self, snapshot: Snapshot, *, allow_lossy: bool = False, **options: Any) -> ExportPlan:
        from trajconv.codecs.deepagents.writer import plan

        return plan(snapshot, allow_lossy=allow_lossy, **options)


CODEC = DeepAgentsCodec()
