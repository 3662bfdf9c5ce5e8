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

from seglog_core.reader import LogView
from seglog_core.schema import (
    Body,
    CellValue,
    DeleteRow,
    Entry,
    InsertRow,
    PendingSnapshot,
    Segment,
    SetCell,
    SetRange,
)
from seglog_core.sheet import format_ref, parse_ref

NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of request bodies: immutable, keyword-only, unknown fields refused."""


# ------------------------------------------------------------------------------------------ entry bodies


class SetCellIn(Request, frozen=True, tag_field="type", tag="set"):
    ref: str
    value: CellValue


class SetRangeIn(Request, frozen=True, tag_field="type", tag="setrng"):
    ref: str
    values: list[list[CellValue]]


class InsertRowIn(Request, frozen=True, tag_field="type", tag="insrow"):
    after: NonNegative
    values: list[CellValue] = []


class DeleteRowIn(Request, frozen=True, tag_field="type", tag="delrow"):
    row: Annotated[int, msgspec.Meta(ge=1)]


EntryIn = SetCellIn | SetRangeIn | InsertRowIn | DeleteRowIn


def to_body(entry: EntryIn) -> Body:
    """The core body of a request's entry.

    Raises:
        InvalidCellRefError: a bad ``ref``.
    """
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


CREATE_DECODER: Final = msgspec.json.Decoder(CreateRequest)
APPEND_DECODER: Final = msgspec.json.Decoder(AppendRequest)
UPLOAD_DECODER: Final = msgspec.json.Decoder(UploadRequest)
COMPLETE_DECODER: Final = msgspec.json.Decoder(CompleteRequest)
RANGE_UPLOAD_DECODER: Final = msgspec.json.Decoder(RangeUpload)
ENCODER: Final = msgspec.json.Encoder()


# ------------------------------------------------------------------------------------------ responses


def body_json(body: Body) -> dict[str, Any]:
    """A body as a JSON object of its named fields; cell bodies also carry their A1 ``ref``."""
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
