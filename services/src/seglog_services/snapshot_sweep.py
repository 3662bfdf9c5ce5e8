"""snapshot_sweep: on an EventBridge schedule, sends a new job for every snapshot whose job is parked (DESIGN §5).

Why: a snapshot deferred or blocked on every receive reaches the DLQ after maxReceiveCount receives (43 hours at
the template's 50: seglog_core.pipeline.Backoff), and then nothing builds it — not even newer code deployed
afterwards — until an operator runs `seglog redrive`. The pending item outlives its job, so the sweep reads the
pending items and resumes what has no live job.

When an item has no live job: while a message for a snapshot lives, every receive that claims it, defers it or
finds it blocked touches its item (M = now), and the message hides at most ``Backoff.longest`` (3 h) after a
deferral, or the queue's visibility timeout after a failed receive. An item untouched for longer than the sum
(:func:`idle_after`) has no live claimer: its message is in the DLQ or lost. A duplicate job left alive does not
touch M, but it takes the stale claim over at its next receive, which does.

What the sweep's job does (the worker's step 2): a new messageId; the claim is long stale, so it takes it over at
once and builds with the code deployed now. If that code still cannot read the snapshot, the job is blocked again
and, a maxReceiveCount later, parked again: at most one live job per item at any time, never a growing pile. A
blocked snapshot whose message still lives needs no sweep: its next receive, within 3 hours, runs the newer code.
The DLQ's copies stay for an operator to read; a later redrive of them makes duplicates the worker absorbs.

EventBridge may invoke twice or overlap runs (Lambda Developer Guide, invocation-async-error-handling): two
sweeps send two jobs for one item, a duplicate the worker absorbs. Configuration (template.yaml):
``SEGLOG_QUEUE_VISIBILITY_SECONDS`` (SnapshotQueueVisibilityTimeout).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from seglog_core.pipeline import Backoff
from seglog_core.ports import JobQueue, PendingStore
from seglog_core.schema import SnapshotJob
from seglog_services import runtime
from seglog_services.retention import Deadline

log = structlog.get_logger("seglog.snapshot_sweep")


def idle_after(visibility_timeout: int, backoff: Backoff | None = None) -> int:
    """Seconds after which a pending item untouched has no live job: the longest hide a live job can be in, after a
    deferral or after a failed receive, plus a minute for the receive itself."""
    backoff = backoff or Backoff()
    return int(max(backoff.longest, visibility_timeout)) + 60


@dataclass
class SweepRun:
    """What one sweep did: items read, jobs sent (one per idle item), and whether it read every item."""

    items: int = 0
    sent: list[tuple[str, int, int]] = field(default_factory=list)
    complete: bool = True


def sweep(pending: PendingStore, queue: JobQueue, *, now: float, idle: int,
          stop: Callable[[], bool] = lambda: False) -> SweepRun:
    """Send a job for every pending item untouched for more than ``idle`` seconds; ``stop`` ends the pass early
    (the next run reads every item again, so nothing is skipped for long)."""
    run = SweepRun()
    for item in pending.scan():
        if stop():
            run.complete = False
            break
        run.items += 1
        if now - item.modified <= idle:
            continue
        queue.send(SnapshotJob(log=str(item.log_id), segment=item.segment, entry=item.entry))
        run.sent.append((str(item.log_id), item.segment, item.entry))
        log.warning("snapshot job resent: its job was parked", log_id=str(item.log_id), segment=item.segment,
                    entry=item.entry, idle_seconds=int(now - item.modified), blocked=item.blocked,
                    retries=item.retries)
    return run


def handler(event: dict[str, Any], context: Any, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    with runtime.invocation("snapshot_sweep", context, event_id=event.get("id"), scheduled_time=event.get("time")):
        backend = runtime.backend()
        idle = idle_after(int(environ.get("SEGLOG_QUEUE_VISIBILITY_SECONDS", "360")))
        deadline = Deadline(lambda: runtime.remaining_seconds(context))
        run = sweep(backend.pending, backend.queue, now=time.time(), idle=idle, stop=deadline)
    summary = {"items": run.items, "resent": len(run.sent), "complete": run.complete}
    log.info("snapshot sweep", **summary, idle_after_seconds=idle)
    return summary
