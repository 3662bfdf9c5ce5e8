"""The API's answers as typed values (msgspec structs), and the request bodies the client sends.

Answers are decoded leniently — a member this client does not know is ignored, so a newer server does not break
it (msgspec's schema evolution: new fields come with defaults). Requests are encoded with sorted keys, so one
request is always the same bytes: every try of an append is identical, and a seeded chaos run repeats its
requests exactly (the emulator decides lost answers from request content).
"""

from __future__ import annotations

import uuid
from typing import Any, Final, Literal

import msgspec

#: A cell's value as the API carries it.
CellValue = str | int | float | bool | None


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the API's answers: immutable, keyword-only, unknown members ignored."""


class Position(Answer, frozen=True, order=True):
    """A place in a sheet's log: segment and entry num (the ``position`` of every answer; the next ``since``)."""

    segment: int
    num: int

    def __str__(self) -> str:
        return f"{self.segment}/{self.num}"


#: A new sheet's position: segment 0, its Snapshot entry 0.
START: Final = Position(segment=0, num=0)


class Created(Answer, frozen=True):
    """``POST /sheets``: ``created`` is false when a sheet with the client's log id existed (a retried create)."""

    log_id: uuid.UUID
    created: bool
    position: Position


class Appended(Answer, frozen=True):
    """An append, or an upload's completion: where the entry is; ``deduplicated`` when an earlier try stored it."""

    segment: int
    num: int
    entry_id: uuid.UUID
    deduplicated: bool
    attempts: int
    position: Position
    #: S3 key of the body when it lives there (large entries, uploads).
    external: str | None = None
    upload_id: uuid.UUID | None = None


class SnapshotRef(Answer, frozen=True):
    """The snapshot a load started from; ``root`` is null on pages after the first."""

    segment: int
    num: int
    root: str | None = None


class SheetPage(Answer, frozen=True):
    """One page of ``GET /sheets/{id}``: rows from ``row``, the first of them from column ``col``."""

    snapshot: SnapshotRef
    position: Position
    row: int
    col: int
    rows: list[list[CellValue]]
    next: str | None = None


class Sheet(Answer, frozen=True):
    """A loaded sheet: every page joined. ``rows[0]`` is row 1; each row from column A."""

    log_id: uuid.UUID
    rows: list[list[CellValue]]
    #: The entry the load read up to (the next ``since``).
    position: Position
    snapshot: SnapshotRef
    pages: int


class LogEntry(Answer, frozen=True):
    """An entry as a sync returns it: ``body`` inline, or ``external`` (an S3 key) for a large one."""

    segment: int
    num: int
    type: str
    entry_id: uuid.UUID | None
    created: int
    body: dict[str, Any] | None = None
    external: str | None = None
    root: str | None = None


class SyncPage(Answer, frozen=True):
    """One page of ``GET /sheets/{id}/entries``."""

    reload: bool
    entries: list[LogEntry] = []
    position: Position | None = None
    more: bool = False


class Sync(Answer, frozen=True):
    """The entries after a position, every page joined; ``reload``: the client fell behind, load again."""

    reload: bool
    entries: list[LogEntry]
    position: Position


class SegmentStatus(Answer, frozen=True):
    segment: int
    created: int
    last_snapshot: int | None
    archive: str | None = None
    #: When retention deleted the segment's entries (epoch s).
    retired: int | None = None


class PendingSnapshot(Answer, frozen=True):
    segment: int
    entry: int
    retries: int
    active: bool
    modified: int
    created: int | None = None


class Snapshots(Answer, frozen=True):
    """``GET /sheets/{id}/snapshots``: the latest completed snapshot, each segment, and builds under way."""

    latest: Position | None
    segments: list[SegmentStatus]
    pending: list[PendingSnapshot]


class Presigned(Answer, frozen=True):
    """Step 1 of an upload: where to PUT the bytes, with exactly these (signed) headers."""

    upload_id: uuid.UUID
    url: str
    method: str = "PUT"
    headers: dict[str, str] = {}
    key: str = ""
    expires_in: int = 0


# ------------------------------------------------------------------------------------------ requests


class Request(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Base of request bodies: members left at their default (None) are not sent."""


class CreateRequest(Request, frozen=True):
    log_id: uuid.UUID


class AppendRequest(Request, frozen=True):
    #: An entry struct of :mod:`seglog_client.entries`, or the same as a JSON object.
    entry: Any
    entry_id: uuid.UUID
    since: Position | None = None
    expected: Position | None = None


class UploadRequest(Request, frozen=True):
    size: int
    content_type: str


class CompleteRequest(Request, frozen=True):
    type: Literal["imp", "setrng"]
    entry_id: uuid.UUID
    since: Position


#: Sorted keys at every level: the bytes of a request depend on its content only.
ENCODER: Final = msgspec.json.Encoder(order="sorted")
