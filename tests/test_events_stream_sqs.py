"""Records read from the local stack's DynamoDB stream and SQS queue become, field for field, the events Lambda
sends (DESIGN §9 item 10), on both profiles of the stack.

The expected shapes are AWS's own examples, written down below from
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html ("Example event") and
https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html ("Example standard queue message event").
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from seglog_aws.clients import client, local_session
from seglog_awsmodel.events import (
    ShardIteratorType,
    StreamReader,
    lambda_stream_arn,
    order_shards,
    sqs_event,
    stream_event,
    stream_record,
)
from seglog_plugin.resources import resources_of
from seglog_stack.local import LocalDeployment

# One record of the DynamoDB Streams event, from the "Example event" of the with-ddb page (a TTL delete carries
# userIdentity, the others do not).
AWS_STREAM_RECORD: dict[str, Any] = {
    "eventID": "c4ca4238a0b923820dcc509a6f75849b",
    "eventName": "INSERT",
    "eventVersion": "1.1",
    "eventSource": "aws:dynamodb",
    "awsRegion": "eu-central-1",
    "dynamodb": {
        "ApproximateCreationDateTime": 1428537600,
        "Keys": {"Id": {"N": "101"}},
        "NewImage": {"Message": {"S": "New item!"}, "Id": {"N": "101"}},
        "SequenceNumber": "4421584500000000017450439091",
        "SizeBytes": 26,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    },
    "eventSourceARN": "arn:aws:dynamodb:eu-central-1:123456789012:table/ExampleTableWithStream/stream/"
                      "2015-06-27T00:48:05.899",
}
AWS_TTL_IDENTITY = {"principalId": "dynamodb.amazonaws.com", "type": "Service"}

# One record of the SQS event, from "Example standard queue message event" of the with-sqs page.
AWS_SQS_RECORD: dict[str, Any] = {
    "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
    "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...",
    "body": "Test message.",
    "attributes": {
        "ApproximateReceiveCount": "1",
        "SentTimestamp": "1545082649183",
        "SenderId": "AIDAIENQZJOLO23YVJ4VO",
        "ApproximateFirstReceiveTimestamp": "1545082649185",
    },
    "messageAttributes": {
        "myAttribute": {"stringValue": "myValue", "stringListValues": [], "binaryListValues": [], "dataType": "String"},
    },
    "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
    "eventSource": "aws:sqs",
    "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:my-queue",
    "awsRegion": "us-east-2",
}


def shape(value: Any, *, depth: int = 2) -> Any:
    """The keys and JSON types of ``value`` down to ``depth`` levels (values themselves left out)."""
    if isinstance(value, dict) and depth > 0:
        return {k: shape(v, depth=depth - 1) for k, v in value.items()}
    return type(value).__name__


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --- DynamoDB Streams: no stack needed ----------------------------------------------------------------------


def test_a_ttl_delete_carries_user_identity_as_lambda_spells_it() -> None:
    # boto3's Identity shape says PrincipalId/Type; the event says principalId/type (with-ddb "Example event").
    raw = {"eventID": "1", "eventName": "REMOVE", "eventVersion": "1.1", "eventSource": "aws:dynamodb",
           "awsRegion": "us-east-1", "userIdentity": {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"},
           "dynamodb": {"ApproximateCreationDateTime": datetime(2015, 4, 9, tzinfo=UTC),
                        "Keys": {"Id": {"N": "101"}}, "SequenceNumber": "222", "SizeBytes": 38,
                        "StreamViewType": "KEYS_ONLY"}}
    record = stream_record(raw, event_source_arn="arn:aws:dynamodb:us-east-1:0:table/T/stream/x", region="us-east-1")
    assert AWS_TTL_IDENTITY == record["userIdentity"]
    assert 1428537600 == record["dynamodb"]["ApproximateCreationDateTime"]
    assert [*AWS_STREAM_RECORD, "userIdentity"] == list(record)


def test_every_attribute_type_is_converted_to_its_json_wire_form() -> None:
    image = {"b": {"B": b"\x00\x01"}, "bs": {"BS": [b"a", b"b"]}, "s": {"S": "x"}, "n": {"N": "1.5"},
             "ss": {"SS": ["a"]}, "ns": {"NS": ["1", "2"]}, "null": {"NULL": True}, "bool": {"BOOL": False},
             "l": {"L": [{"B": b"y"}, {"S": "z"}]}, "m": {"M": {"k": {"B": b"\xff"}}}}
    raw = {"eventID": "e", "eventName": "INSERT", "dynamodb": {
        "ApproximateCreationDateTime": 1428537600.9, "Keys": {"b": {"B": b"\x00\x01"}}, "NewImage": image,
        "SequenceNumber": "1", "SizeBytes": 9, "StreamViewType": "NEW_IMAGE"}}
    record = stream_record(raw, event_source_arn="arn", region="r")
    assert {"b": {"B": "AAE="}, "bs": {"BS": ["YQ==", "Yg=="]}, "s": {"S": "x"}, "n": {"N": "1.5"},
            "ss": {"SS": ["a"]}, "ns": {"NS": ["1", "2"]}, "null": {"NULL": True}, "bool": {"BOOL": False},
            "l": {"L": [{"B": "eQ=="}, {"S": "z"}]}, "m": {"M": {"k": {"B": "/w=="}}}} == record["dynamodb"]["NewImage"]
    # Epoch seconds "rounded down to the closest second" (DynamoDB Streams API Reference, StreamRecord).
    assert 1428537600 == record["dynamodb"]["ApproximateCreationDateTime"]
    # Missing envelope fields take Lambda's values.
    assert ("1.1", "aws:dynamodb") == (record["eventVersion"], record["eventSource"])


def test_converting_an_event_record_again_changes_nothing() -> None:
    assert {"Records": [AWS_STREAM_RECORD]} == stream_event([AWS_STREAM_RECORD],
                                                            event_source_arn=AWS_STREAM_RECORD["eventSourceARN"],
                                                            region="eu-central-1")


def test_an_unknown_attribute_type_is_refused() -> None:
    raw = {"eventID": "e", "eventName": "INSERT", "dynamodb": {"Keys": {"k": {"X": "?"}}}}
    with pytest.raises(ValueError, match="unknown DynamoDB attribute type 'X'"):
        stream_record(raw, event_source_arn="arn", region="r")


def test_dynamodb_local_region_in_the_stream_arn_becomes_the_functions_region() -> None:
    local_arn = "arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/2026-01-01T00:00:00.000"
    assert ("arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-01-01T00:00:00.000"
            == lambda_stream_arn(local_arn, "us-east-1"))
    aws_arn = AWS_STREAM_RECORD["eventSourceARN"]
    assert aws_arn == lambda_stream_arn(aws_arn, "us-east-1")


def test_shards_are_ordered_parent_before_child() -> None:
    def shard(shard_id: str, start: int, parent: str | None = None) -> dict[str, Any]:
        s: dict[str, Any] = {"ShardId": shard_id, "SequenceNumberRange": {"StartingSequenceNumber": str(start)}}
        if parent:
            s["ParentShardId"] = parent
        return s

    # c2 and c1 are children of p (listed before it); g of c1; o's parent was trimmed, so o is a root.
    shards = [shard("g", 400, "c1"), shard("c2", 300, "p"), shard("c1", 200, "p"), shard("o", 150, "gone"),
              shard("p", 100)]
    assert ["p", "o", "c1", "c2", "g"] == [s["ShardId"] for s in order_shards(shards)]


def test_an_iterator_type_that_needs_a_sequence_number_refuses_to_go_without() -> None:
    reader = StreamReader(client=None, stream_arn="arn")
    with pytest.raises(ValueError, match="AFTER_SEQUENCE_NUMBER needs a sequence_number"):
        reader.iterator("shard", ShardIteratorType.AFTER_SEQUENCE_NUMBER)
    with pytest.raises(ValueError, match="TRIM_HORIZON takes no sequence_number"):
        reader.iterator("shard", "TRIM_HORIZON", "1")


# --- DynamoDB Streams on the local stack ----------------------------------------------------------------------


@pytest.fixture
def clients(deployment: LocalDeployment) -> dict[str, Any]:
    session = local_session(deployment.region)
    return {s: client(s, session=session, endpoint_url=deployment.endpoints[s])
            for s in ("dynamodb", "dynamodbstreams", "sqs")}


@pytest.fixture
def reader(deployment: LocalDeployment, clients: dict[str, Any]) -> StreamReader:
    return StreamReader(clients["dynamodbstreams"], resources_of(deployment).entries_stream_arn)


def segment_key() -> bytes:
    """A unique Entries key G: a fresh log id + segment 0 as 8 bytes big-endian (DESIGN §2)."""
    return uuid.uuid4().bytes + (0).to_bytes(8, "big")


def latest_iterators(reader: StreamReader) -> dict[str, str]:
    """LATEST iterators of the open shards: reading them returns only what is written from now on."""
    return {s["ShardId"]: reader.iterator(s["ShardId"], ShardIteratorType.LATEST) for s in reader.shards()
            if "EndingSequenceNumber" not in s.get("SequenceNumberRange", {})}


def collect(reader: StreamReader, iterators: dict[str, str], wanted: Callable[[dict[str, Any]], bool], count: int,
            timeout: float = 10.0) -> list[tuple[str, dict[str, Any]]]:
    """Poll ``iterators`` (by shard id) until ``count`` records satisfy ``wanted``: [(shard id, record)].

    Records of other tests on the session's table are skipped.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    deadline = time.monotonic() + timeout
    while len(found) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(found)} of {count} stream records arrived within {timeout}s")
        progressed = False
        for shard_id, iterator in list(iterators.items()):
            records, following = reader.read_from(iterator)
            if following:
                iterators[shard_id] = following
            else:
                del iterators[shard_id]
            found.extend((shard_id, r) for r in records if wanted(r))
            progressed = progressed or bool(records)
        if not progressed:
            time.sleep(0.1)
    return found


