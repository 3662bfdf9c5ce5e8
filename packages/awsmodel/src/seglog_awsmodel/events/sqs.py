"""SQS: turn messages received with boto3 into the event Lambda sends to a queue's function.

Lambda receives messages with ReceiveMessage and passes them on with its own spelling: camelCase record keys,
message attributes with lowercase value keys and binary values in base64. Receive with
``MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"]`` so every field Lambda sends is there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from seglog_awsmodel.events._wire import to_base64

# The shape of one record, from "Example standard queue message event" of
# https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html (keys in that order):
#   {"messageId": "059f36b4-87a3-44ab-83d2-661975830a7d", "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...",
#    "body": "Test message.",
#    "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1545082649183",
#                   "SenderId": "AIDAIENQZJOLO23YVJ4VO", "ApproximateFirstReceiveTimestamp": "1545082649185"},
#    "messageAttributes": {"myAttribute": {"stringValue": "myValue", "stringListValues": [],
#                                          "binaryListValues": [], "dataType": "String"}},
#    "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3", "eventSource": "aws:sqs",
#    "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:my-queue", "awsRegion": "us-east-2"}
# All attribute values are strings. FIFO queues add SequenceNumber, MessageGroupId and MessageDeduplicationId
# ("Example FIFO queue message event", same page); AWSTraceHeader and DeadLetterQueueSourceArn appear when set.
# A binary message attribute carries "binaryValue" (base64) instead of "stringValue".
EVENT_SOURCE = "aws:sqs"
#: System attributes every Lambda SQS record has, in the order AWS's example lists them.
REQUIRED_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")


def sqs_event(messages: Iterable[Mapping[str, Any]], *, queue_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda sends for a batch of messages.

    Args:
        messages: ``sqs.receive_message(..., MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"])["Messages"]``.
        queue_arn: the queue's ARN (``get_queue_attributes(AttributeNames=["QueueArn"])``).
        region: the function's region.

    Returns:
        ``{"Records": [...]}``, JSON-serializable.

    Raises:
        ValueError: a message lacks a system attribute Lambda always sends (it was received without
            ``MessageSystemAttributeNames=["All"]``).
    """
    return {"Records": [sqs_record(m, queue_arn=queue_arn, region=region) for m in messages]}


def sqs_record(message: Mapping[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """One record of an SQS event (see :func:`sqs_event`)."""
    attributes = dict(message.get("Attributes", {}))
    missing = [name for name in REQUIRED_ATTRIBUTES if name not in attributes]
    if missing:
        raise ValueError(
            f"message {message.get('MessageId')} lacks system attributes {missing} that Lambda always sends: "
            "receive it with MessageSystemAttributeNames=['All']"
        )
    ordered = {name: str(attributes.pop(name)) for name in REQUIRED_ATTRIBUTES}
    ordered.update((name, str(value)) for name, value in attributes.items())
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": ordered,
        "messageAttributes": {name: message_attribute(value)
                              for name, value in message.get("MessageAttributes", {}).items()},
    }
    if message.get("MD5OfMessageAttributes"):
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    record.update({
        "md5OfBody": message["MD5OfBody"],
        "eventSource": EVENT_SOURCE,
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    })
    return record


def message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute as Lambda spells it: stringValue/binaryValue (base64)/list values/dataType."""
    attribute: dict[str, Any] = {}
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = to_base64(value["BinaryValue"])
    attribute["stringListValues"] = list(value.get("StringListValues", []))
    attribute["binaryListValues"] = [to_base64(b) for b in value.get("BinaryListValues", [])]
    attribute["dataType"] = value["DataType"]
    return attribute

