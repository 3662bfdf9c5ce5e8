"""What the JobQueue contract suite needs beside the port: a queue of each backend with a way to receive."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seglog_core.ports import JobQueue, QueueMessage


@dataclass
class QueueUnderTest:
    """A JobQueue and what its contract suite needs beside the port: receiving (the Lambda event source mapping's
    part) and the depth."""

    queue: JobQueue
    #: Up to ``n`` messages visible now (on a real queue, polled for a few seconds until ``n`` arrive).
    receive: Callable[[int], list[QueueMessage]]
    depth: Callable[[], int]


def sqs_receiver(sqs: Any, url: str, *, patience: float) -> Callable[[int], list[QueueMessage]]:
    """Receive through an SQS client; on a real queue (``patience`` > 0) long-poll until ``n`` arrive or time is up."""

    def receive(n: int) -> list[QueueMessage]:
        got: list[QueueMessage] = []
        deadline = time.monotonic() + patience
        while True:
            response = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n - len(got),
                                           WaitTimeSeconds=1 if patience else 0,
                                           MessageSystemAttributeNames=["ApproximateReceiveCount"])
            got += [QueueMessage(message_id=m["MessageId"], receipt_handle=m["ReceiptHandle"], body=m["Body"],
                                 receive_count=int(m["Attributes"]["ApproximateReceiveCount"]))
                    for m in response.get("Messages", [])]
            if len(got) >= n or time.monotonic() >= deadline:
                return got

    return receive
