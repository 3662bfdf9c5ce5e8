"""When an application is quiet: what a chaos run waits for after its faults stop, before it checks.

Quiet means, for :data:`QUIET_SECONDS` on end: no child of the emulator has an invocation in flight or an
asynchronous event unfinished (a retry waiting its minute counts: their status files, :mod:`seglog_emulator.child`),
and every queue a function is fed from — the template's queue event sources
and the queues buckets, topics and rules notify (:mod:`seglog_emulator.notifications`) — holds no message, visible,
in flight or delayed (SQS's ApproximateNumberOf... attributes; they are approximate on AWS, exact on the local
stack). The window covers what neither shows: a stream record written but not yet read (a stream poller reads every
second), a batching window, a retry waiting in a poller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from seglog_emulator.child import read_statuses

#: How long everything must have been idle for the app to count as quiet.
QUIET_SECONDS: Final = 3.0
#: What a queue's depth is read from: visible, in flight (received, not deleted), delayed.
DEPTH_ATTRIBUTES: Final = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                           "ApproximateNumberOfMessagesDelayed")


@dataclass(frozen=True)
class Busy:
    """What was still going the last time the app was looked at (empty: nothing)."""

    in_flight: dict[str, int]
    queued: dict[str, int]

    def __bool__(self) -> bool:
        return bool(self.in_flight or self.queued)

    def __str__(self) -> str:
        parts = [f"{name}: {n} in flight" for name, n in sorted(self.in_flight.items())]
        parts += [f"{url.rsplit('/', 1)[-1]}: {n} queued" for url, n in sorted(self.queued.items())]
        return "; ".join(parts) or "nothing"


def busy(state_dir: Path, sqs: Any, queue_urls: Iterable[str]) -> Busy:
    """What the emulator in ``state_dir`` and the app's feeding queues are doing now."""
    in_flight = {str(s.get("child")): int(s.get("in_flight") or 0) + int(s.get("async_unfinished") or 0)
                 for s in read_statuses(state_dir) if s.get("in_flight") or s.get("async_unfinished")}
    queued = {}
    for url in queue_urls:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(DEPTH_ATTRIBUTES))["Attributes"]
        depth = sum(int(attributes.get(name, 0)) for name in DEPTH_ATTRIBUTES)
        if depth:
            queued[url] = depth
    return Busy(in_flight, queued)


def wait_quiet(look: Callable[[], Busy], *, timeout: float, quiet_seconds: float = QUIET_SECONDS,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
               ) -> tuple[float | None, Busy]:
    """Look until the app has been idle ``quiet_seconds`` on end. Returns the seconds it took (None: still busy
    after ``timeout``) and the last look."""
    started = clock()
    idle_since: float | None = None
    last = look()
    while True:
        now = clock()
        if last:
            idle_since = None
        elif idle_since is None:
            idle_since = now
        elif now - idle_since >= quiet_seconds:
            return round(now - started, 2), last
        if now - started >= timeout:
            return None, last
        sleep(0.25)
        last = look()
