"""SQS hides a received message for at most 12 hours counted from its receive, however many ChangeMessageVisibility
calls extend it: "You can continue to call ChangeMessageVisibility to extend the visibility timeout to the maximum
allowed time. If you try to extend the visibility timeout beyond the maximum, your request is rejected" (Amazon SQS
API Reference, ChangeMessageVisibility; the limit is 12 hours, Amazon SQS Developer Guide, sqs-visibility-timeout).
The worker's hides (seglog_core.pipeline.Backoff) stay under it with a whole Lambda timeout to spare; here the
simulated SQS and the local stack's SQS (LocalStack) are held to what they do at the limit."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from conftest import PROFILES
from seglog_aws.clients import client, local_session
from seglog_sim.aws.sqs import SimSQS, SimSQSClient

TWELVE_HOURS = 43_200


def _received(sqs: Any, url: str) -> str:
    sqs.send_message(QueueUrl=url, MessageBody="job")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0).get("Messages", [])
        if got:
            return str(got[0]["ReceiptHandle"])
    raise AssertionError("no message")


def test_the_simulated_sqs_hides_a_message_at_most_12_hours_from_its_receive() -> None:
    """Each ChangeMessageVisibility counts from now, and the total from the receive may not pass 12 hours: the
    simulator refuses as SQS does, so a worker that hid too long would fail its seeds."""
    now = [1_700_000_000.0]
    sim = SimSQS(clock=lambda: now[0], rng=random.Random(0))
    sqs, url = SimSQSClient.of(sim), sim.create_queue("t-limit", visibility_timeout=30)
    handle = _received(sqs, url)
    with pytest.raises(ClientError, match="between 0 and 43200"):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=TWELVE_HOURS + 1)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=TWELVE_HOURS)
    now[0] += 3_600
    with pytest.raises(ClientError, match="beyond the limit"):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=TWELVE_HOURS - 3_599)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=TWELVE_HOURS - 3_600)


@pytest.fixture(params=PROFILES)
def local_sqs(request: pytest.FixtureRequest, stacks: Any) -> Iterator[tuple[Any, str]]:
    deployment = stacks.deployment(request.param)
    real = client("sqs", session=local_session(deployment.region), endpoint_url=deployment.endpoints["sqs"])
    url = real.create_queue(QueueName=f"t-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    yield real, url
    real.delete_queue(QueueUrl=url)


@pytest.mark.stack
def test_localstack_does_not_enforce_the_12_hours_so_the_worker_must(local_sqs: tuple[Any, str]) -> None:
    """Seen on LocalStack 2026.3 (both profiles take SQS from it): any VisibilityTimeout is accepted, past 43200
    and past 12 hours from the receive. So the local stack cannot catch a hide that AWS would refuse; the worker's
    Backoff refuses such a schedule itself (tests/test_snapshot_backoff.py) and the simulator refuses the call.
    Should LocalStack start enforcing the limit, this test fails: then hold it to AWS's rule as the simulator."""
    sqs, url = local_sqs
    handle = _received(sqs, url)
    for seconds in (TWELVE_HOURS, TWELVE_HOURS + 1):
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=seconds)
    time.sleep(1.1)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=TWELVE_HOURS)
