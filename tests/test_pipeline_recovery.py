"""The snapshot pipeline always recovers (DESIGN §5, §7), on the real local stack: a snapshot whose claimer's
message reached the dead-letter queue completes after `seglog reprocess` or a redrive (new messageIds take the
stale claim over), a deferred claimer hidden past the takeover timeout loses its claim without losing the job,
and an entry only newer code can fold blocks its snapshot with a reason instead of failing in a loop."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from pipeline_support import Crash, PipelineDriver
from seglog_aws.local import LocalDeployment
from seglog_aws.redrive import redrive
from seglog_core.pipeline import Outcome
from seglog_core.pipeline.fallback import reprocess
from seglog_core.ports import QueueMessage
from seglog_core.schema import SetCell, SnapshotJob
from seglog_core.verify import verify_log

pytestmark = pytest.mark.stack

#: Short, so the tests wait seconds, not minutes; claims are stamped in whole seconds.
TAKEOVER = 1


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


@pytest.fixture
def dlq_driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    """A queue whose messages go to its DLQ at the second receive (the template's maxReceiveCount, shrunk)."""
    d = PipelineDriver(deployment, max_receive=1)
    yield d
    d.close()


def _sheet(driver: PipelineDriver, snapshots: int) -> uuid.UUID:
    """A log with Snapshot entries at 0/3, 0/6, ... (two cells before each)."""
    log_id = driver.create_log()
    log = driver.event_log()
    for s in range(snapshots):
        log.append(log_id, SetCell(row=s + 1, col=1, value=s))
        log.append(log_id, SetCell(row=s + 1, col=2, value=f"s{s}"))
        log.append_snapshot(log_id)
    return log_id


def _entry(message: QueueMessage) -> int:
    return int(message.body.split('"entry":')[1].rstrip("}"))


def _receive(driver: PipelineDriver, count: int) -> list[QueueMessage]:
    got: list[QueueMessage] = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        got += driver.receive(10, visibility=30)
    assert count == len(got)
    return sorted(got, key=_entry)


def _until_stale(driver: PipelineDriver, log_id: uuid.UUID, entry: int, takeover_after: int) -> None:
    """Wait until the claim of 0/entry is older than the takeover timeout (M < now - takeover_after)."""
    item = driver.backend.pending.get(log_id, 0, entry)
    assert item is not None
    while int(time.time()) - takeover_after <= item.modified:
        time.sleep(0.2)


def _until_in_dlq(driver: PipelineDriver, message: QueueMessage) -> None:
    """Receive from the queue until SQS has moved ``message`` to the DLQ (it does so at a receive past
    maxReceiveCount: Amazon SQS Developer Guide, sqs-dead-letter-queues), working any other message."""
    assert driver.dlq_url is not None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for other in driver.receive(10, visibility=30):
            assert message.message_id != other.message_id, "delivered past maxReceiveCount"
            driver.worker(takeover_after=TAKEOVER).process(other)
        peek = driver.sqs.receive_message(QueueUrl=driver.dlq_url, VisibilityTimeout=0).get("Messages", [])
        if [message.message_id] == [m["MessageId"] for m in peek]:
            return
        time.sleep(0.3)
    raise AssertionError(f"message {message.message_id} did not reach the DLQ")


def _verified(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    b = driver.backend
    report = verify_log(b.store, log_id, blobs=b.blobs, pending=b.pending, quiescent=True)
    assert [] == report.violations
    assert report.snapshots == report.completed


def _die_after_claim(point: str) -> None:
    if point == "after_claim":
        raise Crash(point)


def test_a_snapshot_whose_claimer_died_and_went_to_the_dlq_completes_after_reprocess(
        dlq_driver: PipelineDriver) -> None:
    """The active claimer died and its message reached the DLQ; reprocess's job (a new messageId) takes the dead
    claim over. Without the takeover rule that job is deleted as a duplicate and the snapshot never completes."""
    driver = dlq_driver
    log_id = _sheet(driver, 1)
    driver.route_new()
    first = driver.receive_one(visibility=1)
    with pytest.raises(Crash):
        driver.worker(crash=_die_after_claim, takeover_after=TAKEOVER).process(first)
    _until_in_dlq(driver, first)
    b = driver.backend
    report = reprocess(b.store, b.blobs, driver.queue, since=time.time() - 3600, log_ids=[log_id])
    assert [(str(log_id), 0, 3)] == report.enqueued
    job = driver.receive_one()
    assert first.message_id != job.message_id
    _until_stale(driver, log_id, 3, TAKEOVER)
    with capture_logs() as logs:
        assert Outcome.COMPLETED == driver.worker(takeover_after=TAKEOVER).process(job)
    assert [(first.message_id, True)] == [(line["previous_claimer"], line["was_active"]) for line in logs
                                          if line["event"] == "stale claim taken over"]
    _verified(driver, log_id)


def test_a_deferred_snapshot_whose_message_went_to_the_dlq_completes_after_a_redrive(
        dlq_driver: PipelineDriver) -> None:
    """The claimer deferred behind its predecessor (inactive claim), and its message reached the DLQ; a redrive
    gives it a new messageId, which takes the claim over once stale and completes the snapshot."""
    driver = dlq_driver
    log_id = _sheet(driver, 2)
    driver.route_new()
    first, second = _receive(driver, 2)
    worker = driver.worker(takeover_after=TAKEOVER)
    assert Outcome.DEFERRED == worker.process(second)
    assert Outcome.COMPLETED == worker.process(first)
    _until_in_dlq(driver, second)
    item = driver.backend.pending.get(log_id, 0, 6)
    assert item is not None
    assert (second.message_id, False) == (item.claimer, item.active)
    assert driver.dlq_url is not None
    assert 1 == redrive(driver.sqs, dlq_url=driver.dlq_url, queue_url=driver.queue.queue_url)
    job = driver.receive_one()
    assert second.message_id != job.message_id
    _until_stale(driver, log_id, 6, TAKEOVER)
    assert Outcome.COMPLETED == worker.process(job)
    _verified(driver, log_id)


def test_a_deferred_claimer_hidden_past_the_takeover_timeout_is_taken_over_and_returns_as_a_duplicate(
        driver: PipelineDriver) -> None:
    """The module docstring's deferral diagram: a duplicate job takes the stale claim of a claimer hidden by its
    backoff; the claimer's message, back while the new claim is live, is deleted; the snapshot is built once."""
    takeover = 3  # the live window the returning claimer must fall in, with whole-second stamps
    log_id = _sheet(driver, 2)
    driver.route_new()
    first, second = _receive(driver, 2)
    worker = driver.worker(takeover_after=takeover)
    assert Outcome.DEFERRED == worker.process(second)
    driver.queue.change_visibility(second, 60)  # as a long backoff would: hidden past the takeover timeout
    _until_stale(driver, log_id, 6, takeover)
    duplicate = driver.queue.send(SnapshotJob(log=str(log_id), segment=0, entry=6))
    hidden: list[QueueMessage] = []  # the deferral's job for 0/3: kept aside so 0/3 stays incomplete
    got: list[QueueMessage] = []
    while not got:
        for m in driver.receive(10, visibility=60):
            (got if m.message_id == duplicate else hidden).append(m)
    with capture_logs() as logs:
        assert Outcome.DEFERRED == worker.process(got[0])  # took the claim, then waits for 0/3 like its claimer
    driver.queue.change_visibility(got[0], 60)
    assert ["stale claim taken over"] == [line["event"] for line in logs if "taken over" in line["event"]]
    driver.queue.change_visibility(second, 0)
    back = driver.receive_one()
    assert (second.message_id, Outcome.DUPLICATE) == (back.message_id, worker.process(back))
    assert Outcome.COMPLETED == worker.process(first)
    for message in [got[0], *hidden]:
        driver.queue.change_visibility(message, 0)
    driver.drain(worker)
    _verified(driver, log_id)
