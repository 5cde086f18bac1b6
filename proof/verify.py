"""Load a written export with the real harness, one uniform verdict per target.

Used by ``trajconv parity --write``: ``check_export(target, export, written)`` returns
``None`` when the target has no native loader installed here, else ``{"ok", "version",
"detail"}``. ``written`` is the export read back by the target's own reader; the loader must
list the session and replay as many conversational items as that reader found. Each loader
module does its own check (``verify_export(export, written)`` in ``proof/loaders/<name>.py``).
"""

from __future__ import annotations

from typing import Any

from proof import loader
from trajconv.codecs.base import Export
from trajconv.snapshot.models import Snapshot

Verdict = dict[str, Any]


def check_export(target: str, export: Export, written: Snapshot) -> Verdict | None:
    fn = getattr(loader(target), "verify_export", None)
    if fn is None:
        return None
    try:
        verdict: Verdict | None = fn(export, written)
    except Exception as exc:  # a loader that crashes is a failed check, recorded as such
        return {"ok": False, "version": None, "detail": f"{type(exc).__name__}: {exc}"}
    return verdict
