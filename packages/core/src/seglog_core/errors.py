"""Errors of seglog's core. Every error says what happened and what to do; data travels as attributes.

Adapters translate their backends' failures into these (``raise ... from exc``), so callers handle one set.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from seglog_core.schema import Entry


class SeglogError(Exception):
    """Root of every error seglog raises on purpose."""


# ------------------------------------------------------------------------------------------------ input


class InvalidInputError(SeglogError, ValueError):
    """Bad input from a user or client: nothing was written.

    ``edit`` is the 0-based index of the edit a batch (an ``edits`` entry) was refused for, None otherwise.
    """

    edit: int | None = None

    def at_edit(self, index: int) -> Self:
        """This error, saying that edit ``index`` of a batch caused it."""
        self.edit = index
        return self


class UnknownEntryTypeError(InvalidInputError):
    """An entry type this code does not know (stored by newer code, or a bad request)."""

    def __init__(self, type_: str, *, segment: int | None = None, entry: int | None = None) -> None:
        self.type = type_
        #: Where the entry is, when it was read from a log (None for a request).
        self.segment = segment
        self.entry = entry
        at = f" at entry {segment}/{entry}" if segment is not None and entry is not None else ""
        super().__init__(
            f"unknown entry type {type_!r}{at}: this log was written by newer code or the request is wrong; "
            "upgrade seglog before reading or building snapshots of it"
        )


class BodyVersionError(InvalidInputError):
    """A body version newer than this code knows: refuse to fold rather than fold wrong."""

    def __init__(self, type_: str, version: int, known: int) -> None:
        self.type = type_
        self.version = version
        self.known = known
        super().__init__(
            f"entry type {type_!r} has body version {version}, this code knows up to {known}: upgrade seglog"
        )


class InvalidCellRefError(InvalidInputError):
    """A cell reference that is not of the form A1 .. XFD1048576."""

    def __init__(self, ref: str, why: str = "") -> None:
        self.ref = ref
        self.why = why
        super().__init__(
            f"{ref!r} is not a cell reference{': ' + why if why else ''}; write a column letter and a row "
            "number, like A1 or BC12"
        )


class ValueTooLargeError(InvalidInputError):
    """A cell value or entry body larger than allowed."""

    def __init__(self, what: str, size: int, limit: int, *, unit: str = "bytes") -> None:
        self.what = what
        self.size = size
        self.limit = limit
        self.unit = unit
        super().__init__(f"{what} is {size} {unit}, the limit is {limit} {unit}: split it into smaller pieces")


class BatchTooLargeError(ValueTooLargeError):
    """An ``edits`` entry over its limits (edits or encoded bytes): split it into smaller batches."""

    def __init__(self, size: int, limit: int, *, unit: str = "bytes") -> None:
        super().__init__("the batch of edits", size, limit, unit=unit)


class ImportFileError(InvalidInputError):
    """An import file that cannot be read."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"cannot import {path}: {why}")


# ------------------------------------------------------------------------------------------------ log state


class LogNotFoundError(SeglogError, LookupError):
    """No log with this id."""

    def __init__(self, log_id: uuid.UUID | str) -> None:
        self.log_id = log_id
        super().__init__(f"no log {log_id}: check the id (seglog sheet create prints it)")


class CorruptLogError(SeglogError):
    """The log breaks an invariant that loading depends on (DESIGN §3 Load)."""

    def __init__(self, log_id: uuid.UUID, why: str) -> None:
        self.log_id = log_id
        self.why = why
        super().__init__(f"log {log_id} is corrupt: {why}; run seglog log verify {log_id} for details")


class ShortReadError(CorruptLogError):
    """A consistent read of a segment still ended short of what the reader knows it holds (seglog_core.reads):
    an eventually consistent read may lag, a consistent one may not, so the log lacks an entry it must hold."""

    def __init__(self, log_id: uuid.UUID, segment: int, *, at: int, wanted: str, read_to: int | None) -> None:
        self.segment = segment
        #: The num the read fell short at: the first it lacks, or the completed snapshot showing no root.
        self.at = at
        #: What the read should have reached: an entry, an EndSegment, a snapshot's root.
        self.wanted = wanted
        #: The last num the consistent read answered (None: nothing).
        self.read_to = read_to
        super().__init__(log_id, f"a consistent read of segment {segment} ended at "
                                 f"{'nothing' if read_to is None else read_to}, short of {wanted}")


class SegmentNotReadyError(SeglogError):
    """A new segment was refused because the current one has no completed snapshot yet."""

    def __init__(self, log_id: uuid.UUID, segment: int) -> None:
        self.log_id = log_id
        self.segment = segment
        super().__init__(
            f"log {log_id} segment {segment} has no completed snapshot yet; a new segment can start once the "
            "snapshot pipeline has built one"
        )


class VersionConflictError(SeglogError):
    """An expected-version append found its num taken (``existing`` is the entry that holds it, when known), or
    not the next one of the log's current segment ``segment`` (``next_num`` is: past the tail, or of a segment
    that has ended)."""

    def __init__(self, log_id: uuid.UUID, segment: int, num: int, existing: Entry | None, *,
                 next_num: int | None = None) -> None:
        self.log_id = log_id
        self.segment = segment
        self.num = num
        self.existing = existing
        self.next_num = next_num
        if next_num is not None:
            message = (f"log {log_id}'s next entry is {segment}/{next_num}, not num {num}: reload (or rebase) and "
                       "append again")
        else:
            message = f"log {log_id} already has entry {segment}/{num}: reload (or rebase on it) and append again"
        super().__init__(message)


