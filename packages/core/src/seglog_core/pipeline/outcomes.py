"""What one snapshot job ends in (DESIGN §5), and the errors the worker raises or records."""

from __future__ import annotations

from enum import StrEnum

from seglog_core import errors


class Outcome(StrEnum):
    """What one invocation did with its message. ``keeps_message`` ones must be reported as failures so the
    Lambda integration does not delete the message."""

    COMPLETED = "completed"
    ALREADY_DONE = "already_done"
    DUPLICATE = "duplicate"
    DEFERRED = "deferred"
    BUSY = "busy"
    HANDED_OFF = "handed_off"
    TAKEN_OVER = "taken_over"
    BLOCKED = "blocked"

    @property
    def keeps_message(self) -> bool:
        return self in (Outcome.DEFERRED, Outcome.BUSY, Outcome.HANDED_OFF, Outcome.TAKEN_OVER, Outcome.BLOCKED,
                        Outcome.DUPLICATE)


class InvalidJobError(errors.InvalidInputError):
    """A queue message that is not a snapshot job, or names no Snapshot entry."""


class SnapshotBlockedError(errors.SeglogError):
    """An entry before the Snapshot entry that this code cannot fold: the snapshot waits for newer code."""

    def __init__(self, cause: errors.UnknownEntryTypeError | errors.BodyVersionError, *, segment: int | None,
                 entry: int | None) -> None:
        self.cause = cause
        self.segment = segment
        self.entry = entry
        where = f"entry {segment}/{entry}" if segment is not None and entry is not None else "an entry"
        if isinstance(cause, errors.BodyVersionError):
            what = f"has {str(cause.type)!r} body version {cause.version}, this code knows up to {cause.known}"
        else:
            what = f"has type {str(cause.type)!r}, unknown to this code"
        super().__init__(f"{where} {what}: deploy newer code of the snapshot worker; the snapshot is deferred "
                         "until then")


#: What the fold cannot read: an entry type or body version newer than this code.
UNREADABLE = (errors.UnknownEntryTypeError, errors.BodyVersionError)
