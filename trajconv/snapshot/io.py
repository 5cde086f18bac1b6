"""Snapshot files: write byte-identically, load with validation, verify hashes.

A Snapshot file is the model's JSON with 2-space indentation and a final
newline, so the same Snapshot always has the same bytes. Loading checks
``format`` first (as pandoc checks its API version), then the published JSON
Schema, then the models.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from trajconv.errors import FormatError, VerifyError
from trajconv.snapshot import hashing
from trajconv.snapshot.models import FORMAT, Snapshot


def dumps(snapshot: Snapshot) -> bytes:
    """The Snapshot file's bytes: ``orjson`` with 2-space indentation and a final newline."""
    buffer = io.BytesIO()
    write(snapshot, buffer)
    return buffer.getvalue()


def _nested(value: Any, depth: int) -> bytes:
    """``value`` as ``OPT_INDENT_2`` writes it ``depth`` levels deep in a document.

    JSON strings hold no raw newline, so every newline in the output starts a line of
    the value's own layout, which moves right by two spaces a level.
    """
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    return text.replace(b"\n", b"\n" + b"  " * depth) if depth else text


def _write_flat(item: dict[str, Any], stream: BinaryIO) -> None:
    """An object of scalars two levels deep (an artifact), member by member, so its
    ``data`` is encoded once and not copied again to indent it."""
    for k, (key, value) in enumerate(item.items()):
        stream.write(b"{\n      " if k == 0 else b",\n      ")
        stream.write(orjson.dumps(key))
        stream.write(b": ")
        stream.write(orjson.dumps(value))
    stream.write(b"\n    }" if item else b"{}")


def write(snapshot: Snapshot, stream: BinaryIO) -> None:
    """Write the Snapshot file's bytes to ``stream``, one record and artifact at a time.

    The bytes are those of ``orjson.dumps(snapshot.model_dump(mode="json"),
    option=OPT_INDENT_2) + b"\\n"`` (``tests/core/test_canonical.py`` checks it), but
    the whole document is never held in memory at once, as JSON or as dicts.
    """
    fields = type(snapshot).model_fields
    stream.write(b"{")
    for i, name in enumerate(fields):
        stream.write(b"\n  " if i == 0 else b",\n  ")
        stream.write(orjson.dumps(name))
        stream.write(b": ")
        value = getattr(snapshot, name)
        if name in ("records", "artifacts", "diagnostics") and value:
            stream.write(b"[")
            for j, item in enumerate(value):
                stream.write(b"\n    " if j == 0 else b",\n    ")
                if name == "artifacts":
                    _write_flat(item.model_dump(mode="json"), stream)
                else:
                    stream.write(_nested(item.model_dump(mode="json"), 2))
            stream.write(b"\n  ]")
        else:
            stream.write(_nested(snapshot.model_dump(mode="json", include={name})[name], 1))
    stream.write(b"\n}\n")


def dump(snapshot: Snapshot, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        write(snapshot, fh)
    tmp.replace(path)


@functools.cache
def schema() -> dict[str, Any]:
    text = resources.files("trajconv.snapshot").joinpath("schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def parse_document(data: bytes, name: str) -> dict[str, Any]:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(name, f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise FormatError(name, "a Snapshot is a JSON object")
    fmt = doc.get("format")
    if fmt != FORMAT:
        raise FormatError(name, f"format is {fmt!r}, expected {FORMAT!r}")
    return doc


def validate_document(doc: Mapping[str, Any], name: str) -> Snapshot:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise FormatError(name, f"schema: at {where}: {error.message}")
    return Snapshot.model_validate(doc)


def loads(data: bytes, name: str = "<snapshot>") -> Snapshot:
    return validate_document(parse_document(data, name), name)


def load(path: Path) -> Snapshot:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror}") from None
    return loads(data, str(path))


@dataclass
class VerifyReport:
    ok: bool
    snapshot_id: str
    records: int
    artifacts: int
    problems: list[str] = field(default_factory=list)


ArtifactResolver = Callable[[str], bytes | None]


def artifact_bytes(art: Mapping[str, Any], resolve: ArtifactResolver | None) -> bytes | None:
    data = art.get("data")
    if data is None:
        return resolve(art["sha256"]) if resolve else None
    if art["encoding"] == "base64":
        return base64.b64decode(data)
    return str(data).encode("utf-8")


def verify_document(
    doc: Mapping[str, Any], resolve: ArtifactResolver | None = None
) -> VerifyReport:
    """Recompute the chain, artifact digests and the id of a loaded document.

    Names the first broken record and every artifact whose bytes do not match.
    """
    problems: list[str] = []
    source, session = doc["source"], doc["session"]
    digest = hashing.header_digest(doc["format"], source)
    for i, rec in enumerate(doc["records"]):
        digest = hashing.record_digest(digest, rec)
        if rec.get("seq") != i:
            problems.append(f"record {i} ({rec.get('id')}): seq is {rec.get('seq')}, expected {i}")
            break
        if rec.get("hash") != hashing.tag(digest):
            problems.append(f"record {i} ({rec.get('id')}): hash does not match its content")
            break
    for art in doc["artifacts"]:
        data = artifact_bytes(art, resolve)
        if data is None:
            problems.append(f"artifact {art['name']}: bytes not present")
            continue
        if len(data) != art["size"] or hashlib.sha256(data).hexdigest() != art["sha256"]:
            problems.append(f"artifact {art['name']}: bytes do not match sha256/size")
    if not problems:
        expected = hashing.snapshot_id(doc["format"], source, session, digest, doc["artifacts"])
        if expected != doc["id"]:
            problems.append(f"id is {doc['id']}, content gives {expected}")
    return VerifyReport(
        ok=not problems,
        snapshot_id=str(doc["id"]),
        records=len(doc["records"]),
        artifacts=len(doc["artifacts"]),
        problems=problems,
    )


def verify(snapshot: Snapshot) -> VerifyReport:
    return verify_document(snapshot.model_dump(mode="json"))


def require_valid(snapshot: Snapshot) -> None:
    report = verify(snapshot)
    if not report.ok:
        raise VerifyError("; ".join(report.problems))
