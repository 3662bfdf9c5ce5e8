"""Races around a snapshot's completion that the simulator found (seglog simulate), each replayed by hand.

- seed 178: a duplicate job that meets a live-looking claim was deleted, while the claimer's own message was gone
  (parked in the DLQ) and a fast clock had stamped M in the future: the snapshot was stranded.
- seed 196: a taker whose claim landed just before completion cut chunk 0 its own way over the completed snapshot.
- seed 742: a job that stalled after reading the Snapshot entry re-created the pending item after completion and
  rebuilt the snapshot with another chunk size.
- seed 514: the same stalled job, dying next, left the re-created pending item behind for ever.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import Any

from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.ports import QueueMessage
from seglog_core.reader import LogReader
from seglog_core.schema import Entry, SetCell, SnapshotJob
from seglog_core.verify import verify_log


class Crash(Exception):
    pass


@dataclass
class Sheet:
    """A log with cells and one Snapshot entry to build, its stores on a hand-moved clock, and two jobs queued."""

    store: InMemoryLogStore
    blobs: InMemoryBlobStore
    pending: InMemoryPendingStore
    queue: InMemoryJobQueue
    log_id: uuid.UUID
    snapshot: Entry
    now: list[float]

    @classmethod
    def build(cls, rows: int, *, pending_sees_the_log: bool = False, jobs: int = 1) -> Sheet:
        now = [1_000.0]
        store, blobs = InMemoryLogStore(), InMemoryBlobStore()
        pending = InMemoryPendingStore(log_store=store if pending_sees_the_log else None)
        log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
        log_id = log.create()
        for row in range(1, rows + 1):
            log.append(log_id, SetCell(row=row, col=1, value=row))
        sheet = cls(store=store, blobs=blobs, pending=pending, log_id=log_id, snapshot=log.append_snapshot(log_id),
                    queue=InMemoryJobQueue(visibility_timeout=30, clock=lambda: now[0]), now=now)
        for _ in range(jobs):
            sheet.send()
        return sheet

    def send(self) -> None:
        self.queue.send(SnapshotJob(log=str(self.log_id), segment=self.snapshot.segment, entry=self.snapshot.num))

    def worker(self, *, store: Any = None, pending: Any = None, clock_ahead: float = 0.0, crash_at: str = "",
               chunk_cells: int = 4) -> SnapshotWorker:
        def crash(point: str) -> None:
            if point == crash_at:
                raise Crash(point)

        return SnapshotWorker(store=store or self.store, blobs=self.blobs, pending=pending or self.pending,
                              queue=self.queue, takeover_after=60, chunk_cells=chunk_cells, crash=crash,
                              body_of=SheetDocument(reader=LogReader(store=self.store), blobs=self.blobs).body,
                              clock=lambda: self.now[0] + clock_ahead)

    def chunks(self) -> dict[str, bytes]:
        return {key: self.blobs.get(key) for key in self.blobs.keys(f"snapshots/{self.log_id}/")}

    def assert_verified(self) -> None:
        report = verify_log(self.store, self.log_id, blobs=self.blobs, pending=self.pending, quiescent=True)
        assert report.ok, report.violations

    def read_before_the_root(self) -> Any:
        """The log store as a job sees it that read the Snapshot entry before the snapshot completed."""
        sheet = self

        class ReadBeforeTheRoot:
            first = True

            def __getattr__(self, name: str) -> object:
                return getattr(sheet.store, name)

            def get_entry(self, *args: Any) -> Entry | None:
                if self.first:
                    self.first = False
                    return sheet.snapshot
                return sheet.store.get_entry(*args)

        return ReadBeforeTheRoot()


def _receive(sheet: Sheet, count: int = 1) -> list[QueueMessage]:
    messages = sheet.queue.receive(count)
    assert len(messages) == count
    return messages


def test_a_duplicate_waits_for_a_dead_claimer_whose_clock_ran_fast_and_then_builds() -> None:
    sheet = Sheet.build(3)
    (first,) = _receive(sheet)
    with contextlib.suppress(Crash):  # claims with a clock 200 s fast (M = now + 200), then dies
        sheet.worker(clock_ahead=200, crash_at="after_claim").process(first)
    sheet.queue.delete(first)  # its message is gone (the DLQ)
    sheet.now[0] += 70  # past the takeover time by the true clock, not by M
    sheet.send()  # the redriven copy, a new messageId
    (copy,) = _receive(sheet)
    assert Outcome.DUPLICATE == sheet.worker().process(copy)
    assert sheet.queue.depth() == 1, "the only job left was deleted"
    sheet.now[0] += 200  # the claim is stale by its own M too
    (back,) = _receive(sheet)
    assert Outcome.COMPLETED == sheet.worker().process(back)
    assert sheet.queue.depth() == 0
    sheet.assert_verified()


def test_a_claim_won_just_before_the_snapshot_completes_builds_nothing() -> None:
    """The taker read the entry before its root was set, took the claim over (its clock ran fast) and claimed just
    before the holder deleted the pending item: it found no pinned chunk size."""
    sheet = Sheet.build(9, jobs=2)
    first, copy = _receive(sheet, 2)
    with contextlib.suppress(Crash):  # built with 4-cell chunks, root set; the pending item goes a moment later
        sheet.worker(crash_at="after_root").process(first)
    chunks = sheet.chunks()
    pending = sheet.pending

    class DeletedRightAfterTheClaim:  # the holder's "delete the pending item" lands right after our claim
        def __getattr__(self, name: str) -> object:
            return getattr(pending, name)

        def claim(self, *args: Any, **kwargs: Any) -> int | None:
            increment = pending.claim(*args, **kwargs)
            pending.delete(sheet.log_id, sheet.snapshot.segment, sheet.snapshot.num)
            return increment

    taker = sheet.worker(store=sheet.read_before_the_root(), pending=DeletedRightAfterTheClaim(), clock_ahead=200,
                         chunk_cells=7)
    assert Outcome.ALREADY_DONE == taker.process(copy)
    assert chunks == sheet.chunks()
    sheet.assert_verified()


def test_a_job_that_stalled_after_reading_the_entry_does_not_rebuild_a_completed_snapshot() -> None:
    sheet = Sheet.build(9, jobs=2)
    first, stalled = _receive(sheet, 2)
    assert Outcome.COMPLETED == sheet.worker().process(first)
    chunks = sheet.chunks()
    late = sheet.worker(store=sheet.read_before_the_root(), chunk_cells=7)
    assert Outcome.ALREADY_DONE == late.process(stalled)
    assert chunks == sheet.chunks()
    sheet.assert_verified()


def test_a_stalled_job_creates_no_pending_item_for_a_snapshot_completed_meanwhile() -> None:
    """The store refuses the item (its Snapshot entry is complete), so a job dying right after creating it leaves
    nothing behind."""
    sheet = Sheet.build(1, jobs=2, pending_sees_the_log=True)
    first, stalled = _receive(sheet, 2)
    assert Outcome.COMPLETED == sheet.worker().process(first)
    late = sheet.worker(store=sheet.read_before_the_root(), crash_at="after_pending_upsert")
    assert Outcome.ALREADY_DONE == late.process(stalled)  # refused the item: never reached after_pending_upsert
    assert [] == sheet.pending.for_log(sheet.log_id)
    sheet.assert_verified()
