"""GetItem, Query and Scan on a :class:`SimDynamoDB`, strongly or eventually consistent (at ``as_of``).

DynamoDB API Reference, Query: ``Limit`` is "the maximum number of items to evaluate (not necessarily the number
of matching items)"; the response carries ``LastEvaluatedKey`` whenever evaluation stopped at the limit, even when
nothing is left (Developer Guide, "Paginating table query results": a LastEvaluatedKey "does not necessarily mean
that there is more data"); ``ScanIndexForward=false`` walks the sort key descending. The 1 MB page limit is not
modelled (seglog's items are small and every caller pages by LastEvaluatedKey anyway).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

from seglog_sim.aws import dynamodb_indexes
from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_requests import Expressions, capacity, read_units
from seglog_sim.aws.dynamodb_tables import Table, key_sort_value, visible
from seglog_sim.aws.dynamodb_values import Item, compare, copy_item, copy_value
from seglog_sim.aws.expressions import Condition, Projection

if TYPE_CHECKING:
    from seglog_sim.aws.dynamodb import SimDynamoDB

_SELECT = ("ALL_ATTRIBUTES", "COUNT", "SPECIFIC_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES")


def _project(item: Item, projection: Projection | None) -> Item:
    if projection is None:
        return copy_item(item)
    return {n: copy_value(item[n]) for n in projection.names if n in item}


def _limit(params: dict[str, Any]) -> int | None:
    limit = params.get("Limit")
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValidationError(f"1 validation error detected: Value '{limit}' at 'limit' failed to satisfy constraint: "
                              "Member must have value greater than or equal to 1")
    return limit


def get_item(sim: SimDynamoDB, params: dict[str, Any], as_of: float | None) -> dict[str, Any]:
    # DynamoDB API Reference, GetItem: eventually consistent unless ConsistentRead; no Item member when absent.
    table = sim.table("GetItem", params["TableName"])
    hk, rk, _ = table.key(params["Key"])
    expressions = Expressions(params, ("ProjectionExpression",))
    consistent = bool(params.get("ConsistentRead"))
    sim.admit("GetItem", table, hk, write=False)
    item, size = table.get(hk, rk, None if consistent else as_of)
    units = read_units(size, consistent=consistent)
    sim.units[table.spec.name][0] += units
    response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
    if item is not None:
        response["Item"] = _project(item, expressions.projection)
    return response


class _Page:
    """Items evaluated for one Query or Scan page, with the limit and filter applied."""

    def __init__(self, limit: int | None, condition: Condition | None, values: dict[str, Any]) -> None:
        self.limit, self.condition, self.values = limit, condition, values
        self.items: list[Item] = []
        self.scanned = 0
        self.size = 0
        self.last: Item | None = None

    def add(self, item: Item, size: int) -> bool:
        """Evaluate one item (of ``size`` bytes); False once the limit is reached."""
        self.scanned += 1
        self.size += size
        if self.condition is None or self.condition.test(item, self.values):
            self.items.append(item)
        if self.limit is not None and self.scanned >= self.limit:
            self.last = item
            return False
        return True

    def response(self, sim: SimDynamoDB, table: Table, params: dict[str, Any], projection: Projection | None,
                 consistent: bool) -> dict[str, Any]:
        units = read_units(self.size, consistent=consistent)
        sim.units[table.spec.name][0] += units
        response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
        select = params.get("Select", "ALL_ATTRIBUTES")
        if select not in _SELECT:
            raise ValidationError(f"1 validation error detected: Value '{select}' at 'select' failed to satisfy "
                                  f"constraint: Member must satisfy enum value set: [{', '.join(_SELECT)}]")
        if select == "COUNT":
            pass
        elif projection is None:  # most reads: copy_item straight away (a page may hold hundreds of items)
            response["Items"] = [copy_item(i) for i in self.items]
        else:
            response["Items"] = [_project(i, projection) for i in self.items]
        response["Count"] = len(self.items)
        response["ScannedCount"] = self.scanned
        if self.last is not None:
            response["LastEvaluatedKey"] = copy_item(table.key_of_item(self.last))
        return response


def _range_bounds(table: Table, op: str, refs: tuple[str, ...], values: dict[str, Any]) -> dict[str, Any]:
    """Table.walk's bounds for a sort key condition (Query API Reference, KeyConditionExpression)."""
    name = table.spec.range_key
    assert name is not None
    operands = [key_sort_value(table, name, values[r]) for r in refs]
    if op == "=":
        return {"low": (operands[0], True), "high": (operands[0], True)}
    if op in ("<", "<="):
        return {"high": (operands[0], op == "<=")}
    if op in (">", ">="):
        return {"low": (operands[0], op == ">=")}
    if op == "BETWEEN":
        if compare(values[refs[0]], values[refs[1]]) == 1:
            raise ValidationError("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be "
                                  "greater than or equal to lower bound")
        return {"low": (operands[0], True), "high": (operands[1], True)}
    if table.types[name] == "N":  # begins_with
        raise ValidationError("Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
                              "operator or function: begins_with, operand type: N")
    return {"prefix": operands[0]}


