"""Retries where they belong (DESIGN §3 failure modes, §5): the services' stores retry throttles and 5xx inside the
invocation and never past its deadline; writes whose answer was lost are sent again only where that is safe, and
the risky conditional ones still decide right. Faults go into the boto3 clients through botocore's hooks
(seglog_emulator.faults.botocore_faults), before the request (a throttle) or after it landed (a lost answer).
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pipeline_support import PipelineDriver
from seglog_aws.backend import REQUEST_RETRY, Backend
from seglog_aws.clients import local_session
from seglog_aws.resources import Resources
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_awsmodel.events.sqs import sqs_event
from seglog_core.pipeline import Outcome
from seglog_core.retry import RetryPolicy
from seglog_core.schema import PendingSnapshot, SetCell, SnapshotJob
from seglog_core.verify import verify_log
from seglog_emulator.faults.botocore_faults import BotocoreFaults
from seglog_stack.local import LocalDeployment

LOST = {"code": "InternalServerError", "status": 500, "after_send": True}  # the write landed, its answer did not


class Context:
    """The Lambda context the handlers read: a request id and the time left, on a clock the test may drive."""

    def __init__(self, remaining: Callable[[], float]) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self._remaining = remaining

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._remaining() * 1000))


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


def _one_snapshot(driver: PipelineDriver) -> uuid.UUID:
    log_id = driver.create_log()
    log = driver.event_log()
    for col in (1, 2, 3):
        log.append(log_id, SetCell(row=1, col=col, value=col))
    log.append_snapshot(log_id)
    driver.route_new()
    return log_id


def _clean(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    b = driver.backend
    report = verify_log(b.store, log_id, blobs=b.blobs, pending=b.pending, quiescent=True)
    assert [] == report.violations
    assert report.completed == report.snapshots


# ------------------------------------------------------------------------------------ the worker's handler


@pytest.mark.stack
def test_a_throttled_read_in_the_snapshot_worker_is_retried_inside_the_invocation(
        deployment: LocalDeployment, driver: PipelineDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two throttled GetItems, and the deployed handler still completes the snapshot and deletes its message in
    that one invocation. If this fails, a throttle fails the message: it comes back only after the queue's
    visibility timeout (360 s deployed) and counts a receive toward the DLQ."""
    from seglog_services import runtime, snapshot_worker

    log_id = _one_snapshot(driver)
    backend = dataclasses.replace(driver.backend, queue=SqsJobQueue(
        driver.backend.sqs, queue_url=driver.queue.queue_url, retry=REQUEST_RETRY))
    monkeypatch.setattr(runtime, "backend", lambda: backend)
    faults = BotocoreFaults(backend.store._ddb)
    faults.fail("GetItem", "ProvisionedThroughputExceededException", times=2)
    messages = driver.sqs.receive_message(QueueUrl=driver.queue.queue_url, VisibilityTimeout=30,
                                          MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
                                          WaitTimeSeconds=2)["Messages"]
    arn = driver.sqs.get_queue_attributes(QueueUrl=driver.queue.queue_url,
                                          AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    response = snapshot_worker.handler(sqs_event(messages, queue_arn=arn, region=deployment.region),
                                       Context(lambda: 60.0))
    assert {"batchItemFailures": []} == response
    assert [("GetItem", "ProvisionedThroughputExceededException", False)] * 2 == faults.injected
    assert 0 == driver.queue.depth()  # deleted by this invocation, not left to come back
    _clean(driver, log_id)


def test_a_retry_stops_before_the_invocations_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 4 s left and every read throttled, the handler gives the message back while a try still fits: the
    store's retries end at least ``reserve`` before the function's time limit. If this fails, a retrying request
    runs into the deadline and the sandbox kills the invocation mid-call. (No stack: the throttles answer
    every call before it is sent.)"""
    from seglog_services import runtime, snapshot_worker

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    policy = RetryPolicy(max_attempts=100, base=0.25, cap=1.0, reserve=1.0, rng=random.Random(5), sleep=sleep)
    closed = "http://127.0.0.1:9"
    backend = Backend.connect(Resources(segments_table="s", entries_table="e", pending_table="p", bucket="b",
                                        queue_url=f"{closed}/000000000000/q"),
                              endpoints={"dynamodb": closed, "s3": closed, "sqs": closed},
                              session=local_session(), retry=policy)
    monkeypatch.setattr(runtime, "backend", lambda: backend)
    faults = BotocoreFaults(backend.store._ddb)
    faults.fail("GetItem", "ThrottlingException", times=1000)
    job = json.dumps({"log": str(uuid.uuid4()), "segment": 0, "entry": 3})
    message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": job, "MD5OfBody": "-",
               "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "test",
                              "ApproximateFirstReceiveTimestamp": "0"}}
    event = sqs_event([message], queue_arn="arn:aws:sqs:us-east-1:000000000000:q", region="us-east-1")
    response = snapshot_worker.handler(event, Context(lambda: 4.0 - now[0]))
    assert {"batchItemFailures": [{"itemIdentifier": "m-1"}]} == response
    assert 1 < len(faults.injected) < 100  # retried, and stopped by the deadline, not by the attempts
    assert now[0] <= 4.0 - 1.0


# ----------------------------------------------------------------- lost answers to the worker's conditional writes


@pytest.mark.stack
def test_a_claim_whose_answer_was_lost_is_known_as_ours_and_built(driver: PipelineDriver) -> None:
    """The claim landed but its answer was lost; its retry fails the condition on our own claim. The item shows it
    ours (our claimer, active, stamped this second), so the worker builds at once. If this fails, the claim is held
    by nobody until the takeover timeout: a busy sheet's snapshots stalled that long three times in four minutes
    under the README's faults (issue 34), since every later job helping its sheet found the claim live."""
    log_id = _one_snapshot(driver)
    faults = BotocoreFaults(driver.backend.store._ddb)

    def lose_the_claims_answer(point: str) -> None:
        if point == "after_pending_upsert":  # the next UpdateItem is the claim
            faults.fail("UpdateItem", **LOST)

    message = driver.receive_one(visibility=1)
    assert Outcome.COMPLETED is driver.worker(crash=lose_the_claims_answer).process(message)
    assert [("UpdateItem", "InternalServerError", True)] == faults.injected
    _clean(driver, log_id)


@pytest.mark.stack
def test_a_predecessor_whose_job_was_lost_is_built_by_the_next_job_despite_a_lost_create(
        driver: PipelineDriver) -> None:
    """The first snapshot's job is lost; the second's builds it first (it helps, issue 34), creating its pending
    item under its own messageId. The create landed but its answer was lost, and its retry fails on our own item:
    it is known as ours (exactly the item we wrote), so both snapshots complete in the one invocation. If this
    fails, the helper took the item for someone else's live claim and deferred."""
    log_id = driver.create_log()
    log = driver.event_log()
    for snapshot in (4, 8):
        for col in (1, 2, 3):
            log.append(log_id, SetCell(row=snapshot, col=col, value=col))
        log.append_snapshot(log_id)
    driver.queue.send(SnapshotJob(log=str(log_id), segment=0, entry=8))  # the first one's job is lost
    faults = BotocoreFaults(driver.backend.store._ddb)

    def lose_the_next_create(point: str) -> None:
        if point == "after_pending_upsert":  # the next transaction writes the predecessor's pending item
            faults.fail("TransactWriteItems", **LOST)

    message, = driver.receive(visibility=1)
    assert Outcome.COMPLETED is driver.worker(crash=lose_the_next_create).process(message)
    assert [("TransactWriteItems", "InternalServerError", True)] == faults.injected
    assert all(e.snapshot_root for e in driver.backend.reader().all_entries(log_id) if e.type.value == "snap")
    _clean(driver, log_id)


@pytest.mark.stack
def test_a_takeover_whose_answer_was_lost_is_known_as_ours(driver: PipelineDriver) -> None:
    """A new message takes over a stale claim; the update landed but its answer was lost, and its retry fails on
    our own messageId. If this fails, the worker took the claim for another message's and deleted its own as a
    duplicate, leaving the snapshot to a claim no message carries (or the lost answer failed the invocation)."""
    log_id = _one_snapshot(driver)
    driver.backend.pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=4, created=1, modified=1,
                                                  claimer="a message now in the DLQ"))
    faults = BotocoreFaults(driver.backend.store._ddb)
    faults.fail("UpdateItem", **LOST)  # the first UpdateItem of the invocation is the takeover
    message = driver.receive_one()
    assert Outcome.COMPLETED is driver.worker().process(message)
    assert [("UpdateItem", "InternalServerError", True)] == faults.injected
    _clean(driver, log_id)


