"""SnapshotWatcher: when each Snapshot entry appeared and when it completed, seen from outside the pipeline.

It polls the log as a client would (new entries after the last one seen, then each incomplete Snapshot
entry's ``R``), every ``interval`` seconds, so a latency it reports is accurate to about one interval. Latency
is "Snapshot entry committed -> snapshot complete" (issue 4, point 8), both as observed by the watcher.
Also answers whether the pipeline is quiescent for a set of logs (DESIGN §6 I5).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from seglog_aws.backend import Backend
from seglog_core.schema import EntryType
from seglog_core.violations import Violation
from seglog_plugin.chaos.loop import Loop
from seglog_report.model import Series


@dataclass(frozen=True)
class SnapshotLife:
    """A Snapshot entry from when the watcher first saw it to when it saw it complete (Unix time; None: never)."""

    log_id: uuid.UUID
    segment: int
    entry: int
    appeared: float
    completed: float | None


@dataclass
class _Seen:
    appeared: float
    #: A time by which it was complete (taken after the read that found it so).
    completed: float | None = None
    #: The latest time at which it was surely still incomplete (taken before the read that found it so).
    incomplete_at: float | None = None


@dataclass
class SnapshotWatcher:
    """Watches ``log_ids`` in ``backend`` until :meth:`stop`."""

    backend: Backend
    log_ids: list[uuid.UUID]
    interval: float = 0.1
    _seen: dict[tuple[uuid.UUID, int, int], _Seen] = field(default_factory=dict)
    _next: dict[uuid.UUID, tuple[int, int]] = field(default_factory=dict)
    _loop: Loop | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> SnapshotWatcher:
        self._loop = Loop(self.poll, interval=self.interval, name="snapshot-watcher")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()

    def poll(self) -> None:
        """Read what is new; safe to call from any thread."""
        with self._lock:
            self._poll()

    def _poll(self) -> None:
        store = self.backend.store
        now = time.monotonic()
        for log_id in self.log_ids:
            segment, start = self._next.get(log_id, (0, 0))
            segments = [s.num for s in store.latest_segments(log_id, limit=2)]
            for seg in sorted(n for n in segments if n >= segment):
                begin = start if seg == segment else 0
                for entry in store.entries(log_id, seg, begin):
                    if entry.type is EntryType.SNAPSHOT:
                        key = (log_id, entry.segment, entry.num)
                        seen = self._seen.setdefault(key, _Seen(appeared=now))
                        if entry.snapshot_root is None:
                            seen.incomplete_at = now  # read after ``now``: incomplete then, so also at ``now``
                        elif seen.completed is None:
                            seen.completed = time.monotonic()
                    self._next[log_id] = (entry.segment, entry.num + 1)
            for (lid, seg, num), seen in self._seen.items():
                if lid == log_id and seen.completed is None:
                    before = time.monotonic()
                    found = store.get_entry(lid, seg, num)
                    if found is not None and found.snapshot_root is not None:
                        seen.completed = time.monotonic()
                    else:
                        seen.incomplete_at = before

    # ------------------------------------------------------------------------------------------ results

    def latencies(self, *, skip_first: bool = True) -> list[float]:
        """Seconds from appearance to completion of every completed Snapshot entry (the one each log is
        born with, complete at birth, is left out)."""
        with self._lock:
            return sorted(s.completed - s.appeared for (_, seg, num), s in self._seen.items()
                          if s.completed is not None and not (skip_first and seg == 0 and num == 0))

    def order_violations(self) -> list[Violation]:
        """DESIGN §6 I4 "no snapshot completes before its predecessor", as observed: a Snapshot entry seen
        complete at a time when an earlier one of the same log was surely still incomplete. (The final state
        cannot show this — both end up complete — so it is checked while the run goes.)"""
        found = []
        with self._lock:
            items = sorted(self._seen.items())
        for (log_id, seg, num), early in items:
            if early.incomplete_at is None:
                continue
            for (other, seg2, num2), late in items:
                if other == log_id and (seg2, num2) > (seg, num) and late.completed is not None \
                        and late.completed < early.incomplete_at:
                    found.append(Violation(invariant="I4", log_id=str(log_id), segment=seg2, entry=num2,
                                           message=f"snapshot {seg2}/{num2} was complete while {seg}/{num} was "
                                                   "not yet"))
        return found

    def lives(self, *, skip_first: bool = True) -> list[SnapshotLife]:
        """Every Snapshot entry seen, on the wall clock."""
        offset = time.time() - time.monotonic()
        with self._lock:
            return [SnapshotLife(log_id=lid, segment=seg, entry=num, appeared=s.appeared + offset,
                                 completed=None if s.completed is None else s.completed + offset)
                    for (lid, seg, num), s in sorted(self._seen.items())
                    if not (skip_first and seg == 0 and num == 0)]

    def incomplete(self) -> list[tuple[uuid.UUID, int, int]]:
        with self._lock:
            return sorted(k for k, s in self._seen.items() if s.completed is None)


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between closest ranks, None for no values (the
    benchmarks use the same)."""
    ordered = sorted(values)
    if not ordered:
        return None
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def queue_depth(backend: Backend, queue_url: str) -> int:
    """Messages in the queue, visible or in flight (SQS ApproximateNumberOfMessages + ...NotVisible)."""
    attributes: dict[str, Any] = backend.sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                            "ApproximateNumberOfMessagesDelayed"])["Attributes"]
    return sum(int(v) for v in attributes.values())


@dataclass
class QueueDepths:
    """Queues' depths over a run (:func:`queue_depth`), for the report's time series: :meth:`sample` is called
    from a loop that runs anyway (the runner's monitor, four times a second) and reads the queues when ``every``
    seconds have passed since it last did, so sampling adds no loop and no wait of its own.

    Args:
        backend: where the queues are.
        queues: series name -> queue URL.
        every: seconds between samples.
        clock: Unix time (a seam for tests).
    """

    backend: Backend
    queues: dict[str, str]
    every: float = 0.5
    clock: Callable[[], float] = time.time
    _points: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    _last: float = -math.inf
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self) -> None:
        now = self.clock()
        if now - self._last < self.every:
            return
        self._last = now
        for name, url in self.queues.items():
            try:
                depth = queue_depth(self.backend, url)
            except Exception:  # a throttled or refused read (the stack going down at the end): a gap
                continue
            with self._lock:
                self._points.setdefault(name, []).append((now, float(depth)))

    def series(self, started_at: float) -> list[Series]:
        """Each queue's samples so far, in seconds since ``started_at``."""
        with self._lock:
            return [Series(name=name, unit="messages",
                           points=[(round(at - started_at, 4), depth) for at, depth in self._points.get(name, [])])
                    for name in self.queues]


def quiescent(backend: Backend, log_ids: Iterable[uuid.UUID], watcher: SnapshotWatcher,
              queue_url: str) -> tuple[bool, str]:
    """Whether every Snapshot entry of ``log_ids`` is complete, no pending item is left for them, and the
    queue is empty: (answer, what is still outstanding)."""
    watcher.poll()
    left = watcher.incomplete()
    if left:
        return False, f"{len(left)} snapshot(s) incomplete, e.g. {left[0][0]} {left[0][1]}/{left[0][2]}"
    pending = [p for log_id in log_ids for p in backend.pending.for_log(log_id)]
    if pending:
        return False, f"{len(pending)} pending item(s)"
    depth = queue_depth(backend, queue_url)
    if depth:
        return False, f"{depth} message(s) in the queue"
    return True, "quiescent"
