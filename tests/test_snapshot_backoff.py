"""A deferred or blocked snapshot job reaches the DLQ no sooner than the template says (issue 18): the worker's hides
follow one rule, :class:`seglog_core.pipeline.Backoff`, and the template's SnapshotMaxReceiveCount description and
the README state what ``Backoff.to_dead_letter`` computes from the template's own default.

Before: hides were capped at 15 minutes and grew by the pending item's deferrals, so with the default 50 receives a
deferred job reached the DLQ after about 7.5 h and a blocked one after 12.5 h, where the template said "well over a
day"."""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from seglog_awsmodel.template import load_template
from seglog_core import errors
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Backoff, Outcome, SnapshotWorker
from seglog_core.pipeline.backoff import LAMBDA_MAX_TIMEOUT, SQS_MAX_VISIBILITY
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS
from seglog_core.pipeline.order import ORDER_WAIT_SECONDS
from seglog_core.ports import QueueMessage
from seglog_core.reader import LogReader
from seglog_core.schema import Entry, PendingSnapshot, SetCell, SnapshotJob
from seglog_services import snapshot_worker

REPO = Path(__file__).resolve().parents[1]


class HidingQueue(InMemoryJobQueue):
    """The in-memory queue, remembering the last hide the worker asked for."""

    hidden: int = 0

    def change_visibility(self, message: QueueMessage, seconds: int) -> None:
        self.hidden = seconds
        super().change_visibility(message, seconds)


class LowestDraw(random.Random):
    """The jitter at its low end on every draw: the hides :meth:`Backoff.shortest` promises."""

    def uniform(self, a: float, b: float) -> float:
        return a


def _max_receive_count() -> int:
    return int(load_template(REPO / "template.yaml").body["Parameters"]["SnapshotMaxReceiveCount"]["Default"])


def _stated_hours() -> tuple[int, int]:
    """The least hours to the DLQ (deferred, blocked) that the template's description states."""
    text = " ".join(load_template(REPO / "template.yaml").body["Parameters"]["SnapshotMaxReceiveCount"]
                    ["Description"].split())
    found = re.search(r"after at least (\d+) hours .*?at least (\d+) hours", text)
    assert found, text
    return int(found[1]), int(found[2])


def _hours_to_dead_letter(*, blocked: bool, rng: random.Random) -> float:
    """Drive one job through the worker, deferred (or blocked) on every receive, under a clock that jumps to each
    hide's end; the hours until the receive that would move it to the DLQ (the one after maxReceiveCount)."""
    now = [1_000.0]
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = HidingQueue(clock=lambda: now[0])
    log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
    log_id = log.create()
    unreadable = log.append(log_id, SetCell(row=1, col=1, value=1))
    if not blocked:  # an earlier snapshot that never completes: blocked itself (its job helped, in vain)
        first = log.append_snapshot(log_id)
        pending.create(PendingSnapshot(log_id=log_id, segment=first.segment, entry=first.num, created=1_000,
                                       modified=1_000))
        pending.defer(log_id, first.segment, first.num, now=1_000, blocked="needs newer code")
    log.append(log_id, SetCell(row=2, col=1, value=2))
    ours = log.append_snapshot(log_id)
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)

    def body_of(entry: Entry) -> Any:
        if blocked or entry.num == unreadable.entry.num:
            raise errors.BodyVersionError("set", 9, 1)
        return document.body(entry)

    worker = SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue, body_of=body_of,
                            clock=lambda: now[0], rng=rng)
    queue.send(SnapshotJob(log=str(log_id), segment=ours.segment, entry=ours.num))
    start, expected = now[0], Outcome.BLOCKED if blocked else Outcome.DEFERRED
    for _ in range(_max_receive_count()):
        message, = queue.receive()
        assert worker.process(message) is expected
        now[0] += queue.hidden  # the end of its hide
    return (now[0] - start) / 3600


@pytest.mark.parametrize("blocked", [False, True], ids=["deferred", "blocked"])
def test_a_waiting_job_reaches_the_dlq_no_sooner_than_the_template_says(blocked: bool) -> None:
    backoff, stated = Backoff(), _stated_hours()[blocked]
    least = backoff.to_dead_letter(_max_receive_count(), blocked=blocked) / 3600
    assert stated == int(least)  # the template states the computed figure, rounded down
    assert _hours_to_dead_letter(blocked=blocked, rng=LowestDraw()) == pytest.approx(least)
    hours = _hours_to_dead_letter(blocked=blocked, rng=random.Random(7))
    assert stated <= hours <= 2 * least


