"""A builder that stalls before a put while another completes its snapshot and retention deletes the segment leaves
nothing behind (seed 9345: a worker paused 45 s before a chunk's put wrote it after the deletion, an object nothing
references, I6). Its chunk's checkpoint fails and its look sees the deletion; its root's R fails on the deleted
entry; a root put before the entries went is found by retention's second look."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.pipeline.fallback import reprocess
from seglog_core.reader import LogReader
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import EntryType, SetCell, SnapshotJob
from seglog_core.verify import verify_log

TAKEOVER = 15
VISIBILITY = 30


class _StallBeforePut:
    """The bucket as the stalled builder sees it: before its first put of a key ending in ``suffix``, ``meanwhile``
    runs (the world goes on while it is paused)."""

    def __init__(self, blobs: InMemoryBlobStore, suffix: str, meanwhile: Any) -> None:
        self._blobs, self._suffix, self._meanwhile, self.fired = blobs, suffix, meanwhile, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._blobs, name)

    def put(self, key: str, data: bytes, **kwargs: Any) -> None:
        if not self.fired and key.startswith("snapshots/") and key.endswith(self._suffix):
            self.fired = True
            self._meanwhile()
        self._blobs.put(key, data, **kwargs)


class _Sheet:
    """A log whose segments close every 6 entries at a snapshot, its jobs run by workers on one queue."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.store, self.blobs, self.pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
        self.queue = InMemoryJobQueue(visibility_timeout=VISIBILITY, clock=lambda: self.now)
        self.log = EventLog(store=self.store, blobs=self.blobs, clock=lambda: self.now, snapshot_every=3,
                            segment_entries=6)
        self.log_id = self.log.create()
        self.document = SheetDocument(reader=LogReader(store=self.store), blobs=self.blobs)
        self.rows = 0

    def worker(self, blobs: Any = None) -> SnapshotWorker:
        return SnapshotWorker(store=self.store, blobs=blobs or self.blobs, pending=self.pending, queue=self.queue,
                              body_of=self.document.body, takeover_after=TAKEOVER, chunk_cells=1_000,
                              clock=lambda: self.now)

    def edit(self, count: int, *, drain: bool = True) -> None:
        for _ in range(count):
            self.rows += 1
            self.log.append(self.log_id, SetCell(row=self.rows, col=1, value=self.rows))
            while drain:
                reprocess(self.store, self.blobs, self.queue, since=0, log_ids=[self.log_id])
                if not self.queue.depth():
                    break
                for message in self.queue.receive(10):
                    self.worker().process(message)
                self.now += VISIBILITY + 1

    def grow(self) -> None:
        """On to a fourth segment, every snapshot complete: segment 0 may then be deleted (two are always kept)."""
        while len(list(self.store.segments(self.log_id))) < 4:
            self.edit(1)

    def objects(self, segment: int) -> list[str]:
        return list(self.blobs.keys(f"snapshots/{self.log_id}/{segment}/"))


@pytest.mark.parametrize("stalls_before", ["chunk", "root"])
def test_a_builder_stalled_before_a_put_leaves_no_object_of_a_segment_retention_deleted(stalls_before: str) -> None:
    sheet = _Sheet()
    sheet.edit(3, drain=False)
    first = next(e for e in sheet.store.entries(sheet.log_id, 0)
                 if e.type is EntryType.SNAPSHOT and e.snapshot_root is None)
    sheet.queue.send(SnapshotJob(log=str(sheet.log_id), segment=first.segment, entry=first.num))

    def meanwhile() -> None:  # paused past the takeover and the visibility timeout: the world goes on
        sheet.now += VISIBILITY + 1
        again, = sheet.queue.receive()
        assert Outcome.COMPLETED == sheet.worker().process(again)
        sheet.grow()
        apply_retention(sheet.store, sheet.blobs, sheet.log_id, RetentionPolicy(keep=2, archive=False))
        assert [] == sheet.objects(0)

    stalled = _StallBeforePut(sheet.blobs, "/root" if stalls_before == "root" else "", meanwhile)
    message, = sheet.queue.receive()
    outcome = sheet.worker(stalled).process(message)
    assert stalled.fired, outcome
    assert outcome in (Outcome.TAKEN_OVER, Outcome.ALREADY_DONE)
    assert [] == sheet.objects(0)
    assert [] == [v for v in verify_log(sheet.store, sheet.log_id, blobs=sheet.blobs, pending=sheet.pending).violations
                  if v.invariant == "I6"]


def test_retention_removes_a_root_put_after_its_listing_and_before_the_entries_went() -> None:
    """The root's window: put after retention listed the segment's objects, its R set before the entries were
    deleted (so the builder saw no failure). Retention's second look, after the entries, deletes it."""
    sheet = _Sheet()
    sheet.grow()
    late = f"snapshots/{sheet.log_id}/0/3/root"
    original = sheet.store.delete_segment
    fired: list[int] = []

    def delete_segment(log: uuid.UUID, segment: int, *args: Any, **kwargs: Any) -> int:
        if segment == 0:
            assert [] == sheet.objects(0)  # retention's first look deleted them
            sheet.blobs.put(late, b"a stalled builder's root")  # after the listing, before the entries go
            fired.append(segment)
        return original(log, segment, *args, **kwargs)

    sheet.store.delete_segment = delete_segment  # type: ignore[method-assign]
    assert 0 in apply_retention(sheet.store, sheet.blobs, sheet.log_id, RetentionPolicy(keep=2, archive=False))
    assert [0] == fired
    assert [] == sheet.objects(0)