def query(sim: SimDynamoDB, params: dict[str, Any], as_of: float | None) -> dict[str, Any]:
    table = sim.table("Query", params["TableName"])
    if "IndexName" in params:
        return dynamodb_indexes.query_index(sim, table, params, as_of)
    expressions = Expressions(params, ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"))
    if expressions.key is None:
        raise ValidationError("Either the KeyConditions or KeyConditionExpression parameter must be specified in the "
                              "request.")
    spec, values = table.spec, expressions.values
    hash_terms = [t for t in expressions.key.terms if t[0] == spec.hash_key]
    if len(hash_terms) != 1 or hash_terms[0][1] != "=":
        raise ValidationError(f"Query condition missed key schema element: {spec.hash_key}")
    others = [t for t in expressions.key.terms if t is not hash_terms[0]]
    if others and (spec.range_key is None or others[0][0] != spec.range_key):
        raise ValidationError("Query key condition not supported")
    hk = key_sort_value(table, spec.hash_key, values[hash_terms[0][2][0]])
    bounds = _range_bounds(table, others[0][1], others[0][2], values) if others else {}
    sim.admit("Query", table, hk, write=False)
    forward = params.get("ScanIndexForward", True) is not False
    consistent = bool(params.get("ConsistentRead"))
    after = None
    start_key = params.get("ExclusiveStartKey")
    if start_key is not None:
        start_hk, after, _ = table.key(start_key)
        if start_hk != hk:
            raise ValidationError("The provided starting key is invalid: The provided key element does not match the "
                                  "schema")
    page = _Page(_limit(params), expressions.filter, values)
    seen_as_of = None if consistent else as_of
    for _, versions in table.walk(hk, forward=forward, after=after, **bounds):
        item, size = visible(versions, seen_as_of)
        if item is not None and not page.add(item, size):
            break
    return page.response(sim, table, params, expressions.projection, consistent)


def scan(sim: SimDynamoDB, params: dict[str, Any], as_of: float | None) -> dict[str, Any]:
    # DynamoDB API Reference, Scan: every item, in an order of the service's choosing (here by key); parallel
    # scans (Segment, TotalSegments) are not modelled.
    table = sim.table("Scan", params["TableName"])
    expressions = Expressions(params, ("FilterExpression", "ProjectionExpression"))
    consistent = bool(params.get("ConsistentRead"))
    hashes = table.hash_values()
    first, after = 0, None
    start_key = params.get("ExclusiveStartKey")
    if start_key is not None:
        start_hk, after, _ = table.key(start_key)
        first = bisect.bisect_left(hashes, start_hk)
        if first < len(hashes) and hashes[first] != start_hk:
            after = None
    page = _Page(_limit(params), expressions.filter, expressions.values)
    seen_as_of = None if consistent else as_of
    for i in range(first, len(hashes)):
        full = False
        for _, versions in table.walk(hashes[i], forward=True, after=after if i == first else None):
            item, size = visible(versions, seen_as_of)
            if item is not None and not page.add(item, size):
                full = True
                break
        if full:
            break
    return page.response(sim, table, params, expressions.projection, consistent)
