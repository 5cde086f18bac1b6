"""Build a Snapshot: readers add records and artifacts in order, the builder hashes.

Readers call ``add_*`` as they parse; ``build`` computes the chain (DESIGN §3)
in one pass and returns the frozen Snapshot. Record ids and times come from the
reader; the builder never invents either.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import JsonValue

from trajconv.snapshot import hashing, secrets
from trajconv.snapshot.diagnostics import Diagnostics
from trajconv.snapshot.models import (
    FORMAT,
    Artifact,
    Evidence,
    Producer,
    Session,
    Snapshot,
    Source,
)
from trajconv.version import __version__


def iso_ms(moment: datetime) -> str:
    """RFC 3339 UTC with milliseconds, the Snapshot's one time format."""
    moment = moment.astimezone(UTC)
    if moment.year >= 1000:
        # The same text as the strftime below (which does not pad years under 1000),
        # faster: isoformat truncates to milliseconds and ends in "+00:00" for UTC.
        return moment.isoformat(timespec="milliseconds")[:-6] + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# Integer milliseconds below this (2106-02-07) divide by 1000 into a double that rounds
# back to the exact microsecond, so the seconds and milliseconds can be split exactly.
_EXACT_MS = 2**32 * 1000
_day_cache: tuple[int, str] = (-1, "")


def time_from_ms(ms: int | float) -> str:
    global _day_cache
    if type(ms) is int and 0 <= ms < _EXACT_MS:
        # Fast path, byte-equal to the general one below (tests/core/test_canonical.py):
        # Unix time has 86400 s a day, so only the date needs the calendar (cached).
        day, rest = divmod(ms, 86_400_000)
        cached_day, date = _day_cache
        if cached_day != day:
            date = datetime.fromtimestamp(day * 86_400, tz=UTC).strftime("%Y-%m-%dT")
            _day_cache = (day, date)
        hour, rest = divmod(rest, 3_600_000)
        minute, rest = divmod(rest, 60_000)
        second, milli = divmod(rest, 1000)
        return f"{date}{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"
    return iso_ms(datetime.fromtimestamp(ms / 1000, tz=UTC))


def time_from_iso(text: str) -> str | None:
    """Normalise an RFC 3339 / ISO 8601 time with an offset; ``None`` when unparsable."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return iso_ms(moment)


def artifact_from_bytes(name: str, media_type: str, data: bytes) -> Artifact:
    try:
        text: str = data.decode("utf-8")
        encoding: Literal["utf8", "base64"] = "utf8"
    except UnicodeDecodeError:
        text = base64.b64encode(data).decode("ascii")
        encoding = "base64"
    return Artifact(
        name=name,
        media_type=media_type,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        encoding=encoding,
        data=text,
    )


class SnapshotBuilder:
    """Accumulates one session's records, artifacts and diagnostics."""

    def __init__(self, source: Source, reader: str) -> None:
        self.source = source
        self.reader = reader
        self.session = Session(id=source.session_id)
        self.diagnostics = Diagnostics()
        self._records: list[dict[str, Any]] = []
        self._artifacts: dict[str, Artifact] = {}

    # -- records -----------------------------------------------------------------
    def _add(
        self,
        kind: str,
        rid: str,
        time: str | None,
        turn: int | None,
        evidence: Evidence,
        body: dict[str, Any],
    ) -> int:
        seq = len(self._records)
        self._records.append(
            {
                "seq": seq,
                "id": rid,
                "kind": kind,
                "time": time,
                "turn": turn,
                **body,
                "evidence": evidence.model_dump(mode="json"),
            }
        )
        return seq

    def add_text(
        self,
        kind: str,
        rid: str,
        text: str,
        *,
        time: str | None,
        turn: int | None,
        evidence: Evidence,
        model: str | None = None,
    ) -> int:
        body: dict[str, Any] = {"text": text}
        if kind in ("assistant", "reasoning"):
            body["model"] = model
        return self._add(kind, rid, time, turn, evidence, body)

    def add_call(
        self,
        rid: str,
        call_id: str,
        name: str,
        arguments: JsonValue,
        *,
        time: str | None,
        turn: int | None,
        evidence: Evidence,
    ) -> int:
        call = {"id": call_id, "name": name, "arguments": arguments}
        return self._add("tool-call", rid, time, turn, evidence, {"call": call})

    def add_result(
        self,
        rid: str,
        call_id: str,
        ok: bool | None,
        output: str,
        *,
        time: str | None,
        turn: int | None,
        evidence: Evidence,
        truncated: bool = False,
        exit_code: int | None = None,
    ) -> int:
        result = {
            "call_id": call_id,
            "ok": ok,
            "output": output,
            "truncated": truncated,
            "exit_code": exit_code,
        }
        return self._add("tool-result", rid, time, turn, evidence, {"result": result})

    @property
    def record_count(self) -> int:
        return len(self._records)

    def records(self) -> list[dict[str, Any]]:
        """The records added so far, as mutable dicts (for readers that amend the last)."""
        return self._records

    # -- artifacts ---------------------------------------------------------------
    def add_artifact(self, name: str, media_type: str, data: bytes) -> Artifact:
        """Keep a native file's bytes; JSON and YAML lose credential-looking members."""
        dropped: list[str] = []
        if media_type == "application/json":
            data, dropped = secrets.strip_json_bytes(data)
        elif media_type in ("application/yaml", "text/yaml"):
            data, dropped = secrets.strip_yaml_bytes(data)
        for path in dropped:
            self.diagnostics.add("secret-dropped", f"{name}:{path}")
        art = artifact_from_bytes(name, media_type, data)
        self._artifacts[name] = art
        return art

    # -- finish ------------------------------------------------------------------
    def build(self) -> Snapshot:
        source = self.source.model_dump(mode="json")
        session = self.session.model_dump(mode="json")
        digest = hashing.header_digest(FORMAT, source)
        records = []
        for rec in self._records:
            digest = hashing.record_digest(digest, rec)
            records.append({**rec, "hash": hashing.tag(digest)})
        artifacts = sorted(self._artifacts.values(), key=lambda a: a.name)
        art_dicts = [a.model_dump(mode="json") for a in artifacts]
        sid = hashing.snapshot_id(FORMAT, source, session, digest, art_dicts)
        return Snapshot.model_validate(
            {
                "format": FORMAT,
                "id": sid,
                "source": source,
                "session": session,
                "records": records,
                "artifacts": art_dicts,
                "diagnostics": [d.model_dump(mode="json") for d in self.diagnostics.to_models()],
                "producer": Producer(version=__version__, reader=self.reader).model_dump(),
            }
        )
