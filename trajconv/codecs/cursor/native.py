"""Native model of a Cursor CLI AgentKv store (``store.db``) and its portable readout.

Format facts: ``codecs/cursor/README.md`` (from ``@cursor/sdk`` 1.0.32,
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

Blobs are read one at a time, in walk order, and handed to the caller, which
says which it holds already; the walk keeps only their ids and roles, 33 bytes a
blob (issue 10).

The readout (``cursor-agent-sqlite-readout-v1``) is the portable, lossless
logical copy of those rows: every meta row, every blob base64, plus provenance.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote, urlparse

import orjson
from google.protobuf.message import DecodeError

from trajconv.codecs.cursor import proto
from trajconv.codecs.sqlite import ReadOnly
from trajconv.errors import FormatError
from trajconv.snapshot.jsonstream import Items, Members, Raw, json_chunks
from trajconv.snapshot.secrets import UNPARSED

if TYPE_CHECKING:  # the readout's module (argparse and all) only where a readout is read
    from trajconv.codecs.cursor import prepare_store

META_KEY = "0"
#: meta["0"].name of a chat nobody titled: Cursor writes its default there (spec section 3)
#: and its parser requires the field, so a writer puts it there and a reader reads it as
#: no title
UNTITLED = "New Agent"


def title_of(meta: dict[str, Any]) -> str | None:
    """The chat's title from meta["0"]; ``None`` for none or Cursor's untitled default."""
    name = meta.get("name")
    return name if isinstance(name, str) and name and name != UNTITLED else None


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


ROLES = (
    "root",
    "message",
    "turn",
    "user-message",
    "step",
    "shell",
    "todo",
    "summary",
    "plan",
    "summary-archive",
    "archived-message",
    "subagent-state",
)
_ROLE_CODES = {role: code for code, role in enumerate(ROLES)}
OnBlob = Callable[[str, str, bytes], None]
"""Called once per referenced blob, at its first reference: ``(id, role, bytes)``, the
role one of :data:`ROLES`."""
OnParsedBlob = Callable[[str, str, bytes, Any], None]
"""In place of :data:`OnBlob` when given: ``(id, role, bytes, parsed)``, ``parsed`` being
``orjson.loads(bytes)`` for a message blob orjson reads, else
:data:`~trajconv.snapshot.secrets.UNPARSED` (so the caller need not parse it again)."""
Known = Callable[[str], bool]
"""Whether a blob id was handed to :data:`OnBlob` already. The caller keeps every blob
it is handed, so it can tell; the walk then needs no set of ids (a long chat has
hundreds of thousands)."""
OnMessage = Callable[[int, str, Any], None]
"""Called for each root field-1 position in order: ``(position, blob id, parsed JSON)``."""


@dataclass
class CursorStore:
    """One opened store or readout: its meta (secrets removed), then what :meth:`walk` read."""

    path: Path
    source: BlobSource
    max_blob: int
    agent_id: str
    meta: JsonObj
    """Decoded ``meta["0"]`` without credential keys."""
    other_meta: dict[str, str]
    """Other ``meta`` rows, verbatim (older or third-party stores)."""
    root_id: str
    dropped_secrets: list[str] = field(default_factory=list)
    """Names (never values) of credential keys removed from meta."""
    user_version: int | None = None
    root: Any = None
    """The decoded root blob, once walked."""
    walked: bytearray = field(default_factory=bytearray)
    """Each referenced blob in walk order (root first), 33 bytes: its raw id, then the
    :data:`ROLES` index of the role that referenced it first."""
    unknown_fields: Counter[str] = field(default_factory=Counter)
    """Unknown protobuf fields by ``<message>.<number>:<wire type>``."""

    def walk(
        self,
        on_blob: OnBlob,
        on_message: OnMessage,
        known: Known,
        parsed_blob: OnParsedBlob | None = None,
    ) -> None:
        """Read, verify and hand over every blob the root references, one at a time."""
        if parsed_blob is None:

            def parsed_blob(bid: str, role: str, data: bytes, _parsed: Any) -> None:
                on_blob(bid, role, data)

        walker = _Walker(self, parsed_blob, known)
        self.root = walker.pb(self.root_id, "root", "ConversationStateStructure")
        walker.walk_root(self.root, on_message)

    def message_ids(self) -> Iterator[str]:
        """Root field 1, once walked: message blob ids in order (ids may repeat). Read
        from the root each time, not kept: a long chat has hundreds of thousands."""
        where = str(self.path)
        for raw in self.root.root_prompt_messages_json:
            yield _hexid(raw, where, "message")

    def roles(self) -> Iterator[tuple[str, str]]:
        """Referenced blob ids and the role that referenced each first, in walk order."""
        walked = self.walked
        for at in range(0, len(walked), ID_BYTES + 1):
            yield walked[at : at + ID_BYTES].hex(), ROLES[walked[at + ID_BYTES]]

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
    """A readout's blobs, each read from the file when asked for (the scan kept where)."""

    def __init__(self, fh: BinaryIO, spans: prepare_store.Spans, name: str) -> None:
        from trajconv.codecs.cursor import prepare_store  # once, not for every blob

        self.fh = fh
        self.spans = spans
        self.name = name
        self._store = prepare_store

    def get(self, blob_hex: str) -> bytes | None:
        span = self.spans.get(blob_hex)
        if span is None:
            return None
        try:
            return self._store.read_blob(self.fh, blob_hex, span)
        except self._store.ReadoutError as exc:
            raise FormatError(self.name, str(exc), blob=exc.blob) from None


