"""A simulated DynamoDB stream (StreamViewType NEW_IMAGE): shards of change records, one shard per partition key.

DynamoDB Developer Guide, "Change data capture for DynamoDB Streams" (Streams): each stream record appears exactly
once, and the records of one item appear in the order of its modifications; a PutItem or UpdateItem that changes no
data writes no record; records are kept 24 hours. An item's shard here is the CRC-32 of its partition key's bytes
modulo the number of shards, so every change to one item lands in one shard, in order. Shards never split.

Records come out in the shape boto3's ``dynamodbstreams.get_records()["Records"]`` gives (DynamoDB Streams API
Reference, Record and StreamRecord): binary values as bytes, ``ApproximateCreationDateTime`` a datetime "rounded
down to the closest second", ``SequenceNumber`` a decimal string (fixed width here; AWS's are not).
"""

from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from seglog_sim.aws.dynamodb_values import Item, copy_item, item_size

#: Stream records are removed after 24 hours (DynamoDB Developer Guide, Streams).
RETENTION_SECONDS = 24 * 3600
EVENT_VERSION = "1.1"
EVENT_SOURCE = "aws:dynamodb"


@dataclass(frozen=True, slots=True)
class Change:
    sequence: int
    event_id: str
    event_name: str  # INSERT | MODIFY | REMOVE
    keys: Item
    new_image: Item | None
    created: float
    size: int


class TableStream:
    """One table's stream: its ARN, its shards and their records."""

    def __init__(self, table: str, *, region: str, account: str, created: float, shards: int) -> None:
        label = datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        self.arn = f"arn:aws:dynamodb:{region}:{account}:table/{table}/stream/{label}"
        self.region = region
        # Shard ids in AWS's form (shardId-<20 digits>-<8 hex>), numbered so they sort in creation order.
        self.shard_ids = [f"shardId-{int(created):020d}-{i:08x}" for i in range(shards)]
        self.shards: dict[str, list[Change]] = {s: [] for s in self.shard_ids}

    def shard_of(self, key_bytes: bytes) -> str:
        return self.shard_ids[zlib.crc32(key_bytes) % len(self.shard_ids)]

    def append(self, shard_id: str, change: Change) -> None:
        records = self.shards[shard_id]
        records.append(change)
        expired = change.created - RETENTION_SECONDS
        if records[0].created < expired:
            keep = next(i for i, r in enumerate(records) if r.created >= expired)
            del records[:keep]

    def records(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        records = self.shards[shard_id]
        start = 0 if after is None else bisect.bisect_right(records, int(after), key=lambda r: r.sequence)
        return [self._record(r) for r in records[start:start + limit]]

    def _record(self, change: Change) -> dict[str, Any]:
        dynamodb: dict[str, Any] = {
            # StreamRecord ApproximateCreationDateTime: "rounded down to the closest second".
            "ApproximateCreationDateTime": datetime.fromtimestamp(int(change.created), UTC),
            "Keys": copy_item(change.keys),
        }
        if change.new_image is not None:
            dynamodb["NewImage"] = copy_item(change.new_image)
        dynamodb["SequenceNumber"] = sequence_text(change.sequence)
        dynamodb["SizeBytes"] = change.size
        dynamodb["StreamViewType"] = "NEW_IMAGE"
        return {"eventID": change.event_id, "eventName": change.event_name, "eventVersion": EVENT_VERSION,
                "eventSource": EVENT_SOURCE, "awsRegion": self.region, "dynamodb": dynamodb}


def sequence_text(sequence: int) -> str:
    return f"{sequence:021d}"


def key_bytes(value: dict[str, Any]) -> bytes:
    """The bytes of a partition key value that pick its shard."""
    ((kind, data),) = value.items()
    return bytes(data) if kind == "B" else str(data).encode()


def change_size(keys: Item, new_image_size: int) -> int:
    """SizeBytes of a record: the sizes of its Keys and NewImage (AWS does not document its formula)."""
    return item_size(keys) + new_image_size
