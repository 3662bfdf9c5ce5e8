"""The snapshot policy and new segments of a writer (DESIGN §3): after an append at a multiple of ``snapshot_every``,
a Snapshot entry for the pipeline to build, or a new segment once the current one holds ``segment_entries``.

Part of :class:`seglog_core.log.EventLog` (a base of it): the append loop and the tail it keeps are there, what a
landed append sets off is here. No read is spent on the decision: the writer of num k*N decides.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import structlog

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, Segment, SnapshotMarker, encode_body
from seglog_core.segments import start_segment
from seglog_core.turns import Tail

log = structlog.get_logger("seglog.log")


class SnapshotPolicy:
    """What an append sets off once it has landed; :class:`~seglog_core.log.EventLog` supplies the rest."""

    store: LogStore
    retry: RetryPolicy
    clock: Callable[[], float]
    snapshot_every: int | None
    segment_entries: int | None
    _tails: dict[uuid.UUID, Tail]

    # The tail's rules, EventLog's (seglog_core.log).
    def _tail(self, log_id: uuid.UUID) -> Tail:
        raise NotImplementedError

    def _fresh(self, tail: Tail) -> bool:
        raise NotImplementedError

    def _follow_end(self, tail: Tail, end: Entry) -> None:
        raise NotImplementedError

    def _num_after(self, tail: Tail, latest: Entry) -> int:
        raise NotImplementedError

    def _latest_segment(self, log_id: uuid.UUID) -> Segment:
        raise NotImplementedError

    def landed(self, entry: Entry, attempts: int, *, deduplicated: bool = False) -> object:
        raise NotImplementedError

    def apply_policy_after(self, entry: Entry) -> None:
        """:meth:`_apply_policy` once ``entry`` has landed: its failure must not fail (and so repeat) the append.

        Chaos runs found a client's entry written twice: the Snapshot entry after it failed past its retries,
        the append loop took that for its own failure and wrote the entry again. Now the snapshot is skipped
        (the writer of the next multiple decides again, as after a crash) and the append stands.
        """
        try:
            self._apply_policy(entry)
        except errors.SeglogError as exc:
            log.warning("snapshot policy failed after the append landed: left to the next multiple",
                        log_id=str(entry.log_id), segment=entry.segment, entry=entry.num, error=str(exc))

    def _apply_policy(self, entry: Entry) -> None:
        """After an append: a Snapshot entry every ``snapshot_every`` nums, or a new segment by size.

        No read is spent on the decision: the writer of num k*N decides. A crash between the two appends
        only skips one snapshot; the writer of the next multiple decides again (DESIGN §3).
        """
        every = self.snapshot_every
        if not every or entry.num % every:
            return
        if self.segment_entries and entry.num >= self.segment_entries:
            try:
                self.start_segment(entry.log_id)
                return
            except errors.SegmentNotReadyError:
                pass  # the segment's snapshot is not built yet: snapshot now, close the segment later
        self.append_snapshot(entry.log_id, after=entry)

    def append_snapshot(self, log_id: uuid.UUID, *, after: Entry | None = None) -> Entry:
        """Append a Snapshot entry (the pipeline builds it); returns the entry.

        Args:
            after: an entry this writer wrote a moment ago (the snapshot policy's). A known tail at or past it was
                proved no earlier than that write, as fresh as a read would be: it is written after without one,
                whatever ``tail_ttl`` says.
        """
        tail = self._tail(log_id)
        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                # The read is retried like the write (chaos runs found a single throttled Query skipping the
                # snapshot).
                just_proved = (after is not None and tail.num is not None
                               and (tail.segment, tail.num) >= (after.segment, after.num))
                if tail.num is None or not (self._fresh(tail) or just_proved):
                    latest = self.store.latest_entry(log_id, tail.segment)
                    if latest is None:
                        raise errors.CorruptLogError(log_id, f"segment {tail.segment} has no entries")
                    if latest.type is EntryType.END_SEGMENT:
                        self._follow_end(tail, latest)
                        continue
                    num = self._num_after(tail, latest)
                else:
                    num = tail.num + 1
                entry = Entry(log_id=log_id, segment=tail.segment, num=num, created=int(self.clock()),
                              type=EntryType.SNAPSHOT, body=encode_body(SnapshotMarker()))
                self.store.put_entry(entry)
                self.landed(entry, attempt)
                log.info("snapshot entry appended", log_id=str(log_id), segment=entry.segment, entry=num)
                return entry
            except errors.ItemExistsError as exc:
                tail.num = None
                if exc.existing is not None and exc.existing.type is EntryType.END_SEGMENT:
                    self._follow_end(tail, exc.existing)
            except errors.StoreError as exc:
                if not exc.retryable:
                    raise
                tail.num = None
            if attempt < self.retry.max_attempts:
                self.retry.backoff(attempt)
        raise errors.AppendContentionError(log_id, self.retry.max_attempts)

    # ----------------------------------------------------------------------------------------- segments

    def start_segment(self, log_id: uuid.UUID) -> Segment:
        """Start a new segment (:func:`seglog_core.segments.start_segment`); the tail is its Snapshot entry 0.

        Raises:
            SegmentNotReadyError: the current segment has no completed snapshot yet.
        """
        new = start_segment(self.store, log_id, clock=self.clock, retry=self.retry,
                            latest_segment=self._latest_segment)
        self._tails[log_id] = Tail(segment=new.num, num=0, checked=self.clock())
        return new
