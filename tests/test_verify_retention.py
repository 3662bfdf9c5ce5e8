"""verify after retention (DESIGN §3 Retention, §6): archived segments are folded from their archives, deleted
ones start the fold at the oldest retained snapshot, and real violations in either are still reported.

The in-memory tests drive the real worker protocol over the in-memory stores (a fake clock, no sleeps); the stack
test archives segments while the pipeline runs on the local stack.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from pipeline_support import PipelineDriver
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import SnapshotWorker
from seglog_core.pipeline.fallback import RebuildReport, rebuild, reprocess
from seglog_core.ports import BlobStore, LogStore
from seglog_core.reader import LogReader
from seglog_core.retention import RetentionPolicy, apply_retention, archive_key, read_archive
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, PendingSnapshot, Segment, SetCell, SetRange
from seglog_core.snapshot import ChunkRow, decode_chunk, encode_chunk, load_root
from seglog_core.verify import VerifyReport, verify_log
from seglog_stack.local import LocalDeployment

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)


class MemoryPipeline:
    """One log with a segment size policy, its snapshots built by the worker protocol as entries land."""

    def __init__(self, *, edits: int = 40, large_threshold: int = 16 * 1024,
                 stores: tuple[LogStore, BlobStore] | None = None) -> None:
        self.now = 1_000_000.0
        self.store, self.blobs = stores or (InMemoryLogStore(), InMemoryBlobStore())
        self.pending, self.queue = InMemoryPendingStore(), InMemoryJobQueue(clock=lambda: self.now)
        self.document = SheetDocument(reader=LogReader(store=self.store), blobs=self.blobs)
        self.log = EventLog(store=self.store, blobs=self.blobs, retry=FAST, clock=lambda: self.now,
                            snapshot_every=3, segment_entries=6, large_threshold=large_threshold)
        self.worker = SnapshotWorker(store=self.store, blobs=self.blobs, pending=self.pending, queue=self.queue,
                                     body_of=self.document.body, clock=lambda: self.now, chunk_cells=4)
        self.log_id = self.log.create()
        self.acknowledged: list[uuid.UUID] = []
        #: The clock when the queue last ran empty: every entry since was created at or after it.
        self.drained_at = 0.0
        for i in range(edits):
            body = (SetRange(row=i % 7 + 1, col=1, values=[[f"big {i} " + "x" * 60] * 3]) if i % 5 == 4
                    else SetCell(row=i % 7 + 1, col=i % 3 + 1, value=i))
            entry_id = self.log.append(self.log_id, body).entry.entry_id
            assert entry_id is not None
            self.acknowledged.append(entry_id)
            self.drain()
        self.drained_at = 0.0
        self.drain()  # anything a job left incomplete, as the full scan after each edit used to find it

    def drain(self) -> None:
        """What the stream router and the queue would do: a job per incomplete snapshot created since the queue
        last ran empty (the router sees each entry once), run until none is left. Scanning the whole log after
        each edit instead made building a grown log on the local stack cost seconds per test."""
        reprocess(self.store, self.blobs, self.queue, since=self.drained_at, log_ids=[self.log_id])
        for _ in range(200):
            if self.queue.depth() == 0:
                self.drained_at = self.now
                return
            for message in self.queue.receive(10):
                self.worker.process(message)
            self.now += 2  # deferred messages come back
        raise AssertionError("the in-memory pipeline did not drain")

    def verify(self) -> VerifyReport:
        return verify_log(self.store, self.log_id, acknowledged=self.acknowledged, blobs=self.blobs,
                          pending=self.pending, quiescent=True)

    def retained_snapshots(self) -> list[Entry]:
        return [e for s in self.store.segments(self.log_id) if s.archive is None
                for e in self.store.entries(self.log_id, s.num)
                if e.type is EntryType.SNAPSHOT and e.snapshot_root is not None]


@pytest.fixture
def pipeline() -> MemoryPipeline:
    p = MemoryPipeline(large_threshold=128)
    assert len(list(p.store.segments(p.log_id))) >= 5  # enough segments to retire some
    return p


def test_verify_after_archiving_folds_the_archives_and_finds_nothing(pipeline: MemoryPipeline) -> None:
    """A healthy log stays clean after retention: if this fails, verify folds the retained snapshots from an
    empty sheet (false I3), calls archived snapshots' objects orphans (false I6) or archived ids missing (I2)."""
    before = pipeline.verify()
    retired = apply_retention(pipeline.store, pipeline.blobs, pipeline.log_id, RetentionPolicy(keep=2))
    assert [0, 1, 2] == retired[:3]
    after = pipeline.verify()
    assert [] == after.violations
    assert (before.entries, before.snapshots, before.completed) == (after.entries, after.snapshots, after.completed)
    assert sum(len(read_archive(pipeline.blobs, archive_key(pipeline.log_id, s))) for s in retired) == after.archived
    assert ([], []) == (after.unchecked, after.unaccounted)  # the whole history was folded, nothing taken on trust


