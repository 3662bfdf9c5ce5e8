"""A new segment (DESIGN §3 "New segment", seed 000 "Create New Segment"): one transaction writes EndSegment into
the current segment, the new segment's item and its Snapshot entry 0. Refused while the current segment has no
completed snapshot (a load must always find one in the two latest segments).

The writer (:class:`seglog_core.log.EventLog`) decides when, by its size policy, and caches the new tail.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import structlog

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.retry import RetryPolicy
from seglog_core.schema import EndSegment, Entry, EntryType, Segment, SnapshotMarker, encode_body

log = structlog.get_logger("seglog.log")


def start_segment(store: LogStore, log_id: uuid.UUID, *, clock: Callable[[], float], retry: RetryPolicy,
                  latest_segment: Callable[[uuid.UUID], Segment]) -> Segment:
    """Close the current segment and open the next; returns the new segment. A transaction that loses (another
    writer appended or started the segment first) or a retryable failure is tried again from a fresh read.

    Args:
        latest_segment: reads the newest segment (the writer's, which confirms a missing log consistently).

    Raises:
        SegmentNotReadyError: the current segment has no completed snapshot yet.
        AppendContentionError: the attempts ran out.
    """
    for attempt in range(1, retry.max_attempts + 1):
        current = latest_segment(log_id)
        if current.last_snapshot is None:
            raise errors.SegmentNotReadyError(log_id, current.num)
        latest = store.latest_entry(log_id, current.num)
        if latest is None:
            raise errors.CorruptLogError(log_id, f"segment {current.num} has no entries")
        now = int(clock())
        nxt = current.num + 1
        if latest.type is not EntryType.END_SEGMENT:
            end = Entry(log_id=log_id, segment=current.num, num=latest.num + 1, created=now,
                        type=EntryType.END_SEGMENT, body=encode_body(EndSegment(next_segment=nxt)))
            new = Segment(log_id=log_id, num=nxt, created=now)
            first = Entry(log_id=log_id, segment=nxt, num=0, created=now, type=EntryType.SNAPSHOT,
                          body=encode_body(SnapshotMarker()))
            try:
                store.new_segment(end, new, first)
                log.info("segment started", log_id=str(log_id), segment=nxt)
                return new
            except errors.StoreError as exc:
                if not (exc.retryable or isinstance(exc, errors.TransactionCancelledError)):
                    raise
        if attempt < retry.max_attempts:
            retry.backoff(attempt)
    raise errors.AppendContentionError(log_id, retry.max_attempts)
