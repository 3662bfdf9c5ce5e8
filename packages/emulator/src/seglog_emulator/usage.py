"""Requests per AWS service and the DynamoDB capacity they consumed, counted inside a worker process.

Registered on every boto3 client a handler builds (:mod:`seglog_emulator.client_hooks`), the counter
sees each call botocore completes (its ``after-call`` event) — like the per-service request metrics and
``ConsumedCapacity`` CloudWatch would show for the function. The worker process sends the difference over
each invocation with its reply, so the supervisor can add usage up per service for a chaos report.
A call the fault injector answered with an error (it never reached the service) still counts as a request:
the figure is the calls a function made, as its SDK metrics would show them; capacity comes only from real
answers.
"""

from __future__ import annotations

import threading
from typing import Any

from seglog_awsmodel.metering import consumed_units, s3_request_class

Usage = dict[str, dict[str, float]]
"""``{service: {"requests": n, "rcu": x, "wcu": y}}`` (capacity only for DynamoDB; S3 adds ``write_requests``
and ``free_requests``, its requests in the PUT/COPY/POST/LIST tier and the free DELETEs, for the cost ledger;
DynamoDB adds ``conditional_failures``, the writes a condition refused, when there were any)."""


class UsageCounter:
    """Running totals per service, priced by :mod:`seglog_awsmodel.metering` (the one place that attributes consumed
    capacity to reads and writes); :meth:`since` gives the difference from an earlier :meth:`totals`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, float]] = {}

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        client.meta.events.register("after-call.*.*", self._counter_for(service),
                                    unique_id=f"seglog-usage-{id(self)}")

    def _counter_for(self, service: str) -> Any:
        def count(parsed: dict[str, Any], model: Any, **_: Any) -> None:
            self.add(service, model.name, parsed)
        return count

    def add(self, service: str, operation: str, parsed: dict[str, Any]) -> None:
        read, write = consumed_units(operation, parsed.get("ConsumedCapacity") if isinstance(parsed, dict) else None)
        with self._lock:
            row = self._rows.setdefault(service, {"requests": 0.0, "rcu": 0.0, "wcu": 0.0})
            row["requests"] += 1
            row["rcu"] += read
            row["wcu"] += write
            if refused_by_condition(parsed):
                #: Writes a condition refused (billed like any write: issue 20's failed conditional writes).
                row["conditional_failures"] = row.get("conditional_failures", 0.0) + 1
            if service == "s3" and (tier := s3_request_class(operation)) != "read":
                row[f"{tier}_requests"] = row.get(f"{tier}_requests", 0.0) + 1

    def totals(self) -> Usage:
        with self._lock:
            return {service: dict(row) for service, row in self._rows.items()}

    def since(self, before: Usage) -> Usage:
        """What was counted after ``before`` was taken, services with no new requests left out."""
        delta: Usage = {}
        for service, row in self.totals().items():
            old = before.get(service, {})
            diff = {k: round(v - old.get(k, 0.0), 3) for k, v in row.items()}
            if diff.get("requests"):
                delta[service] = diff
        return delta


def refused_by_condition(parsed: Any) -> bool:
    """Whether a DynamoDB answer is a write its condition refused: ConditionalCheckFailedException, or a transaction
    cancelled with a ConditionalCheckFailed reason (botocore's ``after-call`` sees error answers too)."""
    error = parsed.get("Error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return False
    code = error.get("Code")
    if code == "ConditionalCheckFailedException":
        return True
    reasons = parsed.get("CancellationReasons") or []
    return code == "TransactionCanceledException" and any(
        isinstance(r, dict) and r.get("Code") == "ConditionalCheckFailed" for r in reasons)


def add_usage(total: Usage, more: Usage | None) -> None:
    """Add ``more`` into ``total`` in place."""
    for service, row in (more or {}).items():
        into = total.setdefault(service, {})
        for key, value in row.items():
            into[key] = round(into.get(key, 0.0) + value, 3)
