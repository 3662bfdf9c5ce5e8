"""The one schema of seglog: every stored item, message and entry body.

Adapters, the emulator and the services import these types; none re-declares them (DESIGN §2).

Storage layout (compact one-letter attribute names, seed 000 "Schema"):

* Segments: ``L`` log id, ``N`` segment num, ``C`` created, ``S`` last completed snapshot num, ``A`` archive key.
* Entries: ``G`` segment key (log id + 8-byte big-endian segment num), ``N`` entry num, ``C`` created, ``T`` type,
  ``V`` body version, ``B`` body (msgpack), ``E`` external body key, ``K`` client entry id, ``R`` snapshot root.

Schema evolution follows msgspec's rules: new fields get defaults; a field's type never changes. A body whose
version is newer than this code knows is refused (:class:`~seglog_core.errors.BodyVersionError`), never
guessed at.
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Iterable, Iterator
from typing import ClassVar, Final

import msgspec

from seglog_core.errors import BodyVersionError, UnknownEntryTypeError

#: A spreadsheet cell holds one of these; ``None`` is an empty cell.
CellValue = str | int | float | bool | None


class EntryType(enum.StrEnum):
    """The ``T`` attribute of an entry: short, stable strings (they are stored in every item)."""

    SNAPSHOT = "snap"
    END_SEGMENT = "end"
    IMPORT = "imp"
    INSERT_ROW = "insrow"
    DELETE_ROW = "delrow"
    SET_CELL = "set"
    SET_RANGE = "setrng"
    EDITS = "edits"


LOG_LEVEL_TYPES: Final = frozenset({EntryType.SNAPSHOT, EntryType.END_SEGMENT})


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every stored record: immutable, keyword-only."""


# --------------------------------------------------------------------------------------------- entry bodies


class Body(msgspec.Struct, frozen=True, kw_only=True, array_like=True, omit_defaults=True):
    """Base of entry bodies. Encoded as msgpack arrays (field order is the format: append fields only).

    Each subclass names its entry type and the body version this code writes.
    """

    TYPE: ClassVar[EntryType]
    VERSION: ClassVar[int] = 1


class SetCell(Body, frozen=True):
    """Set one cell. Rows and columns are 1-based (A1 is row 1, column 1)."""

    TYPE: ClassVar[EntryType] = EntryType.SET_CELL
    row: int
    col: int
    value: CellValue


class SetRange(Body, frozen=True):
    """Set a rectangle of cells whose top-left corner is (row, col); ``values`` is a list of rows."""

    TYPE: ClassVar[EntryType] = EntryType.SET_RANGE
    row: int
    col: int
    values: list[list[CellValue]]


class InsertRow(Body, frozen=True):
    """Insert a row after row ``after`` (0 inserts at the top); later rows move down by one."""

    TYPE: ClassVar[EntryType] = EntryType.INSERT_ROW
    after: int
    values: list[CellValue] = []


class DeleteRow(Body, frozen=True):
    """Delete row ``row``; later rows move up by one."""

    TYPE: ClassVar[EntryType] = EntryType.DELETE_ROW
    row: int


class Import(Body, frozen=True):
    """Replace the sheet with an imported file.

    ``source`` is the key of the CSV or XLSX object in S3 the rows were read from (kept for provenance);
    ``rows`` holds the parsed cells so that the fold stays pure. A large import travels as an external body.
    """

    TYPE: ClassVar[EntryType] = EntryType.IMPORT
    source: str
    format: str
    rows: list[list[CellValue]]


class SnapshotMarker(Body, frozen=True):
    """Body of a Snapshot entry: empty. The entry's ``R`` attribute points at the root once complete."""

    TYPE: ClassVar[EntryType] = EntryType.SNAPSHOT


class EndSegment(Body, frozen=True):
    """Body of an EndSegment entry: the num of the segment that follows."""

    TYPE: ClassVar[EntryType] = EntryType.END_SEGMENT
    next_segment: int = 0


#: What one edit of a batch (:class:`Edits`) may be: the cell and row edits, never an Import, a log-level body or
#: another batch.
Edit = SetCell | SetRange | InsertRow | DeleteRow
EDIT_TYPES: Final[tuple[type[Body], ...]] = (SetCell, SetRange, InsertRow, DeleteRow)

