"""Counts of DynamoDB calls and the capacity they consumed, per operation (for benchmarks and chaos reports).

Ships in the function's artifact, so it imports nothing of the tool: it attributes capacity by the rules of
:mod:`seglog_awsmodel.metering`, which tests/test_meter_parity.py checks it against.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Meter:
    """Thread-safe tallies: calls, read and write capacity units, per operation name."""

    calls: Counter[str] = field(default_factory=Counter)
    rcu: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    wcu: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, operation: str, consumed: Any = None) -> None:
        """Record one call and the ``ConsumedCapacity`` it returned (a dict, a list of dicts, or None)."""
        items = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        with self._lock:
            self.calls[operation] += 1
            for item in items:
                self.rcu[operation] += float(item.get("ReadCapacityUnits", 0.0))
                self.wcu[operation] += float(item.get("WriteCapacityUnits", 0.0))
                if "ReadCapacityUnits" not in item and "WriteCapacityUnits" not in item:
                    # DynamoDB reports only CapacityUnits for TOTAL; attribute it by operation kind.
                    bucket = self.wcu if operation in WRITE_OPERATIONS else self.rcu
                    bucket[operation] += float(item.get("CapacityUnits", 0.0))

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {
                op: {"calls": self.calls[op], "rcu": self.rcu[op], "wcu": self.wcu[op]} for op in sorted(self.calls)
            }

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.rcu.clear()
            self.wcu.clear()


WRITE_OPERATIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
)

