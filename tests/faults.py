"""LogStore wrappers that inject the failures of DESIGN §3 and §7 at the port: FaultyLogStore, decided by a seeded
RNG (stale results from eventually consistent queries, lost responses — the write happened, the caller saw an
error — and throttling; used by the property tests on every backend), and LaggingReads, scripted (eventually
consistent reads of entries that lag)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.schema import Entry, Segment


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
                page_size: int = 500, consistent: bool = True) -> Iterator[Entry]:
        return self.inner.entries(log_id, segment, start, end, page_size=page_size, consistent=consistent)


class LaggingReads:
    """A LogStore whose next ``times`` eventually consistent reads of entries lag (seglog_core.reads): they answer
    each segment as it was before the entries after ``upto[segment]`` were appended and before the roots of the
    Snapshot entries in ``rootless`` were set. Consistent reads, and eventual ones after those, are current; with
    ``newest``, eventually consistent reads of the newest segments lag too, every one.
    ``reads`` records every entries read as (segment, start, consistent)."""

    def __init__(self, inner: LogStore, *, upto: dict[int, int] | None = None,
                 rootless: frozenset[tuple[int, int]] = frozenset(), times: int = 1, newest: int | None = None) -> None:
        self.inner, self.upto, self.rootless, self.times = inner, upto or {}, rootless, times
        #: Eventually consistent reads of the newest segments show none after this one (-1: no segment at all).
        self.newest = newest
        self.reads: list[tuple[int, int, bool]] = []

    def latest_segments(self, log_id: uuid.UUID, limit: int = 2, *, consistent: bool = False) -> list[Segment]:
        if consistent or self.newest is None:
            return self.inner.latest_segments(log_id, limit, consistent=consistent)
        newest = self.newest
        return [s for s in self.inner.latest_segments(log_id, limit + 8) if s.num <= newest][:limit]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500, consistent: bool = True) -> Iterator[Entry]:
        self.reads.append((segment, start, consistent))
        current = list(self.inner.entries(log_id, segment, start, end, page_size=page_size))
        if consistent or self.times == 0:
            return iter(current)
        self.times -= 1
        visible = self.upto.get(segment, 1 << 62)
        return iter([msgspec.structs.replace(e, snapshot_root=None) if (segment, e.num) in self.rootless else e
                     for e in current if e.num <= visible])


class RacedQuery:
    """A LogStore whose first read of a segment from its start misses one num the next read finds: a Query that
    passed num ``missing`` just before a racing append wrote it, then read the nums written after it."""

    def __init__(self, inner: LogStore, missing: int) -> None:
        self._inner, self._missing, self.raced = inner, missing, False

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, **kw: Any
                ) -> Iterator[Entry]:
        found = self._inner.entries(log_id, segment, start, end, **kw)
        if self.raced or end is not None or start > self._missing:
            return found
        self.raced = True
        return (e for e in found if e.num != self._missing)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
