"""The state of a simulated SQS standard queue, its messages, and the checks SQS makes on what is sent to it.

Times are simulated seconds (floats) from the injected clock; SQS's timestamps are epoch milliseconds as strings.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Final

from seglog_core.pipeline.backoff import SQS_MAX_VISIBILITY

#: SendMessage: "The minimum size is one character. The maximum size is 1 MiB or 1,048,576 bytes", and only
#: "#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF" (Amazon SQS API Reference,
#: SendMessage, MessageBody); outside that set SQS answers InvalidMessageContents (same page, Errors).
MAX_MESSAGE_BYTES: Final = 1_048_576
_INVALID_CHARS: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: ChangeMessageVisibility / ReceiveMessage VisibilityTimeout: at most 12 hours from the receive. One constant,
#: cited where the worker's backoff is bounded by it (seglog_core.pipeline.backoff).
MAX_VISIBILITY: Final = SQS_MAX_VISIBILITY
#: DelaySeconds: "0 to 900 (15 minutes)" (Amazon SQS Developer Guide, sqs-delay-queues).
MAX_DELAY: Final = 900
#: The SenderId of every simulated message (an IAM user id's shape; Lambda's SQS event requires the field).
SENDER_ID: Final = "AIDASEGLOGSIMULATOR1"


@dataclass(slots=True, eq=False)
class SqsMessage:
    """One message. ``receipt`` is the receipt handle of its latest receive (None: never received since it
    entered this queue); ``visible_at`` <= now means visible; ``queue`` is where it is now (a DLQ after a move)."""

    message_id: str
    body: str
    md5_of_body: str
    sent_ms: int
    visible_at: float
    queue: SimQueue
    message_attributes: dict[str, Any] | None = None
    md5_of_message_attributes: str | None = None
    receive_count: int = 0
    first_receive_ms: int | None = None
    receipt: str | None = None
    received_at: float = 0.0
    deleted: bool = False
    #: The queue the message was moved from by its RedrivePolicy (ReceiveMessage's DeadLetterQueueSourceArn).
    dead_letter_source_arn: str | None = None

    def system_attributes(self) -> dict[str, str]:
        """Every system attribute of a standard queue's message, as ReceiveMessage returns them (strings)."""
        attributes = {"ApproximateReceiveCount": str(self.receive_count), "SentTimestamp": str(self.sent_ms),
                      "SenderId": SENDER_ID,
                      "ApproximateFirstReceiveTimestamp": str(self.first_receive_ms or self.sent_ms)}
        if self.dead_letter_source_arn is not None:
            attributes["DeadLetterQueueSourceArn"] = self.dead_letter_source_arn
        return attributes


@dataclass(slots=True, eq=False)
class SimQueue:
    """A standard queue: its settings and its messages by id, in the order they arrived."""

    name: str
    url: str
    arn: str
    visibility_timeout: int
    delay_seconds: int = 0
    dead_letter: SimQueue | None = None
    max_receive_count: int | None = None
    created: int = 0
    messages: dict[str, SqsMessage] = field(default_factory=dict)

    def counts(self, now: float) -> tuple[int, int, int]:
        """(visible, in flight, delayed): GetQueueAttributes' ApproximateNumberOfMessages,
        ...NotVisible and ...Delayed. A hidden message never received since it arrived is delayed."""
        visible = in_flight = delayed = 0
        for message in self.messages.values():
            if message.visible_at <= now:
                visible += 1
            elif message.receipt is None:
                delayed += 1
            else:
                in_flight += 1
        return visible, in_flight, delayed

    def redrive_policy(self) -> str | None:
        if self.dead_letter is None:
            return None
        return ('{"deadLetterTargetArn":"' + self.dead_letter.arn + '","maxReceiveCount":'
                + str(self.max_receive_count) + "}")


def body_error(body: Any) -> tuple[str, str] | None:
    """(code, message) of SendMessage's answer to a body SQS refuses, None for a good one."""
    if not isinstance(body, str) or not body:
        return "MissingParameter", "The request must contain the parameter MessageBody."
    if (len(body) > MAX_MESSAGE_BYTES // 4 and len(body.encode()) > MAX_MESSAGE_BYTES):
        return ("InvalidParameterValue", "One or more parameters are invalid. Reason: Message must be shorter than "
                f"{MAX_MESSAGE_BYTES} bytes.")
    if _INVALID_CHARS.search(body):
        return ("InvalidMessageContents", "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | "
                "#x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
    return None


def seconds_error(name: str, value: Any, maximum: int) -> str | None:
    """The InvalidParameterValue message for an integer parameter outside 0..maximum, None when it is inside."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum:
        return None
    return f"Value {value} for parameter {name} is invalid. Reason: Must be between 0 and {maximum}."


def md5_of_body(body: str) -> str:
    return hashlib.md5(body.encode(), usedforsecurity=False).hexdigest()


def md5_of_message_attributes(attributes: dict[str, Any]) -> str:
    """MD5OfMessageAttributes (Amazon SQS Developer Guide, sqs-message-metadata, "Calculating the MD5 message
    digest for message attributes"): for each attribute in name order, its name, its data type (each as a 4-byte
    big-endian length then UTF-8 bytes), a transport byte (1 string or number, 2 binary) and its value."""
    digest = hashlib.md5(usedforsecurity=False)
    for name in sorted(attributes):
        value = attributes[name]
        data_type = str(value["DataType"])
        for text in (name, data_type):
            raw = text.encode()
            digest.update(struct.pack(">I", len(raw)) + raw)
        if data_type.split(".", 1)[0] == "Binary":
            raw = bytes(value["BinaryValue"])
            digest.update(b"\x02" + struct.pack(">I", len(raw)) + raw)
        else:
            raw = str(value["StringValue"]).encode()
            digest.update(b"\x01" + struct.pack(">I", len(raw)) + raw)
    return digest.hexdigest()


def attributes_error(attributes: Any) -> str | None:
    """Why SQS refuses these MessageAttributes (at most 10, each with a DataType and a value), None if it takes
    them (Amazon SQS Developer Guide, sqs-message-metadata, "Message attribute components")."""
    if not isinstance(attributes, dict) or len(attributes) > 10:
        return "Number of message attributes [{}] exceeds the allowed maximum [10].".format(
            len(attributes) if isinstance(attributes, dict) else "?")
    for name, value in attributes.items():
        if not isinstance(value, dict) or not value.get("DataType"):
            return f"The message attribute '{name}' must contain a non-empty attribute type."
        if "StringValue" not in value and "BinaryValue" not in value:
            return f"The message attribute '{name}' must contain a non-empty message attribute value."
    return None


def attributes_size(attributes: dict[str, Any] | None) -> int:
    """Bytes the attributes add to the message size limit (names, types and values all count)."""
    if not attributes:
        return 0
    size = 0
    for name, value in attributes.items():
        size += len(name.encode()) + len(str(value.get("DataType", "")).encode())
        size += len(value["BinaryValue"]) if "BinaryValue" in value else len(str(value.get("StringValue")).encode())
    return size
