"""Native model of a Cursor CLI AgentKv store (``store.db``) and its portable readout.

Format facts: ``shared/formats/cursor-agentkv.md`` (from ``@cursor/sdk`` 1.0.32,
modules ``agent-kv`` and ``run-store/sqlite-blob-store``, and public readers):

* SQLite, WAL, ``PRAGMA user_version = 1``; tables ``blobs(id TEXT PK, data BLOB)``
  and ``meta(key TEXT PK, value TEXT)`` (section 2);
* blob ids are lowercase hex of sha256 of exactly the stored bytes;
* ``meta["0"]`` is hex of the UTF-8 JSON of the agent metadata (section 3);
* ``latestRootBlobId`` names a ``ConversationStateStructure`` protobuf whose
  reference fields hold raw 32-byte blob ids (sections 4 and 6).

Only blobs reachable from the root are read (a store keeps every superseded
blob), each checked against its id. ``blobEncryptionKey`` is a credential sent
to Cursor's backend; it is removed here, before anything else sees the meta.

The readout (``cursor-agent-sqlite-readout-v1``) is the portable, lossless
logical copy of those rows: every meta row, every blob base64, plus provenance.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from google.protobuf.message import DecodeError

from trajconv.codecs.cursor import proto
from trajconv.errors import FormatError

READOUT_FORMAT = "cursor-agent-sqlite-readout-v1"
META_KEY = "0"
#: meta["0"] keys that are credentials; never kept (spec section 3: sent as a request header)
SECRET_META_KEYS = frozenset({"blobEncryptionKey"})
#: documented, non-secret meta["0"] keys (spec section 3); others are kept as-is in the readout
META_FIELDS = (
    "agentId",
    "latestRootBlobId",
    "name",
    "createdAt",
    "mode",
    "isRunEverything",
    "approvalMode",
    "lastUsedModel",
    "lastDebugServerPort",
    "currentPlanUri",
    "subagentInfo",
)
ID_BYTES = 32

JsonObj = dict[str, Any]


@dataclass
class CursorBlob:
    """One referenced blob: its id (hex), bytes, and what referenced it first."""

    id: str
    data: bytes
    role: str
    """``root``, ``message``, ``turn``, ``user-message``, ``step``, ``shell``, ``todo``,
    ``summary``, ``plan``, ``summary-archive``, ``archived-message``, ``subagent-state``."""


@dataclass
class CursorStore:
    """What the reader takes from one store: meta (secrets removed) and referenced blobs."""

    path: Path
    agent_id: str
    meta: JsonObj
    """Decoded ``meta["0"]`` without credential keys."""
    other_meta: dict[str, str]
    """Other ``meta`` rows, verbatim (older or third-party stores)."""
    root_id: str
    root: Any
    blobs: dict[str, CursorBlob]
    """Referenced blobs by id, in walk order (root first)."""
    messages: list[str]
    """Root field 1: message blob ids in order (ids may repeat)."""
    dropped_secrets: list[str] = field(default_factory=list)
    """Names (never values) of credential keys removed from meta."""
    unknown_fields: Counter[str] = field(default_factory=Counter)
    """Unknown protobuf fields by ``<message>.<number>:<wire type>``."""
    user_version: int | None = None

    @property
    def workspace_uris(self) -> list[str]:
        return list(self.root.previous_workspace_uris)

    @property
    def cwd(self) -> str | None:
        return cwd_from_uri(self.workspace_uris[0]) if self.workspace_uris else None


def cwd_from_uri(uri: str) -> str | None:
    """``file:///Users/me/My%20Project`` -> ``/Users/me/My Project`` (spec section 4, field 9)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path) or None