def test_a_wrong_snapshot_in_a_retained_segment_is_still_reported(pipeline: MemoryPipeline) -> None:
    """Reading archives must not hide a real I3 violation after them: a retained snapshot whose root holds an older
    state than the fold is reported at its own segment and entry."""
    apply_retention(pipeline.store, pipeline.blobs, pipeline.log_id, RetentionPolicy(keep=2))
    older, latest = pipeline.retained_snapshots()[-2:]
    assert older.snapshot_root is not None
    pipeline.store.set_snapshot_root(pipeline.log_id, latest.segment, latest.num, older.snapshot_root)
    i3 = [(v.segment, v.entry) for v in pipeline.verify().violations if v.invariant == "I3"]
    assert [(latest.segment, latest.num)] == i3


def test_a_gap_inside_an_archive_is_reported_as_i1(pipeline: MemoryPipeline) -> None:
    """I1 checks archived segments' shape too: an archive missing an entry is a gap (and its entry id missing)."""
    apply_retention(pipeline.store, pipeline.blobs, pipeline.log_id, RetentionPolicy(keep=2))
    key = archive_key(pipeline.log_id, 1)
    entries = read_archive(pipeline.blobs, key)
    pipeline.blobs.put(key, msgspec.msgpack.encode(entries[:2] + entries[3:]))
    report = pipeline.verify()
    assert ("I1", 1, 3) in [(v.invariant, v.segment, v.entry) for v in report.violations]
    assert f"acknowledged entry id {entries[2].entry_id} is missing" in [v.message for v in report.violations]


def test_a_lost_archive_is_reported_and_the_fold_restarts_after_it(pipeline: MemoryPipeline) -> None:
    """An archive that is gone is an I1 violation; nothing after it is falsely reported (the fold starts again at
    the next completed snapshot) and acknowledged ids that lived in it are unaccounted, not declared missing."""
    apply_retention(pipeline.store, pipeline.blobs, pipeline.log_id, RetentionPolicy(keep=2))
    key = archive_key(pipeline.log_id, 1)
    lost_ids = [e.entry_id for e in read_archive(pipeline.blobs, key) if e.entry_id is not None]
    pipeline.blobs.delete(key)
    report = pipeline.verify()
    assert [("I1", 1)] == [(v.invariant, v.segment) for v in report.violations]
    assert [(2, 0)] == report.unchecked
    assert lost_ids == report.unaccounted


def test_verify_after_deleting_segments_starts_from_the_oldest_retained_snapshot(pipeline: MemoryPipeline) -> None:
    """retain --delete: the history is gone, so the fold starts at the oldest retained snapshot (the one unchecked
    state), deleted ids are unaccounted rather than missing, and the deleted segments' objects went with them."""
    retired = apply_retention(pipeline.store, pipeline.blobs, pipeline.log_id,
                              RetentionPolicy(keep=2, archive=False))
    report = pipeline.verify()
    first = retired[-1] + 1
    assert [] == report.violations
    assert [(first, 0)] == report.unchecked
    kept = {e.entry_id for s in pipeline.store.segments(pipeline.log_id) for e in pipeline.store.entries(
        pipeline.log_id, s.num)}
    assert [i for i in pipeline.acknowledged if i not in kept] == report.unaccounted
    assert [] == [k for s in retired for k in pipeline.blobs.keys(f"snapshots/{pipeline.log_id}/{s}/")]


