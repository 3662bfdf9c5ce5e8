"""DynamoDBLogStore: the LogStore port on the Segments and Entries tables (DESIGN §2, §3).

With a retry policy (every reader and the snapshot worker), throttles and 5xx are retried in
:class:`DynamoDBCalls`. A write whose answer was lost is sent again only where that is safe, said per call below;
the append path's writes (create_log, put_entry, new_segment) never are: EventLog uses a store without a policy
and decides itself, knowing which failures leave a write's outcome unknown.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

from seglog_aws.dynamodb_calls import ConditionError, DynamoDBCalls
from seglog_aws.items import entry_key, entry_to_item, item_to_entry, item_to_segment, segment_to_item
from seglog_aws.meter import Meter
from seglog_core import errors
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, Segment, segment_key, uuid_from_bytes

_NOT_EXISTS_ENTRY = "attribute_not_exists(N)"
_NOT_EXISTS_SEGMENT = "attribute_not_exists(N)"
#: The Segments table's sparse index of segments due for a retention look (template.yaml): partition key ``U``,
#: present (always 1) only on items new_segment wrote and retention has not cleared; sort key ``C``.
DUE_INDEX = "Due"
_DUE = {"N": "1"}


class DynamoDBLogStore:
    """Segments and Entries on DynamoDB through the low-level client.

    Args:
        client: a boto3 DynamoDB client (see :func:`seglog_aws.clients.client`).
        segments_table, entries_table: physical table names.
        meter: receives every call and its consumed capacity.
        retry: retries throttles and 5xx (None: every call once, for the append path).
    """

    def __init__(self, client: Any, *, segments_table: str, entries_table: str, meter: Meter | None = None,
                 retry: RetryPolicy | None = None):
        self._ddb = client
        self._calls = DynamoDBCalls(client, meter, retry)
        self.meter = self._calls.meter
        self.segments_table = segments_table
        self.entries_table = entries_table

    def _call(self, operation: str, *, write: bool, on_condition: ConditionError | None = None,
              retry_unknown: bool | None = None, **params: Any) -> dict[str, Any]:
        return self._calls.call(operation, write=write, on_condition=on_condition, retry_unknown=retry_unknown,
                                **params)

    # ------------------------------------------------------------------------------------------- LogStore

    def create_log(self, segment: Segment, first: Entry) -> None:
        self._call("TransactWriteItems", write=True, TransactItems=[
            {"Put": {"TableName": self.segments_table, "Item": segment_to_item(segment),
                     "ConditionExpression": _NOT_EXISTS_SEGMENT}},
            {"Put": {"TableName": self.entries_table, "Item": entry_to_item(first),
                     "ConditionExpression": _NOT_EXISTS_ENTRY}},
        ])

    def latest_segments(self, log_id: uuid.UUID, limit: int = 2, *, consistent: bool = False) -> list[Segment]:
        # Strong only when asked: to confirm a log missing before saying so, or where a writer needs the newest.
        params: dict[str, Any] = {"ConsistentRead": True} if consistent else {}
        response = self._call(
            "Query", write=False, TableName=self.segments_table, KeyConditionExpression="L = :l",
            ExpressionAttributeValues={":l": {"B": log_id.bytes}}, ScanIndexForward=False, Limit=limit, **params,
        )
        return [item_to_segment(i) for i in response.get("Items", [])]

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        # Strong: every caller (verify, retention, rebuild, the order's look back, the status route) acts on the
        # marks and S it reads, and none knows what a lagging answer would lack. Segments are few: it costs ~1 RRU.
        for item in self._pages(TableName=self.segments_table, KeyConditionExpression="L = :l",
                                ExpressionAttributeValues={":l": {"B": log_id.bytes}}, ConsistentRead=True):
            yield item_to_segment(item)

    def log_ids(self) -> Iterator[uuid.UUID]:
        seen: set[uuid.UUID] = set()
        for item in self._calls.pages("Scan", TableName=self.segments_table, ProjectionExpression="L"):
            log_id = uuid_from_bytes(bytes(item["L"]["B"]))
            if log_id not in seen:
                seen.add(log_id)
                yield log_id

    def due_segments(self, closed_before: int) -> Iterator[tuple[uuid.UUID, int]]:
        # Eventually consistent (a global secondary index has no other kind): retention decides from a consistent
        # read of the log's segments, never from the index, so a stale page costs at most a look at a log just
        # cleared, or leaves a close of the last second to the next run (seglog_core.retention, "Due segments").
        for item in self._pages(TableName=self.segments_table, IndexName=DUE_INDEX,
                                KeyConditionExpression="U = :u AND C <= :c",
                                ExpressionAttributeValues={":u": _DUE, ":c": {"N": str(closed_before)}}):
            yield uuid_from_bytes(bytes(item["L"]["B"])), int(item["N"]["N"])

    def clear_due(self, log_id: uuid.UUID, segment: int) -> None:
        # Safe to send again after a lost answer: removing U twice leaves the same item. Only on an existing item
        # (UpdateItem would create one without C), and not while retention's claim (P) stands on it: that segment
        # stays due until a run finishes it (mark_retiring).
        with contextlib.suppress(errors.ItemExistsError):
            self._call("UpdateItem", write=True, retry_unknown=True, TableName=self.segments_table,
                       Key={"L": {"B": log_id.bytes}, "N": {"N": str(segment)}}, UpdateExpression="REMOVE U",
                       ConditionExpression="attribute_exists(N) AND attribute_not_exists(P)",
                       on_condition=lambda _: errors.ItemExistsError(f"segment {segment} (gone, or claimed)"))

    def latest_entry(self, log_id: uuid.UUID, segment: int) -> Entry | None:
        response = self._call(
            "Query", write=False, TableName=self.entries_table, KeyConditionExpression="G = :g",
            ExpressionAttributeValues={":g": {"B": segment_key(log_id, segment)}},
            ScanIndexForward=False, Limit=1,
        )
        items = response.get("Items", [])
        return item_to_entry(items[0]) if items else None

    def put_entry(self, entry: Entry) -> None:
        def exists(response: dict[str, Any]) -> Exception:
            item = response.get("Item")
            return errors.ItemExistsError(f"entry {entry.segment}/{entry.num}",
                                          item_to_entry(item) if item else None)

        self._call("PutItem", write=True, on_condition=exists, TableName=self.entries_table,
                   Item=entry_to_item(entry), ConditionExpression=_NOT_EXISTS_ENTRY,
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")

    def get_entry(self, log_id: uuid.UUID, segment: int, num: int) -> Entry | None:
        # Strong: its callers ask whether an entry is there or complete *now* (the worker's "done already", a paged
        # load's base); a lagging "absent" or "no root" would be taken for an answer. One item: 1 RRU.
        response = self._call("GetItem", write=False, TableName=self.entries_table,
                              Key=entry_key(log_id, segment, num), ConsistentRead=True)
        item = response.get("Item")
        return item_to_entry(item) if item else None

    def entries(
        self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *, page_size: int = 500,
        consistent: bool = True,
    ) -> Iterator[Entry]:
        values: dict[str, Any] = {":g": {"B": segment_key(log_id, segment)}, ":s": {"N": str(start)}}
        if end is None:
            condition = "G = :g AND N >= :s"
        else:
            condition = "G = :g AND N BETWEEN :s AND :e"
            values[":e"] = {"N": str(end)}
        # Strong unless the caller says otherwise: a writer's reads (the idempotent scan, the append's lookback,
        # retention's) must see the newest entry; readers that can tell a short answer opt out (seglog_core.reads).
        for item in self._pages(TableName=self.entries_table, KeyConditionExpression=condition,
                                ExpressionAttributeValues=values, ConsistentRead=consistent, Limit=page_size):
            yield item_to_entry(item)

    def new_segment(self, end: Entry, segment: Segment, first: Entry) -> None:
        # U puts the new item in the index Due in the same transaction that closes the old segment: a close is
        # never missed by retention, and costs no write of its own.
        self._call("TransactWriteItems", write=True, TransactItems=[
            {"Put": {"TableName": self.entries_table, "Item": entry_to_item(end),
                     "ConditionExpression": _NOT_EXISTS_ENTRY}},
            {"Put": {"TableName": self.segments_table, "Item": {**segment_to_item(segment), "U": _DUE},
                     "ConditionExpression": _NOT_EXISTS_SEGMENT}},
            {"Put": {"TableName": self.entries_table, "Item": entry_to_item(first),
                     "ConditionExpression": _NOT_EXISTS_ENTRY}},
        ])

    def complete_snapshot(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        self.set_snapshot_root(log_id, segment, num, root)
        self.advance_snapshot(log_id, segment, num)

    def set_snapshot_root(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        def not_snapshot(_: dict[str, Any]) -> Exception:
            return errors.InvalidInputError(f"entry {segment}/{num} of log {log_id} is not a Snapshot entry")

        # Safe to send again after a lost answer: the same R again, under a condition our write does not change.
        self._call("UpdateItem", write=True, on_condition=not_snapshot, retry_unknown=True,
                   TableName=self.entries_table, Key=entry_key(log_id, segment, num), UpdateExpression="SET R = :r",
                   ConditionExpression="T = :t", ExpressionAttributeValues={":r": {"S": root}, ":t": {"S": "snap"}})

    def advance_snapshot(self, log_id: uuid.UUID, segment: int, num: int) -> None:
        # S only moves forward (I4): the condition refuses to move it back; already past it is fine. So is a retry
        # after a lost answer: if the first try landed, the retry fails the condition, which means "there already".
        with contextlib.suppress(errors.ItemExistsError):
            self._call("UpdateItem", write=True, retry_unknown=True, TableName=self.segments_table,
                       Key={"L": {"B": log_id.bytes}, "N": {"N": str(segment)}}, UpdateExpression="SET S = :n",
                       ConditionExpression="attribute_exists(N) AND (attribute_not_exists(S) OR S < :n)",
                       ExpressionAttributeValues={":n": {"N": str(num)}},
                       on_condition=lambda _: errors.ItemExistsError("a later snapshot"))

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                       retired: int | None = None) -> int:
        count = 0
        # The EndSegment stays (a tombstone with the item): a reader paging through meanwhile still finds the end.
        keys = [entry_key(log_id, segment, e.num) for e in self.entries(log_id, segment)
                if e.type is not EntryType.END_SEGMENT]
        for i in range(0, len(keys), 25):
            batch = [{"DeleteRequest": {"Key": k}} for k in keys[i : i + 25]]
            while batch:  # deletes: repeating one that landed changes nothing
                response = self._call("BatchWriteItem", write=True, retry_unknown=True,
                                      RequestItems={self.entries_table: batch})
                batch = response.get("UnprocessedItems", {}).get(self.entries_table, [])
            count += min(25, len(keys) - i)
        # Only on an existing item: UpdateItem would otherwise create one without C ("UpdateItem", DynamoDB API
        # Reference: "creates a new item if it does not already exist"); a legacy deletion removed it for good.
        with contextlib.suppress(errors.ItemExistsError):
            self._mark(log_id, segment, archive, retired, "REMOVE P", "attribute_exists(N)")
        return count

    def mark_retiring(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                      retired: int | None = None) -> bool:
        # The two forms exclude each other: one conditional write per item, so of an archive run and a delete run
        # on the same segment exactly one claims it. A retry after a lost answer meets its own mark: it passes.
        # The claim marks its own segment due (U): a run that dies holding it leaves it listed, so the next run
        # finishes it even when a concurrent run already cleared the log's other marks (seed 5783: two scheduled
        # runs on one log, the second claiming after the first had finished and cleared; it crashed, and no later
        # run looked at the log again). clear_due leaves a claimed segment's mark alone.
        other = "D" if archive is not None else "A"
        try:
            self._mark(log_id, segment, archive, retired, "SET P = :p, U = :u",
                       f"attribute_exists(N) AND attribute_not_exists({other})", {":p": {"BOOL": True}, ":u": _DUE})
        except errors.ItemExistsError:
            return False
        return True

    def _mark(self, log_id: uuid.UUID, segment: int, archive: str | None, retired: int | None, more: str,
              condition: str, values: dict[str, Any] | None = None) -> None:
        """``SET A = archive`` (else ``D = retired``) and ``more`` on the segment's item under ``condition``."""
        mark = {":m": {"S": archive}} if archive is not None else {
            ":m": {"N": str(int(time.time()) if retired is None else retired)}}
        clause = f"SET {'A' if archive is not None else 'D'} = :m"
        update = f"{clause}, {more.removeprefix('SET ')}" if more.startswith("SET ") else f"{clause} {more}"
        self._call("UpdateItem", write=True, retry_unknown=True, TableName=self.segments_table,
                   Key={"L": {"B": log_id.bytes}, "N": {"N": str(segment)}}, UpdateExpression=update,
                   ConditionExpression=condition, ExpressionAttributeValues={**mark, **(values or {})},
                   on_condition=lambda _: errors.ItemExistsError(f"segment {segment} (gone, or claimed by the "
                                                                 "other form of retention)"))

    def _pages(self, **params: Any) -> Iterator[dict[str, Any]]:
        return self._calls.pages("Query", **params)
