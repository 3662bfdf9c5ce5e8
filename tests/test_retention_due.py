"""The scheduled retention run reads the segments that are due, not every log (issue 35: 10,000 idle sheets cost
the hourly run 10,000 Queries each time). Due segments live in the Segments table's sparse index Due: the
transaction that closes a segment marks the new segment's item, and a run clears the mark once the log's look left
nothing to do (seglog_core.retention, "Due segments")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retention import RetentionPolicy, retain_due
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Segment, SetCell

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)
NEVER = lambda: False  # noqa: E731 - a stop() that never stops


def grow(store: LogStore, blobs: BlobStore, log_id: uuid.UUID | None, segments: int, *, at: float) -> uuid.UUID:
    """Create a log (``log_id`` None) or add to one: ``segments`` more segments, each closed at ``at``."""
    log = EventLog(store=store, blobs=blobs, retry=FAST, clock=lambda: at)
    if log_id is None:
        log_id = log.create()
    for _ in range(segments):
        log.append(log_id, SetCell(row=1, col=1, value=1))
        new = log.start_segment(log_id)
        store.complete_snapshot(log_id, new.num, 0, "empty")  # stands in for the pipeline's build
    return log_id


def due(store: LogStore, logs: list[uuid.UUID]) -> list[tuple[uuid.UUID, int]]:
    """The due segments of ``logs`` (a local stack's table holds other tests' logs too)."""
    return [d for d in store.due_segments(2**62) if d[0] in logs]


class Counting:
    """The store, counting the reads of a log's segments (one Query each on DynamoDB)."""

    def __init__(self, store: LogStore) -> None:
        self._store = store
        self.looked: list[uuid.UUID] = []

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        self.looked.append(log_id)
        return self._store.segments(log_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_segment_close_is_due_once_it_is_older_than_the_horizon(stores: tuple[LogStore, BlobStore]) -> None:
    """new_segment marks the new item with its C (the old segment's close): listed only at or after C + min_age,
    and gone from the list once cleared. Segment 0 (create_log) is never due: nothing closed before it."""
    store, blobs = stores
    log_id = grow(store, blobs, None, 2, at=5_000.0)

    assert [] == [d for d in store.due_segments(4_999) if d[0] == log_id]
    # Equal index keys come back in an order DynamoDB does not promise (here C is the same for both).
    assert [(log_id, 1), (log_id, 2)] == sorted(d for d in store.due_segments(5_000) if d[0] == log_id)
    store.clear_due(log_id, 1)
    assert [(log_id, 2)] == due(store, [log_id])


def test_idle_logs_cost_a_run_no_read_once_their_closes_were_looked_at(stores: tuple[LogStore, BlobStore]) -> None:
    """The first run after the horizon archives what each log no longer keeps and clears its due marks; the
    next runs read no log at all, however many there are."""
    store, blobs = stores
    logs = [grow(store, blobs, None, 2, at=1_000.0) for _ in range(5)]
    counting = Counting(store)
    policy = RetentionPolicy(keep=2, min_age=100)

    first = retain_due(counting, blobs, policy, stop=NEVER, clock=lambda: 2_000.0)  # type: ignore[arg-type]
    looked_first = [i for i in counting.looked if i in logs]
    counting.looked.clear()
    second = retain_due(counting, blobs, policy, stop=NEVER, clock=lambda: 3_000.0)  # type: ignore[arg-type]

    assert sorted(logs) == sorted(looked_first)  # each log once, though two of its segments were due
    assert 5 <= first.segments and first.complete
    assert [[True, False, False]] * 5 == [[s.archive is not None for s in store.segments(i)] for i in logs]
    assert [] == due(store, logs)
    assert [] == [i for i in counting.looked if i in logs]
    assert second.complete


def test_a_log_kept_whole_by_keep_is_retired_when_a_later_segment_is_due() -> None:
    """Keep 3 of 3 segments: the run retires nothing and clears the marks (nothing is retirable until a segment
    is created). The next close marks the new segment; once it is due, the oldest segment is archived."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    log_id = grow(store, blobs, None, 2, at=1_000.0)
    policy = RetentionPolicy(keep=3, min_age=100)

    assert 0 == retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 2_000.0).segments
    assert [] == due(store, [log_id])
    grow(store, blobs, log_id, 1, at=2_500.0)
    assert 0 == retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 2_550.0).segments  # not due yet
    assert 1 == retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 2_600.0).segments

    assert [True, False, False, False] == [s.archive is not None for s in store.segments(log_id)]


class DiesDeleting:
    """The store of a run that dies (a function timeout) after claiming a segment, while deleting its entries."""

    def __init__(self, store: LogStore) -> None:
        self._store = store

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                       retired: int | None = None) -> int:
        raise errors.TransientStoreError("the run died while deleting", outcome_unknown=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_log_whose_look_failed_after_its_claim_stays_due_and_the_next_run_finishes_it() -> None:
    """Clearing the mark of a log whose look did not finish would leave its claim (P) for ever: no run would look
    at the log again until its next close, maybe never (an idle sheet). The mark stays; the next run finishes."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    log_id = grow(store, blobs, None, 2, at=1_000.0)
    policy = RetentionPolicy(keep=2, min_age=100)

    failed = retain_due(DiesDeleting(store), blobs, policy, stop=NEVER, clock=lambda: 2_000.0)  # type: ignore[arg-type]
    assert [str(log_id)] == list(failed.failed)
    assert [True, False, False] == [s.retiring for s in store.segments(log_id)]
    assert [(log_id, 0), (log_id, 1), (log_id, 2)] == sorted(due(store, [log_id]))  # the claim marks its own

    retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 3_000.0)
    assert [(True, False)] == [(s.archive is not None, s.retiring) for s in store.segments(log_id)][:1]
    assert [] == due(store, [log_id])