# ------------------------------------------------------------------------------------------------ local stack


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


@pytest.mark.stack
def test_segments_archived_while_the_pipeline_runs_verify_clean(driver: PipelineDriver) -> None:
    """Retention runs over and over while a writer appends across segments and the worker builds snapshots; once
    the pipeline drains, verify (I1-I6, quiescent, every acknowledged id) finds nothing. If this fails, retention
    broke the pipeline, or verify misjudges a log whose oldest segments live in archives."""
    log_id = driver.create_log()
    log = driver.event_log(snapshot_every=4, segment_entries=8, large_threshold=256)
    acknowledged: list[uuid.UUID] = []
    writing = threading.Event()
    writing.set()
    retired: list[int] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(60):
                body = (SetRange(row=i % 9 + 1, col=1, values=[["y" * 40] * 8]) if i % 10 == 9
                        else SetCell(row=i % 9 + 1, col=i % 4 + 1, value=i))
                entry_id = log.append(log_id, body).entry.entry_id
                assert entry_id is not None
                acknowledged.append(entry_id)
                time.sleep(0.03)  # the worker keeps up, so segments can roll
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)
        finally:
            writing.clear()

    def retain() -> None:
        try:
            while writing.is_set():
                retired.extend(apply_retention(driver.backend.store, driver.backend.blobs, log_id,
                                               RetentionPolicy(keep=2)))
                time.sleep(0.2)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=retain)]
    for t in threads:
        t.start()
    worker = driver.worker()
    while writing.is_set():
        driver.route_new()
        messages = driver.receive(10, visibility=30)
        for message in messages:
            worker.process(message)
        if not messages:
            time.sleep(0.1)
    for t in threads:
        t.join()
    assert [] == errors
    assert retired, "no segment was archived while the writer and the worker ran"
    driver.drain(worker)
    retired += apply_retention(driver.backend.store, driver.backend.blobs, log_id, RetentionPolicy(keep=2))
    b = driver.backend
    report = verify_log(b.store, log_id, acknowledged=acknowledged, blobs=b.blobs, pending=b.pending, quiescent=True)
    assert [] == report.violations
    segments = list(b.store.segments(log_id))
    assert len(segments) >= 4 and retired == [s.num for s in segments if s.archive is not None]
    assert report.archived > 0 and report.completed == report.snapshots


# ------------------------------------------------------------------------------------- every retention pattern
# Issue 18: verify judged only a deleted prefix right, and rebuild folded from an empty sheet past retired
# history, writing the result over completed snapshots. Each pattern is built through apply_retention and the
# store calls, on every backend (memory, the adapters on the simulated services, the local stack).


class RetiringView:
    """The store as a reader sees it while retention works on it, without the store's cooperation: entries of a
    segment below ``hidden[segment]`` already deleted (a run that died half way), and ``tombstones`` in the form
    retention leaves them (the item marked ``D``, only the EndSegment left; seglog_core.retention)."""

    def __init__(self, store: LogStore, *, hidden: dict[int, int] | None = None,
                 tombstones: frozenset[int] = frozenset()) -> None:
        self._store, self._hidden, self._tombstones = store, hidden or {}, tombstones

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        for s in self._store.segments(log_id):
            yield msgspec.structs.replace(s, retired=1_000_000) if s.num in self._tombstones else s

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500) -> Iterator[Entry]:
        for e in self._store.entries(log_id, segment, start, end, page_size=page_size):
            if e.num >= self._hidden.get(segment, 0) and (segment not in self._tombstones
                                                          or e.type is EntryType.END_SEGMENT):
                yield e

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _segment_count(p: MemoryPipeline) -> int:
    return len(list(p.store.segments(p.log_id)))


