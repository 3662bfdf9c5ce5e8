"""SqsJobQueue: the JobQueue port on the snapshot queue.

With a retry policy, throttles (RequestThrottled, Amazon SQS API Reference) and 5xx are retried here, bounded by
the invocation's deadline. Every call is safe to repeat after a lost answer: DeleteMessage and
ChangeMessageVisibility set the same end state (a stale receipt handle is not an error), and a SendMessage sent
twice makes a duplicate job, which the worker absorbs (DESIGN §5 step 2) as it absorbs SQS's own duplicates.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from seglog_aws.errors import translate
from seglog_core.ports import QueueMessage
from seglog_core.retry import RetryPolicy, call_with_retries
from seglog_core.schema import SNAPSHOT_JOB_ENCODER, SnapshotJob

#: A receipt handle from an earlier receive of a message that was received again (or deleted) is stale;
#: deleting or hiding it then is not our error to report (AWS SQS API Reference, DeleteMessage).
_STALE_RECEIPT = frozenset({"ReceiptHandleIsInvalid", "InvalidParameterValue", "MessageNotInflight",
                            "AWS.SimpleQueueService.MessageNotInflight"})


class SqsJobQueue:
    """Snapshot jobs on SQS (retried with ``retry``; None: each call once)."""

    def __init__(self, client: Any, *, queue_url: str, retry: RetryPolicy | None = None) -> None:
        self._sqs = client
        self.queue_url = queue_url
        self.retry = retry

    def _call(self, what: str, method: Any, **params: Any) -> dict[str, Any]:
        if self.retry is None:
            return self._once(what, method, params)
        return call_with_retries(self.retry, lambda: self._once(what, method, params), what=f"SQS {what}",
                                 retry_unknown=True)

    def _once(self, what: str, method: Any, params: dict[str, Any]) -> dict[str, Any]:
        try:
            response: dict[str, Any] = method(QueueUrl=self.queue_url, **params)
            return response
        except ClientError as exc:
            if what != "SendMessage" and exc.response.get("Error", {}).get("Code") in _STALE_RECEIPT:
                return {}
            raise translate(exc, what=f"SQS {what}", write=True) from exc
        except Exception as exc:  # a lost connection becomes a retryable core error, like a 5xx
            translated = translate(exc, what=f"SQS {what}", write=True)
            if translated is exc:
                raise
            raise translated from exc

    def send(self, job: SnapshotJob) -> str:
        response = self._call("SendMessage", self._sqs.send_message,
                              MessageBody=SNAPSHOT_JOB_ENCODER.encode(job).decode())
        return str(response["MessageId"])

    def delete(self, message: QueueMessage) -> None:
        self._call("DeleteMessage", self._sqs.delete_message, ReceiptHandle=message.receipt_handle)

    def change_visibility(self, message: QueueMessage, seconds: int) -> None:
        self._call("ChangeMessageVisibility", self._sqs.change_message_visibility,
                   ReceiptHandle=message.receipt_handle, VisibilityTimeout=max(0, min(seconds, 43200)))

    def depth(self) -> int:
        """Visible plus in-flight messages (approximate, as SQS reports them)."""
        attrs = self._call("GetQueueAttributes", self._sqs.get_queue_attributes, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]).get("Attributes", {})
        return sum(int(v) for v in attrs.values())
