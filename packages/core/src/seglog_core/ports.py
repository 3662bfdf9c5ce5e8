"""Ports: what the log algorithms need from storage. Adapters implement them; core never imports an adapter.

Four ports, each with one contract suite that every implementation passes (tests/contract/):

* :class:`LogStore` — the Segments and Entries tables (DynamoDB, or in memory).
* :class:`BlobStore` — the bucket (S3, or in memory).
* :class:`PendingStore` — the PendingSnapshots table (DynamoDB, or in memory).
* :class:`JobQueue` — the snapshot queue (SQS, or in memory).

Every method raises only :mod:`seglog_core.errors` types: adapters translate their backend's failures.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from seglog_core.schema import Entry, PendingSnapshot, Segment, SnapshotJob


@runtime_checkable
class LogStore(Protocol):
    """The Segments and Entries tables."""

    def create_log(self, segment: Segment, first: Entry) -> None:
        """Write segment 0 and its first (Snapshot) entry in one transaction.

        Raises:
            TransactionCancelledError: the log already exists (reasons say ConditionalCheckFailed).
        """
        ...

    def latest_segments(self, log_id: uuid.UUID, limit: int = 2, *, consistent: bool = False) -> list[Segment]:
        """The ``limit`` highest-numbered segments, newest first (an eventually consistent Query unless
        ``consistent``). Empty if none."""
        ...

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        """Every segment, oldest first (paged)."""
        ...

    def log_ids(self) -> Iterator[uuid.UUID]:
        """Every log's id (a paged Scan of the Segments table: for manual fallbacks, not hot paths)."""
        ...

    def due_segments(self, closed_before: int) -> Iterator[tuple[uuid.UUID, int]]:
        """(log id, segment num) of every segment after the first whose predecessor closed (its ``C``) at or
        before ``closed_before`` (epoch s) and whose retention look is still due (``U``, set by
        :meth:`new_segment`, cleared by :meth:`clear_due`), oldest close first: the sparse index ``Due``, read
        eventually consistent and paged (seglog_core.retention, "Due segments")."""
        ...

    def clear_due(self, log_id: uuid.UUID, segment: int) -> None:
        """Take a segment out of :meth:`due_segments` (remove its ``U``; nothing if the item is gone, or while
        retention's claim ``P`` stands on it: a claimed segment stays due until a run finishes it)."""
        ...

    def latest_entry(self, log_id: uuid.UUID, segment: int) -> Entry | None:
        """The highest-numbered entry of a segment (eventually consistent Query, Limit 1, descending).

        Eventually consistent: it may return an older entry than the newest. Callers must cope.
        """
        ...

    def put_entry(self, entry: Entry) -> None:
        """Write an entry if its num is free (condition ``attribute_not_exists``).

        Raises:
            ItemExistsError: the num is taken; ``existing`` holds the entry there when the backend returns it.
            TransientStoreError: ``outcome_unknown=True`` when the write may or may not have happened.
        """
        ...

    def get_entry(self, log_id: uuid.UUID, segment: int, num: int) -> Entry | None:
        """One entry by key (strongly consistent), or ``None``."""
        ...

    def entries(
        self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *, page_size: int = 500,
        consistent: bool = True,
    ) -> Iterator[Entry]:
        """Entries ``start <= num <= end`` in order, read a page at a time: strongly consistent reads unless not
        ``consistent``. An eventually consistent read costs half and may answer less: the segment as it was a
        moment ago, a prefix of it with roots missing, never more (seglog_core.reads reads on when it is short)."""
        ...

    def new_segment(self, end: Entry, segment: Segment, first: Entry) -> None:
        """One transaction: EndSegment ``end`` into the old segment, the new ``segment`` item and its first
        (Snapshot) entry, each conditional on not existing. The new item is due for a retention look
        (:meth:`due_segments`): the old segment closed at its ``C``.

        Raises:
            TransactionCancelledError: with per-item reasons.
        """
        ...

    def complete_snapshot(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        """Record a completed snapshot: :meth:`set_snapshot_root`, then :meth:`advance_snapshot`."""
        ...

    def set_snapshot_root(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        """Set ``R`` on a Snapshot entry (idempotent). Raises InvalidInputError if it is not one."""
        ...

    def advance_snapshot(self, log_id: uuid.UUID, segment: int, num: int) -> None:
        """Move the segment's ``S`` forward to ``num``; never back (idempotent)."""
        ...

    def mark_retiring(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                      retired: int | None = None) -> bool:
        """Claim a segment for retention before anything of it is removed: mark its item ``A`` = ``archive``
        (else ``D`` = ``retired``, epoch s; default now) and ``P`` (retiring), only if the item exists and bears
        no mark of the other form; the claim also marks the segment due (``U``), so a run that dies holding it
        leaves it to the next run. True if the segment now bears this form's mark (again, for a rerun); False if
        the other form claimed it or the item is gone (then nothing changed)."""
        ...

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                       retired: int | None = None) -> int:
        """Retire a segment: delete its entries (paged) but its EndSegment, then mark its item — ``A`` =
        ``archive`` when archived, else ``D`` = ``retired`` (epoch s; default now) — and clear ``P``. The item and
        the EndSegment stay as a tombstone, so a reader paging through the segment meanwhile still finds where it
        ends (seglog_core.retention). The mark is written only if the item exists. Returns the entries deleted."""
        ...


@runtime_checkable
class BlobStore(Protocol):
    """The bucket: large entry bodies, snapshots, archives, import sources."""

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        """Store an object. ``discardable`` tags it so the bucket's lifecycle rule expires it unless untagged."""
        ...

    def put_if_absent(self, key: str, data: bytes, *, discardable: bool = False) -> bool:
        """Store an object only if ``key`` holds none (S3: PutObject with If-None-Match: *). True if this call
        wrote it; False if the key was taken, and then nothing changed, not even the tags. A repeat after a lost
        answer may find its own write: False then too."""
        ...

    def get(self, key: str) -> bytes:
        """Read an object. Raises BlobNotFoundError."""
        ...

    def is_discardable(self, key: str) -> bool:
        """Whether the object carries the discardable tag. Raises BlobNotFoundError."""
        ...

    def keep(self, key: str) -> None:
        """Remove the discardable tag (idempotent). Raises BlobNotFoundError."""
        ...

    def delete(self, key: str) -> None:
        """Delete an object (idempotent)."""
        ...

    def keys(self, prefix: str) -> Iterator[str]:
        """Keys under a prefix, in lexicographic order."""
        ...



@runtime_checkable
class PendingStore(Protocol):
    """The PendingSnapshots table (DESIGN §2, §5): one item per Snapshot entry being built.

    Every write is conditional; a lost condition raises :class:`~seglog_core.errors.ItemExistsError` (or
    returns False where noted) so the worker knows another invocation got there first.
    """

    def get(self, log_id: uuid.UUID, segment: int, entry: int) -> PendingSnapshot | None:
        """The item, strongly consistent, or None."""
        ...

    def create(self, item: PendingSnapshot) -> None:
        """Write a new item. Raises ItemExistsError if it exists, SnapshotCompleteError (an ItemExistsError) if its
        Snapshot entry already has its root, when the store can see the Entries table."""
        ...

    def set_claimer(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, increment: int,
                    now: int) -> None:
        """Record the message that owns this snapshot, conditional on the increment read and no claimer yet.
        Raises ItemExistsError when the condition fails."""
        ...

    def defer(self, log_id: uuid.UUID, segment: int, entry: int, *, now: int, blocked: str | None = None) -> int:
        """Count one more deferral (R + 1, M = now) and record why the snapshot is ``blocked`` (W), or clear that
        when None; returns the new count. Raises ItemExistsError if gone."""
        ...

    def take_over(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str,
                  increment: int, now: int, takeover_after: int) -> bool:
        """Make ``claimer`` the claimer of a stale claim: Q = claimer, A = false, M = now, when Q is still
        ``previous``, X still ``increment`` and M older than ``takeover_after`` seconds (M < now - takeover_after),
        so of two takers racing on the same read one wins. X is kept: the new claimer's :meth:`claim` raises it,
        which stops a holder that was only slow at its next checkpoint. False when the condition fails."""
        ...

    def seize(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str, increment: int,
              now: int, takeover_after: int, initial_state: bytes | None = None) -> int | None:
        """Take a claim that no live builder holds and claim it, in one write: Q = claimer, A = true, X + 1,
        M = now, and the checkpoint state ``S`` to ``initial_state`` when it has none, when Q is still ``previous``,
        X still ``increment``, and A is false or M older than ``takeover_after`` seconds. A helper's way in
        (seglog_core.pipeline.claims): taking the claimer and claiming in two writes let helpers take it from one
        another between the two, and none build (the simulator, seed 2487). Returns our increment, or None when
        the condition fails."""
        ...

    def claim(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, now: int,
              takeover_after: int, initial_state: bytes | None = None) -> int | None:
        """Set Active, X + 1, M = now, when not active or when M is older than ``takeover_after`` seconds
        (M < now - takeover_after) and the claimer matches; and the checkpoint state ``S`` to ``initial_state``
        when it has none yet. Returns our increment, or None when refused."""
        ...

    def checkpoint(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, state: bytes,
                   now: int) -> bool:
        """Store checkpoint state if X still equals ``increment``; False means another invocation took over."""
        ...

    def release(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, now: int) -> bool:
        """Clear Active if X still equals ``increment`` (a handoff); False if another invocation took over."""
        ...

    def delete(self, log_id: uuid.UUID, segment: int, entry: int) -> None:
        """Remove the item (idempotent)."""
        ...

    def for_log(self, log_id: uuid.UUID, *, before: tuple[int, int] | None = None) -> list[PendingSnapshot]:
        """Every pending item of a log (only those before ``before``, a segment and entry, when given), in
        (segment, entry) order."""
        ...

    def scan(self) -> Iterator[PendingSnapshot]:
        """Every pending item of every log (for verify and reprocess)."""
        ...


@dataclass(frozen=True, kw_only=True)
class QueueMessage:
    """A received queue message, as the worker sees it (from a Lambda SQS event record)."""

    message_id: str
    receipt_handle: str
    body: str
    receive_count: int = 1


@runtime_checkable
class JobQueue(Protocol):
    """The snapshot queue."""

    def send(self, job: SnapshotJob) -> str:
        """Enqueue a job; returns the message id."""
        ...

    def delete(self, message: QueueMessage) -> None:
        """Delete a received message (idempotent; an expired receipt handle is not an error)."""
        ...

    def change_visibility(self, message: QueueMessage, seconds: int) -> None:
        """Hide a received message for ``seconds`` more (0: visible now)."""
        ...
