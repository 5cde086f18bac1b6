"""Mistral Vibe reader: ``logs/session/unified/<uuid>/`` -> Snapshot.

Format facts: the codec's README.md (read from ``mistral-vibe`` 3.0.3,
``mistralai_vibe_local_harness/vibe/_storage.py`` ``UnifiedSessionStore._load`` and
``protocol.py`` ``RustMessage``; checked against the recorded fixtures). Rules implemented:

* ``CURRENT`` names the generation vibe resumes and the sha256 of its ``manifest.json``;
  the manifest names the checkpoint and, in ``checkpoint.chunks``, the ordered chunk files
  ``chunks/<sha256>.json`` whose concatenation is the checkpoint's ``context.messages``:
  the conversation the core sends its model (``_read_chunked_transcript``). A digest that
  does not match is a FormatError, as vibe refuses the store;
* each transcript item ``{"message": RustMessage, "source", "turn_index"}``: ``user`` ->
  user (text blocks), ``system`` -> system, ``assistant`` -> ``text`` -> assistant,
  ``reasoning`` (its ``text``/``summary`` contents) -> reasoning, ``redacted`` reasoning ->
  ``redacted-content``, ``tool_call`` -> tool-call (arguments: the parsed ``value``, else
  the ``raw`` string); ``tool`` -> tool-result with ``ok = outcome == "success"`` and, for
  ``bash``, the exit status its JSON text names (``returncode``);
* records of the recovery journal segment the manifest names (written after the
  generation, replayed by vibe on load) are not projected: ``unknown-kind`` by type;
* session facts come from ``meta.json`` (the CLI's session log); a store without one (as
  vibe's import writes it) gives its cwd from the runtime state's ``session_metadata`` and
  its title and times from the public projection's ``snapshot.session``;
* record ids are ``vibe:m<n>`` (n: the item's place in the transcript), ``:<k>`` for a
  message's later parts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from trajconv.codecs.base import Limits
from trajconv.codecs.common import LineUnit
from trajconv.codecs.tool_results import answered
from trajconv.codecs.vibe import layout
from trajconv.errors import FormatError, LimitError
from trajconv.snapshot.builder import SnapshotBuilder, time_from_iso, time_from_ms
from trajconv.snapshot.models import Session, Snapshot, Source

READER = "vibe/1"


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.used = 0

    def read(self, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
        self.used += len(data)
        if self.used > self.limits.max_session_bytes:
            raise LimitError(path, "max_session_bytes", self.limits.max_session_bytes)
        return data


def body_of(path: Path, data: bytes) -> bytes:
    """A stored document's body: its bytes without the newline that ends them (vibe digests
    and parses the body, ``_read_document_body``)."""
    if not data.endswith(b"\n"):
        raise FormatError(path, "stored JSON document is not newline terminated")
    return data[:-1]


def _json(path: Path, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise FormatError(path, f"not JSON: {exc}") from None


def _utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8: said to ``add_artifact`` with the chunk's ``json.loads``
    value, which does not tell (json also takes UTF-16 and encoded surrogates)."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _object(path: Path, value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(path, f"{what} is not a JSON object")
    return value


class _Projector:
    def __init__(self, b: SnapshotBuilder) -> None:
        self.b = b
        self.d = b.diagnostics
        self.name = ""
        self.turn: int | None = None
        self.calls: set[str] = set()
        self.done: set[str] = set()

    def item(self, n: int, number: int, item: Any) -> None:
        unit = LineUnit(self, "vibe", number, f"m{n}", None)
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            unit.drop("invalid-line")
            unit.finish()
            return
        turn = item.get("turn_index")
        self.turn = turn if type(turn) is int else self.turn
        role = msg.get("role")
        content: list[Any] = msg["content"]
        if role in ("user", "system"):
            self.blocks(unit, content, str(role))
        elif role == "assistant":
            self.assistant(unit, content)
        elif role == "tool":
            self.result(unit, msg)
        else:
            unit.drop("unknown-kind", name=f"message:{role}")
        unit.finish()

    def blocks(self, unit: LineUnit, content: list[Any], kind: str) -> None:
        for i, block in enumerate(content):
            where = f"$[{unit.number - 1}].message.content[{i}]"
            btype = block.get("type") if isinstance(block, dict) else None
            text = block.get("text") if btype == "text" else None
            if isinstance(text, str) and text.strip():
                unit.text(kind, text, f"{kind}:text", where)
            elif isinstance(text, str):
                unit.drop("empty-content")
            else:
                unit.drop("non-text-content", name=str(btype))

    def assistant(self, unit: LineUnit, content: list[Any]) -> None:
        for i, block in enumerate(content):
            where = f"$[{unit.number - 1}].message.content[{i}]"
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "text" and isinstance(block.get("text"), str):
                if block["text"].strip():
                    unit.text("assistant", block["text"], "text", where)
                else:
                    unit.drop("empty-content")
            elif btype == "reasoning" and isinstance(block.get("content"), list):
                self.reasoning(unit, block["content"], where)
            elif btype == "tool_call" and isinstance(block.get("id"), str):
                self.call(unit, block, where)
            else:
                unit.drop("non-text-content", name=str(btype))

    def reasoning(self, unit: LineUnit, parts: list[Any], where: str) -> None:
        for part in parts:
            ptype = part.get("type") if isinstance(part, dict) else None
            text = part.get("text") if isinstance(part, dict) else None
            if ptype == "redacted":
                unit.drop("redacted-content", name="reasoning:redacted")
            elif ptype in ("text", "summary") and isinstance(text, str) and text.strip():
                unit.text("reasoning", text, f"reasoning:{ptype}", where)
            else:
                unit.drop("empty-content", name="reasoning")

    def call(self, unit: LineUnit, block: dict[str, Any], where: str) -> None:
        call_id, name = block["id"], str(block.get("name") or "")
        arguments = block.get("arguments")
        args: Any = None
        if isinstance(arguments, dict):
            args = arguments.get("value") if arguments.get("type") == "json" else None
            if args is None and isinstance(arguments.get("raw"), str):
                args = arguments["raw"]
        self.calls.add(call_id)
        unit.add(
            lambda rid, ev: self.b.add_call(
                rid, call_id, name, args, time=None, turn=self.turn, evidence=ev
            ),
            "tool_call",
            where,
        )

    def result(self, unit: LineUnit, msg: dict[str, Any]) -> None:
        call_id = answered(unit, msg.get("tool_call_id"), self.calls, self.done)
        if call_id is None:
            return
        texts = []
        for block in msg["content"]:
            if isinstance(block, dict) and block.get("type") == "text":
                if isinstance(block.get("text"), str):
                    texts.append(block["text"])
            else:
                self.d.add("block-dropped", f"{self.name}:{unit.number}", name="tool:non-text")
        output = "\n".join(texts)
        ok = msg.get("outcome") == "success"
        exit_code = None
        if msg.get("name") == "bash" and ok:
            try:
                parsed = json.loads(output)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and type(parsed.get("returncode")) is int:
                exit_code = parsed["returncode"]
        self.done.add(call_id)
        unit.add(
            lambda rid, ev: self.b.add_result(
                rid,
                call_id,
                ok,
                output,
                time=None,
                turn=self.turn,
                evidence=ev,
                exit_code=exit_code,
            ),
            "tool",
            f"$[{unit.number - 1}].message",
        )

    def finish(self) -> None:
        for call_id in sorted(self.calls - self.done):
            self.d.add("pending-tool-call", call_id)


def _document(
    b: SnapshotBuilder,
    budget: _Budget,
    gen_dir: Path,
    generation: str,
    manifest: dict[str, Any],
    key: str,
) -> dict[str, Any]:
    """A generation document the manifest names (``runtime_state``, ``projection_state``),
    kept as an artifact; its pooled transcript is not read. ``{}`` when it names none."""
    descriptor = manifest.get(key)
    if not isinstance(descriptor, dict):
        return {}
    name = descriptor.get("path")
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        return {}
    path = gen_dir / name
    data = budget.read(path)
    if hashlib.sha256(body_of(path, data)).hexdigest() != descriptor.get("sha256"):
        raise FormatError(path, "document does not match its digest in the manifest")
    b.add_artifact(f"generations/{generation}/{name}", "application/json", data)
    return _object(path, _json(path, data), name)


def read(path: Path, *, session: str | None = None, limits: Limits | None = None) -> Snapshot:
    limits = limits or Limits()
    folder = layout.resolve(path, session)
    budget = _Budget(limits)
    current_path = folder / "CURRENT"
    current_bytes = budget.read(current_path)
    current = _object(current_path, _json(current_path, current_bytes), "CURRENT")
    if current.get("store_format") != layout.STORE_FORMAT:
        raise FormatError(current_path, f"store_format is not {layout.STORE_FORMAT}")
    sid = current.get("session_id")
    generation = current.get("generation")
    if not isinstance(sid, str) or not isinstance(generation, str) or "/" in generation:
        raise FormatError(current_path, "CURRENT names no session_id or generation")
    if session is not None and session != sid:
        raise FormatError(current_path, f"CURRENT names session {sid}, not {session}")
    locator = f"unified/{folder.name}"
    b = SnapshotBuilder(
        Source(harness="vibe", harness_version=None, session_id=sid, locator=locator), READER
    )
    b.add_artifact("CURRENT", "application/json", current_bytes)

    gen_dir = folder / "generations" / generation
    manifest_path = gen_dir / "manifest.json"
    manifest_bytes = budget.read(manifest_path)
    if hashlib.sha256(body_of(manifest_path, manifest_bytes)).hexdigest() != current.get(
        "manifest_sha256"
    ):
        raise FormatError(manifest_path, "manifest digest does not match CURRENT")
    manifest = _object(manifest_path, _json(manifest_path, manifest_bytes), "the manifest")
    if manifest.get("session_id") != sid or manifest.get("generation") != generation:
        raise FormatError(manifest_path, "CURRENT and manifest disagree")
    b.add_artifact(f"generations/{generation}/manifest.json", "application/json", manifest_bytes)

    meta: dict[str, Any] = {}
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta_bytes = budget.read(meta_path)
        meta = _object(meta_path, _json(meta_path, meta_bytes), "meta.json")
        b.add_artifact("meta.json", "application/json", meta_bytes)

    checkpoint = manifest.get("checkpoint")
    chunks = checkpoint.get("chunks") if isinstance(checkpoint, dict) else None
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise FormatError(manifest_path, "the manifest names no checkpoint chunks")
    proj = _Projector(b)
    n = 0
    for digest in chunks:
        chunk_path = folder / "chunks" / f"{digest}.json"
        if len(digest) != 64 or not chunk_path.is_file():
            raise FormatError(chunk_path, "checkpoint chunk missing")
        data = budget.read(chunk_path)
        if hashlib.sha256(body_of(chunk_path, data)).hexdigest() != digest:
            raise FormatError(chunk_path, "chunk does not match its digest")
        items = _json(chunk_path, data)
        if not isinstance(items, list):
            raise FormatError(chunk_path, "a transcript chunk is not a JSON array")
        proj.name = f"chunks/{digest}.json"
        b.add_artifact(proj.name, "application/json", data, parsed=items, utf8=_utf8(data))
        for i, item in enumerate(items):
            proj.item(n, i + 1, item)
            n += 1
            if b.record_count > limits.max_records:
                raise LimitError(chunk_path, "max_records", limits.max_records)
    proj.finish()

    segment = manifest.get("recovery_journal_segment")
    seg_path = segment.get("path") if isinstance(segment, dict) else None
    if isinstance(seg_path, str) and seg_path.startswith("journal/") and "/.." not in seg_path:
        journal = folder / seg_path
        if journal.is_file():
            data = budget.read(journal)
            if data:
                b.add_artifact(seg_path, "application/x-ndjson", data)
            for number, line in enumerate(data.splitlines(), 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    b.diagnostics.add("torn-line", f"{seg_path}:{number}")
                    continue
                kind = record.get("type") if isinstance(record, dict) else None
                b.diagnostics.add("unknown-kind", f"{seg_path}:{number}", name=f"journal:{kind}")

    env = meta.get("environment")
    config = meta.get("config")
    start, end = _str(meta.get("start_time")), _str(meta.get("end_time"))
    cwd = _str(env.get("working_directory")) if isinstance(env, dict) else None
    title = _str(meta.get("title"))
    created = time_from_iso(start) if start else None
    updated = time_from_iso(end) if end else None
    if not meta:
        # a store vibe's import wrote (no session log yet): the same facts from the
        # generation's runtime state (``session_metadata.cwd``) and public projection
        # (``snapshot.session``: ``title``, ``createdAt``, ``updatedAt`` in ms)
        runtime = _document(b, budget, gen_dir, generation, manifest, "runtime_state")
        smeta = runtime.get("session_metadata")
        cwd = _str(smeta.get("cwd")) if isinstance(smeta, dict) else None
        projected = _document(b, budget, gen_dir, generation, manifest, "projection_state")
        snap_doc = projected.get("snapshot")
        public = snap_doc.get("session") if isinstance(snap_doc, dict) else None
        if isinstance(public, dict):
            title = _str(public.get("title"))
            c, u = public.get("createdAt"), public.get("updatedAt")
            created = time_from_ms(c) if type(c) is int else None
            updated = time_from_ms(u) if type(u) is int else None
    b.session = Session(
        id=sid,
        title=title,
        cwd=cwd,
        model=_str(config.get("model_name")) if isinstance(config, dict) else None,
        created_at=created,
        updated_at=updated,
        parent_session_id=_str(meta.get("parent_session_id")),
    )
    return b.build()
