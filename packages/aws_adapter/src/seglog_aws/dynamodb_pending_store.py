"""DynamoDBPendingStore: the PendingStore port on the PendingSnapshots table (DESIGN §2, §5).

Every write carries a condition; ConditionalCheckFailed means another invocation got there first — or, once a
write whose answer was lost is retried, that its own first try landed. With a retry policy every call here is
retried after a lost answer too, and each method says why that is safe or what tells the two apart:

    worker                     DynamoDB
      | claim X=1 ------------->  applied (A, X=1)
      |  <------ 500 / reset --   answer lost: retried
      | claim again ----------->  A is set and fresh: ConditionalCheckFailed, "someone else holds it"
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import structlog

from seglog_aws.dynamodb_calls import DynamoDBCalls
from seglog_aws.meter import Meter
from seglog_core import errors
from seglog_core.retry import RetryPolicy
from seglog_core.schema import PendingSnapshot, pending_key, segment_key, split_pending_key, uuid_from_bytes

Item = dict[str, dict[str, Any]]

log = structlog.get_logger("seglog.pending")


def pending_to_item(p: PendingSnapshot) -> Item:
    item: Item = {
        "L": {"B": p.log_id.bytes}, "P": {"B": pending_key(p.segment, p.entry)}, "C": {"N": str(p.created)},
        "M": {"N": str(p.modified)}, "R": {"N": str(p.retries)}, "A": {"BOOL": p.active},
        "X": {"N": str(p.increment)},
    }
    if p.claimer is not None:
        item["Q"] = {"S": p.claimer}
    if p.checkpoint is not None:
        item["S"] = {"B": p.checkpoint}
    if p.blocked is not None:
        item["W"] = {"S": p.blocked}
    return item


def item_to_pending(item: Item) -> PendingSnapshot:
    segment, entry = split_pending_key(bytes(item["P"]["B"]))
    return PendingSnapshot(
        log_id=uuid_from_bytes(bytes(item["L"]["B"])), segment=segment, entry=entry,
        created=int(item["C"]["N"]), modified=int(item["M"]["N"]), retries=int(item.get("R", {"N": "0"})["N"]),
        active=bool(item.get("A", {"BOOL": False})["BOOL"]), increment=int(item.get("X", {"N": "0"})["N"]),
        claimer=item["Q"]["S"] if "Q" in item else None,
        checkpoint=bytes(item["S"]["B"]) if "S" in item else None,
        blocked=item["W"]["S"] if "W" in item else None,
    )


def _lost(_: dict[str, Any]) -> Exception:
    return errors.ItemExistsError("pending snapshot (condition)")


class DynamoDBPendingStore:
    """Pending snapshots on DynamoDB, through the same metered, translated calls as the log store."""

    def __init__(self, client: Any, *, table: str, meter: Meter | None = None,
                 retry: RetryPolicy | None = None, entries_table: str | None = None) -> None:
        self._calls = DynamoDBCalls(client, meter, retry)
        self.table = table
        #: With it, create() also checks that the Snapshot entry has no root, in the same transaction.
        self.entries_table = entries_table

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        write = operation not in ("GetItem", "Query", "Scan")
        # Every write below may be sent again after a lost answer; each method says why that is safe.
        return self._calls.call(operation, write=write, on_condition=_lost, retry_unknown=True, **params)

    def _key(self, log_id: uuid.UUID, segment: int, entry: int) -> Item:
        return {"L": {"B": log_id.bytes}, "P": {"B": pending_key(segment, entry)}}

    def _update(self, log_id: uuid.UUID, segment: int, entry: int, **params: Any) -> dict[str, Any]:
        return self._call("UpdateItem", TableName=self.table, Key=self._key(log_id, segment, entry), **params)

    def get(self, log_id: uuid.UUID, segment: int, entry: int) -> PendingSnapshot | None:
        # Strong: the worker's conditional writes (claim, take over, checkpoint) are decided on the state read here;
        # a lagging claim or X would only lose every condition, and an absent item would be created again.
        item = self._call("GetItem", TableName=self.table, Key=self._key(log_id, segment, entry),
                          ConsistentRead=True).get("Item")
        return item_to_pending(item) if item else None

    def create(self, item: PendingSnapshot) -> None:
        if self.entries_table is not None:
            self._create_unless_complete(item)
            return
        try:
            self._call("PutItem", TableName=self.table, Item=pending_to_item(item),
                       ConditionExpression="attribute_not_exists(P)")
        except errors.ItemExistsError as exc:
            # After a lost answer the retry finds the item our first try wrote: ours if it is still exactly that
            # (the same second and claimer: a twin writing the very same item would have won just as well).
            if exc.after_unknown_outcome and self.get(item.log_id, item.segment, item.entry) == item:
                return
            raise

    def _create_unless_complete(self, item: PendingSnapshot) -> None:
        """One transaction: the item, if absent, and only while its Snapshot entry has no root. A job that read the
        entry before the snapshot completed and stalled would otherwise create the item again after completion
        deleted it, and leave it behind if it then died (found by the simulator, seed 514)."""
        entry_key = {"G": {"B": segment_key(item.log_id, item.segment)}, "N": {"N": str(item.entry)}}
        try:
            self._call("TransactWriteItems", TransactItems=[
                {"Put": {"TableName": self.table, "Item": pending_to_item(item),
                         "ConditionExpression": "attribute_not_exists(P)"}},
                {"ConditionCheck": {"TableName": self.entries_table, "Key": entry_key,
                                    "ConditionExpression": "attribute_not_exists(R)"}},
            ])
        except errors.TransactionCancelledError as exc:
            reasons = [*exc.reasons, None, None]
            if reasons[1] == "ConditionalCheckFailed":
                raise errors.SnapshotCompleteError(f"snapshot {item.segment}/{item.entry} (complete)") from exc
            if reasons[0] == "ConditionalCheckFailed":
                # Ours after a lost answer if it is exactly the item we wrote (see create).
                if exc.after_unknown_outcome and self.get(item.log_id, item.segment, item.entry) == item:
                    return
                raise errors.ItemExistsError(f"pending snapshot {item.segment}/{item.entry}") from exc
            raise

    def set_claimer(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, increment: int,
                    now: int) -> None:
        # A retry after a lost answer fails (Q is set); the worker re-reads the item and finds its own messageId.
        self._update(log_id, segment, entry, UpdateExpression="SET Q = :q, M = :m",
                     ConditionExpression="attribute_exists(P) AND attribute_not_exists(Q) AND X = :x",
                     ExpressionAttributeValues={":q": {"S": claimer}, ":m": {"N": str(now)},
                                                ":x": {"N": str(increment)}})

    def defer(self, log_id: uuid.UUID, segment: int, entry: int, *, now: int, blocked: str | None = None) -> int:
        # A retry after a lost answer may count one deferral twice: R only scales the next deferral's backoff; W is
        # set (or removed) to the same value again.
        values: dict[str, Any] = {":m": {"N": str(now)}, ":one": {"N": "1"}}
        if blocked is None:
            expression = "SET M = :m REMOVE W ADD R :one"
        else:
            expression, values[":w"] = "SET M = :m, W = :w ADD R :one", {"S": blocked}
        response = self._update(log_id, segment, entry, UpdateExpression=expression,
                                ConditionExpression="attribute_exists(P)", ReturnValues="UPDATED_NEW",
                                ExpressionAttributeValues=values)
        return int(response["Attributes"]["R"]["N"])

    def take_over(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str,
                  increment: int, now: int, takeover_after: int) -> bool:
        # A retry after a lost answer fails (Q is ours now): False, and the worker re-reads the item and finds its
        # own messageId there, as after set_claimer.
        try:
            self._update(log_id, segment, entry, UpdateExpression="SET Q = :q, A = :f, M = :m",
                         ConditionExpression="Q = :old AND X = :x AND M < :stale",
                         ExpressionAttributeValues={":q": {"S": claimer}, ":f": {"BOOL": False},
                                                    ":m": {"N": str(now)}, ":old": {"S": previous},
                                                    ":x": {"N": str(increment)},
                                                    ":stale": {"N": str(now - takeover_after)}})
        except errors.ItemExistsError:
            return False
        return True

    def seize(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str, increment: int,
              now: int, takeover_after: int, initial_state: bytes | None = None) -> int | None:
        values: dict[str, Any] = {":q": {"S": claimer}, ":t": {"BOOL": True}, ":f": {"BOOL": False},
                                  ":m": {"N": str(now)}, ":one": {"N": "1"}, ":old": {"S": previous},
                                  ":x": {"N": str(increment)}, ":stale": {"N": str(now - takeover_after)}}
        update = "SET Q = :q, A = :t, M = :m ADD X :one"
        if initial_state is not None:
            update, values[":s"] = "SET Q = :q, A = :t, M = :m, S = if_not_exists(S, :s) ADD X :one", {
                "B": initial_state}
        try:
            response = self._update(log_id, segment, entry, UpdateExpression=update,
                                    ConditionExpression="Q = :old AND X = :x AND (A = :f OR M < :stale)",
                                    ReturnValues="UPDATED_NEW", ExpressionAttributeValues=values)
        except errors.ItemExistsError as exc:
            # A retry after a lost answer fails on our own write: the item tells, as after claim's.
            if exc.after_unknown_outcome:
                found = self.get(log_id, segment, entry)
                if (found is not None and found.claimer == claimer and found.active and found.modified == now
                        and found.increment == increment + 1):
                    return found.increment
            return None
        return int(response["Attributes"]["X"]["N"])

    def claim(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, now: int,
              takeover_after: int, initial_state: bytes | None = None) -> int | None:
        # A retry after a lost answer fails its condition if the first try was applied (A is set). The item then
        # tells: active, our claimer, stamped this second — our claim, or a twin delivery's (same messageId, same
        # second) whose answer came back; we hold its increment either way, as create() keeps an item exactly like
        # ours. Two holders of one increment are harmless: both cut the chunks the first claim pinned, byte for
        # byte, and every completion step is idempotent. Reporting "refused" instead left the claim held by
        # nobody until the takeover timeout, and a helped snapshot held its whole sheet back that long (issue 34:
        # three such stalls of a busy sheet in four minutes under the README's faults).
        values: dict[str, Any] = {":t": {"BOOL": True}, ":f": {"BOOL": False}, ":m": {"N": str(now)},
                                  ":one": {"N": "1"}, ":q": {"S": claimer}, ":stale": {"N": str(now - takeover_after)}}
        update = "SET A = :t, M = :m ADD X :one"
        if initial_state is not None:
            update, values[":s"] = "SET A = :t, M = :m, S = if_not_exists(S, :s) ADD X :one", {"B": initial_state}
        try:
            response = self._update(
                log_id, segment, entry, UpdateExpression=update,
                ConditionExpression="Q = :q AND (A = :f OR M < :stale)", ReturnValues="UPDATED_NEW",
                ExpressionAttributeValues=values)
        except errors.ItemExistsError as exc:
            if exc.after_unknown_outcome:
                found = self.get(log_id, segment, entry)
                if found is not None and found.claimer == claimer and found.active and found.modified == now:
                    log.info("claim answer lost: the item shows it ours", increment=found.increment)
                    return found.increment
            return None
        return int(response["Attributes"]["X"]["N"])

    def checkpoint(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, state: bytes,
                   now: int) -> bool:
        # checkpoint and release: our own write leaves X as it was, so a retry passes the same condition again.
        try:
            self._update(log_id, segment, entry, UpdateExpression="SET S = :s, M = :m", ConditionExpression="X = :x",
                         ExpressionAttributeValues={":s": {"B": state}, ":m": {"N": str(now)},
                                                    ":x": {"N": str(increment)}})
        except errors.ItemExistsError:
            return False
        return True

    def release(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, now: int) -> bool:
        try:
            self._update(log_id, segment, entry, UpdateExpression="SET A = :f, M = :m", ConditionExpression="X = :x",
                         ExpressionAttributeValues={":f": {"BOOL": False}, ":m": {"N": str(now)},
                                                    ":x": {"N": str(increment)}})
        except errors.ItemExistsError:
            return False
        return True

    def delete(self, log_id: uuid.UUID, segment: int, entry: int) -> None:
        # Unconditional and idempotent.
        self._call("DeleteItem", TableName=self.table, Key=self._key(log_id, segment, entry))

    def for_log(self, log_id: uuid.UUID, *, before: tuple[int, int] | None = None) -> list[PendingSnapshot]:
        # ``before`` bounds the sort key in the query: the worker's order wait polls for earlier items only, and
        # reads (and pays for) none of the later ones (45 % of the items its polls read in the simulator).
        condition, values = "L = :l", {":l": {"B": log_id.bytes}}
        if before is not None:
            condition, values[":p"] = "L = :l AND P < :p", {"B": pending_key(*before)}
        # Strong: step 3's order check (DESIGN §5, "a consistent Query P <"): a pending predecessor a lagging read
        # missed would let a snapshot build before an earlier one of its log completes.
        return [item_to_pending(i) for i in self._calls.pages(
            "Query", TableName=self.table, KeyConditionExpression=condition, ExpressionAttributeValues=values,
            ConsistentRead=True)]

    def scan(self) -> Iterator[PendingSnapshot]:
        # Strong: verify and reprocess report and re-enqueue what they see; a manual path, rarely paid.
        for item in self._calls.pages("Scan", TableName=self.table, ConsistentRead=True):
            yield item_to_pending(item)
