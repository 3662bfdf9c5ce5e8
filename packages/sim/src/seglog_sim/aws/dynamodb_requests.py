"""What every DynamoDB request shares: its parameters checked as botocore checks them, its expressions compiled
(from the cache) with their placeholders checked as DynamoDB checks them, and the capacity it consumes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ParamValidationError

from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_values import Value, normalize
from seglog_sim.aws.expression_tokens import check_values
from seglog_sim.aws.expressions import Condition, cached, check_scalars

_EXPRESSION_PARAMS = ("ExpressionAttributeNames", "ExpressionAttributeValues")
_COMMON = ("TableName", "ReturnConsumedCapacity", *_EXPRESSION_PARAMS)
#: The request members the simulator reads, per operation (DynamoDB API Reference, each action's "Request
#: Parameters"); botocore refuses any other member before sending, and so does the simulator.
PARAMETERS: dict[str, frozenset[str]] = {
    "GetItem": frozenset({*_COMMON, "Key", "ConsistentRead", "ProjectionExpression"}),
    "PutItem": frozenset({*_COMMON, "Item", "ConditionExpression", "ReturnValues",
                          "ReturnValuesOnConditionCheckFailure", "ReturnItemCollectionMetrics"}),
    "UpdateItem": frozenset({*_COMMON, "Key", "UpdateExpression", "ConditionExpression", "ReturnValues",
                             "ReturnValuesOnConditionCheckFailure", "ReturnItemCollectionMetrics"}),
    "DeleteItem": frozenset({*_COMMON, "Key", "ConditionExpression", "ReturnValues",
                             "ReturnValuesOnConditionCheckFailure", "ReturnItemCollectionMetrics"}),
    "Query": frozenset({*_COMMON, "KeyConditionExpression", "FilterExpression", "ProjectionExpression",
                        "ScanIndexForward", "Limit", "ExclusiveStartKey", "ConsistentRead", "Select"}),
    "Scan": frozenset({*_COMMON, "FilterExpression", "ProjectionExpression", "Limit", "ExclusiveStartKey",
                       "ConsistentRead", "Select"}),
    "TransactWriteItems": frozenset({"TransactItems", "ReturnConsumedCapacity", "ReturnItemCollectionMetrics",
                                     "ClientRequestToken"}),
    "BatchWriteItem": frozenset({"RequestItems", "ReturnConsumedCapacity", "ReturnItemCollectionMetrics"}),
}
TRANSACT_PARAMETERS: dict[str, frozenset[str]] = {
    "Put": frozenset({*_COMMON, "Item", "ConditionExpression", "ReturnValuesOnConditionCheckFailure"}),
    "Update": frozenset({*_COMMON, "Key", "UpdateExpression", "ConditionExpression",
                         "ReturnValuesOnConditionCheckFailure"}),
    "Delete": frozenset({*_COMMON, "Key", "ConditionExpression", "ReturnValuesOnConditionCheckFailure"}),
    "ConditionCheck": frozenset({*_COMMON, "Key", "ConditionExpression", "ReturnValuesOnConditionCheckFailure"}),
}
_REQUIRED = {"GetItem": ("TableName", "Key"), "PutItem": ("TableName", "Item"), "UpdateItem": ("TableName", "Key"),
             "DeleteItem": ("TableName", "Key"), "Query": ("TableName",), "Scan": ("TableName",),
             "TransactWriteItems": ("TransactItems",), "BatchWriteItem": ("RequestItems",),
             "Put": ("TableName", "Item"), "Update": ("TableName", "Key", "UpdateExpression"),
             "Delete": ("TableName", "Key"), "ConditionCheck": ("TableName", "Key", "ConditionExpression")}


def check_parameters(operation: str, params: dict[str, Any], allowed: frozenset[str]) -> None:
    """Refuse unknown and missing members as botocore's parameter validation does (before any request)."""
    for name in params:
        if name not in allowed:
            raise ParamValidationError(report=f"Unknown parameter in input: \"{name}\", must be one of: "
                                              f"{', '.join(sorted(allowed))}")
    for name in _REQUIRED[operation]:
        if name not in params:
            raise ParamValidationError(report=f"Missing required parameter in input: \"{name}\"")


