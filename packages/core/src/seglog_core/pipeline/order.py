"""Step 3 of the snapshot worker protocol (DESIGN §5): what a build starts from, and whether it may start yet.

A snapshot builds from the latest completed snapshot before it; any Snapshot entry in between that is not complete,
and any earlier pending item of the log, makes this one early. An early job builds the earliest of them itself when
no live builder holds it (the worker's help, seglog_core.pipeline.claims), and otherwise waits a little for it and
defers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from seglog_core import errors
from seglog_core.ports import LogStore, PendingStore
from seglog_core.reads import Known, read_segment
from seglog_core.schema import Entry, EntryType, PendingSnapshot

#: How long an early job waits in its invocation for its predecessors before it defers by visibility (the
#: function's default, ``SEGLOG_ORDER_WAIT_SECONDS``): about where waiting costs what deferring does (issue 20,
#: "no paid idling"). Lambda bills the wait; a deferral costs one more receive and invocation of the job. At the
#: worker's 768 MB on arm64 in us-east-1 (template.yaml's SnapshotWorkerFunction; seglog_report's price table) a
#: second of waiting is $10.0 per million, a deferral about $3.3 per million: the invocation ($0.20), two SQS
#: requests (the receive and the hide, $0.80), the re-run's two conditional writes and about four reads ($1.75)
#: and its ~50 ms ($0.50). So waiting pays up to about 0.33 s; the wait polls at 0.1 and 0.3 s, so it stops after
#: those two. It was 3 s: in the
#: simulator (seeds 20001-20300, under faults) the worker billed 16.5 s per completed build at 3 s, 11.7 s at 0.3 s
#: and 10.3 s at 0, for 4.10, 4.89 and 5.26 receives per job.
ORDER_WAIT_SECONDS: Final = 0.3


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
            completed = seg.last_snapshot if seg is not None else None
            if completed is not None and completed >= entry:
                completed = None
            start = 0 if completed is None else completed
            # Only up to ours: an entry after it (perhaps one only newer code reads) is not this snapshot's.
            run = self._run(snapshot, segment, start, entry - 1, completed) if entry > 0 else []
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

    def _run(self, snapshot: Entry, segment: int, start: int, end: int, completed: int | None) -> list[Entry]:
        """The entries ``start``..``end`` of ``segment`` that the plan folds and searches for its base.

        In the snapshot's own segment, eventually consistent (seglog_core.reads): the fold knows where it ends.

        1. The Snapshot entry we build is in the log, so every num before it is: the read must reach ``end``.
        2. The segment's ``S`` names a completed snapshot: the read must show its root (that is the base).
        3. A lagging read may still show a *later* completed snapshot without its root; the plan would then start
           from an older base and hold ours back behind a snapshot that is done (help would build it again). So a
           Snapshot entry without a root after the base is confirmed by a consistent read from it to ``end``: one
           only when the plan would be held back, which is when the answer matters.

        A short read is read again (seglog_core.reads); with 1-3 the plan is the one a consistent read makes, and a
        fold of 1,000 entries costs half. An earlier segment is read consistently, as before: retention may have
        retired it (the job's segment is live, step 1 says so; the one before may not be), and a lagging read
        could still show entries retention deleted, a base whose objects are gone.
        """
        log_id = snapshot.log_id
        if segment != snapshot.segment:
            return list(self.store.entries(log_id, segment, start, end))
        run = read_segment(self.store, log_id, segment, start, end, known=Known(through=end, completed=completed))
        based = max((i for i, e in enumerate(run) if e.type is EntryType.SNAPSHOT and e.snapshot_root), default=-1)
        doubt = next((i for i in range(based + 1, len(run)) if run[i].type is EntryType.SNAPSHOT), None)
        if doubt is None:
            return run
        return run[:doubt] + list(self.store.entries(log_id, segment, run[doubt].num, end))

    def earlier(self, log_id: uuid.UUID, segment: int, entry: int) -> list[PendingSnapshot]:
        """The log's pending items before ``segment``/``entry``."""
        return self.pending.for_log(log_id, before=(segment, entry))

    @staticmethod
    def head(plan: Plan, earlier: list[PendingSnapshot]) -> tuple[int, int] | None:
        """The earliest snapshot holding ours back — an incomplete Snapshot entry since the base, or an earlier
        pending item (perhaps one whose snapshot completed and whose item outlived it) — as (segment, entry); None
        when nothing does."""
        return min([*((e.segment, e.num) for e in plan.incomplete), *((p.segment, p.entry) for p in earlier)],
                   default=None)

    def await_predecessors(self, log_id: uuid.UUID, segment: int, entry: int, remaining: Callable[[], float],
                           margin: float) -> Waited:
        """Wait up to ``wait`` seconds (and never into the handoff margin) until no earlier pending item is left.
        Only the pending table is polled; the caller re-reads the log to be sure."""
        # Polled at 0.1, 0.3, 0.7 s, then every half second: a predecessor being built usually completes within the
        # first second, and a fixed 0.1 s step cost 30 strongly consistent Queries per 3 s wait (the simulator
        # counted them as 29% of all storage calls).
        waited, step = 0.0, 0.1
        while waited < self.wait and remaining() - step > margin:
            self.sleep(step)
            waited += step
            step = min(step * 2, 0.5)
            if not self.earlier(log_id, segment, entry):
                return Waited(done=True, seconds=waited)
        return Waited(done=False, seconds=waited)


@dataclass(frozen=True, kw_only=True)
class Waited:
    """How an order wait ended: its predecessors done (``done``) or not, after ``seconds`` of sleeping."""

    done: bool
    seconds: float
