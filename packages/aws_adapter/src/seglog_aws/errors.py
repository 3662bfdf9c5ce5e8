"""Translate botocore failures into seglog's core errors (STYLE: ``raise ... from exc``, re-raise the rest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from seglog_core import errors

#: DynamoDB (Developer Guide, Programming.Errors), S3's SlowDown (API Reference, ErrorResponses) and SQS's
#: RequestThrottled (API Reference, RequestThrottled).
THROTTLE_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "Throttling",
     "SlowDown", "RequestThrottled"}
)
TRANSIENT_CODES = frozenset(
    {"InternalServerError", "InternalFailure", "ServiceUnavailable", "TransactionConflictException",
     "TransactionInProgressException", "InternalError", "RequestTimeout"}
)


def translate(exc: Exception, *, what: str, write: bool, on_condition: Callable[[dict[str, Any]], Exception]
              | None = None) -> Exception:
    """The core error for a botocore failure of operation ``what``.

    Args:
        write: whether the call may have changed state; a 5xx or a lost connection after sending then leaves
            the outcome unknown.
        on_condition: builds the error for ConditionalCheckFailedException from the error response.
    """
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        message = exc.response.get("Error", {}).get("Message", "")
        if code == "ConditionalCheckFailedException" and on_condition is not None:
            return on_condition(dict(exc.response))
        if code == "TransactionCanceledException":
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            return errors.TransactionCancelledError(reasons)
        if code in THROTTLE_CODES:
            return errors.ThrottledError(f"{what}: throttled ({code}); retry with backoff", code=code)
        if code in TRANSIENT_CODES or status >= 500:
            unknown = write and code not in ("TransactionConflictException",)
            return errors.TransientStoreError(f"{what}: {code or status} {message}", code=code,
                                              outcome_unknown=unknown)
        if code in ("ResourceNotFoundException", "NoSuchBucket", "AWS.SimpleQueueService.NonExistentQueue"):
            return errors.StoreError(
                f"{what}: {message or code}; are the resources provisioned? run `seglog up` locally, "
                "or check the stack's resource names", code=code)
        return errors.StoreError(f"{what}: {code} {message}", code=code)
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError)):
        return errors.TransientStoreError(
            f"{what}: cannot connect ({exc}); is the local stack up (`seglog status`)?", code="ConnectError")
    if isinstance(exc, (ReadTimeoutError, ConnectionClosedError, ResponseStreamingError)):
        return errors.TransientStoreError(f"{what}: connection lost after sending ({exc})",
                                          code="ConnectionLost", outcome_unknown=write)
    if isinstance(exc, BotoCoreError):
        return errors.StoreError(f"{what}: {exc}", code=type(exc).__name__)
    return exc
