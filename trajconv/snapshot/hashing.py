"""Canonical JSON and the Snapshot hash chain (docs/design.md §3).

Canonical JSON is RFC 8785 (JCS), with one exception: an integer beyond ±2^53 keeps
its exact digits (:func:`canonical`). The ``rfc8785`` package is the reference; values
made only of objects with keys below U+E000, arrays, strings, booleans, null and
integers in the IEEE-754 safe range take a fast path through ``orjson`` with sorted
keys, which gives the same bytes (``tests/core/test_canonical.py`` proves it on the
RFC's vectors and on generated values); anything else goes to ``rfc8785``.
``h[-1] = sha256(JCS({format, source}))`` (session facts are left to the id);
``h[i] = sha256(h[i-1] || JCS(record_i without "hash"))``;
``id = sha256(JCS({format, source, session, last, artifacts: [{name, sha256, size}]}))``;
``meta_hash = sha256(JCS({diagnostics, media_types: [{name, media_type}], producer}))``.
Every function here works on plain JSON values, so ``verify`` checks exactly
the bytes a Snapshot file holds, independent of model defaults.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import rfc8785

PREFIX = "sha256:"
MAX_SAFE_INTEGER = 2**53 - 1
# UTF-8 byte order (orjson's key sort) equals RFC 8785's UTF-16 code unit order as long
# as no key holds a character at or above U+E000 (surrogates are rejected by orjson).
_KEY_CEILING = "\ue000"


def plain_json(value: Any) -> bool:
    """True when ``orjson`` with sorted keys writes exactly the RFC 8785 bytes of ``value``.

    Floats are left to ``rfc8785`` (ECMAScript number formatting), as are integers
    outside the safe range, non-string keys, keys that sort differently in UTF-16 and
    any type that is not plain JSON, so errors are the reference's errors too.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is dict:
            for key in item:
                if type(key) is not str or not (key.isascii() or max(key) < _KEY_CEILING):
                    return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        else:
            return False
    return True


def canonical(value: Any, *, plain: bool = False) -> bytes:
    """RFC 8785 canonical bytes of a JSON value (``plain``: :func:`plain_json` is known to
    hold for it, so the walk is skipped).

    JCS reads every number as an IEEE-754 double (RFC 8785 §3.2.2.3), where an integer
    beyond ±2^53 loses digits (the ``rfc8785`` package refuses it): two integers that
    read as the same double would hash the same, and a tampered one verify. Such an
    integer is written with its exact digits instead (everything else as JCS writes it),
    so what is hashed is what the Snapshot holds. A value JCS cannot hold at all (NaN,
    an infinity) raises ``ValueError``.
    """
    if plain or plain_json(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # e.g. a lone surrogate or deep nesting: let the reference decide
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:
        return _exact(value)


def _exact(value: Any) -> bytes:
    """JCS of ``value`` with each integer beyond the safe range as its exact digits."""
    if type(value) is int and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return str(value).encode()
    if isinstance(value, dict):
        if not all(type(key) is str for key in value):
            return rfc8785.dumps(value)  # the reference names what is wrong
        items = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        return b"{" + b",".join(rfc8785.dumps(k) + b":" + _exact(v) for k, v in items) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_exact(item) for item in value) + b"]"
    return rfc8785.dumps(value)


def header_digest(fmt: str, source: Mapping[str, Any]) -> bytes:
    """The chain head: which session of which harness, not its changing facts.

    A first design hashed ``session`` into the head too, but harnesses update a session's
    facts (``updated_at``, a generated title) as it grows, which changed every record
    hash and hid that the old chain is a prefix of the new one. The facts stay in the
    Snapshot id; the chain is the records (docs/design-notes.md).
    """
    return hashlib.sha256(canonical({"format": fmt, "source": dict(source)})).digest()


