"""S3 event notifications to functions (issue 36, point 3; AWS SAM sam-property-function-s3; S3 User Guide,
EventNotifications and notification-content-structure).

On AWS, a bucket notifies Lambda, which invokes the function asynchronously with the S3 event. Locally the bucket
is LocalStack's, which cannot reach the emulator's functions, so:

1. the supervisor (:func:`configure`) makes one queue per S3 event of the template and sets each bucket's
   notification configuration to send the events those functions asked for (types and key filter) to their
   queues; LocalStack's S3 then writes the event, in S3's own format, as the message body;
2. a child per S3 event (:class:`S3Poller`) takes each message off its queue and hands the event to the function
   as Lambda's asynchronous invocation does (:class:`seglog_emulator.lambda_api.AsyncInvoker`: retries, then the
   OnFailure destination or DeadLetterQueue), dropping S3's ``s3:TestEvent`` (sent when a configuration is set).

::

    client ──PutObject──► LocalStack S3 ──event──► queue <stack>-s3-<Function>-<Event>
                                                        └─ S3Poller ──submit──► AsyncInvoker ──► function
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any, Final

import structlog

from seglog_awsmodel.config import S3Notification
from seglog_emulator.lambda_api import AsyncInvoker

log = structlog.get_logger("seglog.s3_events")

#: SQS's longest queue name.
MAX_QUEUE_NAME: Final = 80
WAIT_SECONDS: Final = 2


def queue_name(stack: str, notification: S3Notification) -> str:
    """The queue an S3 event's notifications go to (SQS names: letters, digits, - and _, at most 80)."""
    raw = f"{stack}-s3-{notification.function}-{notification.event}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:MAX_QUEUE_NAME]


def configure(notifications: Sequence[S3Notification], *, stack: str, bucket_name: Any, s3: Any, sqs: Any) -> None:
    """Make the queues and set every notified bucket's notification configuration (which replaces the bucket's
    previous one, as a template's deploy does); ``bucket_name`` maps a bucket's logical id to its name."""
    by_bucket: dict[str, list[dict[str, Any]]] = {}
    for notification in notifications:
        url = sqs.create_queue(QueueName=queue_name(stack, notification))["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        entry: dict[str, Any] = {"Id": f"{notification.function}-{notification.event}", "QueueArn": arn,
                                 "Events": list(notification.events)}
        if notification.rules:
            entry["Filter"] = {"Key": {"FilterRules": [{"Name": name, "Value": value}
                                                       for name, value in notification.rules]}}
        by_bucket.setdefault(bucket_name(notification.bucket), []).append(entry)
    for bucket, entries in by_bucket.items():
        s3.put_bucket_notification_configuration(Bucket=bucket,
                                                 NotificationConfiguration={"QueueConfigurations": entries})
        log.info("bucket notifications set", bucket=bucket, targets=[e["Id"] for e in entries])


class S3Poller:
    """Hands the S3 events of one queue to one function, asynchronously (see the module docstring)."""

    def __init__(self, notification: S3Notification, *, queue_url: str, sqs: Any, asynchronous: AsyncInvoker) -> None:
        self.notification = notification
        self.queue_url = queue_url
        self.sqs = sqs
        self.asynchronous = asynchronous
        self.name = f"{notification.function}.{notification.event}"
        self._stop = threading.Event()

    def run(self) -> None:
        log.info("s3 poller started", poller=self.name, queue=self.queue_url)
        while not self._stop.is_set():
            self.poll_once()

    def poll_once(self) -> int:
        """One receive: each event handed to the function, each message deleted; the events handed over."""
        answer = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                          WaitTimeSeconds=WAIT_SECONDS)
        handed = 0
        for message in answer.get("Messages", []):
            try:
                event = json.loads(message["Body"])
            except ValueError:
                event = None
            if isinstance(event, dict) and isinstance(event.get("Records"), list):
                self.asynchronous.submit(self.notification.function, event, source=f"s3:{self.name}")
                handed += 1
            elif not (isinstance(event, dict) and event.get("Event") == "s3:TestEvent"):
                log.warning("not an S3 event: dropped", poller=self.name, body=message["Body"][:200])
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return handed

    def stop(self) -> None:
        self._stop.set()
