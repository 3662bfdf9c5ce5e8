"""StreamPoller's failure handling as a Lambda event source mapping on a DynamoDB stream (DESIGN §9, items 3
and 4): retries, record age, OnFailure, bisect. Real streams of per-test tables on the local stack, the probe
function in real worker processes; helpers are shared with :mod:`fidelity.test_stream_poller`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from fidelity.conftest import Clock, MakeInvoker, Probe, RecordingCheckpoints, Table, running
from fidelity.test_stream_poller import moved_to, sequence_numbers, stream_poller, wait_until
from seglog_awsmodel.events.dynamodb_stream import epoch_seconds
from seglog_stack.local import LocalDeployment

# --------------------------------------------------------------------------------------------- item 3


@pytest.mark.stack
def test_stream_retries_until_maximum_retry_attempts_then_sends_the_batch_info_to_on_failure(
        stack: LocalDeployment, table: Table, probe: Probe, make_invoker: MakeInvoker,
        checkpoints: RecordingCheckpoints) -> None:
    """AWS Lambda Developer Guide, services-dynamodb-errors
    (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html): a function error is retried
    until the records expire, exceed MaximumRecordAgeInSeconds or reach MaximumRetryAttempts; then Lambda
    discards them and goes on with the shard. "Each record sent to the destination is a JSON document containing
    metadata about the failed invocation" (DDBStreamBatchInfo), not the records themselves."""
    table.put("r1", "fail")
    table.put("r2")
    table.put("r3")
    sequence = sequence_numbers(table.wait_for_records(3))
    failures: list[dict[str, Any]] = []
    poller = stream_poller(table, make_invoker(), checkpoints, region=stack.region, BatchSize=2,
                           MaximumRetryAttempts=2, OnFailure="FailureQueue", on_failure=failures.append)

    with running(poller):
        probe.finished(4)
        time.sleep(0.5)

    # The first attempt and two retries, then the shard moves on.
    assert [["r1", "r2"]] * 3 + [["r3"]] == probe.batches()
    (info,) = failures
    assert {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3} == {
        k: info["requestContext"][k] for k in ("condition", "approximateInvokeCount")}
    batch = info["DDBStreamBatchInfo"]
    shard_id = table.reader.shards()[0]["ShardId"]
    assert (shard_id, sequence["r1"], sequence["r2"], 2) == (
        batch["shardId"], batch["startSequenceNumber"], batch["endSequenceNumber"], batch["batchSize"])
    assert batch["streamArn"].endswith(table.reader.stream_arn.split(":", 5)[5])
    assert batch["streamArn"].split(":")[3] == stack.region  # DynamoDB Local's "ddblocal" is not AWS's
    assert info["requestContext"]["functionArn"].startswith(f"arn:aws:lambda:{stack.region}:")
    assert info["requestContext"]["requestId"]
    assert {"statusCode": 200, "functionError": "Unhandled"}.items() <= info["responseContext"].items()
    assert {"version": "1.0"}.items() <= info.items() and info["timestamp"].endswith("Z")
    text = json.dumps(info)
    assert "NewImage" not in text and "Keys" not in text, "OnFailure got the records, not the batch's description"
    assert [sequence["r2"], sequence["r3"]] == moved_to(checkpoints)


@pytest.mark.stack
def test_stream_batch_older_than_maximum_record_age_goes_to_on_failure(
        stack: LocalDeployment, table: Table, probe: Probe, make_invoker: MakeInvoker,
        checkpoints: RecordingCheckpoints) -> None:
    """AWS Lambda Developer Guide, services-dynamodb-errors and services-ddb-params
    (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html): a failing batch is retried (here
    without limit: MaximumRetryAttempts -1) until its records are older than MaximumRecordAgeInSeconds, then
    discarded to OnFailure. The poller's clock is the test's: the record ages by hand, not by waiting."""
    table.put("old", "fail")
    (record,) = table.wait_for_records(1)
    created = epoch_seconds(record["dynamodb"]["ApproximateCreationDateTime"])
    clock = Clock(created + 10)
    failures: list[dict[str, Any]] = []
    poller = stream_poller(table, make_invoker(), checkpoints, region=stack.region, MaximumRecordAgeInSeconds=300,
                           on_failure=failures.append, clock=clock)

    with running(poller):
        probe.wait(lambda starts: len(starts) >= 3, "retries of a young record")
        assert [] == failures, "a record younger than MaximumRecordAgeInSeconds was discarded"
        clock.now = created + 301
        wait_until(lambda: bool(failures), "the batch to be discarded")
        invoked = len(probe.starts())
        time.sleep(0.5)
        assert invoked == len(probe.starts()), "a discarded batch was invoked again"

    (info,) = failures
    assert ("RecordAgeExceeded", invoked) == (info["requestContext"]["condition"],
                                              info["requestContext"]["approximateInvokeCount"])
    assert [record["dynamodb"]["SequenceNumber"]] == moved_to(checkpoints)


@pytest.mark.stack
def test_stream_record_already_past_maximum_record_age_is_never_sent(
        stack: LocalDeployment, table: Table, probe: Probe, make_invoker: MakeInvoker,
        checkpoints: RecordingCheckpoints) -> None:
    """AWS Lambda Developer Guide, services-dynamodb-errors
    (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html): before invocation, Lambda
    "retries until the records expire or exceed the maximum age" — a record already past
    MaximumRecordAgeInSeconds goes to OnFailure without an invocation."""
    table.put("stale")
    (record,) = table.wait_for_records(1)
    created = epoch_seconds(record["dynamodb"]["ApproximateCreationDateTime"])
    failures: list[dict[str, Any]] = []
    poller = stream_poller(table, make_invoker(), checkpoints, region=stack.region, MaximumRecordAgeInSeconds=60,
                           on_failure=failures.append, clock=Clock(created + 61))

    with running(poller):
        wait_until(lambda: bool(failures), "the stale batch to be discarded")
        time.sleep(0.5)

    assert [] == probe.starts()
    (info,) = failures
    assert ("RecordAgeExceeded", 0) == (info["requestContext"]["condition"],
                                        info["requestContext"]["approximateInvokeCount"])
    assert [record["dynamodb"]["SequenceNumber"]] == moved_to(checkpoints)


# --------------------------------------------------------------------------------------------- item 4