def _retire(p: MemoryPipeline, *, archive_below: int = 0, delete_below: int = 0) -> None:
    """Archive segments 0..archive_below-1, then delete the next ones up to delete_below-1 (two runs)."""
    if archive_below:
        apply_retention(p.store, p.blobs, p.log_id, RetentionPolicy(keep=_segment_count(p) - archive_below))
    if delete_below:
        apply_retention(p.store, p.blobs, p.log_id,
                        RetentionPolicy(keep=_segment_count(p) - delete_below, archive=False))


def _delete_objects_of(p: MemoryPipeline, segment: int) -> None:
    """What a deleting retention run does first: the segment's snapshot objects and large bodies go."""
    for key in list(p.blobs.keys(f"snapshots/{p.log_id}/{segment}/")):
        p.blobs.delete(key)
    for e in p.store.entries(p.log_id, segment):
        if e.external is not None:
            p.blobs.delete(e.external)


def _half_deleted(p: MemoryPipeline, segment: int, *, archived: bool) -> RetiringView:
    """Segment ``segment`` as a retention run that died half way leaves it: its archive written (an archiving run)
    or its objects deleted (a deleting run), then its first entries deleted, and no mark on its item yet."""
    entries = list(p.store.entries(p.log_id, segment))
    if archived:
        p.blobs.put(archive_key(p.log_id, segment), msgspec.msgpack.encode(entries))
    else:
        _delete_objects_of(p, segment)
    return RetiringView(p.store, hidden={segment: len(entries) // 2})


def _ids(p: MemoryPipeline, store: LogStore, segments: range) -> list[uuid.UUID]:
    return [e.entry_id for s in segments for e in store.entries(p.log_id, s) if e.entry_id is not None]


@pytest.fixture
def grown(stores: tuple[LogStore, BlobStore]) -> MemoryPipeline:
    """A log of at least seven segments on each backend, every snapshot complete."""
    p = MemoryPipeline(edits=56, large_threshold=128, stores=stores)
    assert _segment_count(p) >= 7
    return p


def test_verify_after_archiving_older_and_deleting_later_segments_is_clean(grown: MemoryPipeline) -> None:
    """Archived 0-1, deleted 2-3, live 4..: the issue's 11 false violations (I1 "segment 1 is followed by 4", I2
    ids of 2-3 missing, I3 the fold skipping the gap). The fold restarts after the gap; the archives still fold."""
    deleted = _ids(grown, grown.store, range(2, 4))
    _retire(grown, archive_below=2, delete_below=4)
    report = grown.verify()
    assert [] == report.violations
    assert [(4, 0)] == report.unchecked
    assert deleted == report.unaccounted
    assert report.archived > 0


def test_a_wrong_snapshot_after_a_gap_is_still_reported(grown: MemoryPipeline) -> None:
    """Where the fold is known again after the gap (from the oldest retained snapshot on), a snapshot whose state
    differs from it is I3."""
    _retire(grown, archive_below=2, delete_below=4)
    older, latest = grown.retained_snapshots()[-2:]
    assert older.snapshot_root is not None
    grown.store.set_snapshot_root(grown.log_id, latest.segment, latest.num, older.snapshot_root)
    assert [(latest.segment, latest.num)] == [(v.segment, v.entry) for v in grown.verify().violations
                                               if v.invariant == "I3"]


def test_a_missing_segment_after_a_live_one_is_still_i1(grown: MemoryPipeline) -> None:
    """Retention retires oldest first: a segment gone between two live ones (a missing num, or a tombstone) is a
    loss, not retention."""
    grown.store.delete_segment(grown.log_id, 2)
    report = grown.verify()
    assert [v.segment for v in report.violations if v.invariant == "I1"] in ([2], [3])


def test_verify_judges_a_half_done_archive_by_its_archive(grown: MemoryPipeline) -> None:
    """An archiving run died after writing segment 1's archive and deleting part of its entries (retention's
    completeness rule: the archive holds the whole segment): verify folds the archive, nothing is missing."""
    _retire(grown, archive_below=1)
    view = _half_deleted(grown, 1, archived=True)
    report = verify_log(view, grown.log_id, acknowledged=grown.acknowledged, blobs=grown.blobs,
                        pending=grown.pending, quiescent=True)
    assert [] == report.violations
    assert ([], [], []) == (report.unchecked, report.unaccounted, report.retiring)


def test_verify_lists_a_half_done_deletion_as_retiring(grown: MemoryPipeline) -> None:
    """A deleting run died half way through segment 2 (objects gone, first entries gone, no mark): no violation;
    the segment is listed as retiring, its lost ids unaccounted, the fold restarts after it."""
    _retire(grown, delete_below=2)
    gone = _ids(grown, grown.store, range(2, 3))[:3]
    view = _half_deleted(grown, 2, archived=False)
    report = verify_log(view, grown.log_id, acknowledged=grown.acknowledged, blobs=grown.blobs,
                        pending=grown.pending, quiescent=True)
    assert [] == report.violations
    assert [2] == report.retiring
    assert [(3, 0)] == report.unchecked
    assert set(gone) <= set(report.unaccounted)


def test_verify_accepts_tombstones(grown: MemoryPipeline) -> None:
    """The tombstone form (item marked D, its EndSegment kept) of deleted segments 2-3 after archived 0-1."""
    for segment in (2, 3):
        _delete_objects_of(grown, segment)
    view = RetiringView(grown.store, tombstones=frozenset({2, 3}))
    _retire(grown, archive_below=2)
    report = verify_log(view, grown.log_id, acknowledged=grown.acknowledged, blobs=grown.blobs,
                        pending=grown.pending, quiescent=True)
    assert [] == report.violations
    assert [(4, 0)] == report.unchecked


# ------------------------------------------------------------------------------------------------ rebuild


def _objects(p: MemoryPipeline) -> dict[str, bytes]:
    return {key: p.blobs.get(key) for key in p.blobs.keys(f"snapshots/{p.log_id}/")}


def _rebuild(p: MemoryPipeline, store: LogStore | None = None, *, chunk_cells: int = 4,
             blobs: BlobStore | None = None) -> RebuildReport:
    return rebuild(store or p.store, blobs or p.blobs, p.pending, p.log_id, body_of=p.document.body,
                   chunk_cells=chunk_cells, clock=lambda: p.now, takeover_after=60)


RETENTION_PATTERNS = {
    "deleted prefix": {"delete_below": 3},
    "archived then deleted (a gap)": {"archive_below": 2, "delete_below": 4},
    "archived prefix": {"archive_below": 3},
}


@pytest.mark.parametrize("pattern", RETENTION_PATTERNS)
def test_rebuild_after_retention_rewrites_no_completed_snapshot(grown: MemoryPipeline, pattern: str) -> None:
    """rebuild after `log retain --delete` folded from an empty sheet at the first remaining segment (after a gap:
    past it) and wrote that over every completed snapshot under the same keys, losing the deleted history for
    loads too. Now every stored object is left byte for byte, the fold starts at the oldest retained snapshot
    where history is gone, and verify still finds nothing."""
    _retire(grown, **RETENTION_PATTERNS[pattern])
    before = _objects(grown)
    report = _rebuild(grown)
    assert before == _objects(grown)
    assert ([], [], [], []) == (report.completed, report.restored, report.refused, report.unbuildable)
    first = _segment_count(grown) and min(s.num for s in grown.store.segments(grown.log_id)
                                          if s.archive is None and s.retired is None)
    assert ([] if pattern == "archived prefix" else [(first, 0)]) == report.started_from
    assert [] == grown.verify().violations


def test_rebuild_across_tombstones_and_a_half_done_deletion_writes_nothing(grown: MemoryPipeline) -> None:
    """Tombstones of 0-1 and segment 2 half deleted by a run that died: rebuild starts at 3/0 and writes nothing."""
    for segment in (0, 1):
        _delete_objects_of(grown, segment)
    entries = list(grown.store.entries(grown.log_id, 2))
    _delete_objects_of(grown, 2)
    view = RetiringView(grown.store, hidden={2: len(entries) // 2}, tombstones=frozenset({0, 1}))
    before = _objects(grown)
    report = _rebuild(grown, view)  # type: ignore[arg-type]
    assert before == _objects(grown)
    assert [(3, 0)] == report.started_from
    assert [0, 1, 2] == report.gone
    assert report.ok


def test_rebuild_restores_lost_objects_with_the_state_they_were_completed_with(grown: MemoryPipeline) -> None:
    """The bucket lost every snapshot object (retention kept the archives): rebuild folds from the log's creation
    through the archives and writes each snapshot again, byte for byte what the worker wrote."""
    _retire(grown, archive_below=2)
    before = _objects(grown)
    for key in before:
        grown.blobs.delete(key)
    report = _rebuild(grown)
    assert before == _objects(grown)
    assert len(report.restored) == report.snapshots > 0
    assert [] == grown.verify().violations


class _RetainDuring:
    """The bucket as rebuild sees it while ``seglog log retain --delete`` of segment 0 runs beside it: the
    deletion runs whole just before rebuild's first ``call`` (get or put) of an object of segment 0's snapshots."""

    def __init__(self, p: MemoryPipeline, call: str, segment: int = 0) -> None:
        self._p, self._call, self._segment, self.fired = p, call, segment, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._p.blobs, name)

    def _maybe_retain(self, call: str, key: str) -> None:
        if call == self._call and not self.fired and key.startswith(f"snapshots/{self._p.log_id}/{self._segment}/"):
            self.fired = True
            apply_retention(self._p.store, self._p.blobs, self._p.log_id,
                            RetentionPolicy(keep=_segment_count(self._p) - 1 - self._segment, archive=False))

    def get(self, key: str) -> bytes:
        self._maybe_retain("get", key)
        return self._p.blobs.get(key)

    def put(self, key: str, data: bytes, **kwargs: Any) -> None:
        self._maybe_retain("put", key)
        self._p.blobs.put(key, data, **kwargs)


@pytest.mark.parametrize("call", ["get", "put"])
def test_rebuild_writes_no_snapshot_of_a_segment_retention_deletes_meanwhile(grown: MemoryPipeline,
                                                                             call: str) -> None:
    """Seed 801: rebuild read segment 0's entries, then a `log retain --delete` deleted the segment's objects and
    entries, and rebuild found the snapshot's root gone and "restored" it: objects nothing references (I6).
    Whether the deletion comes before rebuild reads the root (get) or while it writes it again (put: the run's
    listing may precede our puts), no object of the deleted segment is left."""
    first = [e for e in grown.store.entries(grown.log_id, 0)
             if e.type is EntryType.SNAPSHOT and e.snapshot_root not in (None, "empty")]
    assert first, "segment 0 holds a completed snapshot"
    if call == "put":  # the bucket lost segment 0's snapshot objects: rebuild writes them again
        for key in list(grown.blobs.keys(f"snapshots/{grown.log_id}/0/")):
            grown.blobs.delete(key)
    during = _RetainDuring(grown, call)
    report = _rebuild(grown, blobs=during)  # type: ignore[arg-type]
    assert during.fired
    assert [] == list(grown.blobs.keys(f"snapshots/{grown.log_id}/0/"))
    assert 0 in report.gone and not any(at[0] == 0 for at in report.restored)
    assert [] == [v for v in grown.verify().violations if v.invariant == "I6"]


def test_rebuild_past_deleted_history_does_not_refuse_a_snapshot_retention_deletes_meanwhile(
        grown: MemoryPipeline) -> None:
    """Seed 1716: segment 0 deleted, so rebuild starts the fold at segment 1's first readable snapshot; a deletion
    of segment 1 while it reads that snapshot made it unreadable, and rebuild refused it as a wrong snapshot. A
    segment being deleted is gone history, not a refusal."""
    _retire(grown, delete_below=1)
    during = _RetainDuring(grown, "get", segment=1)
    report = _rebuild(grown, blobs=during)  # type: ignore[arg-type]
    assert during.fired
    assert ([], True) == (report.refused, 1 in report.gone)
    assert [] == list(grown.blobs.keys(f"snapshots/{grown.log_id}/1/"))


def test_rebuild_refuses_to_write_over_a_snapshot_that_differs_from_the_fold(grown: MemoryPipeline) -> None:
    """A completed snapshot whose stored state is not the fold's is reported and left as it is (never given
    another state under its keys); the fold is unknown after it, so the next one is taken as stored."""
    first, *_ = snapshots = [e for e in grown.retained_snapshots() if e.snapshot_root not in (None, "empty")]
    assert first.snapshot_root is not None and len(snapshots) > 2
    root = load_root(grown.blobs, first.snapshot_root)
    assert root is not None
    ref = root.chunks[0]
    chunk = decode_chunk(grown.blobs.get(ref.key))
    row = chunk.rows[0]
    tampered = [ChunkRow(row=row.row, cells=[(row.cells[0][0], "tampered"), *row.cells[1:]]), *chunk.rows[1:]]
    grown.blobs.put(ref.key, encode_chunk(tampered))
    before = _objects(grown)
    report = _rebuild(grown)
    assert before == _objects(grown)
    assert [(first.segment, first.num)] == [(s, n) for s, n, _ in report.refused]
    assert [(snapshots[1].segment, snapshots[1].num)] == report.started_from


def test_rebuild_never_builds_from_empty_past_retired_history(grown: MemoryPipeline) -> None:
    """History deleted and the retained snapshots' objects lost: the incomplete snapshot at the end cannot be
    built (it would be built from an empty sheet); it is reported, nothing is written, it stays incomplete."""
    _retire(grown, delete_below=3)
    for key in list(grown.blobs.keys(f"snapshots/{grown.log_id}/")):
        grown.blobs.delete(key)
    grown.log.append(grown.log_id, SetCell(row=1, col=1, value="late"))
    tail = grown.log.append_snapshot(grown.log_id)
    report = _rebuild(grown)
    assert [] == list(grown.blobs.keys(f"snapshots/{grown.log_id}/"))
    assert (tail.segment, tail.num) in report.unbuildable
    stored = grown.store.get_entry(grown.log_id, tail.segment, tail.num)
    assert stored is not None and stored.snapshot_root is None


def test_rebuild_cuts_a_build_in_progress_as_its_first_claim_pinned(grown: MemoryPipeline) -> None:
    """A worker claimed the last snapshot with chunk_cells=2 and went quiet for longer than the takeover timeout:
    rebuild (asked for 50) takes the stale claim over and cuts the same chunks the worker's claim pinned, so both
    write the same bytes under each key."""
    grown.log.append(grown.log_id, SetRange(row=1, col=1, values=[["a", "b", "c"], ["d", "e", "f"]]))
    tail = grown.log.append_snapshot(grown.log_id)
    pinned = msgspec.msgpack.encode({"next_chunk": 0, "chunk_cells": 2})
    grown.pending.create(PendingSnapshot(log_id=grown.log_id, segment=tail.segment, entry=tail.num,
                                         created=0, modified=0, claimer="m1"))
    assert grown.pending.claim(grown.log_id, tail.segment, tail.num, "m1", now=0, takeover_after=60,
                               initial_state=pinned) is not None
    report = _rebuild(grown, chunk_cells=50)
    assert [(tail.segment, tail.num)] == report.completed
    stored = grown.store.get_entry(grown.log_id, tail.segment, tail.num)
    assert stored is not None and stored.snapshot_root is not None
    root = load_root(grown.blobs, stored.snapshot_root)
    assert root is not None and len(root.chunks) > 1 and all(ref.cells <= 3 for ref in root.chunks)
    assert [] == grown.verify().violations


def test_reprocess_sends_no_job_into_a_segment_being_deleted(grown: MemoryPipeline) -> None:
    """A deleting run died in segment 2 (its bodies and objects gone, half its entries left): reprocess neither
    touches its bodies (they are gone: it failed on them) nor enqueues anything there."""
    _retire(grown, delete_below=2)
    view = _half_deleted(grown, 2, archived=False)
    report = reprocess(view, grown.blobs, grown.queue, since=0, log_ids=[grown.log_id])  # type: ignore[arg-type]
    assert [] == [s for _, s, _ in report.enqueued if s <= 2]
    assert not [k for k in report.kept if k in {e.external for e in grown.store.entries(grown.log_id, 2)}]


def test_a_tombstone_after_a_live_segment_is_i1(grown: MemoryPipeline) -> None:
    """A segment marked deleted while an older one is live: retention never does that, its entries are lost."""
    view = RetiringView(grown.store, tombstones=frozenset({2}))
    report = verify_log(view, grown.log_id, blobs=grown.blobs)
    assert [("I1", 2)] == [(v.invariant, v.segment) for v in report.violations if v.invariant == "I1"]


class _WorkerClaimsMidRebuild:
    """The bucket as rebuild sees it in seed 79: once rebuild has written the root under ``prefix``, the job holding
    that snapshot's pending item claims it and builds it to completion, with its own chunk size."""

    def __init__(self, p: MemoryPipeline, prefix: str) -> None:
        self._p, self._root, self.worked = p, f"{prefix}root", False
        (self.message,) = p.queue.receive(1)

    def work(self) -> None:
        if not self.worked:
            self.worked = True
            self._p.worker.process(self.message)

    def put(self, key: str, data: bytes, *, discardable: bool = False) -> None:
        self._p.blobs.put(key, data, discardable=discardable)
        if key == self._root:
            self.work()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._p.blobs, name)


def test_rebuild_leaves_a_snapshot_whose_job_holds_a_live_claim_to_that_job(grown: MemoryPipeline) -> None:
    """Seed 79 (Scenario(rebuild=True)): the tail snapshot's job had created its pending item and was waiting for
    its turn (no checkpoint yet, so nothing pinned) when rebuild came by and cut it with its own chunk size; the job
    then claimed it and cut it with another, under the same chunk keys. The last root written kept one cut's chunks
    and orphaned the other's (I6), or referenced a chunk the other cut overwrote (I3). Rebuild now takes part in the
    claim: a live claim of another builder is left to it, and so is every incomplete snapshot after it."""
    grown.log.append(grown.log_id, SetRange(row=1, col=1, values=[[f"{r}{c}" for c in "abc"] for r in range(6)]))
    tail = grown.log.append_snapshot(grown.log_id)
    later = grown.log.append_snapshot(grown.log_id)
    reprocess(grown.store, grown.blobs, grown.queue, since=0, log_ids=[grown.log_id])
    bucket = _WorkerClaimsMidRebuild(grown, f"snapshots/{grown.log_id}/{tail.segment}/{tail.num}/")
    grown.pending.create(PendingSnapshot(log_id=grown.log_id, segment=tail.segment, entry=tail.num,
                                         created=int(grown.now), modified=int(grown.now),
                                         claimer=bucket.message.message_id))  # its step 2, then it deferred
    report = _rebuild(grown, chunk_cells=2, blobs=bucket)  # type: ignore[arg-type]
    bucket.work()  # the job's next receive, if rebuild wrote nothing there
    grown.drain()
    assert [] == grown.verify().violations
    assert [(tail.segment, tail.num), (later.segment, later.num)] == report.left
    assert [] == report.completed
