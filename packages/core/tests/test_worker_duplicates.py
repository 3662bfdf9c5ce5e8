"""A duplicate job that meets a live-looking claim waits instead of being deleted (found by the simulator).

The claimer's own message can be gone — parked in the DLQ, or deleted with a stale receipt handle — while its
claim still looks fresh: a worker whose clock runs fast stamps M in the future. Deleting the duplicate then
deleted the last job of the snapshot (simulator seed 178: a redriven copy deleted, the snapshot stranded).
"""

from __future__ import annotations

import contextlib

from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.reader import LogReader
from seglog_core.schema import SetCell, SnapshotJob
from seglog_core.verify import verify_log


class Crash(Exception):
    pass


def test_a_duplicate_waits_for_a_dead_claimer_whose_clock_ran_fast_and_then_builds() -> None:
    now = [1_000.0]
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = InMemoryJobQueue(visibility_timeout=30, clock=lambda: now[0])
    log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
    log_id = log.create()
    for value in range(3):
        log.append(log_id, SetCell(row=1, col=1, value=value))
    snapshot = log.append_snapshot(log_id)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)

    def worker(clock_ahead: float = 0.0, crash_at: str | None = None) -> SnapshotWorker:
        def crash(point: str) -> None:
            if point == crash_at:
                raise Crash(point)

        return SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue, body_of=document.body,
                              clock=lambda: now[0] + clock_ahead, takeover_after=60, crash=crash)

    job = SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num)
    queue.send(job)
    (first,) = queue.receive()
    with contextlib.suppress(Crash):  # claims with a clock 200 s fast (M = now + 200), then dies
        worker(clock_ahead=200, crash_at="after_claim").process(first)
    queue.delete(first)  # its message is gone (the DLQ)
    now[0] += 70  # past the takeover time by the true clock, not by M
    queue.send(job)  # the redriven copy, a new messageId
    (copy,) = queue.receive()
    assert Outcome.DUPLICATE == worker().process(copy)
    assert queue.depth() == 1, "the only job left was deleted"
    now[0] += 200  # the claim is stale by its own M too
    (back,) = queue.receive()
    assert Outcome.COMPLETED == worker().process(back)
    assert queue.depth() == 0
    report = verify_log(store, log_id, blobs=blobs, pending=pending, quiescent=True)
    assert report.ok, report.violations


def test_a_claim_won_just_before_the_snapshot_completes_builds_nothing() -> None:
    """Found by the simulator (seed 196): a taker read the Snapshot entry before its root was set, took the claim
    over (its clock ran fast), claimed just before the holder deleted the pending item, found no checkpoint state
    — and cut chunk 0 its own way (another code version) over the completed snapshot's."""
    now = [1_000.0]
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = InMemoryJobQueue(visibility_timeout=30, clock=lambda: now[0])
    log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
    log_id = log.create()
    for value in range(9):
        log.append(log_id, SetCell(row=value + 1, col=1, value=value))
    snapshot = log.append_snapshot(log_id)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    job = SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num)

    class Holder(Exception):
        pass

    def holder_crash(point: str) -> None:
        if point == "after_root":
            raise Holder(point)

    queue.send(job)
    (first,) = queue.receive()
    holder = SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue, body_of=document.body,
                            clock=lambda: now[0], takeover_after=60, chunk_cells=4, crash=holder_crash)
    with contextlib.suppress(Holder):  # built with 4-cell chunks, root set; the pending item goes a moment later
        holder.process(first)
    chunks = {key: blobs.get(key) for key in blobs.keys(f"snapshots/{log_id}/")}

    class BeforeTheRoot:  # the taker read the Snapshot entry before the holder set its root
        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        def get_entry(self, *args: object) -> object:
            BeforeTheRoot.get_entry = lambda self, *a: store.get_entry(*a)  # type: ignore[method-assign]
            return snapshot

    class DeletedRightAfterTheClaim:  # the holder's "delete the pending item" lands right after our claim
        def __getattr__(self, name: str) -> object:
            return getattr(pending, name)

        def claim(self, *args: object, **kwargs: object) -> int | None:
            increment = pending.claim(*args, **kwargs)  # type: ignore[arg-type]
            pending.delete(log_id, snapshot.segment, snapshot.num)
            return increment

    queue.send(job)  # a duplicate job
    copy = next(m for m in queue.receive(5) if m.message_id != first.message_id)
    taker = SnapshotWorker(store=BeforeTheRoot(), blobs=blobs,  # type: ignore[arg-type]
                           pending=DeletedRightAfterTheClaim(), queue=queue,  # type: ignore[arg-type]
                           body_of=document.body, clock=lambda: now[0] + 200, takeover_after=60,
                           chunk_cells=7)
    assert Outcome.ALREADY_DONE == taker.process(copy)
    assert chunks == {key: blobs.get(key) for key in blobs.keys(f"snapshots/{log_id}/")}
    report = verify_log(store, log_id, blobs=blobs, pending=pending)
    assert report.ok, report.violations


