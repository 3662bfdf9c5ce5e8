"""The API's JSON: request bodies (decoded strictly with msgspec) and the views of entries it answers with.

Requests are decoded into structs that forbid unknown fields, so a typo is a 400 that names the field rather
than a silently ignored key. Entry bodies in requests address cells the way users do (``"ref": "B2"``); they
become the core's bodies (:mod:`seglog_core.schema`) here, and the core validates them before anything is
written.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Final, Literal

import msgspec
import msgspec.inspect

from seglog_core.errors import InvalidCellRefError
from seglog_core.reader import LogView
from seglog_core.schema import (
    MAX_EDITS,
    MAX_NUM,
    Body,
    CellValue,
    DeleteRow,
    Edit,
    Edits,
    Entry,
    InsertRow,
    PendingSnapshot,
    Segment,
    SetCell,
    SetRange,
)
from seglog_core.sheet import MAX_CELL_BYTES, format_ref, parse_ref
from seglog_core.sheet.refs import MAX_COL, MAX_INT, MAX_ROW, MIN_INT

#: A segment or entry num: bounded where it is decoded, so no num reaches a key it does not fit (issue 23: a
#: ``segment`` of 2**64 answered 500).
NonNegative = Annotated[int, msgspec.Meta(ge=0, le=MAX_NUM)]


#: A cell value in a request, bounded where it is decoded as the OpenAPI document says: text of at most
#: MAX_CELL_BYTES characters (the bytes of its UTF-8 are checked when the entry is: 422), integers in 64 bits.
CellIn = (Annotated[str, msgspec.Meta(max_length=MAX_CELL_BYTES)] | Annotated[int, msgspec.Meta(ge=MIN_INT, le=MAX_INT)]
          | float | bool | None)
#: A row of cells from column A: at most MAX_COL.
RowIn = Annotated[list[CellIn], msgspec.Meta(max_length=MAX_COL)]


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of request bodies: immutable, keyword-only, unknown fields refused."""


# ------------------------------------------------------------------------------------------ entry bodies


class SetCellIn(Request, frozen=True, tag_field="type", tag="set"):
    ref: str
    value: CellIn


class SetRangeIn(Request, frozen=True, tag_field="type", tag="setrng"):
    ref: str
    values: Annotated[list[RowIn], msgspec.Meta(max_length=MAX_ROW)]


class InsertRowIn(Request, frozen=True, tag_field="type", tag="insrow"):
    after: Annotated[int, msgspec.Meta(ge=0, le=MAX_ROW - 1)]
    values: RowIn = []


class DeleteRowIn(Request, frozen=True, tag_field="type", tag="delrow"):
    row: Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW)]


EditIn = SetCellIn | SetRangeIn | InsertRowIn | DeleteRowIn


class EditsIn(Request, frozen=True, tag_field="type", tag="edits"):
    """Several edits as one entry (issue 35): applied in order, all or none, under one entry id and position."""

    edits: Annotated[list[EditIn], msgspec.Meta(min_length=1, max_length=MAX_EDITS)]


EntryIn = SetCellIn | SetRangeIn | InsertRowIn | DeleteRowIn | EditsIn


def to_body(entry: EntryIn) -> Body:
    """The core body of a request's entry.

    Raises:
        InvalidCellRefError: a bad ``ref`` (in a batch: naming the edit, ``edit`` set).
    """
    if isinstance(entry, EditsIn):
        edits: list[Edit] = []
        for index, one in enumerate(entry.edits):
            try:
                edits.append(to_body(one))  # type: ignore[arg-type]
            except InvalidCellRefError as exc:
                raise InvalidCellRefError(exc.ref, f"{exc.why or 'it is not A1..XFD1048576'} (edit {index} of the "
                                          "batch; nothing of it was written: fix that edit and send the batch "
                                          "again)").at_edit(index) from None
        return Edits(edits=edits)
    ref = getattr(entry, "ref", None)
    if ref is not None and ref != ref.strip():  # exactly the OpenAPI document's pattern: nothing around it
        raise InvalidCellRefError(ref, "it has spaces around it")
    match entry:
        case SetCellIn(ref=ref, value=value):
            row, col = parse_ref(ref)
            return SetCell(row=row, col=col, value=value)
        case SetRangeIn(ref=ref, values=values):
            row, col = parse_ref(ref)
            return SetRange(row=row, col=col, values=values)
        case InsertRowIn(after=after, values=values):
            return InsertRow(after=after, values=values)
        case DeleteRowIn(row=row):
            return DeleteRow(row=row)
    raise AssertionError(f"unhandled entry {entry!r}")


# ------------------------------------------------------------------------------------------ requests


