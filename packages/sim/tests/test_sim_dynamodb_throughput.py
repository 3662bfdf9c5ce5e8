"""The simulated DynamoDB throttles a partition key past DynamoDB's per-partition limit (Developer Guide,
warm-throughput-scenarios.html: 1,000 write units and 3,000 read units a second per partition; "Key range throughput
exceeded (hot partitions)", throttling-key-range-limit-exceeded-mitigation.html: reads and writes apart).
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from sim_ddb_support import Clock, entry, error_of, world

from seglog_aws.errors import translate
from seglog_core import errors
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient
from seglog_sim.aws.dynamodb_throughput import PartitionThroughput
from seglog_sim.run import run_seed
from seglog_sim.scenario import Scenario

G = b"\x01" * 24
H = b"\x02" * 24
NEW = {"ConditionExpression": "attribute_not_exists(N)"}


def _limited(write_units: float = 10.0, read_units: float = 30.0) -> tuple[SimDynamoDB, SimDynamoDBClient, Clock]:
    return world(throughput=PartitionThroughput(read_units=read_units, write_units=write_units))


def test_writes_past_a_partitions_units_are_throttled_with_the_key_range_reason() -> None:
    sim, client, _ = _limited()
    for num in range(10):  # 10 units a second, a bucket of one second: ten 1-unit puts pass at one instant
        client.put_item(TableName="Entries", Item=entry(G, num))
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName="Entries", Item=entry(G, 10))
    assert error_of(caught)[0::2] == ("ProvisionedThroughputExceededException", 400)
    assert caught.value.response["ThrottlingReasons"] == [  # type: ignore[typeddict-item]
        {"reason": "TableWriteKeyRangeThroughputExceeded",
         "resource": "arn:aws:dynamodb:us-east-1:123456789012:table/Entries"}]
    assert sim.throughput is not None and sim.throughput.throttled == {"Entries write": 1}


def test_a_throttled_write_is_not_applied_and_consumes_nothing() -> None:
    sim, client, clock = _limited()
    for num in range(10):
        client.put_item(TableName="Entries", Item=entry(G, num))
    units = sim.consumed("Entries")[1]
    with pytest.raises(ClientError):
        client.put_item(TableName="Entries", Item=entry(G, 10))
    assert units == sim.consumed("Entries")[1]
    assert "Item" not in client.get_item(TableName="Entries", Key=entry(G, 10))
    clock.now += 0.1  # one unit refilled: the next put runs
    client.put_item(TableName="Entries", Item=entry(G, 10))
    assert "Item" in client.get_item(TableName="Entries", Key=entry(G, 10), ConsistentRead=True)


def test_failed_conditional_puts_draw_on_the_bucket() -> None:
    _, client, _ = _limited()
    client.put_item(TableName="Entries", Item=entry(G, 0))
    for _ in range(9):  # a refused put still consumes a write unit (Developer Guide, read-write-operations)
        with pytest.raises(ClientError) as refused:
            client.put_item(TableName="Entries", Item=entry(G, 0), **NEW)
        assert error_of(refused)[0] == "ConditionalCheckFailedException"
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName="Entries", Item=entry(G, 1), **NEW)
    assert error_of(caught)[0] == "ProvisionedThroughputExceededException"


def test_each_partition_key_and_each_direction_has_its_own_limit() -> None:
    _, client, _ = _limited()
    for num in range(10):
        client.put_item(TableName="Entries", Item=entry(G, num))
    client.put_item(TableName="Entries", Item=entry(H, 0))  # another partition key: its own bucket
    for _ in range(30):  # reads are not held back by the writes' limit (30 eventually consistent reads: 15 units)
        client.query(TableName="Entries", KeyConditionExpression="G = :g", ExpressionAttributeValues={":g": {"B": G}},
                     Limit=1)


def test_reads_past_a_partitions_units_are_throttled() -> None:
    _, client, _ = _limited(read_units=2.0)
    client.put_item(TableName="Entries", Item=entry(G, 0))
    for _ in range(2):
        client.get_item(TableName="Entries", Key=entry(G, 0), ConsistentRead=True)
    with pytest.raises(ClientError) as caught:
        client.query(TableName="Entries", KeyConditionExpression="G = :g", ExpressionAttributeValues={":g": {"B": G}})
    assert caught.value.response["ThrottlingReasons"][0]["reason"] == (  # type: ignore[typeddict-item]
        "TableReadKeyRangeThroughputExceeded")


def test_seglog_takes_the_throttle_for_a_retryable_throttle() -> None:
    _, client, _ = _limited(write_units=1.0)
    client.put_item(TableName="Entries", Item=entry(G, 0))
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName="Entries", Item=entry(G, 1))
    error = translate(caught.value, what="put", write=True)
    assert isinstance(error, errors.ThrottledError) and error.retryable


def test_without_a_limit_nothing_is_throttled() -> None:
    _, client, _ = world(clock=Clock())
    for num in range(2_000):
        client.put_item(TableName="Entries", Item=entry(G, num))


def test_a_world_whose_partitions_are_tight_meets_throttles_from_load_and_its_checks_pass() -> None:
    # Scenario.tight_partition_share: the seeds' clients, builds and retention on 2 write units a second.
    result = run_seed(1, Scenario(tight_partition_share=1.0, tight_write_units=(2.0, 2.0), faults=()))
    throttles = [c for c in result.history if c.outcome == "error ProvisionedThroughputExceededException"]
    assert result.scenario["partition_units"] == [6.0, 2.0]
    assert throttles, "no request met its partition's limit"
    assert [] == result.violations
