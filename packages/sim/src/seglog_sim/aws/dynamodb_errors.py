"""DynamoDB's errors as botocore raises them: ``ClientError`` with DynamoDB's code, message and HTTP status.

The error body's extra members (``Item`` for ConditionalCheckFailedException, ``CancellationReasons`` for
TransactionCanceledException) sit at the top level of ``ClientError.response``, where botocore's JSON parser puts
them (DynamoDB API Reference, "Common Errors" and the Errors section of PutItem / TransactWriteItems).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from seglog_sim.aws import facade


class ValidationError(Exception):
    """Raised inside the model; :meth:`SimDynamoDB.call` turns it into ``ValidationException``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConditionFailed(Exception):
    """A ConditionExpression evaluated to false; ``item`` is the item as it was (None when absent)."""

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("The conditional request failed")
        self.item = item


def client_error(operation: str, code: str, message: str, *, status: int = 400,
                 **extra: Any) -> ClientError:
    """A ``ClientError`` shaped like botocore's for a DynamoDB error response (its JSON body repeats the message)."""
    return facade.client_error(operation, code, message, status=status, sender=status < 500,
                               extra={"message": message, **extra})


def validation(operation: str, message: str) -> ClientError:
    return client_error(operation, "ValidationException", message)


def not_found(operation: str) -> ClientError:
    # DynamoDB API Reference, "Common Errors" / ResourceNotFoundException: the table does not exist.
    return client_error(operation, "ResourceNotFoundException", "Requested resource not found")