class CreateRequest(Request, frozen=True):
    """``POST /sheets``: an empty body or ``{}`` for a new id; or the client's own ``log_id``, which makes the
    request safe to retry (a sheet that already exists under it is answered 200, not created again)."""

    log_id: uuid.UUID | None = None


class PositionIn(Request, frozen=True):
    """A place in the log, as the API answers it (``position``): the segment and the entry num in it."""

    segment: NonNegative
    num: NonNegative


class AppendRequest(Request, frozen=True):
    """``POST /sheets/{log_id}/entries``. The retry protocol (README, "Appending exactly once"):

    - ``entry_id`` (required): a UUID the client makes once per entry and sends on every try of it.
    - ``since`` (required unless ``expected``): the ``position`` of the last answer the client had *before the
      first try* (a create answers 0/0); every try sends the same. The server reads forward from it with
      consistent reads and writes only after what it read, so a retry is safe at any time, even while the first
      try still runs: the entry id is stored at most once.
    - ``expected`` instead of ``since``: the position the entry must take; 409 with the holder when it is taken.
    """

    entry: EntryIn
    entry_id: uuid.UUID | None = None
    #: A bare num is refused with a message that asks for the position object (it cannot say which segment).
    since: PositionIn | NonNegative | None = None
    expected: PositionIn | None = None


class UploadRequest(Request, frozen=True):
    """``POST /sheets/{log_id}/uploads``: step 1 of the large-entry flow."""

    size: int
    content_type: str


class CompleteRequest(Request, frozen=True):
    """``POST /sheets/{log_id}/uploads/{upload_id}/complete``: step 3 of the large-entry flow."""

    type: Literal["imp", "setrng"]
    #: Defaults to a UUIDv5 of the upload id, so a retried completion is the same entry.
    entry_id: uuid.UUID | None = None
    #: Required, as for appends: the position the client had seen before its first try.
    since: PositionIn | NonNegative | None = None


class RangeUpload(Request, frozen=True):
    """The JSON object uploaded for a ``setrng`` entry: top-left cell and a list of rows."""

    ref: str
    values: list[list[CellValue]]


class JsonDecoder[T]:
    """Decodes JSON into ``T`` strictly, except that a whole number written with a fraction (``120.0``) is taken
    for an integer field, as JSON Schema counts it one ("integer" matches any number with a zero fractional
    part; JSON Schema Validation 2020-12 §6.1.1): the OpenAPI document's integers are then exactly what the API
    accepts (issue 23: Schemathesis sent ``"segment": 120.0`` and got 400). Strings stay refused for numbers, and
    a float field or a cell value keeps its float."""

    def __init__(self, kind: type[T]) -> None:
        self.kind = kind
        self._info = msgspec.inspect.type_info(kind)
        #: A type with no integer field outside a union with float (an uploaded range: 64 MB of cells) is
        #: decoded in one typed pass, never walked.
        self._typed = None if _has_whole(self._info) else msgspec.json.Decoder(kind)

    def decode(self, raw: bytes) -> T:
        """Raises: msgspec.DecodeError (not JSON), msgspec.ValidationError (not a ``T``, with the path)."""
        if self._typed is not None:
            return self._typed.decode(raw)
        try:
            data = msgspec.json.decode(raw)
        except RecursionError:  # found by tests/client/test_gateway_edges.py: 10,000 nested arrays
            raise msgspec.DecodeError("the JSON is nested too deeply") from None
        except UnicodeDecodeError as exc:
            raise msgspec.DecodeError(f"the body is not UTF-8 ({exc.reason} at byte {exc.start})") from None
        return msgspec.convert(_whole_numbers(data, self._info), self.kind, strict=True)


def _has_whole(info: msgspec.inspect.Type) -> bool:
    """Whether ``info`` holds an integer that a float could stand for (an int not in a union with float)."""
    match info:
        case msgspec.inspect.IntType():
            return True
        case msgspec.inspect.StructType():
            return any(_has_whole(f.type) for f in info.fields)
        case msgspec.inspect.ListType():
            return _has_whole(info.item_type)
        case msgspec.inspect.UnionType():
            floats = any(isinstance(t, msgspec.inspect.FloatType) for t in info.types)
            return any(_has_whole(t) for t in info.types if not (floats and isinstance(t, msgspec.inspect.IntType)))
    return False