#: The most edits one :class:`Edits` entry holds.
MAX_EDITS: Final = 100
#: The largest encoded :class:`Edits` body (bytes of msgpack). With the item's other attributes (about 70 bytes:
#: ``G`` 24, ``K`` 16, ``N``, ``C``, ``T``, ``V`` and the names) the item stays within 1 KB, one write request
#: unit (DynamoDB Developer Guide, "Read/write capacity mode": a write of up to 1 KB is one WRU).
MAX_EDITS_BYTES: Final = 900


class Edits(Body, frozen=True):
    """Several edits in one entry (issue 35): applied in order and atomically (all of them or, refused, none),
    under one entry id and one position, so a batch costs one request and one write.

    Stored as ``[[[type, version, body], ...]]``: each edit keeps its own type's encoding beside its ``T`` and ``V``
    values, so a batch reads with the decoders (and the version rule) of the single edits.
    """

    TYPE: ClassVar[EntryType] = EntryType.EDITS
    edits: list[Edit]


class _EditsWire(msgspec.Struct, frozen=True, array_like=True):
    """How :class:`Edits` is stored: each edit as its type, its body version and its own encoded body."""

    edits: list[tuple[str, int, msgspec.Raw]]


DocumentBody = SetCell | SetRange | InsertRow | DeleteRow | Import | Edits
AnyBody = DocumentBody | SnapshotMarker | EndSegment

BODY_TYPES: Final[dict[EntryType, type[Body]]] = {
    cls.TYPE: cls for cls in (SetCell, SetRange, InsertRow, DeleteRow, Import, SnapshotMarker, EndSegment, Edits)
}

_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODERS: Final[dict[EntryType, msgspec.msgpack.Decoder[Body]]] = {
    t: msgspec.msgpack.Decoder(cls) for t, cls in BODY_TYPES.items() if cls is not Edits
}
_EDITS_DECODER: Final = msgspec.msgpack.Decoder(_EditsWire)


#: Each type by its stored value: a dict lookup costs a third of ``EntryType(value)``, and every entry read parses one.
_ENTRY_TYPES: Final = {t.value: t for t in EntryType}


def entry_type(value: str) -> EntryType:
    """Parse a stored ``T`` attribute, refusing types this code does not know."""
    found = _ENTRY_TYPES.get(value)
    if found is None:
        raise UnknownEntryTypeError(value)
    return found


def encode_body(body: Body) -> bytes:
    """Encode a body for the ``B`` attribute (msgpack array)."""
    if isinstance(body, Edits):
        return _ENCODER.encode(_EditsWire(edits=[(e.TYPE.value, e.VERSION, msgspec.Raw(_ENCODER.encode(e)))
                                                     for e in body.edits]))
    return _ENCODER.encode(body)


def _decode_edits(data: bytes) -> Edits:
    """Read an :class:`Edits` body: each edit by the decoder of its own type (only the edit types)."""
    edits: list[Edit] = []
    for index, (value, version, raw) in enumerate(_EDITS_DECODER.decode(data).edits):
        found = _ENTRY_TYPES.get(value)
        cls = BODY_TYPES.get(found) if found is not None else None
        if cls is None or cls not in EDIT_TYPES:
            raise UnknownEntryTypeError(f"{value} (edit {index} of an {EntryType.EDITS} entry)")
        if version > cls.VERSION:
            raise BodyVersionError(cls.TYPE, version, cls.VERSION)
        edits.append(_DECODERS[cls.TYPE].decode(raw))  # type: ignore[arg-type]
    return Edits(edits=edits)


def edits_of(bodies: Iterable[Body]) -> Iterator[Body]:
    """The bodies with each :class:`Edits` replaced by its edits, in order: what a fold of them applies."""
    for body in bodies:
        if isinstance(body, Edits):
            yield from body.edits
        else:
            yield body


def decode_body(type_: EntryType, version: int, data: bytes) -> Body:
    """Decode a ``B`` attribute; a version newer than this code knows is refused, never guessed at."""
    cls = BODY_TYPES.get(type_)
    if cls is None:
        raise UnknownEntryTypeError(str(type_))
    if version > cls.VERSION:
        raise BodyVersionError(type_, version, cls.VERSION)
    if cls is Edits:
        return _decode_edits(data)
    return _DECODERS[type_].decode(data)


# --------------------------------------------------------------------------------------------- stored items


