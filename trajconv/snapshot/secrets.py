"""Credential-looking fields never reach a Snapshot, an export, a diagnostic or a log.

Native metadata sometimes carries credentials (Cursor's ``blobEncryptionKey``,
tokens in sidecars). Readers drop every JSON member whose key looks like one;
the artifact then holds the JSON without it, and a ``secret-dropped``
diagnostic names the key's path (never its value).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import orjson

SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|"
    r"^token$|_token$|secret|password|passwd|authorization|credential|encryption[_-]?key|"
    r"private[_-]?key|cookie|session[_-]?key)",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """Whether a member name looks like a credential."""
    # Names repeat across a session's documents, so short ones are looked up once.
    return _is_short_secret_key(key) if len(key) <= 64 else bool(SECRET_KEY.search(key))


@functools.lru_cache(maxsize=4096)
def _is_short_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key))


def strip(value: Any, path: str = "$") -> tuple[Any, list[str]]:
    """``value`` without credential-looking members, and the JSON paths removed."""
    dropped: list[str] = []
    if isinstance(value, dict):
        clean: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_key(key):
                dropped.append(f"{path}.{key}")
                continue
            clean[key], sub = strip(item, f"{path}.{key}")
            dropped.extend(sub)
        return clean, dropped
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            cleaned, sub = strip(item, f"{path}[{i}]")
            out.append(cleaned)
            dropped.extend(sub)
        return out, dropped
    return value, dropped


def has_secret_key(value: Any) -> bool:
    """Whether a parsed JSON value has a member whose name looks like a credential."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and is_secret_key(key):
                    return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def strip_json_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """JSON document bytes without credentials; unchanged bytes when there are none
    (or when the bytes are not one JSON document).

    Only members are removed, by name, so a document is parsed (``orjson``, fast) and
    its member names checked; a long text that merely mentions a token is not scanned.
    """
    if not data:
        return data, []
    try:
        found = has_secret_key(orjson.loads(data))
    except orjson.JSONDecodeError:
        found = True  # not strict JSON for orjson (NaN, UTF-16, huge integers): let json say
    if not found:
        return data, []
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # not one JSON document json can hold
        return data, []
    clean, dropped = strip(value)
    if not dropped:
        return data, []
    return json.dumps(clean, indent=2, ensure_ascii=False).encode(), dropped


_YAML_KEY = re.compile(rb"^(\s*)(?:-\s+)?[\"']?([A-Za-z0-9_.\-]+)[\"']?\s*:")


def strip_yaml_bytes(data: bytes) -> tuple[bytes, list[str]]:
    """YAML text without credential-looking mappings (the key line and its nested block).

    Line-based, so the rest of the file keeps its exact bytes; names what it removed.
    """
    if not SECRET_KEY.search(data.decode("utf-8", "replace")):
        return data, []
    out: list[bytes] = []
    dropped: list[str] = []
    skip_deeper_than: int | None = None
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        indent = len(line) - len(line.lstrip(b" "))
        if skip_deeper_than is not None:
            if line.strip() and indent <= skip_deeper_than:
                skip_deeper_than = None
            else:
                continue
        match = _YAML_KEY.match(line)
        if match and is_secret_key(match.group(2).decode("utf-8", "replace")):
            dropped.append(f"line {number}: {match.group(2).decode('utf-8', 'replace')}")
            skip_deeper_than = len(match.group(1))
            continue
        out.append(line)
    return b"".join(out), dropped
