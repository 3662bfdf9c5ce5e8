"""TransactWriteItems and BatchWriteItem on a :class:`SimDynamoDB`.

DynamoDB API Reference, TransactWriteItems: up to 100 actions (Put, Update, Delete, ConditionCheck), each on its
own table and item, all or nothing; no two actions on one item (ValidationException). When any condition fails the
call raises TransactionCanceledException with one CancellationReason per action, in request order: ``None`` for an
action that would have succeeded, ``ConditionalCheckFailed`` (with ``Item`` under
ReturnValuesOnConditionCheckFailure=ALL_OLD) or ``ValidationError``. Each action consumes two write units per KB
(Developer Guide, "Capacity management for transactions": one to prepare, one to commit).

BatchWriteItem: up to 25 PutRequest / DeleteRequest, each applied as its own PutItem or DeleteItem (no
conditions); the simulator processes every request, so UnprocessedItems is always empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seglog_sim.aws.dynamodb_errors import ConditionFailed, ValidationError, client_error
from seglog_sim.aws.dynamodb_requests import (
    TRANSACT_PARAMETERS,
    Expressions,
    capacities,
    check_on_failure,
    check_parameters,
    write_units,
)
from seglog_sim.aws.dynamodb_tables import Table
from seglog_sim.aws.dynamodb_values import Item, checked_size, copy_item, normalize_item
from seglog_sim.aws.update_expressions import check_update_paths, updated

if TYPE_CHECKING:
    from seglog_sim.aws.dynamodb import SimDynamoDB

MAX_TRANSACT_ITEMS = 100
MAX_BATCH_WRITES = 25
_KINDS = {"Put": ("ConditionExpression",), "Update": ("UpdateExpression", "ConditionExpression"),
          "Delete": ("ConditionExpression",), "ConditionCheck": ("ConditionExpression",)}


@dataclass
class _Action:
    kind: str
    params: dict[str, Any]
    table: Table
    hk: Any
    rk: Any
    key: Item
    expressions: Expressions
    item: Item | None = None  # Put's item
    item_size: int = 0
    old: Item | None = None
    new: Item | None = None
    new_size: int = 0


def _prepare(sim: SimDynamoDB, entry: Any) -> _Action:
    if not isinstance(entry, dict) or len(entry) != 1:
        raise ValidationError("TransactItems can only contain one of Check, Put, Update or Delete")
    ((kind, params),) = entry.items()
    if kind not in TRANSACT_PARAMETERS:
        raise ValidationError(f"TransactItems can only contain one of Check, Put, Update or Delete, not {kind}")
    check_parameters(kind, params, TRANSACT_PARAMETERS[kind])
    table = sim.table("TransactWriteItems", params["TableName"])
    item = None
    if kind == "Put":
        item = normalize_item(params["Item"])
        size = checked_size(item)
        hk, rk, key = table.item_key(item)
    else:
        size = 0
        hk, rk, key = table.key(params["Key"])
    expressions = Expressions(params, _KINDS[kind])
    if kind == "Update":
        check_update_paths(table.types, expressions.update)
    check_on_failure(params)
    return _Action(kind, params, table, hk, rk, key, expressions, item=item, item_size=size)


def transact_write_items(sim: SimDynamoDB, params: dict[str, Any]) -> dict[str, Any]:
    entries = params["TransactItems"]
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_TRANSACT_ITEMS:
        raise ValidationError(f"1 validation error detected: Value at 'transactItems' failed to satisfy constraint: "
                              f"Member must have length between 1 and {MAX_TRANSACT_ITEMS}")
    actions = [_prepare(sim, e) for e in entries]
    targets = [(a.table.spec.name, a.hk, a.rk) for a in actions]
    if len(set(targets)) != len(targets):
        raise ValidationError("Transaction request cannot include multiple operations on one item")
    now = sim.now()
    reasons: list[dict[str, Any]] = []
    units: dict[str, float] = {}
    for action in actions:
        old, old_size = action.table.get(action.hk, action.rk)
        action.old = old
        reason: dict[str, Any] = {"Code": "None"}
        try:
            sim.check("TransactWriteItems", action.params, action.expressions, old)
            if action.kind == "Put":
                action.new, action.new_size = action.item, action.item_size
            elif action.kind == "Update":
                action.new, action.new_size = updated(old, action.key, action.expressions.update,
                                                      action.expressions.values)
            elif action.kind == "ConditionCheck":
                action.new, action.new_size = old, old_size
        except ConditionFailed:
            reason = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
            if action.params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
                reason["Item"] = copy_item(old)
        except ValidationError as exc:
            reason = {"Code": "ValidationError", "Message": exc.message}
        reasons.append(reason)
        name = action.table.spec.name
        units[name] = units.get(name, 0.0) + 2 * write_units(max(old_size, action.new_size))
    for name, used in units.items():
        sim.units[name][1] += used  # a cancelled transaction is charged too: its actions were prepared
    if any(r["Code"] != "None" for r in reasons):
        codes = ", ".join(r["Code"] for r in reasons)
        raise client_error("TransactWriteItems", "TransactionCanceledException",
                           f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
                           CancellationReasons=reasons)
    for action in actions:
        if action.kind != "ConditionCheck":
            sim.commit(action.table, action.hk, action.rk, action.key, action.old, action.new, action.new_size,
                       now)
    return capacities(units, params.get("ReturnConsumedCapacity"))


def batch_write_item(sim: SimDynamoDB, params: dict[str, Any]) -> dict[str, Any]:
    requests = params["RequestItems"]
    if not isinstance(requests, dict) or not requests:
        raise ValidationError("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: "
                              "Member must have length greater than or equal to 1")
    total = sum(len(v) for v in requests.values())
    if total > MAX_BATCH_WRITES:
        raise ValidationError("Too many items requested for the BatchWriteItem call")
    writes: list[tuple[Table, Any, Any, Item, Item | None, int]] = []
    seen: set[tuple[str, Any, Any]] = set()
    for name, entries in requests.items():
        table = sim.table("BatchWriteItem", name)
        for entry in entries:
            if not isinstance(entry, dict) or len(entry) != 1 or not ({"PutRequest", "DeleteRequest"} >= entry.keys()):
                raise ValidationError("Supplied AttributeValue has more than one datatypes set, must contain exactly "
                                      "one of PutRequest or DeleteRequest")
            if "PutRequest" in entry:
                item = normalize_item(entry["PutRequest"]["Item"])
                size = checked_size(item)
                hk, rk, key = table.item_key(item)
                writes.append((table, hk, rk, key, item, size))
            else:
                hk, rk, key = table.key(entry["DeleteRequest"]["Key"])
                writes.append((table, hk, rk, key, None, 0))
            if (name, hk, rk) in seen:
                raise ValidationError("Provided list of item keys contains duplicates")
            seen.add((name, hk, rk))
    now = sim.now()
    units: dict[str, float] = {}
    for table, hk, rk, key, new, size in writes:
        old, old_size = table.get(hk, rk)
        sim.commit(table, hk, rk, key, old, new, size, now)
        name = table.spec.name
        units[name] = units.get(name, 0.0) + write_units(max(old_size, size))
    for name, used in units.items():
        sim.units[name][1] += used
    return {"UnprocessedItems": {}, **capacities(units, params.get("ReturnConsumedCapacity"))}
