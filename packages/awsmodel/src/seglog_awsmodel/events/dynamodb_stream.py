"""DynamoDB Streams: read a stream with boto3, and turn its records into the event Lambda sends.

Lambda reads a table's stream with the same GetRecords API and hands the function a JSON event whose records
are the API's records plus ``eventSourceARN``. boto3 parses the API's JSON into Python types
(``ApproximateCreationDateTime`` becomes a datetime, binary attribute values become bytes); :func:`stream_event`
undoes that so the handler receives what AWS would send.

The two local backends differ in what they put in a record, and the event builder hides it:

- DynamoDB Local (served directly, profile ``dynamodb-local``) names its region ``ddblocal``, in each record's
  ``awsRegion`` and in the stream ARN. The event takes ``awsRegion`` from the ``region`` argument, and
  ``eventSourceARN`` gets the ARN with ``ddblocal`` replaced by that region.
- Both truncate ``ApproximateCreationDateTime`` to the minute (AWS rounds down to the second). Nothing in the
  record can put the seconds back; a poller that watches the shard can, nearly (:func:`creation_second`), and must
  then give a record it delivers again the value it gave it first, which AWS keeps with the record.
- Both number records ``000000000000000000001``, ``...002``: strings, as on AWS, but of fixed width; and
  both give UUIDs as ``eventID`` where AWS gives 32 hex digits. Both are kept as they come (opaque strings).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from seglog_awsmodel.events._wire import to_base64

#: The region DynamoDB Local reports in records and ARNs, whatever region the client asked for.
DYNAMODB_LOCAL_REGION = "ddblocal"
#: GetRecords returns at most 1000 records per call (DynamoDB Streams API Reference, GetRecords "Limit").
MAX_GET_RECORDS_LIMIT = 1000

# The shape of one record of the event Lambda sends, from the "Example event" of
# https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html (keys in that order):
#   {"eventID": "c4ca4238a0b923820dcc509a6f75849b", "eventName": "INSERT", "eventVersion": "1.1",
#    "eventSource": "aws:dynamodb", "awsRegion": "eu-central-1",
#    "dynamodb": {"ApproximateCreationDateTime": 1428537600, "Keys": {"Id": {"N": "101"}},
#                 "NewImage": {...}, "SequenceNumber": "4421584500000000017450439091", "SizeBytes": 26,
#                 "StreamViewType": "NEW_AND_OLD_IMAGES"},
#    "eventSourceARN":
#        "arn:aws:dynamodb:eu-central-1:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899",
#    "userIdentity": {"principalId": "dynamodb.amazonaws.com", "type": "Service"}}   <- TTL deletes only
# Attribute values are DynamoDB JSON, binary (B, BS) as base64 strings. ApproximateCreationDateTime is epoch
# seconds "rounded down to the closest second" (DynamoDB Streams API Reference, StreamRecord:
# https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html), and a record has
# no ApproximateCreationDateTimePrecision: that setting (MILLISECOND | MICROSECOND) belongs to the records DynamoDB
# writes to a Kinesis data stream (EnableKinesisStreamingConfiguration), not to DynamoDB Streams or this event.
EVENT_SOURCE = "aws:dynamodb"
EVENT_VERSION = "1.1"
_STREAM_RECORD_KEYS = ("ApproximateCreationDateTime", "Keys", "NewImage", "OldImage", "SequenceNumber", "SizeBytes",
                       "StreamViewType")


class ShardIteratorType(StrEnum):
    """Where a shard iterator starts (DynamoDB Streams API Reference, GetShardIterator)."""

    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"
    AT_SEQUENCE_NUMBER = "AT_SEQUENCE_NUMBER"
    AFTER_SEQUENCE_NUMBER = "AFTER_SEQUENCE_NUMBER"


def stream_event(records: Iterable[Mapping[str, Any]], *, event_source_arn: str, region: str) -> dict[str, Any]:
    """The event Lambda sends for a batch of stream records.

    Args:
        records: records as boto3's ``dynamodbstreams.get_records()["Records"]`` returns them (records already
            in event form are accepted too and come out unchanged).
        event_source_arn: the stream's ARN, as the event source mapping names it.
        region: the function's region; goes into every record's ``awsRegion``.

    Returns:
        ``{"Records": [...]}``, JSON-serializable.
    """
    return {"Records": [stream_record(r, event_source_arn=event_source_arn, region=region) for r in records]}


def stream_record(record: Mapping[str, Any], *, event_source_arn: str, region: str) -> dict[str, Any]:
    """One record of a stream event (see :func:`stream_event`)."""
    change = record["dynamodb"]
    dynamodb: dict[str, Any] = {}
    for key in _STREAM_RECORD_KEYS:
        if key not in change:
            continue
        value = change[key]
        if key == "ApproximateCreationDateTime":
            value = epoch_seconds(value)
        elif key in ("Keys", "NewImage", "OldImage"):
            value = attribute_map(value)
        elif key == "SequenceNumber":
            value = str(value)
        elif key == "SizeBytes":
            value = int(value)
        dynamodb[key] = value
    event: dict[str, Any] = {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", EVENT_VERSION),
        "eventSource": record.get("eventSource", EVENT_SOURCE),
        "awsRegion": region,
        "dynamodb": dynamodb,
        "eventSourceARN": lambda_stream_arn(event_source_arn, region),
    }
    identity = record.get("userIdentity")
    if identity:
        # boto3's Identity shape spells these PrincipalId/Type; the Lambda event principalId/type.
        event["userIdentity"] = {
            "principalId": identity.get("principalId", identity.get("PrincipalId")),
            "type": identity.get("type", identity.get("Type")),
        }
    return event


def lambda_stream_arn(stream_arn: str, region: str) -> str:
    """``stream_arn`` with DynamoDB Local's ``ddblocal`` region replaced by ``region`` (other ARNs unchanged)."""
    parts = stream_arn.split(":", 5)
    if len(parts) == 6 and parts[3] == DYNAMODB_LOCAL_REGION:
        parts[3] = region
        return ":".join(parts)
    return stream_arn


