"""The dlq and redrive faults on the local stack's real SQS: a lowered maxReceiveCount makes SQS itself park a
job in the DLQ, and faults stopping gives the queue the campaign's count back and redrives the job as a new
message (DESIGN §7, "messages that reach the DLQ and are redriven (new messageIds)")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from seglog_awsmodel.template import default_template_path
from seglog_emulator.faults import FaultPlan, FaultSchedule
from seglog_plugin.chaos import CHAOS_PARAMETERS
from seglog_plugin.chaos.dead_letters import DeadLetterFaults, stack_update
from seglog_plugin.chaos.watch import queue_depth
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack import local

pytestmark = pytest.mark.stack


@pytest.fixture
def chaos_stack(stacks: Any) -> Iterator[tuple[local.LocalDeployment, str]]:
    """The template provisioned with the chaos parameters under a name of its own (deleted after the test)."""
    base = stacks.deployment("dynamodb-local")
    stack = f"tdlq-{uuid.uuid4().hex[:6]}"
    deployment = local.provision(base.endpoints, profile=base.profile, region=base.region, stack_name=stack,
                                 parameters=dict(CHAOS_PARAMETERS))
    yield deployment, stack
    local.deprovision(base.endpoints, region=base.region, stack_name=stack)


def max_receive_count(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["RedrivePolicy"])["Attributes"]
    return int(json.loads(attributes["RedrivePolicy"])["maxReceiveCount"])


def receive(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """One receive that hides nothing (visibility 0), as a job the worker keeps and puts back at once."""
    messages: list[dict[str, Any]] = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1, VisibilityTimeout=0,
                                                         MaxNumberOfMessages=10).get("Messages", [])
    return messages


def test_a_dlq_run_parks_a_job_after_max_receive_count_and_faults_stopping_redrive_it(
        chaos_stack: tuple[local.LocalDeployment, str]) -> None:
    """Amazon SQS Developer Guide, sqs-dead-letter-queues
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html):
    the DLQ receives messages "after the value of maxReceiveCount is exceeded". With the run's lowered count a
    job received that often without a delete is moved by SQS itself; when faults stop, the queue has the
    template's 50 again and the job is back in it under a new messageId (sqs-configure-dead-letter-queue-redrive:
    redriven messages are new messages). If the stack update did not reach the queue, the job would never be
    parked; if the stop did not redrive, the run could not become quiescent."""
    deployment, stack = chaos_stack
    backend = backend_of(deployment)
    sqs, queue_url, dlq_url = backend.sqs, resources_of(deployment).queue_url, resources_of(deployment).dlq_url
    dead_letters = DeadLetterFaults(
        sqs, queue_url=queue_url, dlq_url=dlq_url, parameters=dict(CHAOS_PARAMETERS),
        update=stack_update(deployment, template=default_template_path(), stack=stack),
        schedule=FaultSchedule(FaultPlan.from_flags("dlq", rate=1.0, seed=1)),
        depth=lambda: queue_depth(backend, dlq_url), stale_after=0.0)
    body = json.dumps({"log": str(uuid.uuid4()), "segment": 0, "entry": 10})

    count = dead_letters.begin()["SnapshotMaxReceiveCount"]
    lowered = max_receive_count(sqs, queue_url)
    first = sqs.send_message(QueueUrl=queue_url, MessageBody=body)["MessageId"]
    receipts = [len(receive(sqs, queue_url)) for _ in range(count + 1)]
    parked = receive(sqs, dlq_url)
    dead_letters.stop()
    back = receive(sqs, queue_url)

    assert count == lowered
    assert [1] * count + [0] == receipts
    assert [(first, body)] == [(m["MessageId"], m["Body"]) for m in parked]
    assert 50 == max_receive_count(sqs, queue_url)
    assert [body] == [m["Body"] for m in back]
    assert first != back[0]["MessageId"]
    assert 1 == dead_letters.tally.arrivals == dead_letters.tally.redriven_at_stop
