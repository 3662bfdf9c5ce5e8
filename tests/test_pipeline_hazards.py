"""Every hazard of seed 001 against the real local stack (DESIGN §5, §6): duplicates (also concurrent),
reverse order, a crash after each protocol step, takeover, handoff, a predecessor never enqueued. Each ends
with verify (I1-I6, quiescent) passing and exactly one set of chunk objects per snapshot."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from pipeline_support import Crash, PipelineDriver
from seglog_core.pipeline import CRASH_POINTS, Outcome, SnapshotWorker
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import SetCell, SetRange, SnapshotJob
from seglog_core.snapshot import snapshot_keys
from seglog_core.verify import verify_log
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


def _sheet_with_snapshots(driver: PipelineDriver, snapshots: int, *, rows: int = 12) -> uuid.UUID:
    """A log whose entries fill ``rows`` x 5 cells before each of ``snapshots`` Snapshot entries."""
    log_id = driver.create_log()
    log = driver.event_log()
    for s in range(snapshots):
        log.append(log_id, SetRange(row=1 + s * rows, col=1, values=[[f"{s}:{r}:{c}" for c in range(5)]
                                                                     for r in range(rows)]))
        log.append(log_id, SetCell(row=1, col=7, value=s))
        log.append_snapshot(log_id)
    return log_id


def _assert_verified(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    backend = driver.backend
    report = verify_log(backend.store, log_id, blobs=backend.blobs, pending=backend.pending, quiescent=True)
    assert report.violations == []
    assert report.completed == report.snapshots
    # Exactly one set of chunk objects per snapshot: what is stored is what the roots reference.
    owned: set[str] = set()
    for entry in backend.reader().all_entries(log_id):
        if entry.snapshot_root and entry.snapshot_root != "empty":
            owned |= snapshot_keys(backend.blobs, entry.snapshot_root)
    assert set(backend.blobs.keys(f"snapshots/{log_id}/")) == owned
    assert driver.queue.depth() == 0


def _background(call: Callable[[], Outcome], outcomes: list[object]) -> threading.Thread:
    """Run one invocation in a thread, keeping its outcome or its exception (never an unhandled one that
    would surface in a later test)."""

    def run() -> None:
        try:
            outcomes.append(call())
        except Exception as exc:
            outcomes.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _crash_at(point: str, *, once: bool = True) -> object:
    fired: list[str] = []

    def crash(name: str) -> None:
        if name == point and not (once and fired):
            fired.append(name)
            raise Crash(name)

    crash.fired = fired  # type: ignore[attr-defined]
    return crash


def test_the_same_message_twice_builds_once(driver: PipelineDriver) -> None:
    log_id = _sheet_with_snapshots(driver, 1)
    driver.route_new()
    message, = driver.receive()
    worker = driver.worker()
    assert worker.process(message) is Outcome.COMPLETED
    assert worker.process(message) is Outcome.ALREADY_DONE
    _assert_verified(driver, log_id)


def test_duplicate_messages_for_one_snapshot_are_absorbed(driver: PipelineDriver) -> None:
    """A second message for a snapshot another message is building waits; the build completes once, and the second
    message is deleted when it comes back to a completed snapshot."""
    log_id = _sheet_with_snapshots(driver, 1)
    driver.route_new()
    snapshot = [e for e in driver.backend.reader().all_entries(log_id) if e.type == "snap"][-1]
    driver.queue.send(SnapshotJob(log=str(log_id), segment=snapshot.segment, entry=snapshot.num))  # a 2nd copy
    first, second = driver.receive(1), driver.receive(1)
    claimed, release = threading.Event(), threading.Event()

    def slow(point: str) -> None:
        if point == "after_claim":
            claimed.set()
            release.wait(10)

    outcomes: list[object] = []
    a = _background(lambda: driver.worker(crash=slow).process(first[0]), outcomes)
    assert claimed.wait(10)
    assert driver.worker().process(second[0]) is Outcome.DUPLICATE
    release.set()
    a.join()
    assert outcomes == [Outcome.COMPLETED]
    # The duplicate was hidden, not deleted (the claimer's message might have been lost); back, it is done.
    assert driver.queue.depth() == 1
    driver.queue.change_visibility(second[0], 0)
    assert driver.worker().process(driver.receive_one()) is Outcome.ALREADY_DONE
    assert driver.queue.depth() == 0
    _assert_verified(driver, log_id)


def test_a_concurrent_redelivery_of_the_same_message_does_not_strand_it(driver: PipelineDriver) -> None:
    """Visibility expires while the first invocation builds: the second holds the only copy and keeps it."""
    log_id = _sheet_with_snapshots(driver, 1)
    driver.route_new()
    first, = driver.receive(visibility=1)
    claimed, release = threading.Event(), threading.Event()

    def slow(point: str) -> None:
        if point == "after_claim":
            claimed.set()
            release.wait(10)

    outcomes: list[object] = []
    a = _background(lambda: driver.worker(crash=slow).process(first), outcomes)
    assert claimed.wait(10)
    again = driver.receive_one()
    assert again.message_id == first.message_id
    assert driver.worker().process(again) is Outcome.BUSY  # same messageId: not deleted, hidden for the time left
    release.set()
    a.join()
    assert outcomes == [Outcome.COMPLETED]
    # A deleted with its older receipt handle: SQS may or may not have deleted the message (LocalStack does);
    # if it is still there, its next delivery finds the snapshot done.
    driver.queue.change_visibility(again, 0)
    driver.drain()
    _assert_verified(driver, log_id)


def test_messages_delivered_in_reverse_order_complete_in_log_order(driver: PipelineDriver) -> None:
    """The latest job comes first: it builds the earlier snapshots itself, earliest first (no live builder holds
    them), then its own; the earlier jobs find theirs done. Before issue 34 it deferred behind them."""
    log_id = _sheet_with_snapshots(driver, 3)
    driver.route_new()
    messages = []
    while len(messages) < 3:
        messages += driver.receive(10, visibility=1)
    order = sorted(messages, key=lambda m: int(m.body.split('"entry":')[1].rstrip("}")), reverse=True)
    worker = driver.worker()
    completed: list[int] = []
    set_root = worker.store.set_snapshot_root

    def recording(log_id: uuid.UUID, segment: int, entry: int, root: str) -> None:
        completed.append(entry)
        set_root(log_id, segment, entry, root)

    worker.store.set_snapshot_root = recording  # type: ignore[method-assign]
    outcomes = [worker.process(m) for m in order]
    assert [Outcome.COMPLETED, Outcome.ALREADY_DONE, Outcome.ALREADY_DONE] == outcomes
    assert sorted(int(m.body.split('"entry":')[1].rstrip("}")) for m in messages) == completed
    driver.drain()
    _assert_verified(driver, log_id)


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_crash_after_each_step_is_recovered_by_redelivery(driver: PipelineDriver, point: str) -> None:
    log_id = _sheet_with_snapshots(driver, 2, rows=30)  # 150 cells a snapshot: several 50-cell chunks
    driver.route_new()
    crash = _crash_at(point)
    crashing = driver.worker(crash=crash, takeover_after=1)
    with pytest.raises(Crash):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for message in driver.receive(10, visibility=1):
                crashing.process(message)
            time.sleep(0.2)
    assert crash.fired == [point]  # type: ignore[attr-defined]
    time.sleep(1.1)  # the dead invocation's message and claim time out
    driver.drain(driver.worker(takeover_after=1))
    _assert_verified(driver, log_id)


def test_a_stale_claim_is_taken_over_after_the_timeout(driver: PipelineDriver) -> None:
    """A builder dies holding its claim: its message, back within the takeover time, is kept busy; once the time
    has passed (a clock that far ahead, rather than a sleep a slow machine could outlast — the claim went stale
    before a loaded CI got the message back, issue 34) it takes the claim over and builds."""
    takeover = 30
    log_id = _sheet_with_snapshots(driver, 1)
    driver.route_new()
    message, = driver.receive(visibility=1)
    with pytest.raises(Crash):
        driver.worker(crash=_crash_at("after_claim"), takeover_after=takeover).process(message)
    again = driver.receive_one()
    assert driver.worker(takeover_after=takeover).process(again) is Outcome.BUSY
    item = driver.backend.pending.get(log_id, 0, 3)
    assert item is not None
    assert (item.active, item.increment) == (True, 1)
    driver.queue.change_visibility(again, 0)
    third = driver.receive_one()
    later = driver.worker(takeover_after=takeover, clock=lambda: time.time() + takeover + 1)
    assert later.process(third) is Outcome.COMPLETED
    _assert_verified(driver, log_id)


def test_a_build_near_the_time_limit_hands_off_and_resumes_from_its_checkpoint(driver: PipelineDriver) -> None:
    log_id = _sheet_with_snapshots(driver, 1, rows=40)  # 200 cells: 4+ chunks of 50
    driver.route_new()
    message, = driver.receive()
    # 8 s left when the job starts (so the margin is min(10, 8/4) = 2 s), then 1 s left after the first chunk.
    left = iter([8.0])
    assert driver.worker(handoff_margin=10).process(message, remaining=lambda: next(left, 1.0)) is Outcome.HANDED_OFF
    item = driver.backend.pending.get(log_id, 0, 3)
    assert item is not None
    assert item.checkpoint is not None
    assert not item.active
    written = set(driver.backend.blobs.keys(f"snapshots/{log_id}/"))
    assert len(written) == 1  # one chunk, then the handoff
    again = driver.receive_one()  # visible at once: the handoff set visibility 0
    assert again.message_id == message.message_id
    puts: list[str] = []
    worker = driver.worker()
    original = worker.blobs.put
    worker.blobs.put = lambda key, data, **kw: (puts.append(key), original(key, data, **kw))[1]  # type: ignore[method-assign]
    assert worker.process(again) is Outcome.COMPLETED
    assert not written & set(puts)  # the resumed build did not rewrite the checkpointed chunk
    _assert_verified(driver, log_id)


def test_a_snapshot_whose_predecessor_was_never_enqueued_gets_it_built(driver: PipelineDriver) -> None:
    log_id = _sheet_with_snapshots(driver, 2)
    later = [e for e in driver.backend.reader().all_entries(log_id) if e.type == "snap"][-1]
    driver.queue.send(SnapshotJob(log=str(log_id), segment=later.segment, entry=later.num))  # no router run
    message, = driver.receive(visibility=1)
    assert driver.worker().process(message) is Outcome.COMPLETED  # it built its predecessor first (issue 34)
    assert [] == driver.backend.pending.for_log(log_id)
    driver.drain()
    _assert_verified(driver, log_id)


def _taken_over_while_stalled(driver: PipelineDriver, point: str, stalled: SnapshotWorker,
                              taker: SnapshotWorker) -> list[object]:
    """``stalled`` takes the next message and stalls at crash point ``point``; once its claim is stale ``taker``
    completes the snapshot from the message's redelivery; then ``stalled`` goes on. Its outcomes."""
    message = driver.receive_one(visibility=1)
    paused, resume = threading.Event(), threading.Event()

    def stall(at: str) -> None:
        if at == point and not paused.is_set():
            paused.set()
            resume.wait(20)

    stalled.crash = stall
    outcomes: list[object] = []
    slow = _background(lambda: stalled.process(message), outcomes)
    try:
        assert paused.wait(10)
        time.sleep(2.1)  # stale: claims are stamped in whole seconds, so wait past the next one
        again = driver.receive_one()
        assert taker.process(again) is Outcome.COMPLETED
    finally:
        resume.set()
        slow.join(30)
    return outcomes