def check_on_failure(params: dict[str, Any]) -> None:
    """ReturnValuesOnConditionCheckFailure is NONE or ALL_OLD (PutItem API Reference)."""
    on_failure = params.get("ReturnValuesOnConditionCheckFailure", "NONE")
    if on_failure not in ("NONE", "ALL_OLD"):
        raise ValidationError(f"1 validation error detected: Value '{on_failure}' at "
                              "'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must "
                              "satisfy enum value set: [ALL_OLD, NONE]")


class Expressions:
    """The compiled expressions of one request (or one transaction item) and its normalized values."""

    __slots__ = ("condition", "filter", "key", "projection", "update", "values")

    def __init__(self, params: dict[str, Any], kinds: Iterable[str]) -> None:
        names = params.get("ExpressionAttributeNames")
        raw_values = params.get("ExpressionAttributeValues")
        if names is not None and not names:
            raise ValidationError("ExpressionAttributeNames must not be empty")
        if raw_values is not None and not raw_values:
            raise ValidationError("ExpressionAttributeValues must not be empty")
        self.condition: Condition | None = None
        self.filter: Condition | None = None
        self.key: Any = None
        self.projection: Any = None
        self.update: Any = None
        compiled: list[Any] = []
        compiled_kinds: list[str] = []
        for kind in kinds:
            text = params.get(kind)
            if text is None:
                continue
            if not isinstance(text, str):
                raise ValidationError(f"{kind} must be a string")
            expression = cached(kind, text, names)
            compiled.append(expression)
            compiled_kinds.append(kind)
            match kind:
                case "ConditionExpression":
                    self.condition = expression
                case "FilterExpression":
                    self.filter = expression
                case "KeyConditionExpression":
                    self.key = expression
                case "ProjectionExpression":
                    self.projection = expression
                case _:
                    self.update = expression
        if names:
            used = {n for c in compiled for n in c.names_used}
            unused = [n for n in names if n not in used]
            if unused:
                raise ValidationError(f"Value provided in ExpressionAttributeNames unused in expressions: keys: "
                                      f"{{{', '.join(unused)}}}")
        values: dict[str, Value] = {}
        if raw_values:
            if not compiled:
                raise ValidationError("ExpressionAttributeValues can only be specified when using expressions")
            used_values = {v for c in compiled for v in c.values_used}
            unused = [v for v in raw_values if v not in used_values]
            if unused:
                raise ValidationError(f"Value provided in ExpressionAttributeValues unused in expressions: keys: "
                                      f"{{{', '.join(unused)}}}")
            values = {k: normalize(v) for k, v in raw_values.items()}
        for kind, c in zip(compiled_kinds, compiled, strict=True):
            if c.values_used:
                check_values(kind, c.values_used, values)
        for c in (self.condition, self.filter):
            if c is not None and c.scalar_values:
                check_scalars(c.kind, c.scalar_values, values)
        self.values = values


# Capacity: DynamoDB Developer Guide, "Read/write capacity mode" and "DynamoDB read and write operations"
# (ProvisionedThroughput / read-write-operations): a read costs 1 unit per 4 KB (rounded up; a Query sums the
# items it reads first), half for an eventually consistent read, and at least that for an absent item; a write
# 1 unit per 1 KB of the larger of the item before and after; a failed conditional write still consumes units (of
# the new item, or 1 for an item that did not exist); a transactional write costs two (prepare and commit).
# On-demand tables bill read and write request units the same way (Amazon DynamoDB pricing, on-demand).

def read_units(total_bytes: int, *, consistent: bool) -> float:
    units = max(1, math.ceil(total_bytes / 4096))
    return float(units) if consistent else units / 2


def write_units(size: int) -> float:
    return float(max(1, math.ceil(size / 1024)))


def capacity(table: str, units: float, wanted: Any) -> dict[str, Any]:
    """The ConsumedCapacity member of a single-table response for ReturnConsumedCapacity ``wanted``."""
    if wanted not in ("TOTAL", "INDEXES"):
        return {}
    return {"ConsumedCapacity": {"TableName": table, "CapacityUnits": units}}


def capacities(units: dict[str, float], wanted: Any) -> dict[str, Any]:
    """The ConsumedCapacity member of a multi-table response (TransactWriteItems, BatchWriteItem): one entry per
    table, in the order the request first names them."""
    if wanted not in ("TOTAL", "INDEXES"):
        return {}
    return {"ConsumedCapacity": [{"TableName": t, "CapacityUnits": u} for t, u in units.items()]}