def of_key(g: bytes) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["dynamodb"]["Keys"]["G"]["B"] == g


@pytest.mark.stack
def test_the_stream_reader_finds_the_tables_stream(deployment: LocalDeployment, clients: dict[str, Any],
                                                   reader: StreamReader) -> None:
    by_table = StreamReader.for_table(clients["dynamodbstreams"], clients["dynamodb"],
                                      resources_of(deployment).entries_table)
    assert reader.stream_arn == by_table.stream_arn
    shards = reader.shards()
    assert shards, "an enabled stream has at least one shard"
    seen: set[str] = set()
    for shard in shards:
        assert shard.get("ParentShardId") not in {s["ShardId"] for s in shards} - seen, "child listed before parent"
        seen.add(shard["ShardId"])


@pytest.mark.stack
def test_insert_modify_remove_become_the_lambda_stream_event(deployment: LocalDeployment, clients: dict[str, Any],
                                                             reader: StreamReader) -> None:
    ddb, table = clients["dynamodb"], resources_of(deployment).entries_table
    g = segment_key()
    key = {"G": {"B": g}, "N": {"N": "0"}}
    item = {**key, "C": {"N": "1700000000"}, "T": {"S": "Snapshot"}, "V": {"N": "1"}, "B": {"B": b"\x00\x01\xff"},
            "K": {"B": uuid.uuid4().bytes}, "X": {"L": [{"B": b"y"}, {"BS": [b"a", b"b"]}]},
            "Y": {"M": {"k": {"NULL": True}, "b": {"BOOL": True}, "ss": {"SS": ["s"]}, "ns": {"NS": ["1.5"]}}}}
    iterators = latest_iterators(reader)
    before = time.time()
    ddb.put_item(TableName=table, Item=item)
    ddb.update_item(TableName=table, Key=key, UpdateExpression="SET R = :r",
                    ExpressionAttributeValues={":r": {"S": "snapshots/root"}})
    ddb.delete_item(TableName=table, Key=key)
    after = time.time()
    raw = [record for _, record in collect(reader, iterators, of_key(g), 3)]

    event = stream_event(raw, event_source_arn=reader.stream_arn, region=deployment.region)
    assert event == json.loads(json.dumps(event)), "the event is plain JSON"
    records = event["Records"]
    assert ["INSERT", "MODIFY", "REMOVE"] == [r["eventName"] for r in records]

    wire_key = {"G": {"B": b64(g)}, "N": {"N": "0"}}
    wire_item = {**wire_key, "C": {"N": "1700000000"}, "T": {"S": "Snapshot"}, "V": {"N": "1"},
                 "B": {"B": b64(b"\x00\x01\xff")}, "K": {"B": b64(item["K"]["B"])},
                 "X": {"L": [{"B": "eQ=="}, {"BS": ["YQ==", "Yg=="]}]},
                 "Y": {"M": {"k": {"NULL": True}, "b": {"BOOL": True}, "ss": {"SS": ["s"]}, "ns": {"NS": ["1.5"]}}}}
    images = [wire_item, {**wire_item, "R": {"S": "snapshots/root"}}, None]
    arn = f"arn:aws:dynamodb:{deployment.region}:" + reader.stream_arn.split(":", 4)[4]
    for record, image in zip(records, images, strict=True):
        # The envelope is AWS's, key for key and type for type (NEW_IMAGE: a REMOVE has no image).
        expected_shape = shape(AWS_STREAM_RECORD)
        expected_shape["dynamodb"] = {k: v for k, v in expected_shape["dynamodb"].items()
                                      if image is not None or k != "NewImage"}
        assert expected_shape == shape(record)
        assert ("1.1", "aws:dynamodb", deployment.region, arn) == (
            record["eventVersion"], record["eventSource"], record["awsRegion"], record["eventSourceARN"])
        assert record["eventID"]
        change = record["dynamodb"]
        assert wire_key == change["Keys"]
        assert image == change.get("NewImage")
        assert "OldImage" not in change
        assert "NEW_IMAGE" == change["StreamViewType"]
        assert change["SequenceNumber"].isdigit()
        assert change["SizeBytes"] > 0
        # Both local backends truncate to the minute (AWS: to the second).
        assert int(before) - 60 <= change["ApproximateCreationDateTime"] <= after
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert sorted(numbers) == numbers and len(set(numbers)) == 3
    assert len({r["eventID"] for r in records}) == 3


