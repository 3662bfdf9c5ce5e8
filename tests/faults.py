"""A LogStore wrapper that injects the failures of DESIGN §3 and §7 at the port, decided by a seeded RNG:
stale results from eventually consistent queries, lost responses (the write happened, the caller saw an
error) and throttling. Used by the property tests on every backend."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.schema import Entry


class FaultyLogStore:
    """Delegates to ``inner``, injecting faults with the given probabilities."""

    def __init__(self, inner: LogStore, rng: random.Random, *, stale: float = 0.0, lost: float = 0.0,
                 throttle: float = 0.0) -> None:
        self.inner = inner
        self.rng = rng
        self.stale, self.lost, self.throttle = stale, lost, throttle
        self.injected: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _maybe_throttle(self) -> None:
        if self.rng.random() < self.throttle:
            self.injected["throttle"] += 1
            raise errors.ThrottledError("injected throttle", code="ThrottlingException")

    def latest_entry(self, log_id: uuid.UUID, segment: int) -> Entry | None:
        self._maybe_throttle()
        latest = self.inner.latest_entry(log_id, segment)
        if latest is not None and latest.num > 0 and self.rng.random() < self.stale:
            self.injected["stale"] += 1
            older = self.inner.get_entry(log_id, segment, max(0, latest.num - self.rng.randint(1, 3)))
            return older
        return latest

    def put_entry(self, entry: Entry) -> None:
        self._maybe_throttle()
        self.inner.put_entry(entry)
        if self.rng.random() < self.lost:
            self.injected["lost"] += 1
            raise errors.TransientStoreError("injected lost response", code="InternalServerError",
                                             outcome_unknown=True)

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500) -> Iterator[Entry]:
        return self.inner.entries(log_id, segment, start, end, page_size=page_size)
