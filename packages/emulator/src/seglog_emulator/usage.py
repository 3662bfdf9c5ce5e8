"""Requests per AWS service and the DynamoDB capacity they consumed, counted inside a worker process.

Registered on every boto3 client a handler builds (:func:`seglog_aws.clients.on_client_created`), the counter
sees each call botocore completes (its ``after-call`` event) — like the per-service request metrics and
``ConsumedCapacity`` CloudWatch would show for the function. The worker process sends the difference over
each invocation with its reply, so the supervisor can add usage up per service for a chaos report.
A call the fault injector answered with an error (it never reached the service) still counts as a request:
the figure is the calls a function made, as its SDK metrics would show them; capacity comes only from real
answers.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

Usage = dict[str, dict[str, float]]
"""``{service: {"requests": n, "rcu": x, "wcu": y}}`` (capacity only for DynamoDB)."""


class UsageCounter:
    """Thread-safe running totals; :meth:`since` gives the difference from an earlier :meth:`totals`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        client.meta.events.register("after-call.*.*", self._counter_for(service),
                                    unique_id=f"seglog-usage-{id(self)}")

    def _counter_for(self, service: str) -> Any:
        def count(parsed: dict[str, Any], model: Any, **_: Any) -> None:
            self.add(service, model.name, parsed)
        return count

    def add(self, service: str, operation: str, parsed: dict[str, Any]) -> None:
        consumed = parsed.get("ConsumedCapacity") if isinstance(parsed, dict) else None
        items = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        with self._lock:
            row = self._totals[service]
            row["requests"] += 1
            for item in items:
                units = float(item.get("CapacityUnits", 0.0))
                read = float(item.get("ReadCapacityUnits", 0.0))
                write = float(item.get("WriteCapacityUnits", 0.0))
                if not read and not write:  # TOTAL reports CapacityUnits only: attribute it by operation
                    read, write = (0.0, units) if operation in _WRITES else (units, 0.0)
                row["rcu"] += read
                row["wcu"] += write

    def totals(self) -> Usage:
        with self._lock:
            return {service: dict(row) for service, row in self._totals.items()}

    def since(self, before: Usage) -> Usage:
        """What was counted after ``before`` was taken, services with no new requests left out."""
        now = self.totals()
        delta: Usage = {}
        for service, row in now.items():
            old = before.get(service, {})
            diff = {k: round(v - old.get(k, 0.0), 3) for k, v in row.items()}
            if diff.get("requests"):
                delta[service] = diff
        return delta


def add_usage(total: Usage, more: Usage | None) -> None:
    """Add ``more`` into ``total`` in place."""
    for service, row in (more or {}).items():
        into = total.setdefault(service, {})
        for key, value in row.items():
            into[key] = round(into.get(key, 0.0) + value, 3)


_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