def test_a_claim_left_after_another_run_settled_the_log_is_due_and_finished(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Seed 5783: two scheduled runs looked at one log at once; the first retired segment 0 and cleared the log's
    marks, the second claimed segment 0 again (its archive written again) and died. Nothing marked the log due any
    more, so its claim (P) stood for ever. The claim now marks its own segment due, a clear leaves a claimed
    segment's mark, and the next run finishes it."""
    store, blobs = stores
    log_id = grow(store, blobs, None, 2, at=1_000.0)
    policy = RetentionPolicy(keep=2, min_age=100)
    retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 2_000.0)
    first = next(iter(store.segments(log_id)))
    assert first.archive is not None and not first.retiring and [] == due(store, [log_id])

    assert store.mark_retiring(log_id, 0, first.archive)  # the second run's claim; then it dies
    store.clear_due(log_id, 0)  # a run that read the log before the claim clears what it listed: not this mark
    assert [(log_id, 0)] == due(store, [log_id])

    retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 3_000.0)
    assert [(True, False)] == [(s.archive is not None, s.retiring) for s in store.segments(log_id)][:1]
    assert [] == due(store, [log_id])


def test_a_run_stopped_half_way_leaves_the_rest_due() -> None:
    """stop() says so before the second log: the first is done and cleared, the second stays due."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    logs = [grow(store, blobs, None, 2, at=1_000.0) for _ in range(2)]
    policy = RetentionPolicy(keep=2, min_age=100)
    calls = iter([False, False, False, False, True])

    run = retain_due(store, blobs, policy, stop=lambda: next(calls, True), clock=lambda: 2_000.0)

    assert not run.complete
    left = {log_id for log_id, _ in due(store, logs)}
    assert 1 == len(left)
    done = retain_due(store, blobs, policy, stop=NEVER, clock=lambda: 2_000.0)
    assert done.complete and 1 == done.logs and [] == due(store, logs)
