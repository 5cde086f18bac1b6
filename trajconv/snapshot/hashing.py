"""Canonical JSON and the Snapshot hash chain (DESIGN §3).

Canonical JSON is RFC 8785 (JCS), produced by the ``rfc8785`` package.
``h[-1] = sha256(JCS({format, source, session}))``;
``h[i] = sha256(h[i-1] || JCS(record_i without "hash"))``;
``id = sha256(JCS({format, source, session, last, artifacts: [{name, sha256, size}]}))``.
Every function here works on plain JSON values, so ``verify`` checks exactly
the bytes a Snapshot file holds, independent of model defaults.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import rfc8785

PREFIX = "sha256:"


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value."""
    return rfc8785.dumps(value)


def header_digest(fmt: str, source: Mapping[str, Any], session: Mapping[str, Any]) -> bytes:
    return hashlib.sha256(
        canonical({"format": fmt, "source": dict(source), "session": dict(session)})
    ).digest()


def record_digest(previous: bytes, record: Mapping[str, Any]) -> bytes:
    """Next chain digest; ``record`` may hold a ``hash`` key, which is left out."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(previous + canonical(body)).digest()


def snapshot_id(
    fmt: str,
    source: Mapping[str, Any],
    session: Mapping[str, Any],
    last: bytes,
    artifacts: Iterable[Mapping[str, Any]],
) -> str:
    doc = {
        "format": fmt,
        "source": dict(source),
        "session": dict(session),
        "last": last.hex(),
        "artifacts": [
            {"name": a["name"], "sha256": a["sha256"], "size": a["size"]} for a in artifacts
        ],
    }
    return PREFIX + hashlib.sha256(canonical(doc)).hexdigest()


def tag(digest: bytes) -> str:
    return PREFIX + digest.hex()