def test_a_builder_that_was_taken_over_stops_at_its_next_checkpoint(driver: PipelineDriver) -> None:
    """Checkpoints are guarded by the increment: the slow first builder must not carry on after a takeover."""
    log_id = _sheet_with_snapshots(driver, 1, rows=40)
    driver.route_new()

    outcomes = _taken_over_while_stalled(driver, "mid_chunk", driver.worker(takeover_after=1),
                                         driver.worker(takeover_after=1))

    assert outcomes == [Outcome.TAKEN_OVER]
    _assert_verified(driver, log_id)


def test_a_builder_of_another_chunk_size_taken_over_leaves_the_completed_snapshot_intact(
        driver: PipelineDriver) -> None:
    """Two code versions at once (DESIGN §7, the mixed_version fault). A builder with 5 cells per chunk claims,
    then stalls before its first chunk; one with the default 20,000 takes the stale claim over and completes the
    snapshot as one chunk; the first wakes, finds no checkpoint, cuts chunk 0 its own way and writes it over
    the other's before its checkpoint says it was taken over. With one version both write the same bytes under
    that key; with two, the root described a chunk 0 that was gone, so the snapshot no longer equalled the fold
    of the log (I3). Chaos reached it with clock_skew and mixed_version together. Now the first claim pins the
    chunk size in the pending item and the second builder cuts chunks the same way; and the first, reading the
    Snapshot entry again after its claim (added for simulator seed 742), finds it complete and builds nothing."""
    log_id = _sheet_with_snapshots(driver, 1, rows=8)
    driver.route_new()

    outcomes = _taken_over_while_stalled(driver, "after_claim", driver.worker(takeover_after=1, chunk_cells=5),
                                         driver.worker(takeover_after=1, chunk_cells=20_000))

    assert outcomes == [Outcome.ALREADY_DONE]
    _assert_verified(driver, log_id)


