"""The simulated DynamoDB stream: one record per change, per item in order and in one shard, in the shape boto3's
GetRecords returns, which seglog's event builder turns into the Lambda event unchanged.

DynamoDB Developer Guide, "Change data capture for DynamoDB Streams" (Streams); DynamoDB Streams API Reference,
Record and StreamRecord.
"""

from __future__ import annotations

import uuid
import zlib
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import DynamoDBStreamEvent
from botocore.exceptions import ClientError
from sim_ddb_support import entry, n, world

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.items import item_to_entry
from seglog_awsmodel.events.dynamodb_stream import stream_event
from seglog_core.schema import Entry, EntryType
from seglog_services.stream_router import image_to_item
from seglog_sim.aws.dynamodb import SimDynamoDB

G = b"\x01" * 24


def records(sim: SimDynamoDB, after: str | None = None) -> list[dict[str, Any]]:
    """Every record of the Entries stream, shard by shard."""
    return [r for s in sim.shard_ids("Entries") for r in sim.stream_records("Entries", s, after=after)]


def test_each_change_is_one_record_with_keys_and_new_image() -> None:
    sim, client, clock = world()
    clock.now = 1_700_000_000.75
    client.put_item(TableName="Entries", Item=entry(G, 1, T={"S": "set"}))
    client.update_item(TableName="Entries", Key=entry(G, 1), UpdateExpression="SET R = :r",
                       ExpressionAttributeValues={":r": {"S": "root"}})
    client.delete_item(TableName="Entries", Key=entry(G, 1))
    got = records(sim)
    assert [r["eventName"] for r in got] == ["INSERT", "MODIFY", "REMOVE"]
    assert [r["dynamodb"]["Keys"] for r in got] == [entry(G, 1)] * 3
    assert got[0]["dynamodb"]["NewImage"] == entry(G, 1, T={"S": "set"})
    assert got[1]["dynamodb"]["NewImage"] == entry(G, 1, T={"S": "set"}, R={"S": "root"})
    assert "NewImage" not in got[2]["dynamodb"]  # NEW_IMAGE: a REMOVE has keys only
    first = got[0]
    assert (first["eventVersion"], first["eventSource"], first["awsRegion"]) == ("1.1", "aws:dynamodb", "us-east-1")
    assert first["dynamodb"]["StreamViewType"] == "NEW_IMAGE"
    # StreamRecord: "rounded down to the closest second"; boto3 parses it into a datetime
    assert first["dynamodb"]["ApproximateCreationDateTime"] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert first["dynamodb"]["SizeBytes"] == 2 * (1 + 24 + 1 + 2) + (1 + 3)  # keys twice (Keys, NewImage) + T
    assert len({r["eventID"] for r in got}) == 3


def test_writes_that_change_nothing_append_no_record() -> None:
    # Developer Guide, Streams: "If you perform a PutItem or UpdateItem operation that does not change any data in
    # an item, DynamoDB Streams does not write a stream record for that operation."
    sim, client, _ = world()
    item = entry(G, 1, T={"S": "set"}, C={"N": "5"})
    client.put_item(TableName="Entries", Item=item)
    client.put_item(TableName="Entries", Item={**item, "C": {"N": "5.0"}})  # the same number
    client.update_item(TableName="Entries", Key=entry(G, 1), UpdateExpression="SET T = :t",
                       ExpressionAttributeValues={":t": {"S": "set"}})
    client.delete_item(TableName="Entries", Key=entry(G, 2))  # absent: nothing deleted
    with pytest.raises(ClientError):
        client.put_item(TableName="Entries", Item=entry(G, 1), ConditionExpression="attribute_not_exists(N)")
    assert [r["eventName"] for r in records(sim)] == ["INSERT"]


def test_an_items_records_stay_in_one_shard_in_order_and_sequence_numbers_increase() -> None:
    sim, client, _ = world()
    segments = [bytes([i]) * 24 for i in range(1, 9)]
    for round_ in range(3):
        for g in segments:
            client.put_item(TableName="Entries", Item=entry(g, 0, V=n(round_)))
    shards = sim.shard_ids("Entries")
    assert len(shards) == 4
    for g in segments:
        where = [s for s in shards if any(r["dynamodb"]["Keys"]["G"]["B"] == g
                                          for r in sim.stream_records("Entries", s))]
        assert where == [shards[zlib.crc32(g) % 4]]  # a stable hash of the partition key picks the shard
        versions = [r["dynamodb"]["NewImage"]["V"] for r in sim.stream_records("Entries", where[0])
                    if r["dynamodb"]["Keys"]["G"]["B"] == g]
        assert versions == [n(0), n(1), n(2)]
    for shard in shards:
        numbers = [r["dynamodb"]["SequenceNumber"] for r in sim.stream_records("Entries", shard)]
        assert numbers == sorted(numbers, key=int) and len(set(numbers)) == len(numbers)
        assert all(x.isdigit() for x in numbers)  # decimal strings, as AWS sends them
    assert sum(sim.stream_size("Entries", s) for s in shards) == 24


def test_records_after_a_sequence_number_with_a_limit() -> None:
    sim, client, _ = world(shards=1)
    for num in range(5):
        client.put_item(TableName="Entries", Item=entry(G, num))
    (shard,) = sim.shard_ids("Entries")
    first = sim.stream_records("Entries", shard, limit=2)
    rest = sim.stream_records("Entries", shard, after=first[-1]["dynamodb"]["SequenceNumber"])
    assert [int(r["dynamodb"]["Keys"]["N"]["N"]) for r in first + rest] == [0, 1, 2, 3, 4]
    assert sim.stream_records("Entries", shard, after=rest[-1]["dynamodb"]["SequenceNumber"]) == []


def test_a_transaction_writes_one_record_per_changed_item_and_a_cancelled_one_none() -> None:
    sim, client, _ = world(shards=1)
    puts = [{"Put": {"TableName": "Entries", "Item": entry(G, i), "ConditionExpression": "attribute_not_exists(N)"}}
            for i in (1, 2)]
    client.transact_write_items(TransactItems=[*puts, {"Put": {"TableName": "Flat", "Item": {"K": {"S": "k"}}}}])
    with pytest.raises(ClientError):
        client.transact_write_items(TransactItems=[{"Put": {"TableName": "Entries", "Item": entry(G, 3)}}, puts[0]])
    assert [(r["eventName"], r["dynamodb"]["Keys"]["N"]) for r in records(sim)] == [("INSERT", n(1)),
                                                                                     ("INSERT", n(2))]


def test_records_become_the_lambda_event_the_router_reads() -> None:
    sim, client, _ = world(shards=1)
    store = DynamoDBLogStore(client, segments_table="Flat", entries_table="Entries")
    log_id = uuid.UUID(int=7)
    snapshot = Entry(log_id=log_id, segment=0, num=1, created=5, type=EntryType.SNAPSHOT, entry_id=uuid.UUID(int=9))
    store.put_entry(snapshot)
    event = stream_event(records(sim), event_source_arn=sim.stream_arn("Entries"), region="eu-west-1")
    (record,) = DynamoDBStreamEvent(event).records
    assert record.event_name is not None and record.event_name.name == "INSERT"
    assert record.event_source_arn == sim.stream_arn("Entries")
    assert sim.stream_arn("Entries").startswith("arn:aws:dynamodb:us-east-1:123456789012:table/Entries/stream/2023-")
    assert item_to_entry(image_to_item(event["Records"][0]["dynamodb"]["NewImage"])) == snapshot
    assert event["Records"][0]["dynamodb"]["ApproximateCreationDateTime"] == 1_700_000_000
