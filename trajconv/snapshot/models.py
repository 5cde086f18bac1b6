"""Pydantic models of the central Snapshot, format ``trajconv.snapshot/1`` (docs/design.md §2).

Frozen models, a discriminated union on ``kind`` and a closed vocabulary. No
harness-specific field belongs here: what no record can express stays as bytes
in ``artifacts`` and ``evidence`` points at it.
"""

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from trajconv.distinfo import spare_pydantic_plugin_scan
from trajconv.snapshot.blob import Blob

spare_pydantic_plugin_scan()  # before the first validator is built (issue 38)

FORMAT = "trajconv.snapshot/1"
HASH_PATTERN = r"^sha256:[0-9a-f]{64}$"
_CLOCK = r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z"
_YEAR = r"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
TIME_PATTERN = rf"^(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29){_CLOCK}$"
"""A real UTC instant with milliseconds, years 0001-9999 (what ``datetime`` can hold):
the calendar is in the pattern (issue 34: ``2026-13-45T25:61:61`` and ``2026-02-30``
passed ``verify`` and crashed writers), so the published schema refuses them too."""
CODEC_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
"""The shape of a codec name (``source.harness``): no markup, no control characters."""

Time = Annotated[str, Field(pattern=TIME_PATTERN)]
Hash = Annotated[str, Field(pattern=HASH_PATTERN)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Source(_Model):
    """Where the Snapshot was read; ``locator`` is relative to the native home."""

    harness: Annotated[str, Field(pattern=CODEC_NAME_PATTERN)]
    harness_version: str | None
    session_id: str
    locator: str


class Session(_Model):
    """Session facts; an absent fact is ``null``, never a guess."""

    id: str
    title: str | None = None
    cwd: str | None = None
    model: str | None = None
    branch: str | None = None
    created_at: Time | None = None
    updated_at: Time | None = None
    parent_session_id: str | None = None


class Evidence(_Model):
    """Where a record came from: an artifact and a line or JSON path in it.

    ``units`` is how many native units (lines, events, blobs, messages) this
    record accounts for; conservation sums it with the unit-counting diagnostics.
    """

    artifact: str
    line: int | None = None
    json_path: str | None = None
    native: str
    native_id: str | None = None
    units: int = Field(default=1, ge=0)


class ToolCall(_Model):
    id: str
    name: str
    arguments: JsonValue


class ToolResult(_Model):
    call_id: str
    ok: bool | None
    output: str
    truncated: bool = False
    exit_code: int | None = None


RecordKind = Literal[
    "user", "assistant", "reasoning", "tool-call", "tool-result", "system", "observation"
]
RECORD_KINDS: tuple[str, ...] = get_args(RecordKind)


class _Record(_Model):
    seq: int = Field(ge=0)
    id: str
    time: Time | None
    turn: int | None
    evidence: Evidence
    hash: Hash
    kind: RecordKind
    """Each kind of record narrows this to its own literal (the union's discriminator)."""


class _TextRecord(_Record):
    text: str


class _ModelTextRecord(_TextRecord):
    """Text a model wrote, with the model's name when the source names it."""

    model: str | None = None


class UserRecord(_TextRecord):
    kind: Literal["user"] = "user"


class AssistantRecord(_ModelTextRecord):
    kind: Literal["assistant"] = "assistant"


class ReasoningRecord(_ModelTextRecord):
    kind: Literal["reasoning"] = "reasoning"


class ToolCallRecord(_Record):
    kind: Literal["tool-call"] = "tool-call"
    call: ToolCall


class ToolResultRecord(_Record):
    kind: Literal["tool-result"] = "tool-result"
    result: ToolResult


class SystemRecord(_TextRecord):
    kind: Literal["system"] = "system"


class ObservationRecord(_TextRecord):
    kind: Literal["observation"] = "observation"


Record = Annotated[
    UserRecord
    | AssistantRecord
    | ReasoningRecord
    | ToolCallRecord
    | ToolResultRecord
    | SystemRecord
    | ObservationRecord,
    Field(discriminator="kind"),
]
RECORD_MODELS: dict[str, type[_Record]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        UserRecord,
        AssistantRecord,
        ReasoningRecord,
        ToolCallRecord,
        ToolResultRecord,
        SystemRecord,
        ObservationRecord,
    )
}
"""Each record kind's model: what ``Record``'s discriminator picks."""


