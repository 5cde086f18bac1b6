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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from trajconv.errors import FormatError, VerifyError, writing
from trajconv.snapshot import hashing
from trajconv.snapshot.jsonstream import Items, Members, Raw, json_chunks, utf8_string_body
from trajconv.snapshot.models import FORMAT, Child, Snapshot
from trajconv.snapshot.spool import Blob, artifact_dicts, record_dicts, records_value
from trajconv.snapshot.strictjson import DuplicateKeyError as DuplicateKeyError
from trajconv.snapshot.strictjson import strict_loads as strict_loads


def dumps(snapshot: Snapshot) -> bytes:
    """The Snapshot file's bytes: ``orjson`` with 2-space indentation and a final newline."""
    buffer = io.BytesIO()
    write(snapshot, buffer)
    return buffer.getvalue()


_B64_CHUNK = 3 << 18  # a multiple of 3, so chunks encode to pieces that concatenate


_INLINE_BELOW = 1 << 16  # artifacts smaller than this are encoded whole (one orjson call)


def _data_pieces(blob: Blob, encoding: str) -> Iterator[bytes]:
    """The JSON string of an artifact's ``data``, in pieces, from its Blob."""
    yield b'"'
    if encoding == "base64":
        pending = b""
        for chunk in blob.chunks():
            pending += chunk
            cut = len(pending) - len(pending) % 3
            if cut >= _B64_CHUNK or cut == len(pending):
                yield base64.b64encode(pending[:cut])
                pending = pending[cut:]
        yield base64.b64encode(pending)
    else:  # the encoding says the bytes are UTF-8: they were checked when it was chosen
        for chunk in blob.chunks():
            yield utf8_string_body(chunk)
    yield b'"'


def _artifact_pieces(artifacts: Iterable[Any], inline: bool) -> Iterator[bytes]:
    """The artifacts array as ``OPT_INDENT_2`` writes it as a member of the document's
    top-level object: each artifact's members (``orjson``), then its ``data`` from its
    Blob when ``inline`` (streamed when large), ``null`` when the bytes live beside the
    document. A small artifact's bytes are escaped as they are (:func:`utf8_string_body`)
    or encoded, never decoded into a ``str`` for ``orjson`` to encode again."""
    dumps, indent = orjson.dumps, orjson.OPT_INDENT_2
    sep = b"["
    for meta, blob in artifact_dicts(artifacts, _INLINE_BELOW):
        # the members without the closing brace, moved right to their place, then data's
        members = dumps(meta, option=indent)[:-2].replace(b"\n", b"\n    ")
        head = b"".join((sep, b"\n    ", members, b',\n      "data": '))
        sep = b","
        if not inline or blob is None:
            yield head + b"null\n    }"
        elif blob.size < _INLINE_BELOW:
            data = blob.read()
            base64_data = meta["encoding"] == "base64"
            body = base64.b64encode(data) if base64_data else utf8_string_body(data)
            yield b"".join((head, b'"', body, b'"\n    }'))
        else:
            yield head
            yield from _data_pieces(blob, meta["encoding"])
            yield b"\n    }"
    yield b"[]" if sep == b"[" else b"\n  ]"


def _head(snapshot: Snapshot) -> dict[str, Any]:
    """The members of the Snapshot file but its records, children and artifacts, as
    ``snapshot.model_dump(mode="json")`` gives them, from the models of each member: a
    dump of the Snapshot itself builds the serializer of every record model first (a
    tenth of reading a small session)."""
    if type(snapshot) is not Snapshot:  # a subclass may dump itself otherwise
        return snapshot.model_dump(mode="json", exclude={"records", "children", "artifacts"})
    return {
        "format": snapshot.format,
        "id": snapshot.id,
        "meta_hash": snapshot.meta_hash,
        "source": snapshot.source.model_dump(mode="json"),
        "session": snapshot.session.model_dump(mode="json"),
        "diagnostics": [d.model_dump(mode="json") for d in snapshot.diagnostics],
        "producer": snapshot.producer.model_dump(mode="json"),
    }


