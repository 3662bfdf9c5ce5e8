"""No snapshot job cycles for ever (issue 18): a late job for a segment retention deleted ends as already done, in
the legacy form (the segment's item gone) and the tombstone form (``D`` on the item)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.reader import LogReader
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import PendingSnapshot, Segment, SetCell, SnapshotJob


class Tombstones:
    """The store as retention in the tombstone form leaves it: a deleted segment's item stays, with ``retired``."""

    def __init__(self, store: InMemoryLogStore, deleted: dict[uuid.UUID, list[Segment]]) -> None:
        self._store, self._deleted = store, deleted

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        kept = list(self._store.segments(log_id))
        yield from sorted(self._deleted.get(log_id, []) + kept, key=lambda s: s.num)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _log_with_segments(store: InMemoryLogStore, blobs: InMemoryBlobStore, segments: int) -> uuid.UUID:
    log = EventLog(store=store, blobs=blobs, clock=lambda: 1_000.0)
    log_id = log.create()
    for segment in range(1, segments):
        log.append(log_id, SetCell(row=1, col=1, value=segment))
        log.start_segment(log_id)
        store.complete_snapshot(log_id, segment, 0, "root")  # stands in for the pipeline's build
    return log_id


@pytest.mark.parametrize("form", ["legacy", "tombstone"])
def test_a_late_job_for_a_deleted_segment_ends_as_already_done_and_takes_its_pending_item_along(form: str) -> None:
    """Before: only an archived segment (``A``) counted as retired, so a job for a deleted one raised
    InvalidJobError on every receive, went to the DLQ, and failed again after every redrive."""
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    log_id = _log_with_segments(store, blobs, 4)
    before = {s.num: s for s in store.segments(log_id)}
    deleted = apply_retention(store, blobs, log_id, RetentionPolicy(keep=2, archive=False))
    assert deleted == [0, 1]
    view: Any = store
    if form == "tombstone":
        view = Tombstones(store, {log_id: [msgspec.structs.replace(before[n], retired=2_000) for n in deleted]})
    # A job for segment 1's Snapshot entry, its pending item left by a build that never finished.
    pending.create(PendingSnapshot(log_id=log_id, segment=1, entry=0, created=1_000, modified=1_000))
    queue = InMemoryJobQueue(clock=lambda: 5_000.0)
    queue.send(SnapshotJob(log=str(log_id), segment=1, entry=0))
    worker = SnapshotWorker(store=view, blobs=blobs, pending=pending, queue=queue, clock=lambda: 5_000.0,
                            body_of=SheetDocument(reader=LogReader(store=store), blobs=blobs).body)
    message, = queue.receive()
    assert worker.process(message) is Outcome.ALREADY_DONE
    assert (queue.depth(), pending.get(log_id, 1, 0)) == (0, None)