class Artifact(_Model):
    """Captured native bytes. ``data`` is absent when the bytes live beside the document."""

    # In memory the bytes are a Blob (``blob``), read in chunks, and ``data`` is None;
    # the Snapshot file writer encodes them into ``data`` piece by piece.

    name: str
    media_type: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    size: int = Field(ge=0)
    encoding: Literal["utf8", "base64"]
    data: str | None = None
    _blob: Blob | None = PrivateAttr(None)

    @property
    def blob(self) -> Blob | None:
        return self._blob

    def with_blob(self, blob: Blob | None) -> "Artifact":
        """This artifact without inline ``data``, its bytes in ``blob``."""
        art = self.model_copy(update={"data": None}) if self.data is not None else self
        art._blob = blob
        return art

    def read(self) -> bytes | None:
        """All the bytes (for small artifacts), or ``None`` when they are not present."""
        return self._blob.read() if self._blob is not None else None

    def chunks(self) -> Iterator[bytes]:
        if self._blob is None:
            raise ValueError(f"artifact {self.name}: bytes not present")
        return self._blob.chunks()


class Diagnostic(_Model):
    code: str
    severity: Literal["info", "warning", "error"]
    count: int = Field(ge=1)
    message: str
    samples: tuple[str, ...] = ()


class Producer(_Model):
    name: Literal["trajconv"] = "trajconv"
    version: str
    reader: str


class Child(_Model):
    """A sub-agent's session inside its parent's Snapshot (docs/design.md §2, §3).

    Its records form a chain of their own, headed by its ``source``; its ``id`` binds that
    chain, its facts and ``parent_call_id``, and the parent's id binds every child's id, so
    a changed child record fails ``verify`` of the parent. Its native bytes are artifacts
    of the parent (their evidence names them there).
    """

    id: Hash
    """``sha256(JCS({format, last, parent_call_id, session, source}))`` (``hashing.child_id``)."""
    parent_call_id: str | None
    """The ``call.id`` of the tool call that spawned it, in the records of the session its
    ``session.parent_session_id`` names (the parent's or another child's); ``null`` when the
    source does not say which call."""
    source: Source
    session: Session
    records: Annotated[Sequence[Record], PlainSerializer(list, return_type=list[Record])]


class Snapshot(_Model):
    format: Literal["trajconv.snapshot/1"] = "trajconv.snapshot/1"
    id: Hash
    """The content's identity: source, session facts, the record chain, artifact digests."""
    meta_hash: Hash
    """Binds what the id leaves out: diagnostics, producer, artifact media types
    (``hashing.meta_hash``)."""
    source: Source
    session: Session
    records: Annotated[Sequence[Record], PlainSerializer(list, return_type=list[Record])]
    """A tuple when loaded from a document; a spooled RecordLog when built by a reader."""
    children: tuple[Child, ...] = ()
    """Sub-agent sessions it spawned, in the order the reader found them; a document
    without any leaves the member out."""
    artifacts: Annotated[Sequence[Artifact], PlainSerializer(list, return_type=list[Artifact])]
    """A tuple when loaded from a document; an ArtifactLog when built by a reader."""
    diagnostics: tuple[Diagnostic, ...]
    producer: Producer

    @model_serializer(mode="wrap")
    def _leave_out_no_children(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A Snapshot without children is dumped as it was before children existed."""
        dumped: dict[str, Any] = handler(self)
        if not self.children:
            dumped.pop("children", None)
        return dumped

    def all_records(self) -> Iterator[Record]:
        """The records of the session and then of each child, in order."""
        yield from self.records
        for child in self.children:
            yield from child.records

    def child_records(self) -> int:
        """How many records its children hold together."""
        return sum(len(c.records) for c in self.children)

    def diagnostic_count(self, code: str) -> int:
        return sum(d.count for d in self.diagnostics if d.code == code)