def epoch_seconds(value: datetime | float) -> int:
    """Whole epoch seconds, rounded down; a naive datetime is taken as UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return math.floor(value.timestamp())
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"ApproximateCreationDateTime must be a datetime or a number, not {type(value).__name__}")
    return math.floor(value)


def creation_second(created: datetime | float, *, not_before: float | None) -> int:
    """A record's ``ApproximateCreationDateTime`` to the second, as AWS gives it, from a local stack's minute.

    DynamoDB Local and LocalStack round the creation time down to the minute; AWS to the second. A poller knows a
    little more than the record: what it reads after a read that found the end of the shard was written after
    that read began (``not_before``, Unix seconds). So a whole-minute value is raised to ``not_before``'s second,
    never past its own minute; a value with seconds (a backend that keeps them) is kept, and so is a value read
    with no such bound (the first read of a backlog). Raised, it is at most the poll interval early where AWS's
    is exact; never late.
    """
    seconds = epoch_seconds(created)
    if not_before is None or seconds % 60:
        return seconds
    return max(seconds, min(math.floor(not_before), seconds + 59))


def attribute_map(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item (or key) in DynamoDB JSON as Lambda sends it: bytes become base64 strings."""
    return {name: attribute_value(value) for name, value in item.items()}


def attribute_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """One DynamoDB attribute value in its JSON wire form (``{"B": "AAE="}``, ``{"N": "1"}``, ...)."""
    if len(value) != 1:
        raise ValueError(f"an attribute value has exactly one type key, got {sorted(value)}")
    ((kind, data),) = value.items()
    match kind:
        case "S" | "N" | "BOOL" | "NULL":
            return {kind: data}
        case "SS" | "NS":
            return {kind: list(data)}
        case "B":
            return {kind: to_base64(data)}
        case "BS":
            return {kind: [to_base64(b) for b in data]}
        case "M":
            return {kind: attribute_map(data)}
        case "L":
            return {kind: [attribute_value(v) for v in data]}
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}: expected one of S N B SS NS BS M L NULL BOOL")



