"""DynamoDB's per-partition throughput limit: a token bucket per (table, partition key), for reads and for writes.

What AWS documents:

* each partition serves at most 3,000 read units and 1,000 write units a second, in both capacity modes, however
  much the table as a whole may take (Amazon DynamoDB Developer Guide, "Understanding DynamoDB warm throughput in
  different scenarios", warm-throughput-scenarios.html: "each individual partition is limited to 1000 write units
  per second and 3000 read units per second"); adaptive capacity may isolate one hot item on a partition of its
  own, still capped at those figures (Developer Guide, burst-adaptive-capacity.html, "Isolate frequently accessed
  items");
* reads and writes are throttled independently (Developer Guide, "Key range throughput exceeded (hot partitions)",
  throttling-key-range-limit-exceeded-mitigation.html);
* the throttle is an error whose ``ThrottlingReasons`` name ``<Table|Index><Read|Write>KeyRangeThroughputExceeded``
  and the table's ARN (API Reference, ThrottlingReason; Developer Guide, throttling-diagnosing-workflow.html). The
  exception is ProvisionedThroughputExceededException ("The request was denied due to request throttling", botocore's
  DynamoDB exceptions), which seglog_aws.errors classifies with ThrottlingException as a throttle
  (:class:`~seglog_core.errors.ThrottledError`, retryable): whichever of the two AWS sends, seglog does the same;
* a conditional write that fails still consumes write units (Developer Guide, read-write-operations.html), so a
  refused put draws on the bucket; a throttled request is not applied and consumes nothing.

What the docs leave open, chosen here once: the bucket holds at most :data:`BURST_SECONDS` of throughput (the
300 s of burst capacity is unused *table* capacity, and does not lift a partition past its cap); a request is
admitted while its bucket is not in debt and then pays what it consumed (its size is known once applied, as
DynamoDB too charges the capacity an operation consumed), so one large request may leave the bucket below zero and
the next wait. The model keys buckets by partition key value, the finest a partition can be split (split for heat
by sort key ranges is not modelled: an append always writes the highest sort key of its partition key, where a
split would not help). GetItem, Query, PutItem, UpdateItem and DeleteItem are limited; Scan, TransactWriteItems
and BatchWriteItem are not (their units still count in ``SimDynamoDB.units``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

#: A partition's ceiling, in units a second (warm-throughput-scenarios.html).
PARTITION_READ_UNITS: Final = 3000.0
PARTITION_WRITE_UNITS: Final = 1000.0
#: Seconds of a partition's throughput its bucket holds (the model's choice: see the module docstring).
BURST_SECONDS: Final = 1.0


@dataclass(slots=True)
class _Bucket:
    level: float
    at: float


@dataclass(kw_only=True)
class PartitionThroughput:
    """The buckets of every partition key met. ``read_units``/``write_units``: each partition's rate a second.

    :meth:`admit` answers whether a request may run now; :meth:`pay` takes what it consumed. ``throttled`` counts
    refusals per "table read|write".
    """

    read_units: float = PARTITION_READ_UNITS
    write_units: float = PARTITION_WRITE_UNITS
    burst_seconds: float = BURST_SECONDS
    throttled: Counter[str] = field(default_factory=Counter)
    _buckets: dict[tuple[str, bool, Any], _Bucket] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.read_units <= 0 or self.write_units <= 0 or self.burst_seconds <= 0:
            raise ValueError("a partition's read and write units and its burst seconds are positive")

    def admit(self, table: str, key: Any, *, write: bool, now: float) -> tuple[str, bool, Any] | None:
        """The bucket to charge when the request may run, None when it is throttled (and counted)."""
        rate = self.write_units if write else self.read_units
        name = (table, write, key)
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = self._buckets[name] = _Bucket(level=rate * self.burst_seconds, at=now)
        elif now > bucket.at:
            bucket.level = min(rate * self.burst_seconds, bucket.level + (now - bucket.at) * rate)
            bucket.at = now
        if bucket.level <= 0.0:
            self.throttled[f"{table} {'write' if write else 'read'}"] += 1
            return None
        return name

    def pay(self, name: tuple[str, bool, Any], units: float) -> None:
        """Take ``units`` the admitted request consumed from its bucket."""
        self._buckets[name].level -= units
