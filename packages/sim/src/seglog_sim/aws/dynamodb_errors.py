"""DynamoDB's errors as botocore raises them: ``ClientError`` with DynamoDB's code, message and HTTP status.

The error body's extra members (``Item`` for ConditionalCheckFailedException, ``CancellationReasons`` for
TransactionCanceledException) sit at the top level of ``ClientError.response``, where botocore's JSON parser puts
them (DynamoDB API Reference, "Common Errors" and the Errors section of PutItem / TransactWriteItems).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from seglog_awsmodel.faults import AWS_ERRORS
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


def throttled(operation: str, table_arn: str, *, write: bool) -> ClientError:
    """A partition key's reads or writes past its partition's limit (seglog_sim.aws.dynamodb_throughput): the
    throttle with its reason, ``Table<Read|Write>KeyRangeThroughputExceeded``, and the table's ARN (API Reference,
    ThrottlingReason; botocore puts ``ThrottlingReasons`` at the top of the error response)."""
    code = "ProvisionedThroughputExceededException"
    status, message = AWS_ERRORS[code]
    reason = f"Table{'Write' if write else 'Read'}KeyRangeThroughputExceeded"
    return client_error(operation, code, message, status=status,
                        ThrottlingReasons=[{"reason": reason, "resource": table_arn}])