def test_a_job_that_stalled_after_reading_the_entry_does_not_rebuild_a_completed_snapshot() -> None:
    """Found by the simulator (seed 742): a job read the Snapshot entry (no root yet), stalled; meanwhile another
    job completed the snapshot and deleted its pending item; the stalled job created the item anew, pinned its own
    chunk size and overwrote the completed snapshot's chunk 0."""
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = InMemoryJobQueue(visibility_timeout=30, clock=lambda: 1_000.0)
    log = EventLog(store=store, blobs=blobs, clock=lambda: 1_000.0)
    log_id = log.create()
    for value in range(9):
        log.append(log_id, SetCell(row=value + 1, col=1, value=value))
    snapshot = log.append_snapshot(log_id)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    job = SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num)
    queue.send(job)
    queue.send(job)
    first, stalled = queue.receive(2)
    assert Outcome.COMPLETED == SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue,
                                               body_of=document.body, chunk_cells=4).process(first)
    chunks = {key: blobs.get(key) for key in blobs.keys(f"snapshots/{log_id}/")}

    class ReadBeforeTheRoot:
        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        def get_entry(self, *args: object) -> object:
            ReadBeforeTheRoot.get_entry = lambda self, *a: store.get_entry(*a)  # type: ignore[method-assign]
            return snapshot

    late = SnapshotWorker(store=ReadBeforeTheRoot(), blobs=blobs, pending=pending, queue=queue,  # type: ignore[arg-type]
                          body_of=document.body, chunk_cells=7)
    assert Outcome.ALREADY_DONE == late.process(stalled)
    assert chunks == {key: blobs.get(key) for key in blobs.keys(f"snapshots/{log_id}/")}
    report = verify_log(store, log_id, blobs=blobs, pending=pending, quiescent=True)
    assert report.ok, report.violations


def test_a_stalled_job_creates_no_pending_item_for_a_snapshot_completed_meanwhile() -> None:
    """Found by the simulator (seed 514): the stalled job of the test above created the pending item again and died
    before its next step; the item stayed for ever. The store now refuses the item (its Snapshot entry is complete)."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    pending = InMemoryPendingStore(log_store=store)
    queue = InMemoryJobQueue(visibility_timeout=30, clock=lambda: 1_000.0)
    log = EventLog(store=store, blobs=blobs, clock=lambda: 1_000.0)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    snapshot = log.append_snapshot(log_id)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    job = SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num)
    queue.send(job)
    queue.send(job)
    first, stalled = queue.receive(2)
    assert Outcome.COMPLETED == SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue,
                                               body_of=document.body).process(first)

    class ReadBeforeTheRoot:
        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        def get_entry(self, *args: object) -> object:
            ReadBeforeTheRoot.get_entry = lambda self, *a: store.get_entry(*a)  # type: ignore[method-assign]
            return snapshot

    def die(point: str) -> None:  # it would die right after creating the item, as in the simulator's seed
        if point in ("after_pending_upsert", "after_claim"):
            raise Crash(point)

    late = SnapshotWorker(store=ReadBeforeTheRoot(), blobs=blobs, pending=pending, queue=queue,  # type: ignore[arg-type]
                          body_of=document.body, crash=die)
    assert Outcome.ALREADY_DONE == late.process(stalled)  # refused the item: never reached after_pending_upsert
    assert [] == pending.for_log(log_id)