def _claimed(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    pending = driver.backend.pending
    pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=4, created=1, modified=1, claimer="m-1"))
    assert 1 == pending.claim(log_id, 0, 4, "m-1", now=int(time.time()), takeover_after=60)


#: (operation whose answer is lost, the call, what the caller must see, what the item must hold after).
SAFE_AFTER_A_LOST_ANSWER: dict[str, tuple[str, Callable[[Backend, uuid.UUID], Any], Any,
                                          Callable[[Backend, uuid.UUID], Any], Any]] = {
    "checkpoint": ("UpdateItem", lambda b, i: b.pending.checkpoint(i, 0, 4, increment=1, state=b"s", now=2), True,
                   lambda b, i: b.pending.get(i, 0, 4).checkpoint, b"s"),
    "release": ("UpdateItem", lambda b, i: b.pending.release(i, 0, 4, increment=1, now=2), True,
                lambda b, i: b.pending.get(i, 0, 4).active, False),
    # ADD R ran twice: one deferral counted twice, which only lengthens the next deferral's backoff.
    "defer": ("UpdateItem", lambda b, i: b.pending.defer(i, 0, 4, now=2), 2,
              lambda b, i: b.pending.get(i, 0, 4).retries, 2),
    "delete": ("DeleteItem", lambda b, i: b.pending.delete(i, 0, 4), None, lambda b, i: b.pending.get(i, 0, 4),
               None),
    "advance_snapshot": ("UpdateItem", lambda b, i: b.store.advance_snapshot(i, 0, 4), None,
                         lambda b, i: b.store.latest_segments(i, 1, consistent=True)[0].last_snapshot, 4),
}


