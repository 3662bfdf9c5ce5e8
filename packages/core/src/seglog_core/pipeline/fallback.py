"""Manual fallbacks (seed 001 "Manual Fallback", DESIGN §5): reprocess from a date, rebuild from the log.

Both are safe while the pipeline runs: reprocess only adds jobs (duplicates are absorbed by the worker) and
removes the discardable tag only from bodies an entry references; rebuild writes the same deterministic
chunk keys and bytes the worker writes (with the same chunk size) and completes snapshots in log order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import structlog

from seglog_core.ports import BlobStore, JobQueue, LogStore, PendingStore
from seglog_core.retention import read_archive
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Body, Entry, EntryType, SnapshotJob
from seglog_core.snapshot import DEFAULT_CHUNK_CELLS, build, stray_keys

log = structlog.get_logger("seglog.fallback")


@dataclass(kw_only=True)
class ReprocessReport:
    logs: int = 0
    entries: int = 0
    enqueued: list[tuple[str, int, int]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _entries_since(store: LogStore, log_id: uuid.UUID, since: float) -> Iterator[Entry]:
    segments = [s for s in store.segments(log_id) if s.archive is None]
    for index, segment in enumerate(segments):
        following = segments[index + 1] if index + 1 < len(segments) else None
        if following is not None and following.created < since:
            continue  # every entry of this segment predates the next segment's creation
        for entry in store.entries(log_id, segment.num):
            if entry.created >= since:
                yield entry


def reprocess(store: LogStore, blobs: BlobStore, queue: JobQueue, *, since: float,
              log_ids: list[uuid.UUID] | None = None) -> ReprocessReport:
    """Re-enqueue every incomplete Snapshot entry created at or after ``since`` and untag every large body
    such an entry references (what the stream router would have done)."""
    report = ReprocessReport()
    for log_id in log_ids if log_ids is not None else store.log_ids():
        report.logs += 1
        for entry in _entries_since(store, log_id, since):
            report.entries += 1
            if entry.type is EntryType.SNAPSHOT and entry.snapshot_root is None:
                queue.send(SnapshotJob(log=str(log_id), segment=entry.segment, entry=entry.num))
                report.enqueued.append((str(log_id), entry.segment, entry.num))
            if entry.external is not None and blobs.is_discardable(entry.external):
                blobs.keep(entry.external)
                report.kept.append(entry.external)
    log.info("reprocessed", logs=report.logs, enqueued=len(report.enqueued), kept=len(report.kept))
    return report


@dataclass(kw_only=True)
class RebuildReport:
    snapshots: int = 0
    completed: list[tuple[int, int]] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)


def rebuild(store: LogStore, blobs: BlobStore, pending: PendingStore, log_id: uuid.UUID, *,
            body_of: Callable[[Entry], Body], chunk_cells: int = DEFAULT_CHUNK_CELLS) -> RebuildReport:
    """Recreate every snapshot of a log from the log itself, in order, completing those not yet complete.

    Archived segments are read from their archives. Objects under a snapshot's prefix that its rebuilt root
    does not reference (a build with another chunk size) are reported, not deleted: a worker may be using them.
    """
    report = RebuildReport()
    previous = EMPTY_SNAPSHOT_ROOT
    bodies: list[Body] = []
    for segment in list(store.segments(log_id)):
        entries = read_archive(blobs, segment.archive) if segment.archive else store.entries(log_id, segment.num)
        for entry in entries:
            if entry.type is EntryType.END_SEGMENT:
                continue
            if entry.type is not EntryType.SNAPSHOT:
                bodies.append(body_of(entry))
                continue
            if (entry.segment, entry.num) == (0, 0):
                continue  # the empty document, complete at creation
            root = build(blobs, log_id, entry.segment, entry.num, previous, bodies, chunk_cells=chunk_cells)
            report.snapshots += 1
            if entry.snapshot_root is None:
                store.set_snapshot_root(log_id, entry.segment, entry.num, root)
                store.advance_snapshot(log_id, entry.segment, entry.num)
                pending.delete(log_id, entry.segment, entry.num)
                report.completed.append((entry.segment, entry.num))
            report.strays += stray_keys(blobs, root)
            previous, bodies = root, []
    log.info("rebuilt", log_id=str(log_id), snapshots=report.snapshots, completed=len(report.completed))
    return report
