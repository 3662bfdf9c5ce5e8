"""seglog_aws.redrive on the simulated SQS: messages that reached the DLQ the way SQS sends them there (received
past maxReceiveCount) come back as new messages with new ids (Amazon SQS Developer Guide,
sqs-configure-dead-letter-queue-redrive: "All redriven messages are considered new messages, and are assigned a new
messageID"), on simulated time instead of the local stack's real seconds."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sim_support import ManualClock

from seglog_aws import redrive as redrive_module
from seglog_aws.redrive import redrive
from seglog_sim.aws.sqs import SimSQS, SimSQSClient


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock) -> SimSQS:
    return SimSQS(clock=clock, rng=random.Random(11))


def _dead_letters(sim: SimSQS, clock: ManualClock, count: int) -> tuple[str, str, set[str]]:
    """A queue whose ``count`` messages all went to its DLQ (maxReceiveCount 1, received twice)."""
    dlq = sim.create_queue("jobs-dlq")
    queue = sim.create_queue("jobs", dead_letter=dlq, max_receive_count=1)
    sqs = SimSQSClient.of(sim)
    ids = {sqs.send_message(QueueUrl=queue, MessageBody=f"job {n}")["MessageId"] for n in range(count)}
    for _ in range(2):
        while sim.receive(queue):
            pass
        clock.now += 30
    assert (0, count) == (sim.depth(queue)[0] + sim.depth(queue)[1], sim.depth(dlq)[0])
    return dlq, queue, ids


def _drain(sim: SimSQS, url: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while messages := sim.receive(url):
        got += messages
        for m in messages:
            SimSQSClient.of(sim).delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return got


def test_redrive_moves_every_dead_letter_back_with_a_new_message_id(sim: SimSQS, clock: ManualClock) -> None:
    """13 messages: more than one ReceiveMessage batch of 10; bodies intact, fresh receive counts, DLQ empty."""
    dlq, queue, old_ids = _dead_letters(sim, clock, 13)
    assert 13 == redrive(SimSQSClient.of(sim), dlq_url=dlq, queue_url=queue)
    moved = _drain(sim, queue)
    assert sorted(f"job {n}" for n in range(13)) == sorted(m["Body"] for m in moved)
    assert set() == old_ids & {m["MessageId"] for m in moved}
    assert {"1"} == {m["Attributes"]["ApproximateReceiveCount"] for m in moved}
    assert [] == sim.messages(dlq)


def test_redriven_copies_arrive_after_the_delay(sim: SimSQS, clock: ManualClock) -> None:
    dlq, queue, _ = _dead_letters(sim, clock, 1)
    assert 1 == redrive(SimSQSClient.of(sim), dlq_url=dlq, queue_url=queue, delay=120)
    assert ([], clock.now + 120) == (sim.receive(queue), sim.next_visible_at(queue))
    clock.now += 120
    assert ["job 0"] == [m["Body"] for m in sim.receive(queue)]


def test_a_redrive_that_dies_between_send_and_delete_loses_nothing(sim: SimSQS, clock: ManualClock) -> None:
    """The DLQ's copy reappears after the redrive's visibility timeout; the next redrive sends it again: a
    duplicate job (absorbed by the worker), never a lost one."""
    dlq, queue, _ = _dead_letters(sim, clock, 1)

    def dies_before_delete(operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "DeleteMessageBatch":  # a kill -9 after SendMessageBatch, as the world's crashes do
            raise KeyboardInterrupt("killed between send and delete")
        return sim.call(operation, params)

    with pytest.raises(KeyboardInterrupt):
        redrive(SimSQSClient(dies_before_delete), dlq_url=dlq, queue_url=queue)
    assert 0 == redrive(SimSQSClient.of(sim), dlq_url=dlq, queue_url=queue)  # still hidden
    clock.now += redrive_module.VISIBILITY_SECONDS
    assert 1 == redrive(SimSQSClient.of(sim), dlq_url=dlq, queue_url=queue)
    assert ["job 0", "job 0"] == [m["Body"] for m in _drain(sim, queue)]
    assert [] == sim.messages(dlq)