@pytest.mark.stack
@pytest.mark.parametrize("name", SAFE_AFTER_A_LOST_ANSWER)
def test_idempotent_worker_writes_are_sent_again_after_a_lost_answer(driver: PipelineDriver, name: str) -> None:
    """Each of these calls is retried after its answer was lost and returns what a clean call returns. If this
    fails, a lost answer fails the worker's invocation (or a retry misreads its own landed write)."""
    operation, call, answer, held, expected = SAFE_AFTER_A_LOST_ANSWER[name]
    log_id = _one_snapshot(driver)
    _claimed(driver, log_id)
    faults = BotocoreFaults(driver.backend.store._ddb)
    faults.fail(operation, **LOST)
    assert answer == call(driver.backend, log_id)
    assert [(operation, "InternalServerError", True)] == faults.injected
    assert expected == held(driver.backend, log_id)


# ------------------------------------------------------------------------------------------ S3 and SQS


@pytest.mark.stack
def test_s3_and_sqs_throttles_are_retried_by_the_stores(driver: PipelineDriver) -> None:
    """SlowDown on GetObject and RequestThrottled on SendMessage, twice each, and the calls still succeed."""
    b = driver.backend
    key = f"entries/{uuid.uuid4()}/{uuid.uuid4()}"
    b.blobs.put(key, b"body")
    s3_faults = BotocoreFaults(b.blobs._s3)
    s3_faults.fail("GetObject", "SlowDown", status=503, times=2)
    assert b"body" == b.blobs.get(key)
    queue = SqsJobQueue(b.sqs, queue_url=driver.queue.queue_url, retry=REQUEST_RETRY)
    sqs_faults = BotocoreFaults(b.sqs)
    sqs_faults.fail("SendMessage", "RequestThrottled", times=2)
    message_id = queue.send(SnapshotJob(log=str(uuid.uuid4()), segment=0, entry=1))
    assert [message_id] == [m.message_id for m in driver.receive(10, wait=1)]
    assert 2 == len(s3_faults.injected) == len(sqs_faults.injected)
