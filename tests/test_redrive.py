"""Redrive (seglog_aws.redrive) on the real local stack's SQS: what an SQS DLQ redrive does, message by message
(Amazon SQS Developer Guide, sqs-configure-dead-letter-queue-redrive: redriven messages are new messages with a
new messageID)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from seglog_aws import redrive as redrive_module
from seglog_aws.clients import client, local_session
from seglog_aws.redrive import redrive
from seglog_cli.main import cli
from seglog_plugin.resources import local_env
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack


@pytest.fixture
def sqs(deployment: LocalDeployment) -> Any:
    return client("sqs", session=local_session(deployment.region), endpoint_url=deployment.endpoints["sqs"])


@pytest.fixture
def queues(sqs: Any) -> Iterator[tuple[str, str]]:
    """A DLQ and a queue of this test's own."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    urls = [sqs.create_queue(QueueName=f"{name}-{kind}")["QueueUrl"] for kind in ("dlq", "q")]
    yield urls[0], urls[1]
    for url in urls:
        sqs.delete_queue(QueueUrl=url)


def _send(sqs: Any, url: str, bodies: list[str]) -> set[str]:
    return {sqs.send_message(QueueUrl=url, MessageBody=b)["MessageId"] for b in bodies}


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message visible in ``url`` (received and deleted)."""
    got: list[dict[str, Any]] = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                          VisibilityTimeout=30).get("Messages", []):
        got += messages
        for m in messages:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return got


def test_redrive_moves_every_message_to_the_queue_with_a_new_message_id(sqs: Any, queues: tuple[str, str]) -> None:
    """More than one batch moves, bodies intact, the DLQ ends empty; a message keeping its old id would make the
    local stack hide the very case (a new messageId) the worker's takeover must handle."""
    dlq, queue = queues
    bodies = [f'{{"n": {n}}}' for n in range(13)]
    old_ids = _send(sqs, dlq, bodies)
    assert 13 == redrive(sqs, dlq_url=dlq, queue_url=queue)
    moved = _drain(sqs, queue)
    assert sorted(bodies) == sorted(m["Body"] for m in moved)
    assert set() == old_ids & {m["MessageId"] for m in moved}
    assert [] == _drain(sqs, dlq)


def test_redriven_jobs_arrive_after_the_delay(sqs: Any, queues: tuple[str, str]) -> None:
    """A copy reaches the queue only once the takeover time has passed, so it finds its dead claimer's claim stale
    (a copy arriving at once could meet the claim still looking live and be deleted as a duplicate)."""
    dlq, queue = queues
    _send(sqs, dlq, ["late"])
    # Timed from before the redrive: the copy is sent inside it, and the delay runs from then (timed from its return,
    # a loaded machine's slow delete made the 3 s look like 1.998 s: a CI failure with three test workers).
    before = time.monotonic()
    assert 1 == redrive(sqs, dlq_url=dlq, queue_url=queue, delay=3)
    early = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
    later = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10).get("Messages", [])
    assert ([], ["late"]) == (early, [m["Body"] for m in later])
    assert time.monotonic() - before >= 2.5


def test_redrive_stops_after_its_limit_and_leaves_the_rest_in_the_dlq(sqs: Any, queues: tuple[str, str]) -> None:
    dlq, queue = queues
    _send(sqs, dlq, [f"job {n}" for n in range(5)])
    assert 3 == redrive(sqs, dlq_url=dlq, queue_url=queue, limit=3)
    assert (3, 2) == (len(_drain(sqs, queue)), len(_drain(sqs, dlq)))


class _DiesBeforeDelete:
    """An SQS client whose redrive dies after SendMessageBatch, before DeleteMessageBatch (a kill -9 there)."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs

    def __getattr__(self, name: str) -> Any:
        if name == "delete_message_batch":
            raise KeyboardInterrupt("killed between send and delete")
        return getattr(self._sqs, name)


def test_a_redrive_that_dies_between_send_and_delete_loses_nothing(sqs: Any, queues: tuple[str, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """At worst a duplicate: the message stays in the DLQ and the next redrive sends it again."""
    dlq, queue = queues
    monkeypatch.setattr(redrive_module, "VISIBILITY_SECONDS", 1)
    _send(sqs, dlq, ["the only job"])
    with pytest.raises(KeyboardInterrupt):
        redrive(_DiesBeforeDelete(sqs), dlq_url=dlq, queue_url=queue)
    time.sleep(1.5)  # the DLQ copy becomes visible again
    assert 1 == redrive(sqs, dlq_url=dlq, queue_url=queue)
    assert ["the only job", "the only job"] == [m["Body"] for m in _drain(sqs, queue)]
    assert [] == _drain(sqs, dlq)


def test_redrive_refuses_the_same_queue_as_source_and_destination(sqs: Any, queues: tuple[str, str]) -> None:
    """Moving a queue onto itself would loop for ever."""
    dlq, _ = queues
    with pytest.raises(ValueError, match="the same"):
        redrive(sqs, dlq_url=dlq, queue_url=dlq)


def test_seglog_redrive_moves_the_dlq_back_and_says_what_is_left(deployment: LocalDeployment, sqs: Any,
                                                                  queues: tuple[str, str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The command works on the queues the environment names (as the stack's outputs set them) and its summary
    tells how many moved and how many are still in the DLQ."""
    dlq, queue = queues
    for key, value in {**local_env(deployment), "SEGLOG_QUEUE_URL": queue, "SEGLOG_DLQ_URL": dlq}.items():
        monkeypatch.setenv(key, value)
    _send(sqs, dlq, ["a", "b", "c"])
    runner = CliRunner()
    first = runner.invoke(cli, ["redrive", "--limit", "2", "--delay", "0"], catch_exceptions=False)
    assert (0, "moved 2 snapshot jobs from the dead-letter queue to the snapshot queue (new messages, visible in "
               "0 s); 1 left in the dead-letter queue\n") == (first.exit_code, first.stdout.split("  those left")[0])
    second = runner.invoke(cli, ["redrive", "--json", "--delay", "0"], catch_exceptions=False)
    assert (0, {"moved": 1, "left_in_dlq": 0}) == (
        second.exit_code, {k: v for k, v in json.loads(second.stdout).items() if k in ("moved", "left_in_dlq")})
    assert ["a", "b", "c"] == sorted(m["Body"] for m in _drain(sqs, queue))
