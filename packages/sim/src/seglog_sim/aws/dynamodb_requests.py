"""What every DynamoDB request shares: its parameters checked as botocore checks them, its expressions compiled
(from the cache) with their placeholders checked as DynamoDB checks them, and the capacity it consumes.
"""

from __future__ import annotations

import math
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
                        "ScanIndexForward", "Limit", "ExclusiveStartKey", "ConsistentRead", "Select", "IndexName"}),
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


class _Bundle:
    """The compiled expressions of one request shape (its expression texts and names), with what DynamoDB checks
    of its placeholders worked out once."""

    __slots__ = ("compiled", "condition", "filter", "key", "names_used", "projection", "scalar_checks", "update",
                 "values_used")

    def __init__(self, texts: tuple[tuple[str, str], ...], names: dict[str, str] | None) -> None:
        self.condition: Condition | None = None
        self.filter: Condition | None = None
        self.key: Any = None
        self.projection: Any = None
        self.update: Any = None
        self.compiled: list[tuple[str, Any]] = []
        for kind, text in texts:
            if not isinstance(text, str):
                raise ValidationError(f"{kind} must be a string")
            expression = cached(kind, text, names)
            self.compiled.append((kind, expression))
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
        self.names_used = frozenset(n for _, c in self.compiled for n in c.names_used)
        self.values_used = frozenset(v for _, c in self.compiled for v in c.values_used)
        self.scalar_checks = tuple(c for c in (self.condition, self.filter) if c is not None and c.scalar_values)
        if names:
            unused = [n for n in names if n not in self.names_used]
            if unused:
                raise ValidationError(f"Value provided in ExpressionAttributeNames unused in expressions: keys: "
                                      f"{{{', '.join(unused)}}}")

    def check_values(self, values: dict[str, Any]) -> None:
        """Every :value defined is used, and every one used is defined (checked before anything is evaluated)."""
        if values.keys() == self.values_used:
            return
        if values and not self.compiled:
            raise ValidationError("ExpressionAttributeValues can only be specified when using expressions")
        unused = [v for v in values if v not in self.values_used]
        if unused:
            raise ValidationError(f"Value provided in ExpressionAttributeValues unused in expressions: keys: "
                                  f"{{{', '.join(unused)}}}")
        for kind, c in self.compiled:
            check_values(kind, c.values_used, values)


_BUNDLES: dict[tuple[Any, ...], _Bundle] = {}
_BUNDLE_LIMIT = 4096


class Expressions:
    """The compiled expressions of one request (or one transaction item) and its normalized values."""

    __slots__ = ("condition", "filter", "key", "projection", "update", "values")

    def __init__(self, params: dict[str, Any], kinds: tuple[str, ...]) -> None:
        names = params.get("ExpressionAttributeNames")
        raw_values = params.get("ExpressionAttributeValues")
        if names is not None and not names:
            raise ValidationError("ExpressionAttributeNames must not be empty")
        if raw_values is not None and not raw_values:
            raise ValidationError("ExpressionAttributeValues must not be empty")
        # A list first: tuple() of a generator costs twice as much, and every request comes through here.
        texts = tuple([(kind, params[kind]) for kind in kinds if kind in params])
        shape = (texts, tuple(names.items()) if names else ())
        bundle = _BUNDLES.get(shape)
        if bundle is None:
            bundle = _Bundle(texts, names)
            if len(_BUNDLES) >= _BUNDLE_LIMIT:
                _BUNDLES.clear()
            _BUNDLES[shape] = bundle
        values: dict[str, Value] = {}
        if raw_values:
            bundle.check_values(raw_values)
            values = {k: normalize(v) for k, v in raw_values.items()}
        elif bundle.values_used:
            bundle.check_values({})
        for c in bundle.scalar_checks:
            check_scalars(c.kind, c.scalar_values, values)
        self.condition, self.filter, self.key = bundle.condition, bundle.filter, bundle.key
        self.projection, self.update, self.values = bundle.projection, bundle.update, values


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