def uri_from_cwd(cwd: str) -> str:
    """Inverse of :func:`cwd_from_uri` for an absolute POSIX path."""
    return Path(cwd).as_uri()


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_bytes(value: Any) -> bytes:
    """``JSON.stringify`` shape: compact, insertion order, UTF-8 (how Cursor writes blobs)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_meta_value(value: str, where: str) -> JsonObj:
    try:
        decoded = json.loads(bytes.fromhex(value).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(
            where, f"meta row '0' is not hex-encoded UTF-8 JSON ({exc})", row="meta:0"
        ) from None
    if not isinstance(decoded, dict):
        raise FormatError(where, "meta row '0' is not a JSON object", row="meta:0")
    return decoded


def encode_meta_value(meta: JsonObj) -> str:
    return json_bytes(meta).hex()


def strip_secrets(meta: JsonObj) -> tuple[JsonObj, list[str]]:
    kept = {k: v for k, v in meta.items() if k not in SECRET_META_KEYS}
    return kept, sorted(k for k in meta if k in SECRET_META_KEYS)


# --------------------------------------------------------------------------- sources


class BlobSource:
    """Random access to blob bytes by hex id (a SQLite store or a readout)."""

    name: str

    def get(self, blob_hex: str) -> bytes | None:  # pragma: no cover - interface
        raise NotImplementedError


class SqliteBlobSource(BlobSource):
    def __init__(self, con: sqlite3.Connection, name: str) -> None:
        self.con = con
        self.name = name

    def get(self, blob_hex: str) -> bytes | None:
        row = self.con.execute("SELECT data FROM blobs WHERE id = ?", (blob_hex,)).fetchone()
        if row is None:
            return None
        data = row[0]
        if isinstance(data, str):  # tolerate TEXT-typed rows from third-party writers
            return data.encode("utf-8")
        if data is None:
            return b""
        if not isinstance(data, bytes):
            raise FormatError(
                self.name, f"blob column holds a {type(data).__name__}, not bytes", blob=blob_hex
            )
        return data


class ReadoutBlobSource(BlobSource):
    def __init__(self, blobs: dict[str, bytes], name: str) -> None:
        self.blobs = blobs
        self.name = name

    def get(self, blob_hex: str) -> bytes | None:
        return self.blobs.get(blob_hex)


def _connect_ro(path: Path) -> sqlite3.Connection:
    # Opened immutable, so SQLite creates and touches nothing beside the file. Only called
    # on a store with no -wal/-shm, or on a private copy of db + -wal + -shm.
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    con.execute("PRAGMA query_only = 1")
    return con


def _in_wal_use(path: Path) -> bool:
    return any(path.with_name(path.name + s).exists() for s in ("-wal", "-shm"))


@dataclass
class _Opened:
    con: sqlite3.Connection
    tmp: tempfile.TemporaryDirectory[str] | None


def open_store(path: Path) -> _Opened:
    """Open read-only, changing nothing on disk.

    A store with a -wal or -shm beside it is in use (or was left so): even a ``mode=ro``
    reader writes to -shm, so such a store is read through a private copy of
    db + -wal + -shm, whose WAL SQLite may then replay in the copy.
    """
    if not _in_wal_use(path):
        try:
            con = _connect_ro(path)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return _Opened(con, None)
        except sqlite3.OperationalError:
            pass  # locked or not openable in place: fall back to a private copy
        except sqlite3.DatabaseError as exc:
            raise FormatError(path, f"not a readable SQLite database ({exc})") from None
    tmp = tempfile.TemporaryDirectory(prefix="trajconv-cursor-")
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.is_file():
            shutil.copyfile(part, Path(tmp.name) / ("store.db" + suffix))
    try:
        copy = Path(tmp.name) / "store.db"
        # Not immutable: the copy's WAL must be replayed to see the latest commits.
        con = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        tmp.cleanup()
        raise FormatError(path, f"not a readable SQLite database ({exc})") from None
    return _Opened(con, tmp)


# --------------------------------------------------------------------------- walk


def _hexid(raw: bytes, where: str, ref: str) -> str:
    if len(raw) != ID_BYTES:
        raise FormatError(where, f"{ref} holds {len(raw)} bytes, not a 32-byte blob id")
    return raw.hex()


class _Walker:
    def __init__(self, source: BlobSource, max_blob: int, where: str) -> None:
        self.source = source
        self.max_blob = max_blob
        self.where = where
        self.blobs: dict[str, CursorBlob] = {}
        self.unknown: Counter[str] = Counter()
        self.total = 0

    def fetch(self, blob_hex: str, role: str) -> bytes:
        seen = self.blobs.get(blob_hex)
        if seen is not None:
            return seen.data
        data = self.source.get(blob_hex)
        if data is None:
            raise FormatError(self.where, f"referenced {role} blob is missing", blob=blob_hex)
        if len(data) > self.max_blob:
            raise FormatError(
                self.where,
                f"{role} blob is {len(data)} bytes, over the "
                f"max_line_bytes limit ({self.max_blob})",
                blob=blob_hex,
            )
        if blob_id(data) != blob_hex:
            raise FormatError(self.where, "blob sha256 does not match its id", blob=blob_hex)
        self.total += len(data)
        self.blobs[blob_hex] = CursorBlob(blob_hex, data, role)
        return data

    def pb(self, blob_hex: str, role: str, type_name: str) -> Any:
        data = self.fetch(blob_hex, role)
        try:
            msg = proto.decode(type_name, data)
        except DecodeError as exc:
            raise FormatError(
                self.where, f"{role} blob is not a {type_name} ({exc})", blob=blob_hex
            ) from None
        for key, n in proto.unknown_counts(msg).items():
            self.unknown[f"{type_name}.{key}"] += n
        return msg

    def ref(self, raw: bytes, role: str) -> str:
        return _hexid(raw, self.where, role)

    def walk_root(self, root: Any) -> list[str]:
        """Fetch and verify every blob the root references; return field-1 ids."""
        messages = [self.ref(raw, "message") for raw in root.root_prompt_messages_json]
        for m in messages:
            self.fetch(m, "message")
        for raw in root.turns:
            turn = self.pb(self.ref(raw, "turn"), "turn", "ConversationTurnStructure")
            which = turn.WhichOneof("turn")
            if which == "agent_conversation_turn":
                agent = turn.agent_conversation_turn
                if agent.HasField("user_message") and agent.user_message:
                    user = self.pb(
                        self.ref(agent.user_message, "user-message"), "user-message", "UserMessage"
                    )
                    for name in ("text_blob_id",):
                        if user.HasField(name) and getattr(user, name):
                            self.fetch(self.ref(getattr(user, name), name), "user-message")
                for step in agent.steps:
                    self.pb(self.ref(step, "step"), "step", "ConversationStep")
            elif which == "shell_conversation_turn":
                shell = turn.shell_conversation_turn
                if shell.HasField("shell_command"):
                    self.pb(self.ref(shell.shell_command, "shell"), "shell", "ShellCommand")
                if shell.HasField("shell_output"):
                    self.pb(self.ref(shell.shell_output, "shell"), "shell", "ShellOutput")
        for raw in root.todos:
            self.pb(self.ref(raw, "todo"), "todo", "TodoItem")
        if root.HasField("summary") and root.summary:
            self.pb(self.ref(root.summary, "summary"), "summary", "ConversationSummary")
        if root.HasField("plan") and root.plan:
            self.pb(self.ref(root.plan, "plan"), "plan", "ConversationPlan")
        archives = list(root.summary_archives)
        if root.HasField("summary_archive") and root.summary_archive:
            archives.insert(0, root.summary_archive)
        for raw in archives:
            arch = self.pb(
                self.ref(raw, "summary-archive"), "summary-archive", "ConversationSummaryArchive"
            )
            for m in arch.summarized_messages:
                self.fetch(self.ref(m, "archived-message"), "archived-message")
            if arch.HasField("summary_message") and arch.summary_message:
                self.fetch(self.ref(arch.summary_message, "archived-message"), "archived-message")
        for raw in root.subagent_state_refs:
            entry = proto.decode("StringBytesEntry", raw)
            if entry.value:
                self.fetch(self.ref(entry.value, "subagent-state"), "subagent-state")
        return messages


def load(
    source: BlobSource,
    meta_rows: dict[str, str],
    where: str,
    path: Path,
    *,
    max_blob: int,
    user_version: int | None = None,
) -> CursorStore:
    """Decode meta, walk the root, verify blobs: shared by the SQLite and readout paths."""
    raw_meta = meta_rows.get(META_KEY)
    if raw_meta is None:
        raise FormatError(where, "no meta row '0' (agent metadata)", row="meta:0")
    meta, dropped = strip_secrets(decode_meta_value(raw_meta, where))
    root_id = meta.get("latestRootBlobId")
    if not isinstance(root_id, str) or len(root_id) != 64:
        raise FormatError(
            where, "meta has no 64-hex latestRootBlobId (empty conversation)", row="meta:0"
        )
    agent_id = meta.get("agentId")
    if not isinstance(agent_id, str) or not agent_id:
        # Cursor defaults agentId to the folder name when metadata lacks it (section 1).
        agent_id = path.parent.name
    walker = _Walker(source, max_blob, where)
    root = walker.pb(root_id, "root", "ConversationStateStructure")
    messages = walker.walk_root(root)
    return CursorStore(
        path=path,
        agent_id=agent_id,
        meta=meta,
        other_meta={k: v for k, v in meta_rows.items() if k != META_KEY},
        root_id=root_id,
        root=root,
        blobs=walker.blobs,
        messages=messages,
        dropped_secrets=dropped,
        unknown_fields=walker.unknown,
        user_version=user_version,
    )


def read_store(path: Path, *, max_blob: int) -> CursorStore:
    opened = open_store(path)
    try:
        con = opened.con
        try:
            rows = con.execute("SELECT key, value FROM meta").fetchall()
            version = con.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise FormatError(path, f"no AgentKv meta table ({exc})") from None
        meta_rows = {str(k): v for k, v in rows if isinstance(v, str)}
        return load(
            SqliteBlobSource(con, str(path)),
            meta_rows,
            str(path),
            path,
            max_blob=max_blob,
            user_version=int(version),
        )
    finally:
        opened.con.close()
        if opened.tmp is not None:
            opened.tmp.cleanup()


# --------------------------------------------------------------------------- readout


def readout_document(
    *,
    agent_id: str,
    cwd: str | None,
    meta: JsonObj,
    other_meta: dict[str, str],
    blobs: list[tuple[str, bytes]],
    provenance: JsonObj | None,
) -> JsonObj:
    """The ``cursor-agent-sqlite-readout-v1`` JSON document (credential keys never written)."""
    clean, _ = strip_secrets(meta)
    rows = [{"key": META_KEY, "value": encode_meta_value(clean)}]
    rows += [{"key": k, "value": v} for k, v in sorted(other_meta.items())]
    doc: JsonObj = {
        "format": READOUT_FORMAT,
        "agent_id": agent_id,
        "cwd": cwd,
        "user_version": 1,
        "latest_root_blob_id": clean.get("latestRootBlobId"),
        "meta": rows,
        "meta_decoded": clean,
        "blobs": [
            {"id": bid, "size": len(data), "data": base64.b64encode(data).decode("ascii")}
            for bid, data in blobs
        ],
    }
    if provenance is not None:
        doc["provenance"] = provenance
    return doc


@dataclass
class Readout:
    agent_id: str
    cwd: str | None
    meta_rows: dict[str, str]
    blobs: dict[str, bytes]
    doc: JsonObj


def parse_readout(data: bytes, where: str, *, max_blob: int) -> Readout:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise FormatError(where, f"readout is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != READOUT_FORMAT:
        raise FormatError(where, f"not a {READOUT_FORMAT} document")
    rows: dict[str, str] = {}
    for i, row in enumerate(doc.get("meta") or []):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("key"), str)
            and isinstance(row.get("value"), str)
        ):
            raise FormatError(where, f"meta[{i}] is not {{key, value}} strings")
        rows[row["key"]] = row["value"]
    blobs: dict[str, bytes] = {}
    for i, entry in enumerate(doc.get("blobs") or []):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("id"), str)
            and isinstance(entry.get("data"), str)
        ):
            raise FormatError(where, f"blobs[{i}] is not {{id, data}}")
        try:
            raw = base64.b64decode(entry["data"], validate=True)
        except ValueError:
            raise FormatError(where, f"blobs[{i}] data is not base64", blob=entry["id"]) from None
        if len(raw) > max_blob:
            raise FormatError(
                where, f"blobs[{i}] is over the max_line_bytes limit", blob=entry["id"]
            )
        blobs[entry["id"]] = raw
    agent = doc.get("agent_id")
    cwd = doc.get("cwd")
    return Readout(
        agent_id=agent if isinstance(agent, str) else "",
        cwd=cwd if isinstance(cwd, str) else None,
        meta_rows=rows,
        blobs=blobs,
        doc=doc,
    )


def read_readout(path: Path, *, max_blob: int) -> CursorStore:
    readout = parse_readout(path.read_bytes(), str(path), max_blob=max_blob)
    store = load(
        ReadoutBlobSource(readout.blobs, str(path)),
        readout.meta_rows,
        str(path),
        path,
        max_blob=max_blob,
        user_version=readout.doc.get("user_version"),
    )
    if readout.agent_id and store.agent_id != readout.agent_id:
        raise FormatError(path, "readout agent_id differs from meta agentId")
    return store


def iter_message_json(store: CursorStore) -> Iterator[tuple[int, str, Any]]:
    """Field-1 messages in order: (position, blob id, parsed JSON); FormatError if not JSON."""
    for pos, bid in enumerate(store.messages):
        data = store.blobs[bid].data
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise FormatError(
                store.path, f"message blob is not UTF-8 JSON ({exc})", blob=bid
            ) from None
        yield pos, bid, value
