"""DynamoDBCalls: the one way seglog calls DynamoDB — metered, translated to core errors, retried, paged.

Every table adapter (log, pending snapshots) goes through it, so consumed capacity is counted and every
ClientError is turned into a :mod:`seglog_core.errors` type in one place. With a :class:`RetryPolicy`, throttles
and 5xx are retried here (DynamoDB Developer Guide, Programming.Errors "Error retries and exponential backoff"),
bounded by the invocation's deadline; each attempt is metered. Without one (the append path, which retries
itself knowing which failures leave a write's outcome unknown) every call is made once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from botocore import xform_name

from seglog_aws.errors import translate
from seglog_aws.meter import Meter
from seglog_core.retry import RetryPolicy, call_with_retries

ConditionError = Callable[[dict[str, Any]], Exception]


class DynamoDBCalls:
    """Calls operations by their API name on a low-level client, with ``ReturnConsumedCapacity=TOTAL``."""

    def __init__(self, client: Any, meter: Meter | None = None, retry: RetryPolicy | None = None) -> None:
        self.client = client
        self.meter = meter or Meter()
        self.retry = retry

    def call(self, operation: str, *, write: bool, on_condition: ConditionError | None = None,
             retry_unknown: bool | None = None, **params: Any) -> dict[str, Any]:
        """Call ``operation`` (e.g. "PutItem"); ``write`` says whether a lost response leaves its outcome unknown;
        ``on_condition`` builds the error for a failed condition; ``retry_unknown`` whether a write whose outcome
        is unknown may be sent again (default: reads yes, writes no — the caller must say why it is safe)."""
        if self.retry is None:
            return self._once(operation, write, on_condition, params)
        return call_with_retries(self.retry, lambda: self._once(operation, write, on_condition, params),
                                 what=f"DynamoDB {operation}",
                                 retry_unknown=not write if retry_unknown is None else retry_unknown)

    def _once(self, operation: str, write: bool, on_condition: ConditionError | None,
              params: dict[str, Any]) -> dict[str, Any]:
        method = getattr(self.client, xform_name(operation))
        try:
            response: dict[str, Any] = method(ReturnConsumedCapacity="TOTAL", **params)
        except Exception as exc:
            # botocore's HTTP client errors (ReadTimeoutError, ConnectionClosedError) carry ``response = None``
            # (found by the simulator: a lost answer on a read crashed here instead of being retried).
            failed: dict[str, Any] = getattr(exc, "response", None) or {}
            consumed = failed.get("ConsumedCapacity")
            code = failed.get("Error", {}).get("Code")
            if consumed is None and code == "ConditionalCheckFailedException":
                # A failed conditional write is still billed, but the error carries no ConsumedCapacity
                # (DynamoDB Developer Guide, "Condition expressions": charged even when the condition fails);
                # count the 1 WCU a <= 1 KB item costs.
                consumed = {"WriteCapacityUnits": 1.0}
            self.meter.record(operation, consumed)
            translated = translate(exc, what=f"DynamoDB {operation}", write=write, on_condition=on_condition)
            if translated is exc:
                raise
            raise translated from exc
        self.meter.record(operation, response.get("ConsumedCapacity"))
        return response

    def pages(self, operation: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a Query or Scan, one page at a time."""
        while True:
            response = self.call(operation, write=False, **params)
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            params["ExclusiveStartKey"] = last