def test_a_job_behind_another_messages_live_build_waits_as_long_as_a_deferred_one() -> None:
    """Issue 34: a duplicate of a job whose claimer builds for hours (renewing its claim) was hidden for the claim's
    time alone at every receive — a minute then, 16 s with today's takeover time — and reached the DLQ (its alarm
    firing on a healthy stack) within an hour. Now its hides grow as a deferral's: the DLQ no sooner than the
    template says."""
    now = [1_000.0]
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = HidingQueue(clock=lambda: now[0])
    log = EventLog(store=store, blobs=blobs, clock=lambda: now[0])
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    ours = log.append_snapshot(log_id)
    pending.create(PendingSnapshot(log_id=log_id, segment=ours.segment, entry=ours.num, created=1_000,
                                   modified=1_000, claimer="the live builder's message"))
    building = pending.claim(log_id, ours.segment, ours.num, "the live builder's message", now=1_000,
                             takeover_after=DEFAULT_TAKEOVER_SECONDS)
    assert building == 1
    document = SheetDocument(reader=LogReader(store=store), blobs=blobs)
    worker = SnapshotWorker(store=store, blobs=blobs, pending=pending, queue=queue, body_of=document.body,
                            clock=lambda: now[0], rng=LowestDraw())
    queue.send(SnapshotJob(log=str(log_id), segment=ours.segment, entry=ours.num))
    for _ in range(_max_receive_count()):
        message, = queue.receive()
        assert Outcome.DUPLICATE is worker.process(message)
        now[0] += queue.hidden  # the end of its hide; the builder renewed its claim meanwhile
        assert pending.checkpoint(log_id, ours.segment, ours.num, increment=building, state=b"", now=int(now[0]))
    assert (now[0] - 1_000) / 3600 >= Backoff().to_dead_letter(_max_receive_count()) / 3600 >= _stated_hours()[0]


def test_the_readme_states_the_same_figures() -> None:
    readme = " ".join((REPO / "README.md").read_text().split())
    deferred, blocked = _stated_hours()
    assert f"after at least {deferred} hours ({blocked} blocked)" in readme


def test_hides_grow_to_the_longest_and_stay_inside_sqs_12_hours_from_the_receive() -> None:
    backoff = Backoff()
    ceilings = [backoff.ceiling(n) for n in range(1, 200)]
    assert ceilings == sorted(ceilings)
    assert (ceilings[0], ceilings[backoff.patience - 1], ceilings[-1]) == (0.5, 900.0, backoff.longest)
    assert backoff.ceiling(1, blocked=True) == backoff.cap
    rng = random.Random(3)
    assert max(backoff.hide(n, rng, blocked=b) for n in range(1, 200) for b in (False, True)) <= backoff.longest
    assert backoff.longest + LAMBDA_MAX_TIMEOUT <= SQS_MAX_VISIBILITY
    with pytest.raises(ValueError, match="12 h"):
        Backoff(longest=SQS_MAX_VISIBILITY)



def test_an_early_job_idles_no_longer_than_the_order_wait_bound_then_defers() -> None:
    """No paid idling (issue 20): the function's worker waits for an earlier snapshot at most
    ``ORDER_WAIT_SECONDS`` (about where a second of billed waiting costs what a deferral does), then hides its
    message. Before, it waited 3 s in the invocation."""
    store, blobs, pending = InMemoryLogStore(), InMemoryBlobStore(), InMemoryPendingStore()
    queue = HidingQueue(clock=lambda: 1_000.0)
    log = EventLog(store=store, blobs=blobs, clock=lambda: 1_000.0)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    first = log.append_snapshot(log_id)  # being built by someone else: its claim is live, never done
    pending.create(PendingSnapshot(log_id=log_id, segment=first.segment, entry=first.num, created=1_000,
                                   modified=1_000, claimer="other"))
    assert pending.claim(log_id, first.segment, first.num, "other", now=1_000, takeover_after=60) == 1
    log.append(log_id, SetCell(row=2, col=1, value=2))
    ours = log.append_snapshot(log_id)
    slept: list[float] = []
    backend = SimpleNamespace(store=store, blobs=blobs, pending=pending, queue=queue,
                              reader=lambda: LogReader(store=store))
    worker = snapshot_worker.worker(backend, {}, clock=lambda: 1_000.0, sleep=slept.append)  # type: ignore[arg-type]
    assert worker.order_wait == ORDER_WAIT_SECONDS <= 0.5
    queue.send(SnapshotJob(log=str(log_id), segment=ours.segment, entry=ours.num))
    message, = queue.receive()
    assert worker.process(message) is Outcome.DEFERRED
    assert 0 < sum(slept) <= ORDER_WAIT_SECONDS + 1e-9
    assert queue.hidden >= 1


def test_the_template_deploys_the_takeover_time_the_worker_defaults_to() -> None:
    """One figure: SnapshotTakeoverSeconds' default is the code's, so a worker without the variable (a test, a
    library user) and a deployed one give up on a dead builder at the same time."""
    parameter = load_template(REPO / "template.yaml").body["Parameters"]["SnapshotTakeoverSeconds"]
    assert (DEFAULT_TAKEOVER_SECONDS, DEFAULT_TAKEOVER_SECONDS) == (parameter["Default"], SnapshotWorker(
        store=InMemoryLogStore(), blobs=InMemoryBlobStore(), pending=InMemoryPendingStore(),
        queue=InMemoryJobQueue(visibility_timeout=30), body_of=lambda e: None).takeover_after)  # type: ignore[arg-type,return-value]
    assert parameter["MinValue"] >= 3  # renewals every third of it, in whole seconds
