"""Redrive: move messages from the snapshot queue's dead-letter queue back to the queue (DESIGN §7).

Each message is received from the DLQ, its body (and message attributes) sent to the source queue, and only
then deleted from the DLQ. The copy is a new message with a new messageId and a fresh receive count, as an SQS
redrive makes it ("All redriven messages are considered new messages, and are assigned a new messageID and
enqueueTime": Amazon SQS Developer Guide, sqs-configure-dead-letter-queue-redrive). A redrive that dies between
the send and the delete leaves the original in the DLQ, visible again after :data:`VISIBILITY_SECONDS`: the
next redrive sends it once more, a duplicate job the snapshot worker absorbs (DESIGN §5 step 2). Nothing is lost.

Why a loop of our own rather than StartMessageMoveTask: LocalStack 2026.3 implements the move task, but it puts
the DLQ's message into the target queue as it is, with its original MessageId (localstack/services/sqs/
provider.py, MessageMoveTaskManager._run; seen on 2026-11-22: the redriven message came back with the id it had
before), where AWS assigns a new one; a test on the local stack would then
never see the new messageId the worker's takeover rule exists for. The move task is also asynchronous (it is
polled with ListMessageMoveTasks), cannot stop after ``limit`` messages, and accepts only a queue that another
queue's RedrivePolicy names. This loop behaves the same on AWS and locally and needs only sqs:ReceiveMessage and
sqs:DeleteMessage on the DLQ and sqs:SendMessage on the queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import structlog

from seglog_aws.errors import translate
from seglog_core import errors

log = structlog.get_logger("seglog.redrive")

#: Seconds a received DLQ message stays hidden while it is copied: if the redrive dies, it reappears after this.
VISIBILITY_SECONDS: Final = 30
#: Long polling: a short-polled ReceiveMessage asks a subset of SQS's servers and may answer empty while messages
#: remain ("false empty responses": Amazon SQS Developer Guide, best-practices-setting-up-long-polling), so an
#: empty answer would end the redrive early. The last, empty receive waits this long (1 s is the minimum).
WAIT_SECONDS: Final = 1
#: SendMessageBatch, DeleteMessageBatch and ReceiveMessage take at most 10 messages.
BATCH: Final = 10


class RedriveError(errors.SeglogError):
    """Some messages could not be moved. ``moved`` were; the rest are still in the DLQ (or, for a failed delete,
    also in the queue: a duplicate the worker absorbs)."""

    def __init__(self, moved: int, failures: list[str], *, what: str) -> None:
        self.moved = moved
        self.failures = failures
        super().__init__(
            f"redrive moved {moved} messages, then {len(failures)} could not be {what} ({'; '.join(failures[:3])}); "
            f"the DLQ shows them again within {VISIBILITY_SECONDS} s: run the redrive again then (a message moved "
            "twice is absorbed by the worker as a duplicate)")


def redrive(sqs: Any, *, dlq_url: str, queue_url: str, limit: int | None = None, delay: int = 0) -> int:
    """Move up to ``limit`` messages (all, by default) from ``dlq_url`` to ``queue_url``; returns how many moved.

    Args:
        sqs: a boto3 SQS client.
        delay: seconds each copy stays invisible in the queue (SQS DelaySeconds, at most 900). Give the snapshot
            worker's takeover timeout: a parked job may be the claimer its pending item names, and its copy takes
            the claim over only once the claim is stale — a copy that arrives while the claim still looks live is
            deleted as a duplicate (DESIGN §5 step 2), and the job is gone. Delayed, it always arrives late enough.

    Raises:
        RedriveError: a send or a delete failed for some messages (those moved so far stay moved).
        InvalidInputError: the two queues are the same (the loop would never end).
    """
    if dlq_url == queue_url:
        raise errors.InvalidInputError(f"the DLQ and the queue are the same ({queue_url}): name the source queue")
    moved = 0
    while limit is None or moved < limit:
        want = BATCH if limit is None else min(BATCH, limit - moved)
        messages = _call("ReceiveMessage", sqs.receive_message, QueueUrl=dlq_url, MaxNumberOfMessages=want,
                         VisibilityTimeout=VISIBILITY_SECONDS, WaitTimeSeconds=WAIT_SECONDS,
                         MessageAttributeNames=["All"]).get("Messages", [])
        if not messages:
            break
        sent = _call("SendMessageBatch", sqs.send_message_batch, QueueUrl=queue_url,
                     Entries=[_copy(str(index), m, delay) for index, m in enumerate(messages)])
        new_ids = {s["Id"]: s["MessageId"] for s in sent.get("Successful", [])}
        done = [(index, m) for index, m in enumerate(messages) if str(index) in new_ids]
        for index, m in done:
            log.info("message redriven", message_id=m["MessageId"], new_message_id=new_ids[str(index)])
        if done:
            deleted = _call("DeleteMessageBatch", sqs.delete_message_batch, QueueUrl=dlq_url,
                            Entries=[{"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in done])
            moved += len(done)
            if deleted.get("Failed"):
                raise RedriveError(moved, _failures(deleted, messages), what="deleted from the DLQ after sending")
        if sent.get("Failed"):
            raise RedriveError(moved, _failures(sent, messages), what="sent to the queue")
    log.info("redrive finished", moved=moved, dlq_url=dlq_url, queue_url=queue_url)
    return moved


#: SQS's largest DelaySeconds (Amazon SQS Developer Guide, sqs-delay-queues).
MAX_DELAY: Final = 900


def _copy(entry_id: str, message: dict[str, Any], delay: int) -> dict[str, Any]:
    """A SendMessageBatch entry carrying a received message's body and attributes (not its system attributes)."""
    entry: dict[str, Any] = {"Id": entry_id, "MessageBody": message["Body"]}
    if delay > 0:
        entry["DelaySeconds"] = min(delay, MAX_DELAY)
    if message.get("MessageAttributes"):
        entry["MessageAttributes"] = message["MessageAttributes"]
    return entry


def _failures(response: dict[str, Any], messages: list[dict[str, Any]]) -> list[str]:
    return [f"{messages[int(f['Id'])]['MessageId']}: {f.get('Code')} {f.get('Message', '')}".strip()
            for f in response.get("Failed", [])]


def _call(operation: str, method: Callable[..., dict[str, Any]], **params: Any) -> dict[str, Any]:
    try:
        return method(**params)
    except Exception as exc:
        translated = translate(exc, what=f"SQS {operation}", write=operation != "ReceiveMessage")
        if translated is exc:
            raise
        raise translated from exc