def record_digest(previous: bytes, record: Mapping[str, Any], *, plain: bool = False) -> bytes:
    """Next chain digest; ``record`` may hold a ``hash`` key, which is left out.

    ``plain``: see :func:`canonical` (the builder checked the record's fields).
    """
    body = (
        record
        if type(record) is dict and "hash" not in record
        else {k: v for k, v in record.items() if k != "hash"}
    )
    digest = hashlib.sha256(previous)
    digest.update(canonical(body, plain=plain))
    return digest.digest()


def _canonical_entry(entry: dict[str, Any]) -> bytes:
    """:func:`canonical` of one artifact entry; two strings and a size skip the walk."""
    name, sha256, size = entry["name"], entry["sha256"], entry["size"]
    plain = type(name) is str and type(sha256) is str and type(size) is int
    if plain and 0 <= size <= MAX_SAFE_INTEGER:
        try:
            return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate in the name: the reference decides
    return canonical(entry)


def snapshot_id(
    fmt: str,
    source: Mapping[str, Any],
    session: Mapping[str, Any],
    last: bytes,
    artifacts: Iterable[Mapping[str, Any]],
    children: Iterable[str] = (),
) -> str:
    """``sha256(JCS({format, source, session, last, artifacts}))``, hashed as it is made.

    JCS sorts the members, so ``artifacts`` comes first: its entries are hashed one at
    a time (a Cursor Snapshot has one per blob) and then the rest of the object. A
    Snapshot with sub-agents has one more member, ``children``: the list of their ids
    (:func:`child_id`), in order; one without has none, so its id is what it always was.
    """
    digest = hashlib.sha256(b'{"artifacts":[')
    for i, a in enumerate(artifacts):
        if i:
            digest.update(b",")
        entry = {"name": a["name"], "sha256": a["sha256"], "size": a["size"]}
        digest.update(_canonical_entry(entry))
    members: dict[str, Any] = {
        "format": fmt,
        "source": dict(source),
        "session": dict(session),
        "last": last.hex(),
    }
    kids = list(children)
    if kids:
        members["children"] = kids
    rest = canonical(members)
    digest.update(b"]," + rest[1:])  # the rest's members after the array, in JCS order
    return PREFIX + digest.hexdigest()


def child_id(
    fmt: str,
    parent_call_id: str | None,
    source: Mapping[str, Any],
    session: Mapping[str, Any],
    last: bytes,
) -> str:
    """A sub-agent's id: ``sha256(JCS({format, last, parent_call_id, session, source}))``,
    where ``last`` is the last digest of its own chain (headed by :func:`header_digest` of
    its source; the head itself when it has no records). The parent's id holds it."""
    value = {
        "format": fmt,
        "parent_call_id": parent_call_id,
        "source": dict(source),
        "session": dict(session),
        "last": last.hex(),
    }
    return PREFIX + hashlib.sha256(canonical(value)).hexdigest()


def meta_hash(
    diagnostics: Iterable[Mapping[str, Any]],
    producer: Mapping[str, Any],
    artifacts: Iterable[Mapping[str, Any]],
) -> str:
    """``sha256(JCS({diagnostics, media_types: [{name, media_type}], producer}))``: what
    the id leaves out but a writer or reader of the Snapshot acts on (a diagnostic that
    makes a writer refuse, the producer, how each artifact is typed). Kept beside the
    id (``meta_hash``), so a better reader's new diagnostic does not change the identity
    of unchanged content, yet none of these changes without ``verify`` saying so.
    """
    digest = hashlib.sha256(b'{"diagnostics":')
    digest.update(canonical([dict(d) for d in diagnostics]))
    digest.update(b',"media_types":[')
    for i, a in enumerate(artifacts):
        if i:
            digest.update(b",")
        digest.update(canonical({"media_type": a["media_type"], "name": a["name"]}))
    digest.update(b'],"producer":' + canonical(dict(producer)) + b"}")
    return PREFIX + digest.hexdigest()


def tag(digest: bytes) -> str:
    return PREFIX + digest.hex()
