"""UsageCounter: requests per service and DynamoDB capacity attributed to reads and writes, as deltas."""

from __future__ import annotations

from seglog_emulator.usage import UsageCounter, add_usage


def test_requests_and_capacity_per_service_and_the_delta_since_a_point() -> None:
    usage = UsageCounter()
    usage.add("dynamodb", "Query", {"ConsumedCapacity": {"CapacityUnits": 0.5}})
    before = usage.totals()
    usage.add("dynamodb", "PutItem", {"ConsumedCapacity": {"CapacityUnits": 1.0}})
    usage.add("s3", "PutObject", {})

    assert {"dynamodb": {"requests": 1.0, "rcu": 0.5, "wcu": 0.0}} == before
    assert {"dynamodb": {"requests": 1.0, "rcu": 0.0, "wcu": 1.0},
            "s3": {"requests": 1.0, "rcu": 0.0, "wcu": 0.0}} == usage.since(before)
    total = {"s3": {"requests": 2.0}}
    add_usage(total, usage.since(before))
    assert 3.0 == total["s3"]["requests"]
