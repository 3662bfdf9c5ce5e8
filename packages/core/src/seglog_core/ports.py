"""Ports: what the log algorithms need from storage. Adapters implement them; core never imports an adapter.

Two ports, each with one contract suite that every implementation passes (tests/contract/):

* :class:`LogStore` — the Segments and Entries tables (DynamoDB, or in memory).
* :class:`BlobStore` — the bucket (S3, or in memory).

Every method raises only :mod:`seglog_core.errors` types: adapters translate their backend's failures.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from seglog_core.schema import Entry, Segment


@runtime_checkable
class LogStore(Protocol):
    """The Segments and Entries tables."""

    def create_log(self, segment: Segment, first: Entry) -> None:
        """Write segment 0 and its first (Snapshot) entry in one transaction.

        Raises:
            TransactionCancelledError: the log already exists (reasons say ConditionalCheckFailed).
        """
        ...

    def latest_segments(self, log_id: uuid.UUID, limit: int = 2) -> list[Segment]:
        """The ``limit`` highest-numbered segments, newest first (eventually consistent Query). Empty if none."""
        ...

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        """Every segment, oldest first (paged)."""
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
        self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *, page_size: int = 500
    ) -> Iterator[Entry]:
        """Entries ``start <= num <= end`` in order, read a page at a time (consistent reads)."""
        ...

    def new_segment(self, end: Entry, segment: Segment, first: Entry) -> None:
        """One transaction: EndSegment ``end`` into the old segment, the new ``segment`` item and its first
        (Snapshot) entry, each conditional on not existing.

        Raises:
            TransactionCancelledError: with per-item reasons.
        """
        ...

    def complete_snapshot(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        """Record a completed snapshot: ``R`` on the Snapshot entry, then ``S`` on the segment (forward only)."""
        ...

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None) -> int:
        """Delete a segment's entries (paged). With ``archive``, keep the segment item, recording ``A``;
        otherwise delete it too. Returns the number of entries deleted."""
        ...


@runtime_checkable
class BlobStore(Protocol):
    """The bucket: large entry bodies, snapshots, archives, import sources."""

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        """Store an object. ``discardable`` tags it so the bucket's lifecycle rule expires it unless untagged."""
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


class Clock(Protocol):
    """Seconds since the epoch; injected so tests and the emulator can drive time."""

    def __call__(self) -> float: ...