@pytest.mark.stack
def test_reading_at_and_after_a_sequence_number(deployment: LocalDeployment, clients: dict[str, Any],
                                                reader: StreamReader) -> None:
    ddb, table = clients["dynamodb"], resources_of(deployment).entries_table
    g = segment_key()
    iterators = latest_iterators(reader)
    for n in range(3):
        ddb.put_item(TableName=table, Item={"G": {"B": g}, "N": {"N": str(n)}, "T": {"S": "SetCell"}})
    (shard_id, first), (_, second), (_, third) = collect(reader, iterators, of_key(g), 3)

    def numbers(records: list[dict[str, Any]]) -> list[str]:
        return [r["dynamodb"]["Keys"]["N"]["N"] for r in records if of_key(g)(r)]

    at, _ = reader.read(shard_id, ShardIteratorType.AT_SEQUENCE_NUMBER, first["dynamodb"]["SequenceNumber"],
                        limit=3)
    assert ["0", "1", "2"] == numbers(at)
    after, following = reader.read(shard_id, "AFTER_SEQUENCE_NUMBER", second["dynamodb"]["SequenceNumber"],
                                   limit=1)
    assert ["2"] == numbers(after)
    assert following, "an open shard always gives an iterator to go on with"
    assert third["dynamodb"]["SequenceNumber"] == after[0]["dynamodb"]["SequenceNumber"]