class StreamReader:
    """Reads one DynamoDB stream with a boto3 ``dynamodbstreams`` client, the way a Lambda poller does.

    Records come back as boto3 returns them; :func:`stream_event` turns a batch into the Lambda event.
    """

    def __init__(self, client: Any, stream_arn: str) -> None:
        self.client = client
        self.stream_arn = stream_arn

    @classmethod
    def for_table(cls, client: Any, dynamodb: Any, table_name: str) -> StreamReader:
        """A reader of ``table_name``'s current stream (its ``LatestStreamArn``).

        Raises:
            ValueError: the table has no stream enabled.
        """
        arn = dynamodb.describe_table(TableName=table_name)["Table"].get("LatestStreamArn")
        if not arn:
            raise ValueError(f"table {table_name!r} has no stream: enable StreamSpecification on it")
        return cls(client, arn)

    def describe(self) -> dict[str, Any]:
        """The stream's description with every shard (DescribeStream pages through them)."""
        shards: list[dict[str, Any]] = []
        params: dict[str, Any] = {"StreamArn": self.stream_arn}
        while True:
            description: dict[str, Any] = self.client.describe_stream(**params)["StreamDescription"]
            shards.extend(description.get("Shards", []))
            last = description.get("LastEvaluatedShardId")
            if not last:
                break
            params["ExclusiveStartShardId"] = last
        description["Shards"] = shards
        description.pop("LastEvaluatedShardId", None)
        return description

    def shards(self) -> list[dict[str, Any]]:
        """The stream's shards, every parent before its children (Lambda reads a parent shard first)."""
        return order_shards(self.describe()["Shards"])

    def iterator(self, shard_id: str, iterator_type: ShardIteratorType | str,
                 sequence_number: str | None = None) -> str:
        """A shard iterator (``sequence_number`` is required for AT_/AFTER_SEQUENCE_NUMBER, refused otherwise)."""
        kind = ShardIteratorType(iterator_type)
        needs_number = kind in (ShardIteratorType.AT_SEQUENCE_NUMBER, ShardIteratorType.AFTER_SEQUENCE_NUMBER)
        if needs_number and sequence_number is None:
            raise ValueError(f"{kind} needs a sequence_number")
        if not needs_number and sequence_number is not None:
            raise ValueError(f"{kind} takes no sequence_number (use AT_ or AFTER_SEQUENCE_NUMBER)")
        params: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id, "ShardIteratorType": kind.value}
        if sequence_number is not None:
            params["SequenceNumber"] = sequence_number
        iterator: str = self.client.get_shard_iterator(**params)["ShardIterator"]
        return iterator

    def read(self, shard_id: str, iterator_type: ShardIteratorType | str, sequence_number: str | None = None, *,
             limit: int = MAX_GET_RECORDS_LIMIT) -> tuple[list[dict[str, Any]], str | None]:
        """One GetRecords call from a new iterator: (records, the iterator to continue with).

        The next iterator is None once a closed shard has been read to its end.
        """
        return self.read_from(self.iterator(shard_id, iterator_type, sequence_number), limit=limit)

    def read_after(self, shard_id: str, after: str | None, *, limit: int = MAX_GET_RECORDS_LIMIT
                   ) -> list[dict[str, Any]]:
        """Up to ``limit`` records after sequence number ``after`` (from the trim horizon when None): how a
        poller that checkpoints by sequence number resumes. Iterators expire after 15 minutes; sequence
        numbers do not."""
        if after is None:
            return self.read(shard_id, ShardIteratorType.TRIM_HORIZON, limit=limit)[0]
        return self.read(shard_id, ShardIteratorType.AFTER_SEQUENCE_NUMBER, after, limit=limit)[0]

    def read_from(self, shard_iterator: str, *, limit: int = MAX_GET_RECORDS_LIMIT
                  ) -> tuple[list[dict[str, Any]], str | None]:
        """One GetRecords call from ``shard_iterator``: (records, the iterator to continue with, or None)."""
        if not 1 <= limit <= MAX_GET_RECORDS_LIMIT:
            raise ValueError(f"limit must be 1..{MAX_GET_RECORDS_LIMIT}, got {limit}")
        response = self.client.get_records(ShardIterator=shard_iterator, Limit=limit)
        return list(response.get("Records", [])), response.get("NextShardIterator") or None


def order_shards(shards: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``shards`` with every parent before its children; siblings by starting sequence number.

    A shard whose parent is not listed (trimmed from the stream) counts as a root.
    """
    by_id = {s["ShardId"]: dict(s) for s in shards}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for shard in by_id.values():
        parent = shard.get("ParentShardId")
        children.setdefault(parent if parent in by_id else None, []).append(shard)

    def start(shard: Mapping[str, Any]) -> tuple[int, str]:
        number = shard.get("SequenceNumberRange", {}).get("StartingSequenceNumber", "0")
        return int(number), shard["ShardId"]

    ordered: list[dict[str, Any]] = []
    level = sorted(children.get(None, []), key=start)
    while level:
        ordered.extend(level)
        level = sorted((c for s in level for c in children.get(s["ShardId"], [])), key=start)
    if len(ordered) != len(by_id):
        raise ValueError("the shards' ParentShardId links form a cycle: this is not a DynamoDB stream's lineage")
    return ordered
