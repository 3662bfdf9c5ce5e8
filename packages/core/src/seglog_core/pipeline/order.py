"""Step 3 of the snapshot worker protocol (DESIGN §5): what a build starts from, and whether it may start yet.

A snapshot builds from the latest completed snapshot before it; any Snapshot entry in between that is not complete,
and any earlier pending item of the log, makes this one early. An early job gives its predecessors what they need
to complete (a pending item, a job when theirs is lost), waits a little for them, and otherwise defers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from seglog_core import errors
from seglog_core.ports import JobQueue, LogStore, PendingStore
from seglog_core.schema import Entry, EntryType, PendingSnapshot, SnapshotJob


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a build needs: the completed snapshot to start from and the entries after it, up to ours."""

    base: Entry
    between: list[Entry]
    incomplete: list[Entry]


@dataclass(frozen=True, kw_only=True)
class Order:
    """The order checks of one worker. ``wait`` and ``sleep`` are the worker's order wait and its seam."""

    store: LogStore
    pending: PendingStore
    queue: JobQueue
    takeover_after: int
    wait: float
    sleep: Callable[[float], None]

    def plan(self, snapshot: Entry) -> Plan:
        """Find the completed snapshot before ``snapshot`` and the entries in between."""
        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num
        between: list[Entry] = []
        incomplete: list[Entry] = []
        while True:
            seg = next((s for s in self.store.latest_segments(log_id, 2) if s.num == segment), None)
            if seg is None:
                seg = next((s for s in self.store.segments(log_id) if s.num == segment), None)
            start = seg.last_snapshot if seg and seg.last_snapshot is not None and seg.last_snapshot < entry else 0
            # Only up to ours: an entry after it (perhaps one only newer code reads) is not this snapshot's.
            run = list(self.store.entries(log_id, segment, start, entry - 1)) if entry > 0 else []
            for index in range(len(run) - 1, -1, -1):
                e = run[index]
                if e.type is EntryType.SNAPSHOT and e.snapshot_root is not None:
                    return Plan(base=e, between=run[index + 1:] + between, incomplete=incomplete)
                if e.type is EntryType.SNAPSHOT:
                    incomplete.append(e)
            between = run + between
            if segment == 0:
                raise errors.CorruptLogError(log_id, "no completed snapshot before this one")
            segment, entry = segment - 1, 1 << 62

    def earlier(self, log_id: uuid.UUID, segment: int, entry: int) -> list[PendingSnapshot]:
        """The log's pending items before ``segment``/``entry``."""
        return self.pending.for_log(log_id, before=(segment, entry))

    def ensure_predecessors(self, log_id: uuid.UUID, incomplete: list[Entry], earlier: list[PendingSnapshot],
                            now: int) -> None:
        """Give every incomplete predecessor a pending item and, if its claim is stale, a job of its own.

        A predecessor whose message was lost — never sent, or its claimer's message parked in the DLQ — would
        otherwise hold this snapshot back for ever; a new job takes the stale claim over (step 2), so the pipeline
        recovers without an operator. A claim that is only quiet (its claimer deferred, hidden) costs one
        duplicate message, hidden until the claim goes stale. A blocked predecessor waits for newer code."""
        known = {(p.segment, p.entry) for p in earlier}
        for e in incomplete:
            if (e.segment, e.num) not in known:
                try:
                    self.pending.create(PendingSnapshot(log_id=log_id, segment=e.segment, entry=e.num, created=now,
                                                        modified=now))
                except errors.ItemExistsError:  # someone else's, or the predecessor completed meanwhile
                    continue
                self.queue.send(SnapshotJob(log=str(log_id), segment=e.segment, entry=e.num))
        # Only the earliest: it holds every later one back, and each of those would otherwise send a job for every
        # stale one before it at each deferral (a long chain's messages would grow with its square).
        first = min(earlier, key=lambda p: (p.segment, p.entry), default=None)
        if first is not None and first.blocked is None and now - first.modified > self.takeover_after:
            self.queue.send(SnapshotJob(log=str(log_id), segment=first.segment, entry=first.entry))

    def await_predecessors(self, log_id: uuid.UUID, segment: int, entry: int, remaining: Callable[[], float],
                           margin: float) -> bool:
        """Wait up to ``wait`` seconds (and never into the handoff margin) until no earlier pending item is left;
        whether that happened. Only the pending table is polled; the caller re-reads the log to be sure."""
        # Polled at 0.1, 0.3, 0.7 s, then every half second: a predecessor being built usually completes within the
        # first second, and a fixed 0.1 s step cost 30 strongly consistent Queries per 3 s wait (the simulator
        # counted them as 29% of all storage calls).
        waited, step = 0.0, 0.1
        while waited < self.wait and remaining() - step > margin:
            self.sleep(step)
            waited += step
            step = min(step * 2, 0.5)
            if not self.earlier(log_id, segment, entry):
                return True
        return False
