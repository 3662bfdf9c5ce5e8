"""SimSQS: standard SQS queues in memory, under a simulated clock, every choice drawn from one seeded rng.

What it reproduces (Amazon SQS Developer Guide and API Reference, cited where each rule is applied):

* a receive hides each message for the visibility timeout, bumps ApproximateReceiveCount and issues a new
  receipt handle; a standard queue returns messages in no particular order (here: an order drawn from ``rng``);
* a message received more than its queue's RedrivePolicy maxReceiveCount moves to the dead-letter queue, on the
  receive that would exceed the count, keeping its MessageId (the redrive back gives new ones: seglog's own
  redrive sends copies, see seglog_aws.redrive);
* a visibility timeout that runs out mid-run: :meth:`SimSQS.receive` with ``in_flight_again`` also delivers a
  message already in flight (a new receipt handle, its receive count one higher), as SQS does once it is visible;
* stale receipt handles answer as SQS does for standard queues (:meth:`SimSQS._stale_delete`).

It injects no faults of its own and reads no wall clock: the simulator's world wraps :meth:`SimSQS.call`.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from typing import Any, Final

from seglog_sim.aws import sqs_queue as q
from seglog_sim.aws.facade import SimClient, SimService, client_error
from seglog_sim.aws.sqs_batch import batch
from seglog_sim.aws.sqs_queue import SimQueue, SqsMessage

#: The legacy (query protocol) error codes boto3 reports for SQS, which seglog_aws matches on.
NON_EXISTENT_QUEUE: Final = "AWS.SimpleQueueService.NonExistentQueue"
MESSAGE_NOT_INFLIGHT: Final = "AWS.SimpleQueueService.MessageNotInflight"
RECEIPT_HANDLE_IS_INVALID: Final = "ReceiptHandleIsInvalid"
#: What a stale receipt handle's DeleteMessage does on a standard queue (see :meth:`SimSQS._stale_delete`).
STALE_DELETES, STALE_IGNORED, STALE_REFUSED = "deletes", "ignored", "refused"
_STALE_OUTCOMES: Final = (STALE_DELETES, STALE_IGNORED, STALE_REFUSED)
#: ReceiveMessage: MaxNumberOfMessages 1..10, WaitTimeSeconds 0..20 (Amazon SQS API Reference, ReceiveMessage).
MAX_RECEIVE: Final = 10
MAX_WAIT: Final = 20


class SimSQS(SimService):
    """Standard queues of one account and region.

    Args:
        clock: simulated time in seconds.
        rng: every id, receipt handle, receive order and stale-handle outcome is drawn from it.
        stale_delete: weights of the three things a DeleteMessage with an older receipt handle may do
            (deletes the message, succeeds without deleting, InvalidParameterValue); see :meth:`_stale_delete`.
    """

    def __init__(self, *, clock: Callable[[], float], rng: random.Random, region: str = "us-east-1",
                 account: str = "123456789012", stale_delete: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> None:
        self._clock = clock
        self._rng = rng
        self.region = region
        self.account = account
        self.stale_delete = stale_delete
        self._queues: dict[str, SimQueue] = {}  # by URL
        self._names: dict[str, SimQueue] = {}
        #: Every receipt handle ever issued -> the queue it was issued by and its message.
        self._handles: dict[str, tuple[SimQueue, SqsMessage]] = {}
        #: Called after every call and :meth:`receive` (a message may have come, gone or moved to the DLQ): what
        #: the report's queue depths read (:mod:`seglog_sim.series`). It must only look: no draws, no changes.
        self.watch: Callable[[], None] | None = None
        self._operations: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "CreateQueue": self._create_queue, "DeleteQueue": self._delete_queue, "GetQueueUrl": self._get_queue_url,
            "ListQueues": self._list_queues, "GetQueueAttributes": self._get_queue_attributes,
            "PurgeQueue": self._purge_queue, "SendMessage": self._send_message, "ReceiveMessage": self._receive_message,
            "DeleteMessage": self._delete_message, "ChangeMessageVisibility": self._change_message_visibility,
            "SendMessageBatch": self._send_message_batch, "DeleteMessageBatch": self._delete_message_batch,
            "ChangeMessageVisibilityBatch": self._change_message_visibility_batch,
        }

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().call(operation, params)
        finally:
            if self.watch is not None:
                self.watch()

    # ------------------------------------------------------------------------------------------ the simulator's API

    def create_queue(self, name: str, *, visibility_timeout: int = 30, dead_letter: str | None = None,
                     max_receive_count: int | None = None) -> str:
        """Create a standard queue (or return the URL of an existing one); ``dead_letter`` names an existing queue
        (by name, URL or ARN) that messages move to once received more than ``max_receive_count`` (default 1000)
        times. Returns the queue's URL."""
        attributes = {"VisibilityTimeout": str(visibility_timeout)}
        if max_receive_count is not None and dead_letter is None:
            raise ValueError("max_receive_count needs a dead_letter queue to move messages to")
        if dead_letter is not None:
            target = self._names.get(dead_letter) or self._queues.get(dead_letter) or self._by_arn(dead_letter)
            if target is None:
                raise ValueError(f"dead-letter queue {dead_letter!r} does not exist: create it first")
            attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": target.arn,
                                                      "maxReceiveCount": max_receive_count or 1000})
        return str(self._create_queue({"QueueName": name, "Attributes": attributes})["QueueUrl"])

    def receive(self, queue_url: str, *, max_messages: int = 10, in_flight_again: bool = False
                ) -> list[dict[str, Any]]:
        """ReceiveMessage with every attribute, for the simulated Lambda event source mapping: up to
        ``max_messages`` visible messages in an order drawn from the rng and, with ``in_flight_again``, one
        message already in flight delivered again (with a new receipt handle and a bumped receive count)."""
        queue = self._queues[queue_url]
        now = self._clock()
        messages = self._take(queue, now, max_messages, queue.visibility_timeout)
        if in_flight_again:
            in_flight = [m for m in queue.messages.values()
                         if m.visible_at > now and m.receipt is not None and m not in messages]
            if in_flight:
                copy = self._rng.choice(in_flight)
                if self._deliver(queue, copy, now, queue.visibility_timeout):
                    messages.append(copy)
        if self.watch is not None:
            self.watch()
        return [self._shape(m, None, None) for m in messages]

    def size(self, queue_url: str) -> int:
        """Messages in the queue, visible, in flight or delayed (the three ApproximateNumberOf... added up): it
        changes only when a call or a receive sends, deletes, purges or moves one."""
        return len(self._queues[queue_url].messages)

    def depth(self, queue_url: str) -> tuple[int, int]:
        """(visible, hidden): hidden counts messages in flight and messages still delayed."""
        visible, in_flight, delayed = self._queues[queue_url].counts(self._clock())
        return visible, in_flight + delayed

    def messages(self, queue_url: str) -> list[dict[str, Any]]:
        """Every message of the queue, in arrival order, for checks and reports."""
        now = self._clock()
        return [{"MessageId": m.message_id, "Body": m.body, "ApproximateReceiveCount": m.receive_count,
                 "SentTimestamp": m.sent_ms, "VisibleAt": m.visible_at, "Visible": m.visible_at <= now,
                 "ReceiptHandle": m.receipt, "DeadLetterQueueSourceArn": m.dead_letter_source_arn}
                for m in self._queues[queue_url].messages.values()]

    def set_max_receive_count(self, queue_url: str, count: int) -> None:
        """Change the queue's RedrivePolicy maxReceiveCount (what SetQueueAttributes would do)."""
        queue = self._queues[queue_url]
        if queue.dead_letter is None:
            raise ValueError("the queue has no dead-letter queue")
        queue.max_receive_count = count

    def next_visible_at(self, queue_url: str) -> float | None:
        """The earliest time a hidden (in flight or delayed) message becomes visible; None if none is hidden."""
        now = self._clock()
        hidden = [m.visible_at for m in self._queues[queue_url].messages.values() if m.visible_at > now]
        return min(hidden) if hidden else None

    # ------------------------------------------------------------------------------------------ queues

    def _queue(self, operation: str, params: dict[str, Any]) -> SimQueue:
        queue = self._queues.get(params["QueueUrl"])
        if queue is None:
            raise client_error(operation, NON_EXISTENT_QUEUE, "The specified queue does not exist.")
        return queue

    def _by_arn(self, arn: str) -> SimQueue | None:
        return next((queue for queue in self._queues.values() if queue.arn == arn), None)

    def _create_queue(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params["QueueName"]
        attributes = {k: str(v) for k, v in (params.get("Attributes") or {}).items()}
        if name.endswith(".fifo") or attributes.get("FifoQueue") == "true":
            raise NotImplementedError("SimSQS models standard queues only (seglog uses no FIFO queue)")
        if not (0 < len(name) <= 80 and name.replace("-", "").replace("_", "").isalnum() and name.isascii()):
            raise client_error("CreateQueue", "InvalidParameterValue", "Can only include alphanumeric characters, "
                               "hyphens, or underscores. 1 to 80 in length")
        queue = self._names.get(name)
        if queue is not None:  # CreateQueue is idempotent for the same attributes (API Reference, CreateQueue)
            current = self._attributes(queue, ["All"])
            if any(current.get(k) != v for k, v in attributes.items()):
                raise client_error("CreateQueue", "QueueAlreadyExists",
                                   f"A queue already exists with the same name and a different value for {name}")
            return {"QueueUrl": queue.url}
        visibility = int(attributes.get("VisibilityTimeout", "30"))
        delay = int(attributes.get("DelaySeconds", "0"))
        for what, value, maximum in (("VisibilityTimeout", visibility, q.MAX_VISIBILITY),
                                     ("DelaySeconds", delay, q.MAX_DELAY)):
            if (error := q.seconds_error(what, value, maximum)) is not None:
                raise client_error("CreateQueue", "InvalidAttributeValue", error)
        queue = SimQueue(name=name, url=f"https://sqs.{self.region}.amazonaws.com/{self.account}/{name}",
                         arn=f"arn:aws:sqs:{self.region}:{self.account}:{name}", visibility_timeout=visibility,
                         delay_seconds=delay, created=int(self._clock()))
        if "RedrivePolicy" in attributes:
            policy = json.loads(attributes["RedrivePolicy"])
            queue.dead_letter = self._by_arn(str(policy.get("deadLetterTargetArn")))
            queue.max_receive_count = int(policy.get("maxReceiveCount", 0))
            if queue.dead_letter is None or not 1 <= queue.max_receive_count <= 1000:
                raise client_error("CreateQueue", "InvalidParameterValue", "Value for parameter RedrivePolicy is "
                                   "invalid. Reason: Dead letter target does not exist or maxReceiveCount is not "
                                   "between 1 and 1000.")
        self._queues[queue.url] = self._names[name] = queue
        return {"QueueUrl": queue.url}

    def _delete_queue(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("DeleteQueue", params)
        del self._queues[queue.url], self._names[queue.name]
        return {}

    def _get_queue_url(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._names.get(params["QueueName"])
        if queue is None:
            raise client_error("GetQueueUrl", NON_EXISTENT_QUEUE, "The specified queue does not exist.")
        return {"QueueUrl": queue.url}

    def _list_queues(self, params: dict[str, Any]) -> dict[str, Any]:
        prefix = params.get("QueueNamePrefix", "")
        urls = [queue.url for queue in self._queues.values() if queue.name.startswith(prefix)][:1000]
        return {"QueueUrls": urls} if urls else {}

    def _attributes(self, queue: SimQueue, names: list[str]) -> dict[str, str]:
        """GetQueueAttributes' answer (Amazon SQS API Reference, GetQueueAttributes: the approximate counts)."""
        visible, in_flight, delayed = queue.counts(self._clock())
        every = {"QueueArn": queue.arn, "ApproximateNumberOfMessages": str(visible),
                 "ApproximateNumberOfMessagesNotVisible": str(in_flight),
                 "ApproximateNumberOfMessagesDelayed": str(delayed), "CreatedTimestamp": str(queue.created),
                 "VisibilityTimeout": str(queue.visibility_timeout), "DelaySeconds": str(queue.delay_seconds),
                 "MaximumMessageSize": str(q.MAX_MESSAGE_BYTES), "ReceiveMessageWaitTimeSeconds": "0"}
        if (policy := queue.redrive_policy()) is not None:
            every["RedrivePolicy"] = policy
        if "All" in names:
            return every
        unknown = [name for name in names if name not in every and name != "RedrivePolicy"]
        if unknown:
            raise client_error("GetQueueAttributes", "InvalidAttributeName", f"Unknown Attribute {unknown[0]}.")
        return {name: every[name] for name in names if name in every}

    def _get_queue_attributes(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("GetQueueAttributes", params)
        attributes = self._attributes(queue, list(params.get("AttributeNames") or []))
        return {"Attributes": attributes} if attributes else {}

    def _purge_queue(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("PurgeQueue", params)
        for message in queue.messages.values():
            message.deleted = True
        queue.messages.clear()
        return {}

    # ------------------------------------------------------------------------------------------ messages

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _send(self, operation: str, queue: SimQueue, entry: dict[str, Any]) -> dict[str, Any]:
        """SendMessage of one message (one entry of SendMessageBatch): its checks, then the message."""
        body = entry["MessageBody"]
        if (refused := q.body_error(body)) is not None:
            raise client_error(operation, *refused)
        delay = entry.get("DelaySeconds", queue.delay_seconds)
        if (error := q.seconds_error("DelaySeconds", delay, q.MAX_DELAY)) is not None:
            raise client_error(operation, "InvalidParameterValue", error)
        attributes = entry.get("MessageAttributes") or None
        if attributes is not None and (error := q.attributes_error(attributes)) is not None:
            raise client_error(operation, "InvalidParameterValue", error)
        if attributes is not None and len(body.encode()) + q.attributes_size(attributes) > q.MAX_MESSAGE_BYTES:
            raise client_error(operation, "InvalidParameterValue", "One or more parameters are invalid. Reason: "
                               f"Message must be shorter than {q.MAX_MESSAGE_BYTES} bytes.")
        now = self._clock()
        message = SqsMessage(message_id=self._new_id(), body=body, md5_of_body=q.md5_of_body(body),
                             sent_ms=int(now * 1000), visible_at=now + delay, queue=queue,
                             message_attributes=attributes)
        answer = {"MD5OfMessageBody": message.md5_of_body, "MessageId": message.message_id}
        if attributes is not None:
            message.md5_of_message_attributes = answer["MD5OfMessageAttributes"] = q.md5_of_message_attributes(
                attributes)
        queue.messages[message.message_id] = message
        return answer

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._send("SendMessage", self._queue("SendMessage", params), params)

    def _take(self, queue: SimQueue, now: float, max_messages: int, visibility: int) -> list[SqsMessage]:
        """Receive up to ``max_messages`` visible messages: a standard queue promises no order ("best-effort
        ordering": Amazon SQS Developer Guide, standard-queues), so the order is drawn from the rng."""
        taken: list[SqsMessage] = []
        while len(taken) < max_messages:
            visible = [m for m in queue.messages.values() if m.visible_at <= now]
            if not visible:
                break
            chosen = self._rng.sample(visible, min(max_messages - len(taken), len(visible)))
            delivered = [m for m in chosen if self._deliver(queue, m, now, visibility)]
            taken += delivered
            if len(delivered) == len(chosen):
                break  # none moved to the dead-letter queue: no more to look for
        return taken

    def _deliver(self, queue: SimQueue, message: SqsMessage, now: float, visibility: int) -> bool:
        """One receive of ``message``; False when it moved to the dead-letter queue instead.

        "When the ReceiveCount for a message exceeds the maxReceiveCount for a queue, Amazon SQS moves the message
        to a dead-letter queue" (Amazon SQS Developer Guide, sqs-dead-letter-queues): the receive that would make
        the count exceed it moves the message, which keeps its id, body and receive count (and its enqueue time:
        "the enqueue timestamp of the message is not changed" for standard queues)."""
        if queue.max_receive_count is not None and message.receive_count >= queue.max_receive_count:
            target = queue.dead_letter
            assert target is not None  # a queue has max_receive_count only with a dead-letter queue
            del queue.messages[message.message_id]
            message.queue, message.dead_letter_source_arn = target, queue.arn
            message.visible_at, message.receipt = now, None
            target.messages[message.message_id] = message
            return False
        # "Amazon SQS Visibility timeout": hidden for the timeout; each receive gets a new receipt handle.
        message.receive_count += 1
        if message.first_receive_ms is None:
            message.first_receive_ms = int(now * 1000)
        message.visible_at, message.received_at = now + visibility, now
        message.receipt = handle = self._new_id()
        self._handles[handle] = (queue, message)
        return True

    def _shape(self, message: SqsMessage, system: list[str] | None, custom: list[str] | None) -> dict[str, Any]:
        """A message as ReceiveMessage returns it; ``system`` / ``custom`` select the attributes (None: all)."""
        out: dict[str, Any] = {"MessageId": message.message_id, "ReceiptHandle": message.receipt,
                               "MD5OfBody": message.md5_of_body, "Body": message.body}
        attributes = message.system_attributes()
        if system is None or "All" in system:
            out["Attributes"] = attributes
        elif chosen := {k: v for k, v in attributes.items() if k in system}:
            out["Attributes"] = chosen
        if message.message_attributes:
            every = custom is None or "All" in custom or ".*" in custom
            picked = message.message_attributes if every else {
                k: v for k, v in message.message_attributes.items()
                if any(k == n or (n.endswith(".*") and k.startswith(n[:-1])) for n in custom or [])}
            if picked:
                out["MessageAttributes"] = picked
                out["MD5OfMessageAttributes"] = (message.md5_of_message_attributes if every
                                                 else q.md5_of_message_attributes(picked))
        return out

    def _receive_message(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("ReceiveMessage", params)
        max_messages = params.get("MaxNumberOfMessages", 1)
        visibility = params.get("VisibilityTimeout", queue.visibility_timeout)
        for name, value, low, high in (("MaxNumberOfMessages", max_messages, 1, MAX_RECEIVE),
                                       ("VisibilityTimeout", visibility, 0, q.MAX_VISIBILITY),
                                       ("WaitTimeSeconds", params.get("WaitTimeSeconds", 0), 0, MAX_WAIT)):
            if not (isinstance(value, int) and low <= value <= high):
                raise client_error("ReceiveMessage", "InvalidParameterValue",
                                   f"Value {value} for parameter {name} is invalid. Reason: Must be between {low} "
                                   f"and {high}, if provided.")
        system = list(params.get("MessageSystemAttributeNames") or params.get("AttributeNames") or [])
        custom = list(params.get("MessageAttributeNames") or [])
        messages = self._take(queue, self._clock(), max_messages, visibility)
        return {"Messages": [self._shape(m, system, custom) for m in messages]} if messages else {}

    # ------------------------------------------------------------------------------------------ receipt handles

    def _handle(self, operation: str, queue: SimQueue, handle: str) -> tuple[SqsMessage, str]:
        """The message a receipt handle names and how: "latest", "stale" (received again since) or "gone"
        (deleted, or moved to the dead-letter queue). A handle this queue never issued is ReceiptHandleIsInvalid
        (Amazon SQS API Reference, DeleteMessage, Errors)."""
        issued = self._handles.get(handle)
        if issued is None or issued[0] is not queue:
            raise client_error(operation, RECEIPT_HANDLE_IS_INVALID,
                               f'The input receipt handle "{handle}" is not a valid receipt handle.', status=404)
        message = issued[1]
        if message.deleted or message.queue is not queue:
            return message, "gone"
        return message, "latest" if message.receipt == handle else "stale"

    def _delete(self, operation: str, queue: SimQueue, entry: dict[str, Any]) -> dict[str, Any]:
        handle = entry["ReceiptHandle"]
        message, state = self._handle(operation, queue, handle)
        if state == "stale":
            outcome = self._stale_delete()
            if outcome == STALE_REFUSED:
                raise client_error(operation, "InvalidParameterValue", f'Value "{handle}" for parameter '
                                   "ReceiptHandle is invalid. Reason: The receipt handle has expired.")
            if outcome == STALE_IGNORED:
                return {}
        if state != "gone":  # deleting a deleted message succeeds: DeleteMessage is idempotent
            del queue.messages[message.message_id]
            message.deleted = True
        return {}

    def _stale_delete(self) -> str:
        """What DeleteMessage with an older receipt handle does on a standard queue, drawn from ``stale_delete``.

        AWS documents all three: "if you don't provide the most recently received receipt handle for the message,
        the request will still succeed, but the message might not be deleted" (Amazon SQS API Reference,
        DeleteMessage), and "For standard queues, you might sometimes succeed in using an older receipt handle
        [...] Using an older receipt handle can result in an error" InvalidParameterValue "The receipt handle has
        expired" (AWS re:Post Knowledge Center, sqs-receipt-handle-error)."""
        return self._rng.choices(_STALE_OUTCOMES, weights=self.stale_delete)[0]

    def _delete_message(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._delete("DeleteMessage", self._queue("DeleteMessage", params), params)

    def _change_visibility(self, operation: str, queue: SimQueue, entry: dict[str, Any]) -> dict[str, Any]:
        """ChangeMessageVisibility (Amazon SQS API Reference): the new timeout counts from now; only the latest
        receipt handle of a message in flight may change it, and never past 12 hours after its receive."""
        handle, seconds = entry["ReceiptHandle"], entry["VisibilityTimeout"]
        if (error := q.seconds_error("VisibilityTimeout", seconds, q.MAX_VISIBILITY)) is not None:
            raise client_error(operation, "InvalidParameterValue", error)
        message, state = self._handle(operation, queue, handle)
        if state != "latest":
            raise client_error(operation, "InvalidParameterValue", f'Value "{handle}" for parameter ReceiptHandle '
                               "is invalid. Reason: The receipt handle has expired.")
        now = self._clock()
        if message.visible_at <= now:
            raise client_error(operation, MESSAGE_NOT_INFLIGHT, "The message referred to isn't in flight.")
        if now + seconds > message.received_at + q.MAX_VISIBILITY:
            raise client_error(operation, "InvalidParameterValue", f"Value {seconds} for parameter "
                               "VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is "
                               "beyond the limit [43200 seconds]")
        message.visible_at = now + seconds
        return {}

    def _change_message_visibility(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._change_visibility("ChangeMessageVisibility", self._queue("ChangeMessageVisibility", params),
                                       params)

    # ------------------------------------------------------------------------------------------ batches

    def _send_message_batch(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("SendMessageBatch", params)
        return batch("SendMessageBatch", params["Entries"], lambda e: self._send("SendMessageBatch", queue, e),
                     size=lambda e: len(str(e.get("MessageBody", "")).encode())
                     + q.attributes_size(e.get("MessageAttributes")))

    def _delete_message_batch(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("DeleteMessageBatch", params)
        return batch("DeleteMessageBatch", params["Entries"], lambda e: self._delete("DeleteMessageBatch", queue, e))

    def _change_message_visibility_batch(self, params: dict[str, Any]) -> dict[str, Any]:
        queue = self._queue("ChangeMessageVisibilityBatch", params)
        return batch("ChangeMessageVisibilityBatch", params["Entries"],
                     lambda e: self._change_visibility("ChangeMessageVisibilityBatch", queue, e))


class SimSQSClient(SimClient):
    """A boto3-shaped SQS client over ``call`` (a :class:`SimSQS`'s, or the world's wrapper of it)."""

    OPERATIONS = ("CreateQueue", "DeleteQueue", "GetQueueUrl", "ListQueues", "GetQueueAttributes", "PurgeQueue",
                  "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "SendMessageBatch",
                  "DeleteMessageBatch", "ChangeMessageVisibilityBatch")

    @classmethod
    def of(cls, sim: SimSQS) -> SimSQSClient:
        return cls(sim.call)

