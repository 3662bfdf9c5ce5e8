"""SQS's batch actions (SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch): the checks on the
batch as a whole, then each entry on its own, its failure reported beside the others' successes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from botocore.exceptions import ClientError

from seglog_sim.aws.facade import client_error
from seglog_sim.aws.sqs_queue import MAX_MESSAGE_BYTES

#: "A batch request can include up to 10 messages" and "The Ids of a batch request need to be unique within a
#: request. This identifier can have up to 80 characters. The following characters are accepted: alphanumeric
#: characters, hyphens(-), and underscores (_)" (Amazon SQS API Reference, SendMessageBatchRequestEntry).
MAX_ENTRIES: Final = 10
_ENTRY_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,80}")


def batch(operation: str, entries: list[dict[str, Any]], one: Callable[[dict[str, Any]], dict[str, Any]], *,
          size: Callable[[dict[str, Any]], int] | None = None) -> dict[str, Any]:
    """Run ``one`` on each entry: ``{"Successful": [{"Id", ...its answer}], "Failed": [{"Id", "SenderFault",
    "Code", "Message"}]}`` ("Because the batch request can result in a combination of successful and unsuccessful
    actions, you should check for batch errors even when the call returns an HTTP status code of 200": Amazon SQS
    API Reference, SendMessageBatch). ``size``: an entry's bytes, whose sum may not pass the message size limit."""
    if not entries:
        raise client_error(operation, "AWS.SimpleQueueService.EmptyBatchRequest",
                           "There should be at least one SendMessageBatchRequestEntry in the request.")
    if len(entries) > MAX_ENTRIES:
        raise client_error(operation, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
                           f"Maximum number of entries per request are {MAX_ENTRIES}. You have sent {len(entries)}.")
    ids = [entry["Id"] for entry in entries]
    if len(set(ids)) != len(ids):
        raise client_error(operation, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
                           "Two or more batch entries in the request have the same Id.")
    if bad := next((i for i in ids if not (isinstance(i, str) and _ENTRY_ID.fullmatch(i))), None):
        raise client_error(operation, "AWS.SimpleQueueService.InvalidBatchEntryId",
                           f"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It "
                           f"can be at most 80 letters long. ({bad!r})")
    if size is not None and (total := sum(size(entry) for entry in entries)) > MAX_MESSAGE_BYTES:
        raise client_error(operation, "AWS.SimpleQueueService.BatchRequestTooLong",
                           f"Batch requests cannot be longer than {MAX_MESSAGE_BYTES} bytes. You have sent {total}.")
    successful: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for entry in entries:
        try:
            successful.append({"Id": entry["Id"], **one(entry)})
        except ClientError as exc:
            error = exc.response["Error"]
            failed.append({"Id": entry["Id"], "SenderFault": error.get("Type") == "Sender", "Code": error["Code"],
                           "Message": error["Message"]})
    return {"Successful": successful, "Failed": failed}
