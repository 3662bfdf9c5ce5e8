"""SnapshotWatcher: latency and the live I4 check (a snapshot complete before its predecessor)."""

from __future__ import annotations

import types
import uuid
from typing import Any

from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.schema import SetCell
from seglog_emulator.chaos.watch import SnapshotWatcher, percentile


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