def open_store(path: Path) -> ReadOnly:
    """Open read-only, changing nothing on disk (a store in WAL use through a private copy
    of db + -wal + -shm, whose WAL SQLite then replays in the copy)."""
    return ReadOnly(path)


# --------------------------------------------------------------------------- walk


def _hexid(raw: bytes, where: str, ref: str) -> str:
    if len(raw) != ID_BYTES:
        raise FormatError(where, f"{ref} holds {len(raw)} bytes, not a 32-byte blob id")
    return raw.hex()


class _Walker:
    def __init__(self, store: CursorStore, on_blob: OnParsedBlob, known: Known) -> None:
        self.store = store
        self.where = str(store.path)
        self.on_blob = on_blob
        self.known = known

    def fetch(self, blob_hex: str, role: str) -> bytes:
        """A blob's bytes, read from the source each time it is needed (nothing is cached);
        the first time, checked against its id and handed to ``on_blob``."""
        data = self.store.source.get(blob_hex)
        if data is None:
            raise FormatError(self.where, f"referenced {role} blob is missing", blob=blob_hex)
        if not self.known(blob_hex):  # else checked at its first reference (read-only source)
            self._first(blob_hex, role, data, UNPARSED)
        return data

    def _size(self, blob_hex: str, role: str, data: bytes) -> None:
        if len(data) > self.store.max_blob:
            raise FormatError(
                self.where,
                f"{role} blob is {len(data)} bytes, over the "
                f"max_line_bytes limit ({self.store.max_blob})",
                blob=blob_hex,
            )

    def _first(self, blob_hex: str, role: str, data: bytes, parsed: Any) -> None:
        """A blob's first reference: checked against its id, then handed to ``on_blob``."""
        self._size(blob_hex, role, data)
        if blob_id(data) != blob_hex:
            raise FormatError(self.where, "blob sha256 does not match its id", blob=blob_hex)
        self.store.walked += bytes.fromhex(blob_hex)
        self.store.walked.append(_ROLE_CODES[role])
        self.on_blob(blob_hex, role, data, parsed)

    def pb(self, blob_hex: str, role: str, type_name: str) -> Any:
        data = self.fetch(blob_hex, role)
        try:
            msg = proto.decode(type_name, data)
        except DecodeError as exc:
            raise FormatError(
                self.where, f"{role} blob is not a {type_name} ({exc})", blob=blob_hex
            ) from None
        for key, n in proto.unknown_counts(msg).items():
            self.store.unknown_fields[f"{type_name}.{key}"] += n
        return msg

    def ref(self, raw: bytes, role: str) -> str:
        return _hexid(raw, self.where, role)

    def message(self, blob_hex: str) -> Any:
        data = self.store.source.get(blob_hex)
        if data is None:
            raise FormatError(self.where, "referenced message blob is missing", blob=blob_hex)
        first = not self.known(blob_hex)
        if first:
            self._size(blob_hex, "message", data)  # refused before it is parsed
        try:
            # what orjson takes json takes too, to the same value, in a fraction of the time
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = UNPARSED  # NaN, a lone surrogate, a huge number, or bad input (json says)
        if first:
            # handed over parsed: the Snapshot's secret check does not parse it again
            self._first(blob_hex, "message", data, value)
        if value is not UNPARSED:
            return value
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise FormatError(
                self.where, f"message blob is not UTF-8 JSON ({exc})", blob=blob_hex
            ) from None

    def walk_root(self, root: Any, on_message: OnMessage) -> None:
        """Fetch and verify every blob the root references; field-1 messages go to
        ``on_message`` as they are read, so none is held once projected."""
        for pos, m in enumerate(self.store.message_ids()):
            on_message(pos, m, self.message(m))
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