def _child(child: Child) -> Members:
    """A sub-agent as the Snapshot file holds it, its records streamed from the spool."""
    doc = Members(child.model_dump(mode="json", exclude={"records"}))
    doc["records"] = records_value(child.records, depth=3)
    return doc


def write(snapshot: Snapshot, stream: BinaryIO, *, inline_artifacts: bool = True) -> None:
    """Write the Snapshot file's bytes to ``stream``, one record and artifact piece at a time.

    The bytes are those of ``orjson.dumps(snapshot.model_dump(mode="json"),
    option=OPT_INDENT_2) + b"\\n"`` with every artifact's bytes as its ``data``
    (``tests/core/test_canonical.py`` checks it), but neither the document nor a whole
    artifact is held in memory: records come from the spool, artifacts in chunks.
    ``inline_artifacts=False`` writes ``data: null`` (an archive store's documents).
    """
    doc = Members(_head(snapshot))
    doc["records"] = records_value(snapshot.records)
    if snapshot.children:
        doc["children"] = Items(_child(child) for child in snapshot.children)
    doc["artifacts"] = Raw(_artifact_pieces(snapshot.artifacts, inline_artifacts))
    ordered = Members((name, doc[name]) for name in type(snapshot).model_fields if name in doc)
    for chunk in json_chunks(ordered):
        stream.write(chunk)
    stream.write(b"\n")


def dump(snapshot: Snapshot, path: Path) -> None:
    """Write the Snapshot file at ``path`` via ``path.tmp``: whole or absent; a full disk
    is a NoSpaceError naming ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with writing(path), tmp.open("wb") as fh:
            write(snapshot, fh)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)


@functools.cache
def schema() -> dict[str, Any]:
    text = resources.files("trajconv.snapshot").joinpath("schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def parse_document(data: bytes, name: str) -> dict[str, Any]:
    try:
        doc = strict_loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(name, f"not JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise FormatError(name, f"not a Snapshot's JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise FormatError(name, "a Snapshot is a JSON object")
    fmt = doc.get("format")
    if fmt != FORMAT:
        raise FormatError(name, f"format is {fmt!r}, expected {FORMAT!r}")
    return doc


_ITEMS = {"records": "kind", "children": None, "artifacts": None, "diagnostics": None}
"""The document's arrays, checked item by item (records by the schema of their kind)."""


@functools.cache
def _validators() -> dict[str, Any]:
    """A validator of the document without its arrays, and one per array item kind."""
    import jsonschema

    full = schema()
    defs = {"$defs": full["$defs"]}
    frame = {**full, "properties": {**full["properties"]}}
    for member in _ITEMS:
        frame["properties"][member] = {"type": "array", "maxItems": 0}
    found: dict[str, Any] = {"": jsonschema.Draft202012Validator(frame)}
    mapping = full["properties"]["records"]["items"]["discriminator"]["mapping"]
    for kind, ref in mapping.items():
        found[f"records:{kind}"] = jsonschema.Draft202012Validator({"$ref": ref, **defs})
    for member in ("artifacts", "diagnostics"):
        item = {**full["properties"][member]["items"], **defs}
        found[member] = jsonschema.Draft202012Validator(item)
    # a child without its records (checked one by one, as the Snapshot's are)
    child = full["$defs"]["Child"]
    frame_child = {**child, "properties": {**child["properties"]}}
    frame_child["properties"]["records"] = {"type": "array", "maxItems": 0}
    found["children"] = jsonschema.Draft202012Validator({**frame_child, **defs})
    return found


def _schema_error(validator: Any, value: Any, where: tuple[Any, ...]) -> str | None:
    """The best of the first few schema errors of ``value``, as ``at <path>: <message>``.

    Only a bounded number of errors is looked at, and no ``oneOf`` is left in any
    validator, so the work stays in proportion to the value (issue 25: 100,000 empty
    records took 49 s in ``best_match`` over ``oneOf`` for each)."""
    import itertools

    import jsonschema

    error = jsonschema.exceptions.best_match(itertools.islice(validator.iter_errors(value), 16))
    if error is None:
        return None
    path = "/".join(str(p) for p in (*where, *error.absolute_path)) or "(top)"
    return f"at {path}: {error.message}"


