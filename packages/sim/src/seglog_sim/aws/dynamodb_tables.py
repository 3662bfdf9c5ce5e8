"""A simulated table's storage: items by key, each with the versions of the last ``history`` seconds, so an
eventually consistent read can see the table as it was at an earlier time.

Items live in partitions (by partition key value); a partition keeps its sort key values sorted, so a Query is a
bisect and a walk, never a scan of the table. A deleted item stays as a tombstone until its deletion is older than
the history, so a stale read still sees it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from seglog_sim.aws.dynamodb_errors import ValidationError
from seglog_sim.aws.dynamodb_values import SCALAR_TYPES, Item, Value, sort_key

Version = tuple[float, Item | None, int]  # (time written, the item then or None once deleted, its size)


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index: its name and key schema (template.yaml's GlobalSecondaryIndexes); queried in
    seglog_sim.aws.dynamodb_indexes."""

    name: str
    hash_key: str
    range_key: str | None

    @classmethod
    def from_properties(cls, properties: dict[str, Any]) -> IndexSpec:
        keys = {k["KeyType"]: k["AttributeName"] for k in properties["KeySchema"]}
        projection = properties.get("Projection", {}).get("ProjectionType", "KEYS_ONLY")
        if projection != "KEYS_ONLY":
            raise ValueError(f"index {properties['IndexName']}: the simulator models KEYS_ONLY projections, "
                             f"not {projection}")
        return cls(name=properties["IndexName"], hash_key=keys["HASH"], range_key=keys.get("RANGE"))


@dataclass(frozen=True)
class TableSpec:
    """A table's name and key schema (DESIGN §2), and whether it has a stream (StreamViewType NEW_IMAGE).

    ``hash_type`` / ``range_type`` are the key attributes' types (S, N or B) as AttributeDefinitions give them;
    left None, each is fixed by the first key the table sees, and a later key of another type is refused as
    DynamoDB refuses it.
    """

    name: str
    hash_key: str
    range_key: str | None
    stream: bool = False
    hash_type: str | None = None
    range_type: str | None = None
    #: Global secondary indexes (seglog_sim.aws.dynamodb_indexes).
    indexes: tuple[IndexSpec, ...] = ()

    @classmethod
    def from_properties(cls, name: str, properties: Mapping[str, Any]) -> TableSpec:
        """The spec of an ``AWS::DynamoDB::Table`` resource's Properties (template.yaml's KeySchema,
        AttributeDefinitions and StreamSpecification), under the physical table name ``name``."""
        types = {d["AttributeName"]: d["AttributeType"] for d in properties.get("AttributeDefinitions", [])}
        keys = {k["KeyType"]: k["AttributeName"] for k in properties["KeySchema"]}
        range_key = keys.get("RANGE")
        view = properties.get("StreamSpecification", {}).get("StreamViewType")
        if view not in (None, "NEW_IMAGE"):
            raise ValueError(f"table {name}: the simulator models StreamViewType NEW_IMAGE only, not {view}")
        return cls(name=name, hash_key=keys["HASH"], range_key=range_key, stream=view is not None,
                   hash_type=types.get(keys["HASH"]), range_type=types.get(range_key) if range_key else None,
                   indexes=tuple(IndexSpec.from_properties(i) for i in properties.get("GlobalSecondaryIndexes", [])))


class Partition:
    __slots__ = ("keys", "versions")

    def __init__(self) -> None:
        self.keys: list[Any] = []  # sort key values (of the range key), sorted; tombstones included
        self.versions: dict[Any, list[Version]] = {}