def _open(
    source: BlobSource,
    meta_rows: dict[str, str],
    path: Path,
    *,
    max_blob: int,
    user_version: int | None = None,
) -> CursorStore:
    """Decode meta and find the root: shared by the SQLite and readout paths."""
    where = str(path)
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
    return CursorStore(
        path=path,
        source=source,
        max_blob=max_blob,
        agent_id=agent_id,
        meta=meta,
        other_meta={k: v for k, v in meta_rows.items() if k != META_KEY},
        root_id=root_id,
        dropped_secrets=dropped,
        user_version=user_version,
    )


@contextlib.contextmanager
def read_store(path: Path, *, max_blob: int) -> Iterator[CursorStore]:
    """The store opened read-only for one walk; closed (and any private copy removed) after."""
    opened = open_store(path)
    try:
        con = opened.con
        try:
            # one read transaction for the whole walk: a store read through a private copy
            # (not immutable) would otherwise take and drop its shared lock per blob query
            con.execute("BEGIN")
            rows = con.execute("SELECT key, value FROM meta").fetchall()
            version = con.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise FormatError(path, f"no AgentKv meta table ({exc})") from None
        meta_rows = {str(k): v for k, v in rows if isinstance(v, str)}
        yield _open(
            SqliteBlobSource(con, str(path)),
            meta_rows,
            path,
            max_blob=max_blob,
            user_version=int(version),
        )
    finally:
        opened.close()


# --------------------------------------------------------------------------- readout


def readout_chunks(
    *,
    agent_id: str,
    cwd: str | None,
    meta: JsonObj,
    other_meta: dict[str, str],
    blobs: Iterable[tuple[str, bytes]],
    provenance: Members,
) -> Iterator[bytes]:
    """The ``cursor-agent-sqlite-readout-v1`` JSON document in chunks, each blob base64
    encoded as it comes (credential keys never written)."""
    from trajconv.codecs.cursor import prepare_store

    clean, _ = strip_secrets(meta)
    rows = [{"key": META_KEY, "value": encode_meta_value(clean)}]
    rows += [{"key": k, "value": v} for k, v in sorted(other_meta.items())]
    doc = Members(
        format=prepare_store.READOUT_FORMAT,
        agent_id=agent_id,
        cwd=cwd,
        user_version=1,
        latest_root_blob_id=clean.get("latestRootBlobId"),
        meta=rows,
        meta_decoded=clean,
        blobs=Items(
            Members(id=bid, size=len(data), data=Raw((b'"' + base64.b64encode(data) + b'"',)))
            for bid, data in blobs
        ),
        provenance=provenance,
    )
    yield from json_chunks(doc)
    yield b"\n"


@contextlib.contextmanager
def read_readout(path: Path, *, max_blob: int) -> Iterator[CursorStore]:
    """A readout opened for one walk: scanned once for meta and blob places; each blob is
    read from the file when the walk reaches it."""
    from trajconv.codecs.cursor import prepare_store

    where = str(path)
    with path.open("rb") as fh:
        try:
            doc, spans = prepare_store.scan_readout(fh, max_blob)
        except prepare_store.ReadoutError as exc:
            raise FormatError(where, str(exc), blob=exc.blob) from None
        rows: dict[str, str] = {}
        for i, row in enumerate(doc.get("meta") or []):
            if not (
                isinstance(row, dict)
                and isinstance(row.get("key"), str)
                and isinstance(row.get("value"), str)
            ):
                raise FormatError(where, f"meta[{i}] is not {{key, value}} strings")
            rows[row["key"]] = row["value"]
        store = _open(
            ReadoutBlobSource(fh, spans, where),
            rows,
            path,
            max_blob=max_blob,
            user_version=doc.get("user_version"),
        )
        agent = doc.get("agent_id")
        if isinstance(agent, str) and agent and store.agent_id != agent:
            raise FormatError(path, "readout agent_id differs from meta agentId")
        yield store