def check_schema(doc: Mapping[str, Any], name: str) -> None:
    """The published JSON Schema, applied so that it stops at the first invalid item.

    First the cheap structure (an object whose arrays are arrays), then the document
    without its arrays, then each array item in order against the schema of its kind.
    """
    validators = _validators()
    frame = {k: ([] if k in _ITEMS and type(v) is list else v) for k, v in doc.items()}
    problem = _schema_error(validators[""], frame, ())
    if problem is not None:
        raise FormatError(name, f"schema: {problem}")
    for member, key in _ITEMS.items():
        for i, item in enumerate(doc.get(member, ())):
            if key is None:
                validator = validators[member]
            else:
                kind = item.get(key) if type(item) is dict else None
                validator = validators.get(f"{member}:{kind}")
                if validator is None:
                    known = ", ".join(k.split(":")[1] for k in validators if ":" in k)
                    raise FormatError(
                        name, f"schema: at {member}/{i}: {key} is {kind!r}, not one of {known}"
                    )
            if member == "children" and type(item) is dict and type(item.get("records")) is list:
                _check_child(validators, item, i, name)
                continue
            problem = _schema_error(validator, item, (member, i))
            if problem is not None:
                raise FormatError(name, f"schema: {problem}")


def _check_child(validators: dict[str, Any], child: Mapping[str, Any], i: int, name: str) -> None:
    """A child's members, then each of its records against the schema of its kind."""
    problem = _schema_error(validators["children"], {**child, "records": []}, ("children", i))
    if problem is not None:
        raise FormatError(name, f"schema: {problem}")
    for j, rec in enumerate(child["records"]):
        kind = rec.get("kind") if type(rec) is dict else None
        validator = validators.get(f"records:{kind}")
        if validator is None:
            raise FormatError(
                name, f"schema: at children/{i}/records/{j}: kind is {kind!r}, not a record kind"
            )
        problem = _schema_error(validator, rec, ("children", i, "records", j))
        if problem is not None:
            raise FormatError(name, f"schema: {problem}")


def validate_document(
    doc: Mapping[str, Any],
    name: str,
    resolve: BlobResolver | None = None,
    *,
    check: bool = True,
) -> Snapshot:
    """A parsed Snapshot document as a Snapshot: the schema, the models, ``meta_hash``
    and (``check``) its hashes, so no command acts on a record, an artifact or an id
    that was changed after the Snapshot was made (issue 33: ``verify`` named an edited
    record, but ``write`` and ``convert`` wrote its text and printed the stale id).
    ``check=False`` is for a caller that verifies the document itself and reports
    every problem (``trajconv verify``)."""
    check_schema(doc, name)
    snapshot = Snapshot.model_validate(doc)
    check_meta(snapshot, name)
    snapshot = with_blobs(snapshot, resolve)
    if check:
        check_hashes(snapshot, name)
    return snapshot


def check_hashes(snapshot: Snapshot, name: str) -> None:
    """Refuse a Snapshot whose record chain, artifact bytes or id do not match its
    content, naming the first broken record (:func:`verify`: the chain is recomputed
    over the records as the models hold them, which is what a writer acts on)."""
    report = verify(snapshot)
    if not report.ok:
        raise VerifyError(
            f"{name}: {report.problems[0]}; it was changed after it was made "
            f"(trajconv verify {name} names every problem)"
        )


