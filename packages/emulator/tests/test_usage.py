"""UsageCounter: requests per service and DynamoDB capacity attributed to reads and writes, as deltas."""

from __future__ import annotations

import subprocess
import sys

from seglog_emulator.usage import UsageCounter, add_usage


def test_requests_and_capacity_per_service_and_the_delta_since_a_point() -> None:
    usage = UsageCounter()
    usage.add("dynamodb", "Query", {"ConsumedCapacity": {"CapacityUnits": 0.5}})
    before = usage.totals()
    usage.add("dynamodb", "PutItem", {"ConsumedCapacity": {"CapacityUnits": 1.0}})
    usage.add("s3", "PutObject", {})

    assert {"dynamodb": {"requests": 1.0, "rcu": 0.5, "wcu": 0.0}} == before
    assert {"dynamodb": {"requests": 1.0, "rcu": 0.0, "wcu": 1.0},
            "s3": {"requests": 1.0, "rcu": 0.0, "wcu": 0.0, "write_requests": 1.0}} == usage.since(before)
    total = {"s3": {"requests": 2.0}}
    add_usage(total, usage.since(before))
    assert 3.0 == total["s3"]["requests"]


def test_s3_requests_are_split_into_the_tiers_s3_bills() -> None:
    usage = UsageCounter()
    for operation in ("PutObject", "ListObjectsV2", "GetObject", "HeadObject", "DeleteObject", "PutObjectTagging"):
        usage.add("s3", operation, {})
    row = usage.totals()["s3"]
    assert (row["requests"], row["write_requests"], row["free_requests"]) == (6.0, 3.0, 1.0)  # 2 GET-tier left


def test_the_worker_process_needs_nothing_a_function_artifact_lacks() -> None:
    """Worker processes run with the function's artifact on their path: the report package is not in it."""
    code = "import sys, seglog_emulator.worker_process; print(sorted(m for m in sys.modules if 'seglog_' in m))"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    found = ran.stdout
    assert "seglog_report" not in found and "seglog_emulator.usage" in found


def test_writes_a_condition_refused_are_counted_with_their_service() -> None:
    """Failed conditional writes per committed append (issue 20, bench_cost): botocore's after-call sees the error
    answer, a plain refusal or a transaction cancelled by a condition; other errors are not counted."""
    usage = UsageCounter()
    usage.add("dynamodb", "PutItem", {"Error": {"Code": "ConditionalCheckFailedException"}})
    usage.add("dynamodb", "TransactWriteItems", {"Error": {"Code": "TransactionCanceledException"},
                                                 "CancellationReasons": [{"Code": "None"},
                                                                         {"Code": "ConditionalCheckFailed"}]})
    usage.add("dynamodb", "TransactWriteItems", {"Error": {"Code": "TransactionCanceledException"},
                                                 "CancellationReasons": [{"Code": "TransactionConflict"}]})
    usage.add("dynamodb", "PutItem", {"Error": {"Code": "ThrottlingException"}})
    usage.add("dynamodb", "PutItem", {"ConsumedCapacity": {"CapacityUnits": 1.0}})
    row = usage.totals()["dynamodb"]
    assert (row["requests"], row["conditional_failures"]) == (5.0, 2.0)
    assert "conditional_failures" not in UsageCounter().totals().get("dynamodb", {})
