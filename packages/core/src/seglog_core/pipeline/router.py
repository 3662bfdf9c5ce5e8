"""The stream router's decision for one new entry (DESIGN §4): enqueue a snapshot job, keep a large body.

Idempotent by construction: a duplicate SendMessage is absorbed by the worker, removing a tag twice is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_core.ports import BlobStore, JobQueue
from seglog_core.schema import Entry, EntryType, SnapshotJob


@dataclass(frozen=True, kw_only=True)
class RouteAction:
    """What was done for one entry."""

    enqueued: SnapshotJob | None = None
    kept: str | None = None


def route(entry: Entry, *, queue: JobQueue, blobs: BlobStore) -> RouteAction:
    """Act on one inserted entry: Snapshot entries without a root become jobs; external bodies lose the
    discardable tag so the lifecycle rule never expires them."""
    job = None
    if entry.type is EntryType.SNAPSHOT and entry.snapshot_root is None:
        job = SnapshotJob(log=str(entry.log_id), segment=entry.segment, entry=entry.num)
        queue.send(job)
    if entry.external is not None:
        blobs.keep(entry.external)
    return RouteAction(enqueued=job, kept=entry.external)