@pytest.mark.stack
def test_reading_from_the_trim_horizon_reaches_new_records(deployment: LocalDeployment, clients: dict[str, Any],
                                                           reader: StreamReader) -> None:
    g = segment_key()
    clients["dynamodb"].put_item(TableName=resources_of(deployment).entries_table,
                                 Item={"G": {"B": g}, "N": {"N": "0"}})
    iterators = {s["ShardId"]: reader.iterator(s["ShardId"], ShardIteratorType.TRIM_HORIZON)
                 for s in reader.shards()}
    ((_, record),) = collect(reader, iterators, of_key(g), 1)
    assert "INSERT" == record["eventName"]


# --- SQS ------------------------------------------------------------------------------------------------------


def test_a_message_received_without_system_attributes_is_refused() -> None:
    message = {"MessageId": "m", "ReceiptHandle": "r", "Body": "b", "MD5OfBody": "x",
               "Attributes": {"SentTimestamp": "1"}}
    with pytest.raises(ValueError, match=r"MessageSystemAttributeNames=\['All'\]"):
        sqs_event([message], queue_arn="arn", region="us-east-1")


def test_binary_and_list_message_attributes_take_lambdas_spelling() -> None:
    message = {"MessageId": "m", "ReceiptHandle": "r", "Body": "b", "MD5OfBody": "x",
               "Attributes": dict.fromkeys(("ApproximateReceiveCount", "SentTimestamp", "SenderId",
                                            "ApproximateFirstReceiveTimestamp"), "1"),
               "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": b"1100",
                                           "StringListValues": ["abc"], "BinaryListValues": [b"0", b"1"]}}}
    (record,) = sqs_event([message], queue_arn="arn", region="us-east-1")["Records"]
    assert {"binaryValue": "MTEwMA==", "stringListValues": ["abc"], "binaryListValues": ["MA==", "MQ=="],
            "dataType": "Binary"} == record["messageAttributes"]["a"]
    assert "md5OfMessageAttributes" not in record


