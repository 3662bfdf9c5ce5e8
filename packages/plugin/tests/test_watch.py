"""SnapshotWatcher: latency and the live I4 check (a snapshot complete before its predecessor)."""

from __future__ import annotations

import types
import uuid
from typing import Any

from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.schema import SetCell
from seglog_plugin.chaos.watch import QueueDepths, SnapshotWatcher, percentile


def log_with_two_snapshots() -> tuple[InMemoryLogStore, uuid.UUID]:
    store = InMemoryLogStore()
    event_log = EventLog(store=store, blobs=InMemoryBlobStore(), snapshot_every=3)
    log_id = event_log.create()
    for n in range(6):
        event_log.append(log_id, SetCell(row=1, col=n + 1, value=n))
    return store, log_id


def snapshot_nums(store: InMemoryLogStore, log_id: uuid.UUID) -> list[int]:
    return [e.num for e in store.entries(log_id, 0) if e.type.value == "snap" and e.num > 0]


def watcher(store: Any, log_id: uuid.UUID) -> SnapshotWatcher:
    return SnapshotWatcher(types.SimpleNamespace(store=store), [log_id])  # type: ignore[arg-type]


def test_in_order_completion_is_no_violation_and_latencies_are_measured() -> None:
    store, log_id = log_with_two_snapshots()
    first, second = snapshot_nums(store, log_id)
    w = watcher(store, log_id)
    w.poll()
    store.complete_snapshot(log_id, 0, first, "root-a")
    w.poll()
    store.complete_snapshot(log_id, 0, second, "root-b")
    w.poll()
    assert [] == w.order_violations()
    assert 2 == len(w.latencies()) and [] == w.incomplete()
    assert percentile(w.latencies(), 50) is not None


def test_a_snapshot_complete_while_its_predecessor_is_not_is_an_i4_violation() -> None:
    store, log_id = log_with_two_snapshots()
    first, second = snapshot_nums(store, log_id)
    w = watcher(store, log_id)
    w.poll()
    store.complete_snapshot(log_id, 0, second, "root-b")
    w.poll()  # the second seen complete, the first seen incomplete after it
    w.poll()
    store.complete_snapshot(log_id, 0, first, "root-a")
    w.poll()
    (violation,) = w.order_violations()
    assert ("I4", str(log_id), 0, second) == (violation.invariant, violation.log_id, violation.segment, violation.entry)
    assert violation.message.startswith(f"snapshot 0/{second} was complete while 0/{first}")


class Queues:
    """SQS's GetQueueAttributes for queues whose depths a test sets; a queue named "down" fails to answer."""

    def __init__(self) -> None:
        self.depths: dict[str, int] = {"jobs": 0, "dlq": 0, "down": 0}
        self.reads = 0

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        self.reads += 1
        if QueueUrl == "down":
            raise ConnectionError("the stack is going down")
        return {"Attributes": {"ApproximateNumberOfMessages": str(self.depths[QueueUrl]),
                               "ApproximateNumberOfMessagesNotVisible": "1",
                               "ApproximateNumberOfMessagesDelayed": "0"}}


def test_queue_depths_are_sampled_at_most_once_a_period_and_drawn_from_the_runs_start() -> None:
    """sample() is called from a loop that runs four times a second; the queues are read only when a period has
    passed, so the run's pace is the loop's, not the sampler's. A read that fails leaves a gap, not an end."""
    now = [1000.0]
    sqs = Queues()
    backend: Any = types.SimpleNamespace(sqs=sqs)
    depths = QueueDepths(backend, {"snapshot queue depth": "jobs", "DLQ depth": "dlq", "gone": "down"}, every=0.5,
                         clock=lambda: now[0])
    for step, jobs in enumerate([3, 3, 5, 5, 0]):  # every 0.25 s
        now[0] = 1000.0 + step * 0.25
        sqs.depths["jobs"] = jobs
        depths.sample()
    assert 3 * 3 == sqs.reads  # at 0, 0.5 and 1.0 s: three queues each
    series = {s.name: s for s in depths.series(started_at=999.0)}
    assert ["snapshot queue depth", "DLQ depth", "gone"] == list(series)
    assert [(1.0, 4.0), (1.5, 6.0), (2.0, 1.0)] == series["snapshot queue depth"].points  # visible + in flight
    assert [(1.0, 1.0), (1.5, 1.0), (2.0, 1.0)] == series["DLQ depth"].points
    assert [] == series["gone"].points
    assert {("messages", "measured")} == {(s.unit, s.basis) for s in series.values()}
