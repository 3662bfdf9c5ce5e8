"""The stream router's decision for one new entry (DESIGN §4): enqueue a snapshot job, keep a large body.

Idempotent by construction: a duplicate SendMessage is absorbed by the worker, removing a tag twice is a no-op.

A large body already gone when its record is routed is logged and passed over, not retried: a router that fell
behind ``log retain --delete`` meets entries whose segment (and objects) retention has since deleted, and
raising would hold the shard — every later entry of every log on it — until the record ages out of the stream a
day later (found by the simulator's liveness-under-faults check, seeds 759 and 869 under restart_repeats).
Keeping it cannot bring it back; ``seglog log verify`` reports an acknowledged body that is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from seglog_core.errors import BlobNotFoundError
from seglog_core.ports import BlobStore, JobQueue
from seglog_core.schema import Entry, EntryType, SnapshotJob

log = structlog.get_logger("seglog.router")


@dataclass(frozen=True, kw_only=True)
class RouteAction:
    """What was done for one entry (``gone``: its large body was no longer there to keep)."""

    enqueued: SnapshotJob | None = None
    kept: str | None = None
    gone: str | None = None


def keep_body(blobs: BlobStore, key: str) -> bool:
    """Untag ``key`` so the lifecycle rule never expires it; False when it is already gone (see the module)."""
    try:
        blobs.keep(key)
    except BlobNotFoundError:
        log.warning("large body already gone: nothing to keep", key=key)
        return False
    return True


def route(entry: Entry, *, queue: JobQueue, blobs: BlobStore) -> RouteAction:
    """Act on one inserted entry: Snapshot entries without a root become jobs; external bodies lose the
    discardable tag so the lifecycle rule never expires them."""
    job = None
    if entry.type is EntryType.SNAPSHOT and entry.snapshot_root is None:
        job = SnapshotJob(log=str(entry.log_id), segment=entry.segment, entry=entry.num)
        queue.send(job)
    if entry.external is not None and not keep_body(blobs, entry.external):
        return RouteAction(enqueued=job, gone=entry.external)
    return RouteAction(enqueued=job, kept=entry.external)