@pytest.fixture
def queue(deployment: LocalDeployment, clients: dict[str, Any]) -> tuple[str, str]:
    """The deployment's snapshot queue: (url, arn)."""
    url = resources_of(deployment).queue_url
    attributes = clients["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return url, attributes["QueueArn"]


def receive(sqs: Any, url: str, run: str, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Receive (all attributes) until ``count`` messages of this run are held; others go back to the queue."""
    mine: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(mine) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {len(mine)} of {count} messages arrived within {timeout}s")
            response = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                           MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"])
            for message in response.get("Messages", []):
                run_attribute = message.get("MessageAttributes", {}).get("run", {})
                (mine if run_attribute.get("StringValue") == run else others).append(message)
    finally:
        for message in others:
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"],
                                          VisibilityTimeout=0)
    return mine


@pytest.mark.stack
def test_received_messages_become_the_lambda_sqs_event(deployment: LocalDeployment, clients: dict[str, Any],
                                                       queue: tuple[str, str]) -> None:
    sqs, (url, arn) = clients["sqs"], queue
    run = uuid.uuid4().hex
    body = json.dumps({"log": run, "segment": 0, "entry": 7})
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
    sent_at = int(time.time() * 1000)
    sent = sqs.send_message(
        QueueUrl=url, MessageBody=body,
        MessageAttributes={"run": {"DataType": "String", "StringValue": run},
                           "count": {"DataType": "Number", "StringValue": "3"},
                           "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
                           "kind": {"DataType": "String.job", "StringValue": "snapshot"}},
        MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": trace}})
    (message,) = receive(sqs, url, run, 1)
    try:
        event = sqs_event([message], queue_arn=arn, region=deployment.region)
    finally:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert event == json.loads(json.dumps(event)), "the event is plain JSON"
    (record,) = event["Records"]

    # Keys and types are AWS's (plus md5OfMessageAttributes, sent when the message has attributes).
    expected_shape = shape(AWS_SQS_RECORD, depth=1)
    expected_shape["md5OfMessageAttributes"] = "str"
    assert expected_shape == shape(record, depth=1)
    assert list(AWS_SQS_RECORD["attributes"]) == list(record["attributes"])[:4]
    assert (sent["MessageId"], message["ReceiptHandle"], body) == (
        record["messageId"], record["receiptHandle"], record["body"])
    assert hashlib.md5(body.encode()).hexdigest() == record["md5OfBody"]
    assert sent["MD5OfMessageAttributes"] == record["md5OfMessageAttributes"]
    assert ("aws:sqs", arn, deployment.region) == (record["eventSource"], record["eventSourceARN"],
                                                   record["awsRegion"])
    attributes = record["attributes"]
    assert all(isinstance(v, str) for v in attributes.values())
    assert "1" == attributes["ApproximateReceiveCount"]
    assert trace == attributes["AWSTraceHeader"]
    assert attributes["SenderId"]
    for stamp in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
        assert sent_at - 60_000 <= int(attributes[stamp]) <= int(time.time() * 1000) + 60_000
    assert {
        "run": {"stringValue": run, "stringListValues": [], "binaryListValues": [], "dataType": "String"},
        "count": {"stringValue": "3", "stringListValues": [], "binaryListValues": [], "dataType": "Number"},
        "blob": {"binaryValue": "AP8=", "stringListValues": [], "binaryListValues": [], "dataType": "Binary"},
        "kind": {"stringValue": "snapshot", "stringListValues": [], "binaryListValues": [],
                 "dataType": "String.job"},
    } == record["messageAttributes"]


@pytest.mark.stack
def test_a_message_received_again_counts_its_receives(deployment: LocalDeployment, clients: dict[str, Any],
                                                      queue: tuple[str, str]) -> None:
    sqs, (url, arn) = clients["sqs"], queue
    run = uuid.uuid4().hex
    sqs.send_message(QueueUrl=url, MessageBody="again",
                     MessageAttributes={"run": {"DataType": "String", "StringValue": run}})
    (first,) = receive(sqs, url, run, 1)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    (second,) = receive(sqs, url, run, 1)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    records = sqs_event([first, second], queue_arn=arn, region=deployment.region)["Records"]
    assert ["1", "2"] == [r["attributes"]["ApproximateReceiveCount"] for r in records]
    assert records[0]["messageId"] == records[1]["messageId"]
    assert records[0]["receiptHandle"] != records[1]["receiptHandle"]
    assert records[0]["attributes"]["ApproximateFirstReceiveTimestamp"] == (
        records[1]["attributes"]["ApproximateFirstReceiveTimestamp"])