class Table:
    """One table's items. Keys given to it are already validated (see :meth:`key`)."""

    def __init__(self, spec: TableSpec) -> None:
        self.spec = spec
        self.types = {spec.hash_key: spec.hash_type}
        if spec.range_key is not None:
            self.types[spec.range_key] = spec.range_type
        self.partitions: dict[Any, Partition] = {}

    # ------------------------------------------------------------------------------------------- keys

    def key_value(self, name: str, value: Any, *, what: str = "key") -> Any:
        """The sort value of key attribute ``name``'s ``value``, checking its type against the schema."""
        if not isinstance(value, dict) or len(value) != 1:
            raise ValidationError("The provided key element does not match the schema")
        ((kind, data),) = value.items()
        expected = self.types[name]
        if expected is None:
            if kind not in SCALAR_TYPES:
                raise ValidationError(f"One or more parameter values were invalid: Type mismatch for key {name} "
                                      f"expected: S, N or B actual: {kind}")
            self.types[name] = expected = kind  # fixed by the first key seen (see TableSpec)
        if kind != expected:
            raise ValidationError(f"One or more parameter values were invalid: Type mismatch for key {name} "
                                  f"expected: {expected} actual: {kind}")
        if kind in ("S", "B") and len(data) == 0:
            raise ValidationError(f"One or more parameter values are not valid. The AttributeValue for a key "
                                  f"attribute cannot contain an empty {'string' if kind == 'S' else 'binary'} "
                                  f"value. Key: {name}")
        return sort_key(value)

    def key(self, key: Mapping[str, Any]) -> tuple[Any, Any, Item]:
        """(partition sort value, sort key sort value, the key item) of a ``Key`` parameter: exactly the key
        attributes (DynamoDB API Reference, GetItem "Key")."""
        spec = self.spec
        wanted = 1 if spec.range_key is None else 2
        if len(key) != wanted or spec.hash_key not in key or (spec.range_key is not None and spec.range_key not in key):
            raise ValidationError("The provided key element does not match the schema")
        return self._key_of(key)

    def item_key(self, item: Item) -> tuple[Any, Any, Item]:
        """The key of an item being put (PutItem "Item": the key attributes are required)."""
        for name in (self.spec.hash_key, self.spec.range_key):
            if name is not None and name not in item:
                raise ValidationError(f"One or more parameter values were invalid: Missing the key {name} in the item")
        return self._key_of(item)

    def _key_of(self, source: Mapping[str, Any]) -> tuple[Any, Any, Item]:
        spec = self.spec
        hash_value = source[spec.hash_key]
        hk = self.key_value(spec.hash_key, hash_value)
        key: Item = {spec.hash_key: {**hash_value}}
        rk: Any = 0
        if spec.range_key is not None:
            range_value = source[spec.range_key]
            rk = self.key_value(spec.range_key, range_value)
            key[spec.range_key] = {**range_value}
        return hk, rk, key

    def key_of_item(self, item: Item) -> Item:
        key = {self.spec.hash_key: item[self.spec.hash_key]}
        if self.spec.range_key is not None:
            key[self.spec.range_key] = item[self.spec.range_key]
        return key

    # ------------------------------------------------------------------------------------------- versions

    def get(self, hk: Any, rk: Any, as_of: float | None = None) -> tuple[Item | None, int]:
        """The item (None: absent) and its size, as a read at ``as_of`` sees it (None: consistent)."""
        partition = self.partitions.get(hk)
        if partition is None:
            return _ABSENT
        versions = partition.versions.get(rk)
        return _ABSENT if versions is None else visible(versions, as_of)

    def write(self, hk: Any, rk: Any, item: Item | None, size: int, now: float, horizon: float) -> None:
        """Record ``item`` (None: deleted) as the item's version at ``now``; drop versions older than ``horizon``
        except the last one before it (what a read at the horizon sees)."""
        partition = self.partitions.get(hk)
        if partition is None:
            partition = self.partitions[hk] = Partition()
        versions = partition.versions.get(rk)
        if versions is None:
            partition.versions[rk] = [(now, item, size)]
            bisect.insort(partition.keys, rk)
            return
        versions.append((now, item, size))
        while len(versions) > 1 and versions[1][0] <= horizon:
            del versions[0]

    def forget(self, hk: Any, rk: Any, horizon: float) -> None:
        """Drop a deleted item whose deletion is older than ``horizon`` (no read can see it any more)."""
        partition = self.partitions.get(hk)
        versions = partition.versions.get(rk) if partition else None
        if partition is None or versions is None or versions[-1][1] is not None or versions[-1][0] > horizon:
            return
        del partition.versions[rk]
        del partition.keys[bisect.bisect_left(partition.keys, rk)]
        if not partition.keys:
            del self.partitions[hk]

    def walk(self, hk: Any, *, forward: bool, low: tuple[Any, bool] | None = None,
             high: tuple[Any, bool] | None = None, prefix: Any = None, after: Any = None,
             ) -> Iterator[tuple[Any, list[Version]]]:
        """The (sort value, versions) of one partition's items between ``low`` and ``high`` (value, inclusive),
        or with sort values starting with ``prefix``, strictly after ``after`` in the walk's direction."""
        partition = self.partitions.get(hk)
        if partition is None:
            return
        keys = partition.keys
        start, stop = 0, len(keys)
        if prefix is not None:
            start = bisect.bisect_left(keys, prefix)
            stop = start
            while stop < len(keys) and keys[stop][:len(prefix)] == prefix:
                stop += 1
        if low is not None:
            start = max(start, (bisect.bisect_left if low[1] else bisect.bisect_right)(keys, low[0]))
        if high is not None:
            stop = min(stop, (bisect.bisect_right if high[1] else bisect.bisect_left)(keys, high[0]))
        if after is not None:
            if forward:
                start = max(start, bisect.bisect_right(keys, after))
            else:
                stop = min(stop, bisect.bisect_left(keys, after))
        indexes = range(start, stop) if forward else range(stop - 1, start - 1, -1)
        versions = partition.versions
        for i in indexes:
            rk = keys[i]
            yield rk, versions[rk]

    def hash_values(self) -> list[Any]:
        return sorted(self.partitions)

    def current_items(self) -> list[Item]:
        """Every current item, sorted by partition key then sort key."""
        found: list[Item] = []
        for hk in self.hash_values():
            partition = self.partitions[hk]
            for rk in partition.keys:
                item = partition.versions[rk][-1][1]
                if item is not None:
                    found.append(item)
        return found


_ABSENT: tuple[None, int] = (None, 0)


def visible(versions: list[Version], as_of: float | None) -> tuple[Item | None, int]:
    """The item and its size as a read at ``as_of`` sees it (None: the latest, a consistent read)."""
    if as_of is None:
        _, item, size = versions[-1]
        return item, size
    for written, item, size in reversed(versions):
        if written <= as_of:
            return item, size
    return _ABSENT


def key_sort_value(table: Table, name: str, value: Value) -> Any:
    """The sort value of a key condition's operand, which must have the key's type (Query API Reference)."""
    try:
        return table.key_value(name, value)
    except ValidationError:
        raise ValidationError("One or more parameter values were invalid: Condition parameter type does not match "
                              "schema type") from None
