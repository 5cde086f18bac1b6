"""JSON as a Snapshot may hold it (:func:`strict_loads`), shared by the whole-document
reader (``io``) and the streaming one (``fileload``)."""

from __future__ import annotations

import json
from typing import Any

import orjson


class DuplicateKeyError(ValueError):
    """An object that names a member twice (:func:`strict_loads`)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise DuplicateKeyError(f"an object names {key!r} twice")
            seen.add(key)
    return obj


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _int(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"the integer {text[:40]} is beyond 64 bits")
    return value


def strict_loads(data: bytes | str) -> Any:
    """JSON as a Snapshot may hold it: an object naming a member twice is refused (a
    first-key parser would see other text than the one hashed), and every integer keeps
    its digits (``orjson`` reads one beyond 64 bits as a double; such an integer is
    refused, as ``orjson`` could not write it back). ``orjson`` checks the text first
    (it is stricter: no lone surrogates). Errors are ``ValueError``."""
    orjson.loads(data)
    return json.loads(data, object_pairs_hook=_pairs, parse_constant=_no_constant, parse_int=_int)