class UnknownPositionError(SeglogError):
    """An append named a position (``since``) the log does not hold: past its end, or in a retired segment."""

    def __init__(self, log_id: uuid.UUID, segment: int, num: int) -> None:
        self.log_id = log_id
        self.segment = segment
        self.num = num
        super().__init__(
            f"log {log_id} has no entry {segment}/{num}: send as since a position the log answered (an append's "
            "or a load's position; a new log's is 0/0); a position older than the two latest segments may be "
            "retired: load the sheet again"
        )


class EntryIdReusedError(SeglogError):
    """An append reused an entry id (``K``) that names another entry: nothing was written, the stored entry stands.

    "Another entry" means another type, body version or body (for a large body: other bytes). An entry id names
    one entry for ever (DESIGN §3): a retry sends the identical entry, a new entry gets a new id.
    """

    def __init__(self, log_id: uuid.UUID, entry_id: uuid.UUID, segment: int, num: int) -> None:
        self.log_id = log_id
        self.entry_id = entry_id
        #: Where the entry stored under this id is.
        self.segment = segment
        self.num = num
        super().__init__(
            f"entry id {entry_id} is already entry {segment}/{num} of log {log_id}, with another body: an entry "
            "id names one entry; use a new entry id for a new entry (a retry must send the identical entry)"
        )


class SinceRetiredError(SeglogError):
    """An append's ``since`` lies in history retention deleted, and the entry id is not in the retained log.

    Whether an earlier try landed in the deleted history cannot be known from the log; it can from the client's
    clock: a try lands after its entry's first try, and retention keeps every segment ``horizon`` seconds after
    it closed (seglog_core.idempotence, "Retired positions"). ``resend`` is the position to resend with.
    """

    def __init__(self, log_id: uuid.UUID, since: tuple[int, int], resend: tuple[int, int], entry_id: uuid.UUID,
                 horizon: float | None) -> None:
        self.log_id = log_id
        self.since = since
        self.resend = resend
        self.entry_id = entry_id
        self.horizon = horizon
        within = "less than the retry horizon" if horizon is None else f"less than {horizon:g} s (the retry horizon)"
        super().__init__(
            f"log {log_id}: since {since[0]}/{since[1]} is in history retention has retired, and entry {entry_id} "
            f"is not in the retained log. If this entry's first try was {within} ago, resend it with the same "
            f"entry_id and since = {resend[0]}/{resend[1]}: no earlier try can have landed in retired history; "
            "otherwise its outcome cannot be known: do not resend it (load the sheet and look)"
        )


class AppendContentionError(SeglogError):
    """Optimistic append gave up after its bounded attempts."""

    def __init__(self, log_id: uuid.UUID, attempts: int) -> None:
        self.log_id = log_id
        self.attempts = attempts
        super().__init__(
            f"append to log {log_id} gave up after {attempts} attempts under contention or throttling; "
            "retry later with the same entry id (it will not be duplicated)"
        )


# ------------------------------------------------------------------------------------------------ storage


class StoreError(SeglogError):
    """A storage failure. ``retryable`` ones may succeed if tried again after a backoff."""

    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        self.code = code
        super().__init__(message)


class ItemExistsError(StoreError):
    """A conditional put found its key taken (ConditionalCheckFailed). ``existing`` is the item, if returned.

    ``after_unknown_outcome`` is set when an earlier attempt of the same call may have been applied (its answer was
    lost and the call was retried): the condition may then have failed on the call's own write.
    """

    after_unknown_outcome: bool = False

    def __init__(self, what: str, existing: Entry | None = None) -> None:
        self.existing = existing
        super().__init__(f"{what} already exists", code="ConditionalCheckFailedException")


class SnapshotCompleteError(ItemExistsError):
    """No pending item is created for a Snapshot entry that already has its root: the snapshot completed (and its
    pending item was deleted) while the creator was not looking."""

    def __init__(self, what: str) -> None:
        super().__init__(what)


class TransactionCancelledError(StoreError):
    """A transaction was cancelled; ``reasons`` holds one code per item (``None`` where that item was fine).
    ``after_unknown_outcome`` as for :class:`ItemExistsError`: an earlier attempt may have been applied."""

    after_unknown_outcome: bool = False

    def __init__(self, reasons: list[str | None]) -> None:
        self.reasons = reasons
        super().__init__(f"transaction cancelled: {reasons}", code="TransactionCanceledException")
        # Retryable when the only failures are conflicts or throttles, not failed conditions.
        self.retryable = bool(reasons) and all(
            r in (None, "None", "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")
            for r in reasons
        ) and any(r not in (None, "None") for r in reasons)

    @property
    def condition_failed(self) -> bool:
        return "ConditionalCheckFailed" in self.reasons


class ThrottledError(StoreError):
    """The backend throttled the request; retry with backoff."""

    retryable = True


class TransientStoreError(StoreError):
    """A transient failure (5xx, conflict, connection). ``outcome_unknown`` when a write may have happened."""

    retryable = True

    def __init__(self, message: str, *, code: str | None = None, outcome_unknown: bool = False) -> None:
        super().__init__(message, code=code)
        self.outcome_unknown = outcome_unknown


class DeadlineError(StoreError):
    """Retrying stopped because the next try could not end before the deadline (a Lambda invocation's time limit)."""

    def __init__(self, seconds_left: float, attempts: int) -> None:
        self.seconds_left = seconds_left
        self.attempts = attempts
        super().__init__(
            f"gave up after {attempts} attempts with {seconds_left:.1f} s left before the function's time limit; "
            "repeat the request as it was (an append with the same entry id and since is stored once)", code="Deadline")


class BlobNotFoundError(StoreError, LookupError):
    """No object under this key."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"no object {key!r} in the bucket", code="NoSuchKey")
