"""retention: archives the segments every log no longer keeps, on an EventBridge schedule (DESIGN §3).

EventBridge invokes this function asynchronously with a "Scheduled Event" (AWS Lambda Developer Guide,
with-scheduled-events); nothing in the event matters but its id and time, logged for correlation. Each run
looks only at the logs with a segment due in the Segments table's index Due
(:func:`seglog_core.retention.retain_due`), so a run with nothing due is one Query, however many logs there are;
it works until the function's time is nearly up, leaving room for the slowest segment seen so far twice over, and
what it leaves stays due for the next run. An event ``{"pass": "all"}`` (an invocation by hand) walks every log
instead, from a cursor in the bucket (:func:`~seglog_core.retention.retain_logs`): once RetentionMinAgeSeconds
after upgrading a stack whose segments were closed before the index existed, and after lowering RetentionKeep.
Runs may overlap (EventBridge does not wait for the last one, and Lambda may deliver an event twice,
invocation-async-error-handling): retention is safe to run twice at once.

Configuration (template.yaml): ``SEGLOG_RETENTION_KEEP`` (RetentionKeep) and
``SEGLOG_RETENTION_MIN_AGE_SECONDS`` (RetentionMinAgeSeconds). Segments are always archived, never deleted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from seglog_core.retention import RetentionPolicy, retain_due, retain_logs
from seglog_services import runtime

log = structlog.get_logger("seglog.retention")

#: Seconds kept free at the end of every run, besides twice the slowest step: the cursor write and the reply.
RESERVE_SECONDS: Final = 5.0


class Deadline:
    """``stop()`` for a run: True once the time left is under the reserve plus twice the longest gap between
    two calls so far (one segment's archive, or one log's look), so the step that starts always finishes."""

    def __init__(self, remaining: Callable[[], float], *, reserve: float = RESERVE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.remaining, self.reserve, self.clock = remaining, reserve, clock
        self.slowest = 0.0
        self._last: float | None = None

    def __call__(self) -> bool:
        now = self.clock()
        if self._last is not None:
            self.slowest = max(self.slowest, now - self._last)
        self._last = now
        return self.remaining() < self.reserve + 2 * self.slowest


def policy_from_env(environ: Mapping[str, str] = os.environ) -> RetentionPolicy:
    """The policy the template's variables give (the simulator passes the function's environment)."""
    return RetentionPolicy(keep=int(environ.get("SEGLOG_RETENTION_KEEP", "3")),
                           min_age=float(environ.get("SEGLOG_RETENTION_MIN_AGE_SECONDS", "604800")),
                           archive=True)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # The invocation's deadline also bounds the stores' retries inside a step (runtime.invocation).
    with runtime.invocation("retention", context, event_id=event.get("id"), scheduled_time=event.get("time")):
        backend = runtime.backend()
        policy = policy_from_env()
        started = time.monotonic()
        deadline = Deadline(lambda: runtime.remaining_seconds(context))
        full = event.get("pass") == "all"
        run = (retain_logs if full else retain_due)(backend.store, backend.blobs, policy, stop=deadline)
    summary = {"pass": "all" if full else "due", "logs": run.logs, "segments_archived": run.segments,
               "failed": len(run.failed), "complete": run.complete, "resumed_after": run.resumed_after}
    log.info("retention run", **summary, keep=policy.keep, min_age_seconds=policy.min_age,
             slowest_step_ms=round(deadline.slowest * 1000, 1),
             duration_ms=round((time.monotonic() - started) * 1000, 1))
    return summary