def test_snapshots_across_a_segment_boundary_fold_the_previous_segments_tail(driver: PipelineDriver) -> None:
    """A new segment's Snapshot entry 0 builds from the previous segment's last snapshot plus its tail."""
    log_id = _sheet_with_snapshots(driver, 1)
    driver.drain()
    log = driver.event_log()
    log.append(log_id, SetCell(row=50, col=1, value="tail of segment 0"))
    log.start_segment(log_id)
    log.append(log_id, SetCell(row=51, col=1, value="head of segment 1"))
    log.append_snapshot(log_id)
    driver.drain()
    _assert_verified(driver, log_id)
    state, view = driver.document.load(log_id)
    assert (view.snapshot.segment, view.snapshot.num) == (1, 2)
    assert (state.get(50, 1), state.get(51, 1)) == ("tail of segment 0", "head of segment 1")


def test_a_late_job_for_a_segment_retention_archived_is_done_not_failed(driver: PipelineDriver) -> None:
    """A redrive or reprocess can bring a job for a Snapshot entry whose segment was archived since: the worker
    answers "already done" and deletes it (raising on every receive would only park it in the DLQ)."""
    log_id = _sheet_with_snapshots(driver, 1)
    driver.drain()
    writer = driver.event_log()
    for _ in range(3):
        writer.start_segment(log_id)
        driver.drain()
    b = driver.backend
    assert [0] == apply_retention(b.store, b.blobs, log_id, RetentionPolicy(keep=2))[:1]
    driver.queue.send(SnapshotJob(log=str(log_id), segment=0, entry=3))
    message = driver.receive_one(visibility=1)

    assert Outcome.ALREADY_DONE == driver.worker().process(message)
    assert [] == driver.receive(visibility=1)
