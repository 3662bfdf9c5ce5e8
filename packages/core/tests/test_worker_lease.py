"""A builder renews its claim while it reads (issue 34): a claim untouched for the takeover time has no live builder,
whatever the function's timeout, so a dead builder's sheet waits that long at most, and a slow live one is never
taken over for want of a checkpoint."""

from __future__ import annotations

import uuid
from typing import Any

from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.reader import LogReader
from seglog_core.schema import Entry, SetCell, SnapshotJob

TAKEOVER = 15


def _sheet(bodies: int) -> tuple[InMemoryLogStore, InMemoryBlobStore, InMemoryPendingStore, InMemoryJobQueue,
                                 uuid.UUID, Entry, list[float]]:
    now = [1_000.0]
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
    log_id = log.create()
    for row in range(1, bodies + 1):
        log.append(log_id, SetCell(row=row, col=1, value=row))
    snapshot = log.append_snapshot(log_id)
    queue = InMemoryJobQueue(visibility_timeout=30, clock=lambda: now[0])
    queue.send(SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num))
    return store, blobs, pending, queue, log_id, snapshot, now


def _worker(store: Any, blobs: Any, pending: Any, queue: Any, now: list[float], body_of: Any) -> SnapshotWorker:
    return SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue, body_of=body_of,
                          takeover_after=TAKEOVER, chunk_cells=1_000, clock=lambda: now[0])


def test_a_build_that_reads_longer_than_the_takeover_time_renews_its_claim_and_completes() -> None:
    store, blobs, pending, queue, log_id, snapshot, now = _sheet(bodies=12)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    stamps: list[int] = []

    def slow_body(entry: Entry) -> Any:  # a large body from the bucket: 4 s each, 48 s in all
        now[0] += 4
        item = pending.get(log_id, snapshot.segment, snapshot.num)
        assert item is not None and item.active
        stamps.append(item.modified)
        return document.body(entry)

    message, = queue.receive()
    assert Outcome.COMPLETED == _worker(store, blobs, pending, queue, now, slow_body).process(message)
    # Read at each body, the claim was never older than the takeover time: renewed every third of it (5 s).
    ages = [int(1_000 + 4 * (i + 1)) - stamp for i, stamp in enumerate(stamps)]
    assert max(ages) < TAKEOVER and len(set(stamps)) > 3, ages


def test_a_builder_taken_over_while_it_reads_stops_at_its_next_renewal_and_writes_nothing() -> None:
    store, blobs, pending, queue, log_id, snapshot, now = _sheet(bodies=6)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    message, = queue.receive()

    def stalled_body(entry: Entry) -> Any:
        if entry.num == 3:  # stalled here past the takeover time: another builder takes the claim over
            now[0] += TAKEOVER + 1
            item = pending.get(log_id, snapshot.segment, snapshot.num)
            assert item is not None
            assert 2 == pending.claim(log_id, snapshot.segment, snapshot.num, item.claimer or "", now=int(now[0]),
                                      takeover_after=TAKEOVER)
        return document.body(entry)

    assert Outcome.TAKEN_OVER == _worker(store, blobs, pending, queue, now, stalled_body).process(message)
    assert [] == list(blobs.keys(f"snapshots/{log_id}/"))