def check_meta(snapshot: Snapshot, name: str) -> None:
    """Refuse a Snapshot whose ``meta_hash`` does not bind its diagnostics, producer and
    artifact media types: a writer acts on them (a removed diagnostic must not let a
    refused write through)."""
    dump = snapshot.model_dump(mode="json", include={"diagnostics", "producer"})
    metas = ({"name": a.name, "media_type": a.media_type} for a in snapshot.artifacts)
    expected = hashing.meta_hash(dump["diagnostics"], dump["producer"], metas)
    if expected != snapshot.meta_hash:
        raise VerifyError(
            f"{name}: meta_hash is {snapshot.meta_hash}, but its diagnostics, producer and "
            f"artifact media types give {expected}: they were changed after it was made"
        )


def with_blobs(snapshot: Snapshot, resolve: BlobResolver | None = None) -> Snapshot:
    """Move each artifact's inline ``data`` into a Blob, or find its bytes with ``resolve``
    (sha256, size) when they live beside the document."""
    arts = []
    for art in snapshot.artifacts:
        data = artifact_bytes(art.model_dump(mode="json"), None)
        blob = Blob.from_bytes(data) if data is not None else None
        if blob is None and resolve is not None:
            blob = resolve(art.sha256, art.size)
        arts.append(art.with_blob(blob))
    return snapshot.model_copy(update={"artifacts": tuple(arts)})


def loads(data: bytes, name: str = "<snapshot>") -> Snapshot:
    return validate_document(parse_document(data, name), name)