def _whole_numbers(value: Any, info: msgspec.inspect.Type) -> Any:
    """``value`` with each integral float where ``info`` expects an integer (and no float) made an int; parts
    that hold none (cells, whose union has float) are left as they are, not walked."""
    if not _has_whole(info):
        return value
    match info:
        case msgspec.inspect.IntType() if isinstance(value, float) and value.is_integer():
            return int(value)
        case msgspec.inspect.StructType() if isinstance(value, dict):
            fields = {f.encode_name: f.type for f in info.fields}
            return {k: _whole_numbers(v, fields[k]) if k in fields else v for k, v in value.items()}
        case msgspec.inspect.ListType() if isinstance(value, list):
            return [_whole_numbers(item, info.item_type) for item in value]
        case msgspec.inspect.UnionType():
            members = info.types
            if isinstance(value, float) and not any(isinstance(t, msgspec.inspect.FloatType) for t in members):
                ints = [t for t in members if isinstance(t, msgspec.inspect.IntType)]
                return _whole_numbers(value, ints[0]) if ints else value
            if isinstance(value, dict):
                structs = [t for t in members if isinstance(t, msgspec.inspect.StructType)]
                tagged = [t for t in structs if t.tag_field and value.get(t.tag_field) == t.tag]
                chosen = tagged or (structs if len(structs) == 1 else [])
                return _whole_numbers(value, chosen[0]) if chosen else value
    return value


CREATE_DECODER: Final = JsonDecoder(CreateRequest)
APPEND_DECODER: Final = JsonDecoder(AppendRequest)
UPLOAD_DECODER: Final = JsonDecoder(UploadRequest)
COMPLETE_DECODER: Final = JsonDecoder(CompleteRequest)
RANGE_UPLOAD_DECODER: Final = JsonDecoder(RangeUpload)
ENCODER: Final = msgspec.json.Encoder()


# ------------------------------------------------------------------------------------------ responses
#
# An answer encoded from a struct here is described in the OpenAPI document by the same struct
# (``msgspec.json.schema_components`` in :mod:`seglog_services.api.openapi`): the two cannot drift apart.


class LogPosition(msgspec.Struct, frozen=True, kw_only=True):
    """A place in the log as the API answers it (``position``): the segment and the entry num in it. Send it back
    as ``since``."""

    segment: NonNegative
    num: NonNegative


class SheetCreated(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of ``POST /sheets``: 201 when this request created the sheet, 200 when a sheet under the
    client's ``log_id`` existed already (a retried create whose first answer was lost): the sheet is there either
    way, and ``position`` is a position it holds (a new sheet's is 0/0)."""

    log_id: uuid.UUID
    created: Annotated[bool, msgspec.Meta(
        description="true (201): this request created the sheet; false (200): a sheet with the client's log_id "
                    "existed, nothing was created")]
    position: LogPosition



def body_json(body: Body) -> dict[str, Any]:
    """A body as a JSON object of its named fields; cell bodies also carry their A1 ``ref``; a batch lists its
    edits, each as a body of its own with its ``type``."""
    if isinstance(body, Edits):
        return {"edits": [{"type": str(edit.TYPE), **body_json(edit)} for edit in body.edits]}
    data: dict[str, Any] = msgspec.to_builtins(msgspec.structs.asdict(body))
    if isinstance(body, SetCell | SetRange):
        data["ref"] = format_ref(body.row, body.col)
    return data


def entry_json(entry: Entry, body: Body | None) -> dict[str, Any]:
    """An entry: position, type, ids, and its body (or the ``external`` key when the body lives in S3)."""
    data: dict[str, Any] = {
        "segment": entry.segment, "num": entry.num, "type": str(entry.type),
        "entry_id": str(entry.entry_id) if entry.entry_id else None, "created": entry.created,
    }
    if entry.external is not None:
        data["external"] = entry.external
    elif body is not None:
        data["body"] = body_json(body)
    if entry.snapshot_root is not None:
        data["root"] = entry.snapshot_root
    return data


def entry_ref(entry: Entry | None) -> dict[str, Any] | None:
    """The short form of an entry a conflict points at."""
    if entry is None:
        return None
    return {"segment": entry.segment, "num": entry.num, "type": str(entry.type),
            "entry_id": str(entry.entry_id) if entry.entry_id else None}


def position_json(view: LogView | Entry) -> dict[str, int]:
    """Where a view ends, or where an entry stands: what a client sends back as ``since``."""
    return {"segment": view.segment, "num": view.num}


def segment_json(segment: Segment) -> dict[str, Any]:
    return {"segment": segment.num, "created": segment.created, "last_snapshot": segment.last_snapshot,
            "archive": segment.archive, "retired": segment.retired}


def pending_json(item: PendingSnapshot) -> dict[str, Any]:
    return {"segment": item.segment, "entry": item.entry, "retries": item.retries, "active": item.active,
            "created": item.created, "modified": item.modified}
