"""Metering: a run's :class:`~seglog_report.model.Meter`, added up from its log lines — the events the live
console is fed as they happen, and a chaos or demo run's log read after it ended — and the cost so far.

Where each unit comes from:

- an ``invocation`` line: the function's invocations, billed duration (each rounded up to the millisecond, Init
  included, as Lambda bills) and memory (``memory_mb``, the template's MemorySize), and the ``usage`` its
  handler made — DynamoDB requests and capacity units, S3 requests (``write_requests`` in the write tier,
  ``free_requests`` free, the rest reads), SQS requests; ``source: "api"`` is one HTTP API request;
- a ``poller usage`` line: the requests an event source mapping made (stream reads, SQS receives and deletes);
- a ``request`` line of the API: an append acknowledged (``POST .../entries`` or an upload's ``.../complete``
  answered 200 or 201).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from seglog_report.cost import ledger
from seglog_report.model import FunctionUse, Meter

#: Functions metered one by one; more (bad input) are added up under one name.
MAX_FUNCTIONS: Final = 32
OTHER: Final = "(other)"
#: Lambda's default MemorySize, for an invocation line that does not name one.
DEFAULT_MEMORY_MB: Final = 128
APPEND_PATH: Final = re.compile(r"^/sheets/[^/]+/(entries|uploads/[^/]+/complete)$")


def number(value: Any) -> float:
    """``value`` as a finite non-negative float (0 for anything else: bad input is not a crash)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return max(0.0, float(value))


class Metering:
    """Adds events into one :class:`Meter`; not thread-safe (the aggregator holds its lock)."""

    def __init__(self, region: str = "us-east-1") -> None:
        self.meter = Meter()
        self.region = region

    def invocation(self, event: Mapping[str, Any]) -> None:
        name = str(event.get("function") or "?")
        functions = self.meter.functions
        if name not in functions and len(functions) >= MAX_FUNCTIONS:
            name = OTHER
        memory = int(number(event.get("memory_mb"))) or DEFAULT_MEMORY_MB
        use = functions.setdefault(name, FunctionUse(memory_mb=memory))
        use.invocations += 1
        use.billed_ms += math.ceil(number(event.get("duration_ms")) + number(event.get("init_duration_ms")))
        if event.get("source") == "api":
            self.meter.api_requests += 1
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self._usage(usage)

    def _usage(self, usage: Mapping[str, Any]) -> None:
        meter = self.meter
        dynamodb, s3, sqs = (_row(usage, service) for service in ("dynamodb", "s3", "sqs"))
        meter.dynamodb_requests += int(number(dynamodb.get("requests")))
        meter.dynamodb_read_units += number(dynamodb.get("rcu"))
        meter.dynamodb_write_units += number(dynamodb.get("wcu"))
        requests, writes = int(number(s3.get("requests"))), int(number(s3.get("write_requests")))
        free = int(number(s3.get("free_requests")))
        meter.s3_write_requests += min(writes, requests)
        meter.s3_read_requests += max(0, requests - writes - free)
        meter.sqs_requests += int(number(sqs.get("requests")))

    def poller(self, event: Mapping[str, Any]) -> None:
        requests = int(number(event.get("requests")))
        if event.get("service") == "dynamodbstreams":
            self.meter.stream_read_requests += requests
        elif event.get("service") == "sqs":
            self.meter.sqs_requests += requests

    def request(self, event: Mapping[str, Any]) -> None:
        """The API's line for one request: an acknowledged append counts."""
        status = event.get("status")
        if str(event.get("method", "")).upper() == "POST" and status in (200, 201) \
                and APPEND_PATH.match(str(event.get("path", ""))):
            self.meter.appends += 1

    def cost(self) -> dict[str, Any]:
        """The meter and its bill so far: ``{"meter": {...}, "total": dollars, "per_million_appends": dollars |
        None, "rows": the ledger's table, "summary": its sentences}`` (:func:`seglog_report.cost.ledger`); a
        ledger that fails leaves the units alone, with the ``error``."""
        meter = msgspec.to_builtins(self.meter)
        try:
            priced = ledger(self.meter, region=self.region)
        except Exception as exc:  # an unknown region, a price table that cannot be read: show the units
            return {"meter": meter, "total": None, "per_million_appends": None, "rows": [], "summary": [],
                    "error": f"{type(exc).__name__}: {exc}"}
        return {"meter": meter, "total": priced.total, "per_million_appends": priced.per_million_appends,
                "rows": priced.rows(), "summary": priced.summary()}


def _row(usage: Mapping[str, Any], service: str) -> Mapping[str, Any]:
    row = usage.get(service)
    return row if isinstance(row, Mapping) else {}
