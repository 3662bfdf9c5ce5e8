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
            "s3": {"requests": 1.0, "rcu": 0.0, "wcu": 0.0, "writes": 1.0, "deletes": 0.0}} == usage.since(before)
    total = {"s3": {"requests": 2.0}}
    add_usage(total, usage.since(before))
    assert 3.0 == total["s3"]["requests"]


def test_s3_requests_are_split_as_s3_prices_them() -> None:
    """PUT, COPY, POST and LIST are priced as writes, DELETE is free, the rest as reads (Amazon S3 pricing)."""
    usage = UsageCounter()
    for operation in ("PutObject", "ListObjectsV2", "GetObject", "HeadObject", "DeleteObject"):
        usage.add("s3", operation, {})

    assert {"requests": 5.0, "rcu": 0.0, "wcu": 0.0, "writes": 2.0, "deletes": 1.0} == usage.totals()["s3"]
