"""What an SQS event source mapping does with a batch after the invocation (DESIGN §9.6, §9.7), for both drivers.

"By default, if Lambda encounters an error at any point while processing a batch, all messages in that batch
return to the queue" and, with ReportBatchItemFailures, Lambda deletes every message but the reported ones
(AWS Lambda Developer Guide, services-sqs-errorhandling). The messages it does not delete reappear when their
visibility timeout ends; the queue itself counts receives and moves a message past maxReceiveCount to the DLQ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seglog_awsmodel.batch_responses import reported_failures
from seglog_awsmodel.config import QueueMapping


def settled_messages(mapping: QueueMapping, message_ids: Sequence[str], payload: Any, *,
                     failed: bool) -> list[str] | None:
    """The messageIds to delete after an invocation with ``message_ids``: None when nothing is deleted — an
    error, a timeout or a crash (``failed``), or a response that fails the whole batch; otherwise every
    message but the reported failures (all of them without ReportBatchItemFailures)."""
    if failed:
        return None
    reported = reported_failures(payload, set(message_ids)) if mapping.reports_batch_item_failures else set()
    if reported is None:
        return None
    return [m for m in message_ids if m not in reported]
