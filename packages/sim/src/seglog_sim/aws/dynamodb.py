"""SimDynamoDB: an in-memory DynamoDB (with DynamoDB Streams) that seglog's real adapters run on unchanged.

Each :meth:`SimDynamoDB.call` applies one API call atomically and answers as DynamoDB does: the response shapes of
boto3's low-level client, or ``botocore.exceptions.ClientError`` with DynamoDB's code, message and HTTP status. It
injects no faults and reads no wall clock: time comes from the injected ``clock``, and an eventually consistent read
sees the table as it was at ``as_of`` when the caller (the simulator's world) asks for a stale read.

Operations: GetItem, PutItem, UpdateItem, DeleteItem, Query, Scan (dynamodb_reads), TransactWriteItems and
BatchWriteItem (dynamodb_transactions). Each cites its page of the DynamoDB API Reference. With ``throughput``, a
partition key's reads and writes past DynamoDB's per-partition limit are throttled (dynamodb_throughput).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from seglog_sim.aws import dynamodb_reads, dynamodb_transactions
from seglog_sim.aws.dynamodb_errors import (
    ConditionFailed,
    ValidationError,
    client_error,
    not_found,
    throttled,
    validation,
)
from seglog_sim.aws.dynamodb_requests import (
    PARAMETERS,
    Expressions,
    capacity,
    check_on_failure,
    check_parameters,
    write_units,
)
from seglog_sim.aws.dynamodb_streams import Change, TableStream, change_size, key_bytes
from seglog_sim.aws.dynamodb_tables import Table, TableSpec
from seglog_sim.aws.dynamodb_throughput import PartitionThroughput
from seglog_sim.aws.dynamodb_values import Item, checked_size, copy_item, items_equal, normalize_item
from seglog_sim.aws.facade import SimClient
from seglog_sim.aws.update_expressions import Update, check_update_paths, updated

__all__ = ["SimDynamoDB", "SimDynamoDBClient", "TableSpec"]

_NO_ITEM: Item = {}
_UPDATE_RETURN_VALUES = ("NONE", "ALL_OLD", "UPDATED_OLD", "ALL_NEW", "UPDATED_NEW")


class SimDynamoDB:
    """Simulated DynamoDB tables and their streams.

    Args:
        tables: the tables (see :class:`TableSpec`; ``TableSpec.from_properties`` reads template.yaml's).
        clock: simulated time in epoch seconds; read once per write.
        shards: shards per stream (an item's shard is fixed by its partition key).
        history: seconds of item versions kept for eventually consistent reads at an earlier ``as_of``.
        throughput: each partition key's read and write limit (None: unlimited, as before issue 35).
    """

    def __init__(self, tables: Iterable[TableSpec], *, clock: Callable[[], float], shards: int = 4,
                 region: str = "us-east-1", account: str = "123456789012", history: float = 10.0,
                 throughput: PartitionThroughput | None = None) -> None:
        if shards < 1:
            raise ValueError("a stream has at least one shard")
        self.clock = clock
        self.history = history
        self.region = region
        self.account = account
        self._tables: dict[str, Table] = {}
        self._streams: dict[str, TableStream] = {}
        created = clock()
        for spec in tables:
            if spec.name in self._tables:
                raise ValueError(f"table {spec.name!r} given twice")
            self._tables[spec.name] = Table(spec)
            if spec.stream:
                self._streams[spec.name] = TableStream(spec.name, region=region, account=account, created=created,
                                                       shards=shards)
        #: read and write units consumed per table, failed conditional writes included (issue 12 prices them)
        self.units: dict[str, list[float]] = {name: [0.0, 0.0] for name in self._tables}
        self.throughput = throughput
        #: The call under way's bucket, table and units before it (set by :meth:`admit`, paid by :meth:`call`).
        self._charge: tuple[tuple[str, bool, Any], list[float], int, float] | None = None
        self._sequence = 0
        self._requests = 0
        self._tombstones: deque[tuple[float, Table, Any, Any]] = deque()
        self._handlers: dict[str, Callable[[dict[str, Any], float | None], dict[str, Any]]] = {
            "GetItem": lambda p, as_of: dynamodb_reads.get_item(self, p, as_of),
            "Query": lambda p, as_of: dynamodb_reads.query(self, p, as_of),
            "Scan": lambda p, as_of: dynamodb_reads.scan(self, p, as_of),
            "PutItem": lambda p, _: self._put_item(p),
            "UpdateItem": lambda p, _: self._update_item(p),
            "DeleteItem": lambda p, _: self._delete_item(p),
            "TransactWriteItems": lambda p, _: dynamodb_transactions.transact_write_items(self, p),
            "BatchWriteItem": lambda p, _: dynamodb_transactions.batch_write_item(self, p),
        }

    # ------------------------------------------------------------------------------------------- the API

    def call(self, operation: str, params: dict[str, Any], *, as_of: float | None = None) -> dict[str, Any]:
        """Apply one API call atomically and answer as DynamoDB does (see the module docstring).

        ``as_of``: an eventually consistent read (GetItem, Query, Scan without ConsistentRead) sees every item as
        it was at that time; ignored for consistent reads and writes.
        """
        handler = self._handlers.get(operation)
        if handler is None:
            raise client_error(operation, "UnknownOperationException",
                               f"the simulator does not model {operation}; it models {', '.join(self._handlers)}")
        check_parameters(operation, params, PARAMETERS[operation])
        self._charge = None
        try:
            response = handler(params, as_of)
        except ValidationError as exc:
            raise validation(operation, exc.message) from None
        finally:
            charge = self._charge
            if charge is not None:  # what the call consumed, a failed conditional write's units included
                bucket, units, index, before = charge
                assert self.throughput is not None
                self.throughput.pay(bucket, units[index] - before)
        self._requests += 1
        response["ResponseMetadata"] = {"RequestId": f"SIM{self._requests:029d}", "HTTPStatusCode": 200,
                                        "HTTPHeaders": {}, "RetryAttempts": 0}
        return response

    def items(self, table: str, *, copy: bool = True) -> list[dict[str, Any]]:
        """The table's current items, sorted by key (copies; ``copy=False``: the stored items, not to be changed)."""
        current = self._table_named(table).current_items()
        return [copy_item(i) for i in current] if copy else list(current)

    def consumed(self, table: str) -> tuple[float, float]:
        """(read units, write units) the table has consumed, failed conditional writes included."""
        rcu, wcu = self.units[self._table_named(table).spec.name]
        return rcu, wcu

    def stream_arn(self, table: str) -> str:
        return self._stream(table).arn

    def shard_ids(self, table: str) -> list[str]:
        return list(self._stream(table).shard_ids)

    def stream_records(self, table: str, shard_id: str, *, after: str | None = None, limit: int = 1000
                       ) -> list[dict[str, Any]]:
        """Records of the shard with SequenceNumber > ``after`` (all when None), oldest first, as boto3's
        ``dynamodbstreams.get_records()["Records"]`` gives them."""
        stream = self._stream(table)
        if shard_id not in stream.shards:
            raise KeyError(f"no shard {shard_id!r} in the stream of {table!r}: shards are {stream.shard_ids}")
        return stream.records(shard_id, after, limit)

    def stream_size(self, table: str, shard_id: str) -> int:
        return len(self._stream(table).shards[shard_id])

    # ------------------------------------------------------------------------------------------- shared by ops

    def table(self, operation: str, name: Any) -> Table:
        found = self._tables.get(name) if isinstance(name, str) else None
        if found is None:
            raise not_found(operation)
        return found

    def admit(self, operation: str, table: Table, hk: Any, *, write: bool) -> None:
        """Let a request on partition key ``hk`` run, or raise the throttle when its partition is over its limit
        (dynamodb_throughput): a throttled request is not applied and consumes nothing."""
        throughput = self.throughput
        if throughput is None:
            return
        name = table.spec.name
        bucket = throughput.admit(name, hk, write=write, now=self.clock())
        if bucket is None:
            raise throttled(operation, f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}", write=write)
        units = self.units[name]
        index = 1 if write else 0
        self._charge = (bucket, units, index, units[index])

    def _table_named(self, name: str) -> Table:
        found = self._tables.get(name)
        if found is None:
            raise KeyError(f"no table {name!r}: the tables are {sorted(self._tables)}")
        return found

    def _stream(self, table: str) -> TableStream:
        stream = self._streams.get(table)
        if stream is None:
            raise KeyError(f"table {table!r} has no stream (TableSpec.stream)")
        return stream

    def now(self) -> float:
        """Simulated time for a write, after forgetting deletions no read can see any more."""
        now = self.clock()
        horizon = now - self.history
        tombstones = self._tombstones
        while tombstones and tombstones[0][0] <= horizon:
            _, table, hk, rk = tombstones.popleft()
            table.forget(hk, rk, horizon)
        return now

    def commit(self, table: Table, hk: Any, rk: Any, key: Item, old: Item | None, new: Item | None, size: int,
               now: float) -> None:
        """Make ``new`` (None: deleted; ``size`` its size) the item's current version; a change appends a stream
        record."""
        if items_equal(old, new):
            return  # no data changed: no new version, no stream record (Developer Guide, Streams)
        table.write(hk, rk, new, size, now, now - self.history)
        if new is None:
            self._tombstones.append((now, table, hk, rk))
        stream = self._streams.get(table.spec.name)
        if stream is not None:
            self._sequence += 1
            event = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
            shard = stream.shard_of(key_bytes(key[table.spec.hash_key]))
            stream.append(shard, Change(sequence=self._sequence, event_id=f"{self._sequence:032x}", event_name=event,
                                        keys=key, new_image=new, created=now, size=change_size(key, size)))

    def check(self, operation: str, condition_params: dict[str, Any], expressions: Expressions,
              old: Item | None) -> None:
        """Raise ConditionFailed when the request's ConditionExpression is false on ``old``."""
        condition = expressions.condition
        if condition is not None and not condition.test(old if old is not None else _NO_ITEM, expressions.values):
            raise ConditionFailed(old)

    # ------------------------------------------------------------------------------------------- writes

    def _condition_failed(self, operation: str, params: dict[str, Any], table: Table, old: Item | None,
                          units: float) -> Exception:
        # A failed conditional write still consumes write units (Developer Guide, read-write-operations);
        # the error carries the item as it was with ReturnValuesOnConditionCheckFailure=ALL_OLD (PutItem API
        # Reference, "ConditionalCheckFailedException").
        self.units[table.spec.name][1] += units
        extra: dict[str, Any] = {}
        if params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
            extra["Item"] = copy_item(old)
        return client_error(operation, "ConditionalCheckFailedException", "The conditional request failed", **extra)

    def _put_item(self, params: dict[str, Any]) -> dict[str, Any]:
        # DynamoDB API Reference, PutItem: replaces the whole item; ReturnValues NONE or ALL_OLD.
        table = self.table("PutItem", params["TableName"])
        item = normalize_item(params["Item"])
        hk, rk, key = table.item_key(item)
        size = checked_size(item)
        expressions = Expressions(params, ("ConditionExpression",))
        returns = _return_values(params, ("NONE", "ALL_OLD"))
        self.admit("PutItem", table, hk, write=True)
        now = self.now()
        old, old_size = table.get(hk, rk)
        try:
            self.check("PutItem", params, expressions, old)
        except ConditionFailed:
            raise self._condition_failed("PutItem", params, table, old,
                                         write_units(size) if old is not None else 1.0) from None
        self.commit(table, hk, rk, key, old, item, size, now)
        units = write_units(max(size, old_size))
        self.units[table.spec.name][1] += units
        response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
        if returns == "ALL_OLD" and old is not None:
            response["Attributes"] = copy_item(old)
        return response

    def _update_item(self, params: dict[str, Any]) -> dict[str, Any]:
        # DynamoDB API Reference, UpdateItem: edits an item, or creates it when absent (after the condition);
        # ReturnValues NONE, ALL_OLD, UPDATED_OLD, ALL_NEW or UPDATED_NEW.
        table = self.table("UpdateItem", params["TableName"])
        hk, rk, key = table.key(params["Key"])
        expressions = Expressions(params, ("UpdateExpression", "ConditionExpression"))
        update: Update | None = expressions.update
        check_update_paths(table.types, update)
        returns = _return_values(params, _UPDATE_RETURN_VALUES)
        self.admit("UpdateItem", table, hk, write=True)
        now = self.now()
        old, old_size = table.get(hk, rk)
        try:
            self.check("UpdateItem", params, expressions, old)
        except ConditionFailed:
            raise self._condition_failed("UpdateItem", params, table, old,
                                         write_units(old_size) if old is not None else 1.0) from None
        new, size = updated(old, key, update, expressions.values)
        self.commit(table, hk, rk, key, old, new, size, now)
        units = write_units(max(old_size, size))
        self.units[table.spec.name][1] += units
        response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
        attributes: Item | None = None
        if returns == "ALL_OLD":
            attributes = old
        elif returns == "ALL_NEW":
            attributes = new
        elif returns in ("UPDATED_OLD", "UPDATED_NEW") and update is not None:
            source = old if returns == "UPDATED_OLD" else new
            attributes = {p: source[p] for p in update.paths if p in source} if source else None
        if attributes:
            response["Attributes"] = copy_item(attributes)
        return response

    def _delete_item(self, params: dict[str, Any]) -> dict[str, Any]:
        # DynamoDB API Reference, DeleteItem: deleting an absent item succeeds and changes nothing.
        table = self.table("DeleteItem", params["TableName"])
        hk, rk, key = table.key(params["Key"])
        expressions = Expressions(params, ("ConditionExpression",))
        returns = _return_values(params, ("NONE", "ALL_OLD"))
        self.admit("DeleteItem", table, hk, write=True)
        now = self.now()
        old, old_size = table.get(hk, rk)
        try:
            self.check("DeleteItem", params, expressions, old)
        except ConditionFailed:
            raise self._condition_failed("DeleteItem", params, table, old,
                                         write_units(old_size) if old is not None else 1.0) from None
        self.commit(table, hk, rk, key, old, None, 0, now)
        units = write_units(old_size)
        self.units[table.spec.name][1] += units
        response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
        if returns == "ALL_OLD" and old is not None:
            response["Attributes"] = copy_item(old)
        return response


def _return_values(params: dict[str, Any], allowed: tuple[str, ...]) -> str:
    returns = params.get("ReturnValues", "NONE")
    if returns not in allowed:
        raise ValidationError(f"ReturnValues can only be {' or '.join(allowed)}" if len(allowed) == 2 else
                              f"1 validation error detected: Value '{returns}' at 'returnValues' failed to satisfy "
                              f"constraint: Member must satisfy enum value set: [{', '.join(allowed)}]")
    check_on_failure(params)
    return str(returns)


class SimDynamoDBClient(SimClient):
    """A boto3-shaped DynamoDB client over ``call`` (a :class:`SimDynamoDB`'s, or the world's wrapper of it, which
    adds scheduling and faults)."""

    OPERATIONS = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "TransactWriteItems",
                  "BatchWriteItem")

    @classmethod
    def of(cls, sim: SimDynamoDB) -> SimDynamoDBClient:
        return cls(sim.call)
