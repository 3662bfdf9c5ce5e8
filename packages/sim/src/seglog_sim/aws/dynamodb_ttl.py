"""Time to Live on a simulated table: items whose TTL attribute is past vanish at TTL's own unhurried pace.

DynamoDB Developer Guide, "Time to Live (TTL)" and "Working with expired items"; API Reference, UpdateTimeToLive:
the attribute is a Number of epoch seconds; an item whose value is less than the current time is expired and
"subsequently deleted" on a best-effort basis, "typically within two days of expiration"; until then "items that
have expired and not been deleted will still show up in reads, queries, and scans"; the deletion costs no write
units and appears in the table's stream as a REMOVE made by the service (its ``userIdentity``, not modelled here:
seglog's router takes only INSERT records). An attribute that is not a Number is ignored.

Each expired item's deletion comes a seeded random delay (up to ``max_delay``) after its expiry, drawn from the
item's key and expiry alone, so a run replays exactly whatever else it does; :meth:`TimeToLive.sweep` deletes the
items whose moment has come. seglog writes no TTL today (seglog_core.retention, "Why no TTL"): the model is here
for the counterexample that shows why (tests/test_retention_ttl.py).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from seglog_sim.aws.dynamodb_values import Item, sort_key

if TYPE_CHECKING:
    from seglog_sim.aws.dynamodb import SimDynamoDB

#: "DynamoDB typically deletes expired items within two days of expiration" (UpdateTimeToLive).
MAX_DELAY: Final = 2 * 86_400.0


class TimeToLive:
    """TTL on one table of ``sim``, on ``attribute`` (TimeToLiveSpecification AttributeName)."""

    def __init__(self, sim: SimDynamoDB, table: str, attribute: str, *, seed: int = 0,
                 max_delay: float = MAX_DELAY) -> None:
        self.sim, self.table, self.attribute = sim, sim.table("UpdateTimeToLive", table), attribute
        self.seed, self.max_delay = seed, max_delay
        #: Items TTL deleted, in the order it deleted them: (key, expiry, deleted at).
        self.deleted: list[tuple[Item, float, float]] = []

    def deletes_at(self, key: Item, expiry: float) -> float:
        """When TTL deletes an item of ``key`` that expires at ``expiry``."""
        draw = random.Random(f"{self.seed}:{sorted((k, repr(sort_key(v))) for k, v in key.items())}:{expiry}")
        return expiry + draw.uniform(0.0, self.max_delay)

    def sweep(self) -> int:
        """Delete every expired item whose deletion time has come; returns how many."""
        now = self.sim.now()
        table, count = self.table, 0
        for hk in table.hash_values():
            partition = table.partitions[hk]
            for rk in list(partition.keys):
                _, item, size = partition.versions[rk][-1]
                value = item.get(self.attribute) if item is not None else None
                if item is None or not isinstance(value, dict) or "N" not in value:
                    continue
                expiry = float(value["N"])
                key = table.key_of_item(item)
                if expiry < now and self.deletes_at(key, expiry) <= now:
                    self.sim.commit(table, hk, rk, key, item, None, size, now)  # free: no units metered
                    self.deleted.append((key, expiry, now))
                    count += 1
        return count