def read_document(path: Path) -> dict[str, Any]:
    """A Snapshot file parsed whole; an unreadable one is a FormatError naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror}") from None
    return parse_document(data, str(path))


def load(path: Path) -> Snapshot:
    """A Snapshot file: read a record and a chunk at a time when it is laid out as
    :func:`write` lays it out and verifies (``fileload``), else parsed whole and checked."""
    from trajconv.snapshot.fileload import load_streamed

    streamed = load_streamed(path)
    if streamed is not None:
        return streamed
    return validate_document(read_document(path), str(path))


@dataclass
class VerifyReport:
    ok: bool
    snapshot_id: str
    records: int
    artifacts: int
    problems: list[str] = field(default_factory=list)
    children: int = 0
    """Sub-agent sessions, each checked as the records are."""
    child_records: int = 0


ArtifactResolver = Callable[[str], bytes | None]
BlobResolver = Callable[[str, int], Blob | None]


def artifact_bytes(art: Mapping[str, Any], resolve: ArtifactResolver | None) -> bytes | None:
    data = art.get("data")
    if data is None:
        return resolve(art["sha256"]) if resolve else None
    if art["encoding"] == "base64":
        return base64.b64decode(data)
    return str(data).encode("utf-8")


def _chain(
    fmt: str,
    source: Mapping[str, Any],
    records: Iterable[Mapping[str, Any]],
    where: str,
    problems: list[str],
    calls: set[str],
) -> tuple[bytes, int]:
    """The last digest of a record chain and how many records it has; the first broken
    record goes into ``problems`` (named with ``where``), each call id into ``calls``."""
    digest = hashing.header_digest(fmt, source)
    count = 0
    for i, rec in enumerate(records):
        count += 1
        if problems:
            continue  # count the rest; the first break is the one to name
        digest = hashing.record_digest(digest, rec)
        call = rec.get("call")
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            calls.add(call["id"])
        if rec.get("seq") != i:
            problems.append(
                f"{where}record {i} ({rec.get('id')}): seq is {rec.get('seq')}, expected {i}"
            )
        elif rec.get("hash") != hashing.tag(digest):
            problems.append(f"{where}record {i} ({rec.get('id')}): hash does not match its content")
    return digest, count


#: A sub-agent as verify takes it: its members but ``records``, and its records.
ChildParts = tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]]


def _children(
    fmt: str,
    parent_session: str,
    parent_calls: set[str],
    children: Iterable[ChildParts],
    problems: list[str],
) -> tuple[list[str], int]:
    """Check each child's chain, id and link to its spawning call; their ids and how many
    records they hold together."""
    ids: list[str] = []
    total = 0
    calls_of: dict[str, set[str]] = {parent_session: parent_calls}
    for i, (head, records) in enumerate(children):
        session = head["session"]
        sid = session.get("id")
        where = f"child {i} ({sid}): "
        calls: set[str] = set()
        digest, count = _chain(fmt, head["source"], records, where, problems, calls)
        total += count
        ids.append(str(head["id"]))
        if problems:
            continue
        expected = hashing.child_id(fmt, head["parent_call_id"], head["source"], session, digest)
        if expected != head["id"]:
            problems.append(f"{where}id is {head['id']}, content gives {expected}")
            continue
        spawner = calls_of.get(session.get("parent_session_id"))
        if spawner is None:
            problems.append(
                f"{where}parent_session_id {session.get('parent_session_id')!r} names neither "
                "the session nor an earlier child"
            )
        elif head["parent_call_id"] is not None and head["parent_call_id"] not in spawner:
            problems.append(
                f"{where}parent_call_id {head['parent_call_id']!r} is no tool call of "
                f"session {session.get('parent_session_id')!r}"
            )
        calls_of.setdefault(str(sid), calls)
    return ids, total


def _verify(
    doc: Mapping[str, Any],
    records: Iterable[Mapping[str, Any]],
    artifacts: Iterable[tuple[Mapping[str, Any], Iterable[bytes] | None]],
    children: Iterable[ChildParts] = (),
) -> VerifyReport:
    problems: list[str] = []
    source, session = doc["source"], doc["session"]
    calls: set[str] = set()
    digest, count = _chain(doc["format"], source, records, "", problems, calls)
    child_ids, child_count = _children(doc["format"], session.get("id"), calls, children, problems)
    metas = []
    for art, chunks in artifacts:
        metas.append(art)
        if chunks is None:
            problems.append(f"artifact {art['name']}: bytes not present")
            continue
        sha, size = hashlib.sha256(), 0
        for chunk in chunks:
            sha.update(chunk)
            size += len(chunk)
        if size != art["size"] or sha.hexdigest() != art["sha256"]:
            problems.append(f"artifact {art['name']}: bytes do not match sha256/size")
    if not problems:
        expected = hashing.snapshot_id(doc["format"], source, session, digest, metas, child_ids)
        if expected != doc["id"]:
            problems.append(f"id is {doc['id']}, content gives {expected}")
    meta = hashing.meta_hash(doc["diagnostics"], doc["producer"], metas)
    if meta != doc["meta_hash"]:
        problems.append(
            f"meta_hash is {doc['meta_hash']}, the diagnostics, producer and artifact "
            f"media types give {meta}"
        )
    return VerifyReport(
        ok=not problems,
        snapshot_id=str(doc["id"]),
        records=count,
        artifacts=len(metas),
        problems=problems,
        children=len(child_ids),
        child_records=child_count,
    )


def verify_document(
    doc: Mapping[str, Any], resolve: ArtifactResolver | None = None
) -> VerifyReport:
    """Recompute the chain, artifact digests and the id of a loaded document.

    Names the first broken record and every artifact whose bytes do not match.
    """

    def chunks(art: Mapping[str, Any]) -> list[bytes] | None:
        data = artifact_bytes(art, resolve)
        return None if data is None else [data]

    kids = (
        ({k: v for k, v in c.items() if k != "records"}, c["records"])
        for c in doc.get("children", ())
    )
    return _verify(doc, doc["records"], ((a, chunks(a)) for a in doc["artifacts"]), kids)


def verify(snapshot: Snapshot) -> VerifyReport:
    """:func:`verify_document` for a Snapshot in memory, one record and chunk at a time."""
    head = snapshot.model_dump(
        mode="json",
        include={"format", "id", "meta_hash", "source", "session", "diagnostics", "producer"},
    )
    return _verify(
        head,
        record_dicts(snapshot.records),
        (
            (meta, blob.chunks() if blob is not None else None)
            for meta, blob in artifact_dicts(snapshot.artifacts, _INLINE_BELOW)
        ),
        (
            (c.model_dump(mode="json", exclude={"records"}), record_dicts(c.records))
            for c in snapshot.children
        ),
    )
