"""Query on a global secondary index of a simulated table: sparse, eventually consistent, keys only.

DynamoDB Developer Guide, "Using Global Secondary Indexes in DynamoDB": an item appears in an index only if it has
the index's key attributes ("sparse indexes"); queries on a global secondary index "support eventual consistency
only" (ConsistentRead true is a ValidationException); the index is updated asynchronously, so a read can miss a
write of a moment ago. Here a read of the index sees the table as an eventually consistent read at ``as_of`` sees
it, which covers that lag. Results are ordered by the index's sort key, then by the table's key (items with equal
index keys come back in an order DynamoDB does not promise); ``ExclusiveStartKey`` holds the table's and the
index's keys, as a page's ``LastEvaluatedKey`` does.

Not modelled: projections other than the keys (seglog's one index is KEYS_ONLY), the write units an index's own
updates consume, and type checks of index key attributes on writes. The walk looks at every item of the table:
a simulated table is small, and the units metered are those of the items the index holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_requests import Expressions, capacity, read_units
from seglog_sim.aws.dynamodb_tables import Table, visible
from seglog_sim.aws.dynamodb_values import Item, copy_item, item_size, sort_key

if TYPE_CHECKING:
    from seglog_sim.aws.dynamodb import SimDynamoDB


def _matches(value: Any, op: str, operands: list[Any]) -> bool:
    if op == "=":
        return bool(value == operands[0])
    if op == "<":
        return bool(value < operands[0])
    if op == "<=":
        return bool(value <= operands[0])
    if op == ">":
        return bool(value > operands[0])
    if op == ">=":
        return bool(value >= operands[0])
    if op == "BETWEEN":
        return bool(operands[0] <= value <= operands[1])
    return bool(value[: len(operands[0])] == operands[0])  # begins_with


def query_index(sim: SimDynamoDB, table: Table, params: dict[str, Any], as_of: float | None) -> dict[str, Any]:
    """A Query with ``IndexName`` (DynamoDB API Reference, Query)."""
    name = params["IndexName"]
    index = next((i for i in table.spec.indexes if i.name == name), None)
    if index is None:
        raise ValidationError(f"The table does not have the specified index: {name}")
    if params.get("ConsistentRead"):
        raise ValidationError("Consistent reads are not supported on global secondary indexes")
    expressions = Expressions(params, ("KeyConditionExpression", "ProjectionExpression"))
    if expressions.key is None:
        raise ValidationError("Either the KeyConditions or KeyConditionExpression parameter must be specified in the "
                              "request.")
    values = expressions.values
    terms = {t[0]: t for t in expressions.key.terms}
    hash_term = terms.pop(index.hash_key, None)
    if hash_term is None or hash_term[1] != "=":
        raise ValidationError(f"Query condition missed key schema element: {index.hash_key}")
    if terms and set(terms) != {index.range_key}:
        raise ValidationError("Query key condition not supported")
    wanted = sort_key(values[hash_term[2][0]])
    range_key = index.range_key
    range_term = terms.get(range_key) if range_key else None
    keys = [n for n in (index.hash_key, index.range_key, table.spec.hash_key, table.spec.range_key) if n]
    found: list[tuple[tuple[Any, ...], Item, int]] = []
    for hk in table.hash_values():
        for _, versions in table.walk(hk, forward=True):
            item, _ = visible(versions, as_of)
            if item is None or any(k not in item for k in keys) or sort_key(item[index.hash_key]) != wanted:
                continue
            if range_term is not None and range_key is not None:
                operands = [sort_key(values[r]) for r in range_term[2]]
                if not _matches(sort_key(item[range_key]), range_term[1], operands):
                    continue
            projected = {k: item[k] for k in keys}
            found.append((tuple(sort_key(item[k]) for k in keys[1:]), projected, item_size(projected)))
    found.sort(key=lambda f: f[0])
    if params.get("ScanIndexForward", True) is False:
        found.reverse()
    start = params.get("ExclusiveStartKey")
    if start is not None:
        after = tuple(sort_key(start[k]) for k in keys[1:])
        forward = params.get("ScanIndexForward", True) is not False
        found = [f for f in found if (f[0] > after if forward else f[0] < after)]
    limit = params.get("Limit")
    page = found if limit is None else found[:limit]
    units = read_units(sum(size for _, _, size in page), consistent=False)
    sim.units[table.spec.name][0] += units
    response = capacity(table.spec.name, units, params.get("ReturnConsumedCapacity"))
    response.update(Items=[copy_item(item) for _, item, _ in page], Count=len(page), ScannedCount=len(page))
    if limit is not None and len(found) >= limit and page:
        response["LastEvaluatedKey"] = copy_item(page[-1][1])
    return response
