"""Whether a sheet's snapshots keep completing while faults fire, seen from outside the pipeline (issue 34).

Two pieces, one for each side of the measurement:

* :class:`FastWriter` — one signed client appending to a sheet through the API as fast as it is answered (each
  edit waits for the answer to the one before, and nothing else), as a busy user or an import would;
* :class:`SnapshotProgress` — samples the sheet's latest completed snapshot, the segment item's ``S`` (one
  eventually consistent Query a sample), and reads the stalls off the samples.

A *stall* is the time between two moves of the latest completed snapshot while the writer keeps snapshots falling
due (the last one runs to the end of the measurement). Its length says how long a sheet's loads fold ever more
entries past the latest snapshot; a lost job that nothing recovers shows as one stall as long as the queue's
visibility timeout. ``bench.bench_stall`` prints p50 and max; ``tests/emulator/test_liveness.py`` requires a move
in every window.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from seglog_client import SeglogClient, set_cell
from seglog_core.ports import LogStore
from seglog_plugin.chaos.loop import Loop


@dataclass
class FastWriter:
    """Appends cells to ``log_id`` through ``api`` until :meth:`stop`, each as soon as the last was answered.

    A request the client gave up on (its retries spent while the gateway restarts) is counted in ``given_up`` and
    the next edit goes on."""

    api: SeglogClient
    log_id: uuid.UUID
    acknowledged: int = 0
    given_up: int = 0
    errors: list[str] = field(default_factory=list)
    _loop: Loop | None = None

    def start(self) -> FastWriter:
        self._loop = Loop(self.write, interval=0.0, name="fast-writer")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()

    def write(self) -> None:
        n = self.acknowledged + self.given_up
        try:
            self.api.append(self.log_id, set_cell(f"A{n % 50 + 1}", n))
            self.acknowledged += 1
        except Exception as exc:  # the client's retries are spent: note it, the next edit goes on
            self.given_up += 1
            if len(self.errors) < 20:
                self.errors.append(f"{type(exc).__name__}: {exc}"[:300])


@dataclass(frozen=True)
class Sample:
    """The latest completed snapshot ``(segment, entry)`` seen at ``at`` (monotonic seconds)."""

    at: float
    position: tuple[int, int]


@dataclass
class SnapshotProgress:
    """Samples ``log_id``'s latest completed snapshot every ``interval`` seconds until :meth:`stop`."""

    store: LogStore
    log_id: uuid.UUID
    interval: float = 1.0
    clock: Callable[[], float] = time.monotonic
    samples: list[Sample] = field(default_factory=list)
    _loop: Loop | None = None

    def start(self) -> SnapshotProgress:
        self._loop = Loop(self.sample, interval=self.interval, name="snapshot-progress")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()

    def sample(self) -> Sample:
        segments = self.store.latest_segments(self.log_id, 2)
        position = max(((s.num, s.last_snapshot) for s in segments if s.last_snapshot is not None),
                       default=(0, 0))
        found = Sample(self.clock(), position)
        self.samples.append(found)
        return found


def moves(samples: Sequence[Sample]) -> list[float]:
    """When the latest completed snapshot was first seen further on than before (the first sample counts)."""
    found: list[float] = []
    latest: tuple[int, int] | None = None
    for s in samples:
        if latest is None or s.position > latest:
            found.append(s.at)
            latest = s.position
    return found


def stalls(samples: Sequence[Sample]) -> list[float]:
    """Seconds between consecutive moves, and from the last move to the last sample."""
    if not samples:
        return []
    at = moves(samples)
    return [b - a for a, b in zip(at, [*at[1:], samples[-1].at], strict=True) if b > a]


def still_windows(samples: Sequence[Sample], width: float) -> list[tuple[float, float]]:
    """Every window ``[start, start + width)`` (from the first sample, back to back) in which the latest completed
    snapshot did not move, as seconds from the first sample."""
    if not samples:
        return []
    first, at = samples[0].at, moves(samples)[1:]
    count = int((samples[-1].at - first) // width)
    return [(i * width, (i + 1) * width) for i in range(count)
            if not any(first + i * width <= t < first + (i + 1) * width for t in at)]