class Segment(Record, frozen=True):
    """One item of the Segments table."""

    log_id: uuid.UUID
    num: int
    created: int
    last_snapshot: int | None = None
    archive: str | None = None
    #: When retention deleted the segment's entries (epoch s); its item and its EndSegment entry stay as a tombstone.
    retired: int | None = None
    #: Retention marked the segment (``A`` or ``D``) and has not finished removing what it retires (``P``): the next
    #: retention run finishes it whatever its policy (seglog_core.retention, "Claim first").
    retiring: bool = False


class Entry(Record, frozen=True):
    """One item of the Entries table. ``body`` is the encoded msgpack, or ``None`` when it lives in S3."""

    log_id: uuid.UUID
    segment: int
    num: int
    created: int
    type: EntryType
    version: int = 1
    body: bytes | None = None
    external: str | None = None
    entry_id: uuid.UUID | None = None
    snapshot_root: str | None = None

    def decoded(self, external_body: bytes | None = None) -> Body:
        """The decoded body; ``external_body`` must be given when the body lives in S3 (``external``)."""
        data = self.body if self.external is None else external_body
        if data is None:
            if self.external is not None:
                raise ValueError(f"entry {self.segment}/{self.num} has its body in S3 ({self.external})")
            if self.type in LOG_LEVEL_TYPES:
                return BODY_TYPES[self.type]()
            raise ValueError(f"entry {self.segment}/{self.num} of type {self.type} has no body")
        return decode_body(self.type, self.version, data)


class PendingSnapshot(Record, frozen=True):
    """One item of the PendingSnapshots table (DESIGN §2, §5).

    ``blocked`` (attribute ``W``, added later: absent on older items) says why the snapshot cannot be built by
    this code, e.g. an entry of a type or body version only newer code folds; cleared by the next plain deferral.
    """

    log_id: uuid.UUID
    segment: int
    entry: int
    created: int
    modified: int
    retries: int = 0
    active: bool = False
    increment: int = 0
    claimer: str | None = None
    checkpoint: bytes | None = None
    blocked: str | None = None


class SnapshotJob(Record, frozen=True):
    """The body of a snapshot queue message: which Snapshot entry to build."""

    log: str
    segment: int
    entry: int


# --------------------------------------------------------------------------------------------- key codecs

SEGMENT_NUM_BYTES: Final = 8
#: The largest segment or entry num anything accepts from outside (the API's positions, query parameters): every
#: num fits the 8-byte key fields (DESIGN §2) with room to count one past it (a reader asks for ``after + 1``).
MAX_NUM: Final = 2**63 - 1


def segment_key(log_id: uuid.UUID, segment: int) -> bytes:
    """The Entries partition key ``G``: log id bytes followed by the segment num, 8 bytes big-endian."""
    return log_id.bytes + segment.to_bytes(SEGMENT_NUM_BYTES, "big")


@functools.lru_cache(maxsize=4096)
def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)``, cached: every item read carries its log id (and an entry its entry id), and
    building a UUID costs more than the rest of decoding the item; UUIDs are immutable, so sharing one is safe."""
    return uuid.UUID(bytes=raw)


def split_segment_key(key: bytes) -> tuple[uuid.UUID, int]:
    """Inverse of :func:`segment_key`."""
    if len(key) != 16 + SEGMENT_NUM_BYTES:
        raise ValueError(f"a segment key is {16 + SEGMENT_NUM_BYTES} bytes, got {len(key)}")
    return uuid_from_bytes(key[:16]), int.from_bytes(key[16:], "big")


def pending_key(segment: int, entry: int) -> bytes:
    """The PendingSnapshots sort key ``P``: segment and entry num as a lexicographically ordered 16-byte pair."""
    return segment.to_bytes(8, "big") + entry.to_bytes(8, "big")


def split_pending_key(key: bytes) -> tuple[int, int]:
    """Inverse of :func:`pending_key`."""
    return int.from_bytes(key[:8], "big"), int.from_bytes(key[8:16], "big")


SNAPSHOT_JOB_ENCODER: Final = msgspec.json.Encoder()
SNAPSHOT_JOB_DECODER: Final = msgspec.json.Decoder(SnapshotJob)

#: Root value of the creation-time snapshot: the empty document needs no build (DESIGN §3 "Create log").
EMPTY_SNAPSHOT_ROOT: Final = "empty"
