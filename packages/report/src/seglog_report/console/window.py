"""Window: the spans and markers the console still draws — the newest, for a bounded time and number.

Each item gets a sequence number ``n`` as it is added (1, 2, ...). The window keeps at most ``max_items``
items, none older than ``max_age`` seconds; what falls out was counted by the aggregator when it came in, so
dropping it loses detail, never a count. A page that holds the items between ``low`` (the lowest ``n`` still
kept) and the last ``n`` it was sent holds exactly what the window holds.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

#: Defaults: ten minutes of timeline, at most 5,000 bars and markers.
MAX_ITEMS: Final = 5000
MAX_AGE_SECONDS: Final = 600.0

Item = dict[str, Any]
"""A span (``type: "span"``, ``start``, ``end``) or a marker (``type: "marker"``, ``at``), with ``n``, ``lane``,
``group``: :class:`seglog_report.model.Span` or :class:`~seglog_report.model.Marker` as JSON, and ``n``."""


def item_time(item: Item) -> float:
    """When an item happened (a span's end), for its age."""
    return float(item["end"] if item.get("type") == "span" else item["at"])


class Window:
    """Bounded, in arrival order; not thread-safe (the aggregator holds its lock)."""

    def __init__(self, *, max_items: int = MAX_ITEMS, max_age: float = MAX_AGE_SECONDS) -> None:
        if max_items < 1 or max_age <= 0:
            raise ValueError(f"a window needs room: max_items {max_items}, max_age {max_age}")
        self.max_items = max_items
        self.max_age = max_age
        self._items: deque[Item] = deque()
        #: The last sequence number given.
        self.last = 0
        #: Items that fell out, by size and by age.
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def low(self) -> int:
        """The lowest ``n`` kept (``last + 1`` when empty): a page drops what it holds below it."""
        return self._items[0]["n"] if self._items else self.last + 1

    def add(self, item: Item, now: float) -> int:
        """Keep ``item`` (numbered here) and drop what is past the bounds; returns its ``n``."""
        self.last += 1
        item["n"] = self.last
        self._items.append(item)
        self.expire(now)
        return self.last

    def expire(self, now: float) -> bool:
        """Drop items over the count or older than ``max_age`` at ``now``; whether any went."""
        before = len(self._items)
        while len(self._items) > self.max_items:
            self._items.popleft()
        horizon = now - self.max_age
        while self._items and item_time(self._items[0]) < horizon:
            self._items.popleft()
        gone = before - len(self._items)
        self.evicted += gone
        return gone > 0

    def upto(self, n: int) -> list[Item]:
        """The items kept with a number up to ``n``, oldest first."""
        return [item for item in self._items if item["n"] <= n]

    def after(self, n: int) -> list[Item]:
        """The items kept with a number over ``n``, oldest first."""
        found: list[Item] = []
        for item in reversed(self._items):
            if item["n"] <= n:
                break
            found.append(item)
        found.reverse()
        return found
