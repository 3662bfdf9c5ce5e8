"""The simulated DynamoDB's global secondary indexes answer as DynamoDB's do (DynamoDB Developer Guide, "Using
Global Secondary Indexes in DynamoDB" and "Take advantage of sparse indexes"; API Reference, Query): only items
with the index's keys, eventually consistent only, ordered by the index's sort key, paged by LastEvaluatedKey."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from sim_ddb_support import Clock, error_of, n

from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec

PROPERTIES = {
    "AttributeDefinitions": [{"AttributeName": a, "AttributeType": t} for a, t in
                             (("L", "B"), ("N", "N"), ("U", "N"), ("C", "N"))],
    "KeySchema": [{"AttributeName": "L", "KeyType": "HASH"}, {"AttributeName": "N", "KeyType": "RANGE"}],
    "GlobalSecondaryIndexes": [{"IndexName": "Due", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                "KeySchema": [{"AttributeName": "U", "KeyType": "HASH"},
                                              {"AttributeName": "C", "KeyType": "RANGE"}]}],
}
DUE = {"TableName": "Segments", "IndexName": "Due", "KeyConditionExpression": "U = :u AND C <= :c",
       "ExpressionAttributeValues": {":u": n(1), ":c": n(10**9)}}


def segments() -> tuple[SimDynamoDB, SimDynamoDBClient, Clock]:
    clock = Clock()
    sim = SimDynamoDB([TableSpec.from_properties("Segments", PROPERTIES)], clock=clock)
    return sim, SimDynamoDBClient.of(sim), clock


def put(client: SimDynamoDBClient, log: bytes, num: int, created: int, *, due: bool, **more: Any) -> None:
    item = {"L": {"B": log}, "N": n(num), "C": n(created), **more}
    if due:
        item["U"] = n(1)
    client.put_item(TableName="Segments", Item=item)


def keys(response: dict[str, Any]) -> list[tuple[bytes, int]]:
    return [(bytes(i["L"]["B"]), int(i["N"]["N"])) for i in response["Items"]]


def test_a_sparse_index_holds_only_items_with_its_keys_sorted_by_its_sort_key() -> None:
    _, client, _ = segments()
    put(client, b"a", 0, 30, due=False)
    put(client, b"a", 1, 20, due=True, S=n(4))
    put(client, b"b", 1, 10, due=True)

    response = client.query(**DUE)

    assert [(b"b", 1), (b"a", 1)] == keys(response)
    # KEYS_ONLY: the table's and the index's keys, nothing else (S is not projected).
    assert [{"L", "N", "U", "C"}] * 2 == [set(i) for i in response["Items"]]


def test_the_sort_key_condition_bounds_the_index_and_removing_the_key_leaves_it() -> None:
    _, client, _ = segments()
    put(client, b"a", 1, 10, due=True)
    put(client, b"a", 2, 20, due=True)
    client.update_item(TableName="Segments", Key={"L": {"B": b"a"}, "N": n(1)}, UpdateExpression="REMOVE U")

    assert [] == keys(client.query(**{**DUE, "ExpressionAttributeValues": {":u": n(1), ":c": n(19)}}))
    assert [(b"a", 2)] == keys(client.query(**DUE))


def test_a_page_ends_at_the_limit_and_the_next_starts_after_its_last_evaluated_key() -> None:
    _, client, _ = segments()
    for i in range(5):
        put(client, bytes([i + 1]), 1, 100 + i, due=True)

    first = client.query(**DUE, Limit=3)
    second = client.query(**DUE, Limit=3, ExclusiveStartKey=first["LastEvaluatedKey"])

    assert [1, 2, 3] == [k[0][0] for k in keys(first)]
    assert [4, 5] == [k[0][0] for k in keys(second)]
    assert "LastEvaluatedKey" not in second


def test_a_global_secondary_index_refuses_a_consistent_read() -> None:
    _, client, _ = segments()
    with pytest.raises(ClientError) as caught:
        client.query(**DUE, ConsistentRead=True)
    assert ("ValidationException", "Consistent reads are not supported on global secondary indexes", 400) == \
        error_of(caught)


def test_an_index_read_can_miss_a_write_of_a_moment_ago() -> None:
    """The index is updated asynchronously: a read at an earlier ``as_of`` sees the table as it was then."""
    sim, client, clock = segments()
    put(client, b"a", 1, 10, due=True)
    clock.now += 5
    put(client, b"b", 1, 11, due=True)

    assert [(b"a", 1)] == keys(sim.call("Query", dict(DUE), as_of=clock.now - 1))
    assert [(b"a", 1), (b"b", 1)] == keys(sim.call("Query", dict(DUE), as_of=clock.now))
