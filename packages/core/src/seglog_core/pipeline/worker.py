"""The snapshot worker protocol (DESIGN §5, seed 001 "Snapshot Creation"), independent of Lambda and SQS.

One call of :meth:`SnapshotWorker.process` handles one queue message, step by step:

1. done already?   the Snapshot entry has ``R``: redo the completion steps a crash may have skipped, delete.
2. pending upsert  create the pending item (or record our messageId as its claimer), conditionally. A loser
                   whose messageId differs from the claimer's hides its message until the claim would go stale
                   (the claimer's message carries the work, unless it is lost); one whose messageId matches is a
                   redelivery of the only copy and goes on. A claim left alone for longer than the takeover timeout (M
                   older than ``takeover_after``: its holder deferred and is hidden, handed off, or died) is
                   taken over instead: our messageId becomes the claimer and goes on.
3. order           an earlier pending item of this log, or an incomplete Snapshot entry between the previous
                   completed snapshot and ours, holds ours back. The earliest of them, if no live builder holds
                   it, this job builds itself first (steps 1-6 under our messageId, the message untouched; its own
                   job finds it done), then looks again; behind a live builder it waits up to ``order_wait``,
                   then defers by visibility with a growing backoff and jitter (:class:`Backoff`), keeping the
                   message.
4. claim           Active, X + 1, M = now, when not active or when M is older than the takeover timeout;
                   refused: hide the message for the time the active one has left.
5. build           from the previous snapshot's chunks and the entries between; after each chunk checkpoint
                   with the condition X = ours (else taken over: stop); near the time limit hand off.
6. complete        ``R`` on the entry, ``S`` on the segment, delete the pending item, delete the message.

An entry this code cannot fold (an unknown type, a body version from newer code) blocks the snapshot: it is
deferred at the blocked backoff (hides of up to 15 minutes, growing to 3 hours) with the reason logged and
recorded on the pending item (``blocked``), never built wrong and never failed in a loop; the next deployment of
newer code builds it: its message comes back within 3 hours, or, parked in the DLQ meanwhile, the scheduled
sweep sends a new one (seglog_services.snapshot_sweep).

How long a job waits (:class:`Backoff`, one rule for the worker, the template and its test): hides grow from
half a second to 15 minutes over the first 20 receives, then double up to 3 hours, by the message's own receive
count or the snapshot's deferrals, whichever is more, so a job deferred or blocked on every receive reaches the
DLQ no sooner than ``Backoff().to_dead_letter(maxReceiveCount)`` (about 43 hours at the template's 50). Every
hide stays far under SQS's 12 hours from the receive. Past the 20th the worker logs "snapshot deferred long",
and counts it (and every blocked receive) as a metric the function sends to CloudWatch for an alarm.

The pending upsert's rules, with their timing diagrams (the redelivery the seed's "delete the loser" gets wrong,
the takeover of a stale or deferred claimer), are in :mod:`seglog_core.pipeline.claims`.

Why the help of step 3 (issue 34). A job lost before its claim — its poller or worker died holding it, or it
timed out or was throttled before its first write — comes back only after the queue's visibility timeout (360 s
in the template), as on AWS. Every later snapshot of its sheet waits behind it: with a busy sheet that is hundreds
of deferred jobs, each received again and again, crowding the queue so that even a new job sent for the lost one
(what step 3 did before) waited behind them (a busy sheet's snapshots froze for minutes under the README's fault
command). Now the first job of a later snapshot to run builds the lost one itself, at once::

    job m41 (snapshot 41)        pending item 41              job m51 (snapshot 51)
      create, Q=m41; defer  -->  {Q: m41, A: false}
      received again: lost
      (poller killed)                                         order: 41 is the head, idle
                                 {Q: m51, A: false}    <----- take the idle claim (helping)
                                 {Q: m51, A: true, X: 1} <--- claim, build, complete 41 (R, S, delete item)
                                                              order: nothing earlier; claim, build 51
      back after 360 s: R set:
        step 1, deleted

So while jobs of a sheet keep coming, its latest completed snapshot moves within a job's run after the lost one
fell due, or, if a helper dies holding a claim, within ``takeover_after`` (the claim goes stale and the next job
takes it over). A sheet that stopped writing has no later job: its last snapshot waits for its own message.

Named crash points (:data:`CRASH_POINTS`) call an injected hook so tests and the emulator can kill the
worker exactly there.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import structlog

from seglog_core import errors
from seglog_core.crashpoints import WORKER_CRASH_POINTS
from seglog_core.pipeline.backoff import Backoff
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS, Checkpoint, Lease, LeaseLostError, PendingClaims
from seglog_core.pipeline.order import Order, Plan
from seglog_core.pipeline.outcomes import UNREADABLE, InvalidJobError, Outcome, SnapshotBlockedError
from seglog_core.ports import BlobStore, JobQueue, LogStore, PendingStore, QueueMessage
from seglog_core.retention import discard_late_snapshot
from seglog_core.schema import SNAPSHOT_JOB_DECODER, Body, Entry, EntryType, PendingSnapshot, SnapshotJob
from seglog_core.snapshot import SnapshotBuild

log = structlog.get_logger("seglog.worker")

CRASH_POINTS = WORKER_CRASH_POINTS


@dataclass(kw_only=True)
class SnapshotWorker:
    """Builds snapshots from queue messages, exactly once in effect however messages are delivered.

    Args:
        takeover_after: seconds after which a claim whose holder stopped renewing it may be taken over; a builder
            renews it at least every third of this (:class:`~seglog_core.pipeline.claims.Lease`).
        defer_base, defer_cap, defer_patience, defer_longest: the backoff of deferrals (:class:`Backoff`).
        handoff_margin: seconds before the function's time limit at which to hand off.
        order_wait: how long an early job waits in the invocation for its predecessors to complete before it
            defers by visibility (step 3). A deferral costs at least a second (SQS visibility is set in whole
            seconds) per snapshot in a chain; a predecessor being built usually completes sooner.
        sleep: how the order wait sleeps (a seam for tests).
        crash: called with each crash point's name; raises (or kills the process) to inject a crash.
        count: called with a metric's name to add 1 to it: ``SnapshotsBlocked`` on every blocked receive,
            ``SnapshotsDeferredLong`` on a deferral past the backoff's patience (the function emits them to
            CloudWatch for an alarm).
    """

    store: LogStore
    blobs: BlobStore
    pending: PendingStore
    queue: JobQueue
    body_of: Callable[[Entry], Body]
    clock: Callable[[], float] = time.time
    rng: random.Random = field(default_factory=random.Random)
    takeover_after: int = DEFAULT_TAKEOVER_SECONDS
    defer_base: float = 0.5
    defer_cap: float = 900.0
    defer_patience: int = 20
    defer_longest: float = 10_800.0
    handoff_margin: float = 10.0
    chunk_cells: int = 20_000
    order_wait: float = 0.0
    sleep: Callable[[float], None] = time.sleep
    crash: Callable[[str], None] = lambda point: None
    count: Callable[[str], None] = lambda metric: None
    backoff: Backoff = field(init=False)

    def __post_init__(self) -> None:
        self.backoff = Backoff(base=self.defer_base, cap=self.defer_cap, patience=self.defer_patience,
                               longest=max(self.defer_longest, self.defer_cap))

    def process(self, message: QueueMessage, remaining: Callable[[], float] = lambda: 900.0) -> Outcome:
        """Handle one message. ``remaining`` gives the seconds left before the function's time limit."""
        job = self._job(message)
        log_id = uuid.UUID(job.log)
        # Hand off with a quarter of the invocation's time left at most: a 10 s margin fits a 60 s function, and
        # would make a 3 s one hand off after its first chunk every time.
        margin = min(self.handoff_margin, remaining() / 4)
        with structlog.contextvars.bound_contextvars(log_id=job.log, segment=job.segment, entry=job.entry,
                                                     message_id=message.message_id,
                                                     attempt=message.receive_count):
            outcome = self._process(message, log_id, job.segment, job.entry, remaining, margin)
            log.info("snapshot job", outcome=str(outcome))
            return outcome

    def _job(self, message: QueueMessage) -> SnapshotJob:
        try:
            job = SNAPSHOT_JOB_DECODER.decode(message.body)
            uuid.UUID(job.log)
        except (msgspec.DecodeError, ValueError) as exc:
            raise InvalidJobError(f"message {message.message_id} is not a snapshot job: {exc}") from None
        return job

    def _process(self, message: QueueMessage, log_id: uuid.UUID, segment: int, entry: int,
                 remaining: Callable[[], float], margin: float) -> Outcome:
        snapshot = self._snapshot(message, log_id, segment, entry)
        if isinstance(snapshot, Outcome):
            return snapshot
        # 2. Pending upsert.
        now = int(self.clock())
        try:
            upserted = self._claims.upsert(message, log_id, segment, entry, now)
        except errors.SnapshotCompleteError:  # completed since we read the entry: finish as step 1 does
            if self._done_meanwhile(message, log_id, segment, entry):
                return Outcome.ALREADY_DONE
            raise
        if not upserted:
            # A duplicate of a live claim's job: hidden until that claim would go stale, never deleted. The claimer's
            # own message may be gone (parked in the DLQ, or deleted by a stale receipt handle) while M still looks
            # fresh — a worker with a fast clock stamps M in the future — and then this copy is the only job left:
            # the simulator found a snapshot stranded so when the duplicate was deleted here. Back after the
            # claim's time, it finds the snapshot done (step 1 deletes it) or the claim stale (it takes over).
            item = self.pending.get(log_id, segment, entry)
            if item is None:  # completed meanwhile: back in a second, step 1 deletes it
                self.queue.change_visibility(message, 1)
            else:
                self._hide_behind_claim(message, item, now, plus=1)
            return Outcome.DUPLICATE
        self.crash("after_pending_upsert")
        # 3. Order.
        try:
            plan = self._in_order(message, snapshot, remaining, margin)
        except errors.UnknownEntryTypeError as exc:  # read from the log: the adapter says where
            return self._blocked(message, snapshot, SnapshotBlockedError(exc, segment=exc.segment,
                                                                         entry=exc.entry), now=now)
        if isinstance(plan, Outcome):
            return plan
        # 4. Claim.
        # The first claim pins the build's chunk size in the checkpoint state; every later builder (a takeover, a
        # resumption, another code version) reads it, so all of them write the same bytes under each chunk key. A
        # builder taken over before its first checkpoint once cut chunks its own way and overwrote a completed
        # snapshot's chunk 0 (chaos: mixed_version with clock_skew).
        increment = self.pending.claim(log_id, segment, entry, message.message_id, now=now,
                                       takeover_after=self.takeover_after, initial_state=self._pinned)
        if increment is None:
            self._hide_behind_claim(message, self.pending.get(log_id, segment, entry), now)
            return Outcome.BUSY
        return self._build(message, snapshot, plan, increment, remaining, margin, own=True)

    def _snapshot(self, message: QueueMessage | None, log_id: uuid.UUID, segment: int,
                  entry: int) -> Entry | Outcome:
        """The incomplete Snapshot entry to build, or how the job ends at step 1: a late job for a retired segment,
        or a snapshot done already (its completion steps redone, the message deleted when given: its own job's).

        Raises:
            InvalidJobError: our job names no Snapshot entry (a helper's head without one is left alone: BUSY).
        """
        snapshot = self.store.get_entry(log_id, segment, entry)
        if snapshot is None and self._retired(log_id, segment):
            # A late job (a redrive, a reprocess, the sweep) for a segment retention archived or deleted: nothing to
            # build; failing it on every receive would only park it in the DLQ, and a redrive would bring it back to
            # fail again. A pending item left for it would make the sweep send it for ever: it goes too.
            return self._retired_job(message, log_id, segment, entry)
        if snapshot is None or snapshot.type is not EntryType.SNAPSHOT:
            if message is None:
                return Outcome.BUSY
            raise InvalidJobError(f"log {log_id} has no Snapshot entry {segment}/{entry}")
        # 1. Done already?
        if snapshot.snapshot_root is not None:
            self._complete(message, snapshot, snapshot.snapshot_root)
            return Outcome.ALREADY_DONE
        return snapshot

    def _in_order(self, message: QueueMessage, snapshot: Entry, remaining: Callable[[], float],
                  margin: float) -> Plan | Outcome:
        """Step 3: the plan to build from once no earlier snapshot of the log is incomplete, or what the job does
        instead. An earlier snapshot that no live builder holds, this job builds itself, earliest first (a job lost
        before its claim once froze a sheet's snapshots for minutes: issue 34); behind a live builder it waits up to
        the order wait, then defers."""
        order = self._order
        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num
        waited = False
        while True:
            plan, earlier = order.plan(snapshot), order.earlier(log_id, segment, entry)
            head = order.head(plan, earlier)
            if head is None:
                return plan
            if remaining() < margin:  # no time left to help: go on in a new invocation at once
                self.queue.change_visibility(message, 0)
                return Outcome.HANDED_OFF
            helped = self._help(message, snapshot, head, remaining, margin)
            if helped in (Outcome.COMPLETED, Outcome.ALREADY_DONE):
                continue
            if helped is Outcome.HANDED_OFF:
                self.queue.change_visibility(message, 0)
                return Outcome.HANDED_OFF
            if waited or helped is Outcome.BLOCKED:
                return self._defer(message, log_id, segment, entry, int(self.clock()))
            waited = True
            wait = order.await_predecessors(log_id, segment, entry, remaining, margin)
            # Billed idling (issue 20): bench_pipeline reads these lines for the waits a run paid for.
            log.info("order wait", waited=round(wait.seconds, 3), predecessors_done=wait.done,
                     earlier=len(earlier), incomplete=len(plan.incomplete))
            if not wait.done:
                return self._defer(message, log_id, segment, entry, int(self.clock()))

    def _help(self, message: QueueMessage, snapshot: Entry, head: tuple[int, int], remaining: Callable[[], float],
              margin: float) -> Outcome:
        """Build ``head``, the earliest incomplete snapshot before ours, under our message's id: its step 1, its
        order (none earlier, or another job's race: left), a seize (steps 2 and 4 in one write, unless a live builder
        holds it) and steps 5-6. It never touches the message: that is its own job's to delete, hide or hand back."""
        log_id = snapshot.log_id
        with structlog.contextvars.bound_contextvars(segment=head[0], entry=head[1],
                                                     helping=f"{snapshot.segment}/{snapshot.num}"):
            outcome = self._snapshot(None, log_id, *head)
            if not isinstance(outcome, Outcome):
                head_entry, order = outcome, self._order
                plan = order.plan(head_entry)  # unreadable: ours, which folds the same entries, is blocked too
                if order.head(plan, order.earlier(log_id, *head)) is not None:
                    outcome = Outcome.BUSY  # earlier ones again (a race): left to their order
                else:
                    outcome = self._seize(message, head_entry, plan, remaining, margin)
            log.info("snapshot helped", outcome=str(outcome))
        return outcome

    def _seize(self, message: QueueMessage, head: Entry, plan: Plan, remaining: Callable[[], float],
               margin: float) -> Outcome:
        log_id, segment, entry = head.log_id, head.segment, head.num
        try:
            increment = self._claims.seize(message, log_id, segment, entry, int(self.clock()), self._pinned)
        except errors.SnapshotCompleteError:
            return Outcome.ALREADY_DONE if self._done_meanwhile(None, log_id, segment, entry) else Outcome.BUSY
        if increment is None:
            return Outcome.BUSY  # a live builder holds it, or another helper came first
        return self._build(message, head, plan, increment, remaining, margin, own=False)

    def _build(self, message: QueueMessage, snapshot: Entry, plan: Plan, increment: int,
               remaining: Callable[[], float], margin: float, *, own: bool) -> Outcome:
        """Steps 5 and 6 under our claim (``increment``); ``own``: the message's own snapshot, else one it helps."""
        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num
        done = message if own else None
        self.crash("after_claim")
        # Completed meanwhile? We read the entry before the pending item; a job that stalled in between finds the
        # item gone after completion, creates it again and would build the snapshot a second time, cutting its own
        # chunks over the completed ones (found by the simulator, seed 742). The pending item is deleted only after
        # R is set, so one consistent read now tells.
        if self._done_meanwhile(done, log_id, segment, entry):
            return Outcome.ALREADY_DONE
        # 5. Build.
        item = self.pending.get(log_id, segment, entry)
        if item is None:
            # The pending item is deleted only once the snapshot is complete (step 6): it completed between our
            # claim and this read. Building now would cut chunks our own way over the completed snapshot's (the
            # simulator found a completed snapshot's chunk overwritten so, seed 196: mixed versions and a fast
            # clock). Its completion steps are idempotent: redo them, as step 1 does.
            if self._done_meanwhile(done, log_id, segment, entry):
                return Outcome.ALREADY_DONE
            if own:
                self.queue.change_visibility(message, 1)
            return Outcome.BUSY
        resumed = Checkpoint.of(item)
        chunk_cells = resumed.chunk_cells or self.chunk_cells
        lease = Lease(pending=self.pending, log_id=log_id, segment=segment, entry=entry, increment=increment,
                      state=Checkpoint(next_chunk=resumed.next_chunk, chunk_cells=chunk_cells).encode(),
                      takeover_after=self.takeover_after, clock=self.clock)
        try:
            build = SnapshotBuild(lease.blobs(self.blobs), log_id, segment, entry, plan.base.snapshot_root or "",
                                  self._bodies(plan, lease), chunk_cells=chunk_cells)
            for chunk in build.chunks(resumed.next_chunk):
                self.blobs.put(chunk.key, chunk.data)
                self.crash("mid_chunk")
                state = Checkpoint(next_chunk=chunk.index + 1, chunk_cells=chunk_cells).encode()
                if not self.pending.checkpoint(log_id, segment, entry, increment=increment, state=state,
                                               now=int(self.clock())):
                    # Taken over, or completed by another, since our last write; if retention deleted the segment
                    # meanwhile, the chunk we just put is ours to delete (seed 9345: a 45 s stall before a put).
                    discard_late_snapshot(self.store, self.blobs, log_id, segment, entry)
                    return Outcome.TAKEN_OVER
                lease.checkpointed(state)
                if remaining() < margin:
                    if self.pending.release(log_id, segment, entry, increment=increment, now=int(self.clock())):
                        if own:
                            self.queue.change_visibility(message, 0)
                        return Outcome.HANDED_OFF
                    return Outcome.TAKEN_OVER
        except SnapshotBlockedError as exc:
            self.pending.release(log_id, segment, entry, increment=increment, now=int(self.clock()))
            return self._blocked(message, snapshot, exc, now=int(self.clock()), own=own)
        except LeaseLostError:
            return Outcome.TAKEN_OVER
        root_key, root_data = build.root()
        self.blobs.put(root_key, root_data)
        # 6. Complete, in order.
        try:
            self._complete(done, snapshot, root_key)
        except errors.InvalidInputError:
            # The Snapshot entry is gone: we stalled before the root's put while another builder completed the
            # snapshot and retention deleted its segment. The root we put is ours to delete (seed 9345's kin; a put
            # before the deletion removed the entries goes with retention's second look, retention._finish).
            if not discard_late_snapshot(self.store, self.blobs, log_id, segment, entry):
                raise
            return self._retired_job(message if own else None, log_id, segment, entry)
        return Outcome.COMPLETED

    # ------------------------------------------------------------------------------------------- steps

    @property
    def _pinned(self) -> bytes:
        """The checkpoint state a first claim pins: this code's chunk size."""
        return Checkpoint(chunk_cells=self.chunk_cells).encode()

    @property
    def _claims(self) -> PendingClaims:
        return PendingClaims(pending=self.pending, takeover_after=self.takeover_after)

    @property
    def _order(self) -> Order:
        return Order(store=self.store, pending=self.pending, wait=self.order_wait, sleep=self.sleep)

    def _done_meanwhile(self, message: QueueMessage | None, log_id: uuid.UUID, segment: int, entry: int) -> bool:
        """Whether the snapshot completed since we read its entry (one consistent read); if so its completion steps
        are redone (each idempotent) and the message, if given, deleted, as step 1 does."""
        current = self.store.get_entry(log_id, segment, entry)
        if current is None or current.snapshot_root is None:
            return False
        self._complete(message, current, current.snapshot_root)
        return True

    def _hide_behind_claim(self, message: QueueMessage, item: PendingSnapshot | None, now: int, *,
                           plus: int = 0) -> None:
        """Hide a job another message's live claim holds back: until that claim would go stale (``plus`` seconds
        more), and no shorter than a deferral on this receive would hide, so a job behind a long build backs off
        like any waiting job and reaches the DLQ no sooner than the template says (Backoff.to_dead_letter). It was
        hidden for the claim's time alone, about a minute at every receive: behind a build of over 50 minutes the
        DLQ, and its alarm, got it after 50 receives (issue 34)."""
        left = self.takeover_after if item is None else max(1, item.modified + self.takeover_after - now + plus)
        hide = max(min(left, int(self.defer_cap)), self.backoff.hide(message.receive_count, self.rng))
        self.queue.change_visibility(message, hide)

    def _defer(self, message: QueueMessage, log_id: uuid.UUID, segment: int, entry: int, now: int) -> Outcome:
        try:
            retries = self.pending.defer(log_id, segment, entry, now=now)
        except errors.ItemExistsError:  # completed meanwhile by the claimer: step 1 will say so
            retries = 0
        # The first deferrals come back in about a second (a predecessor usually completes in less, measured by
        # bench_pipeline); a snapshot stuck behind a long one backs off, by the later of the snapshot's deferrals
        # (a new job for it, a takeover, goes on where the last left off) and the message's own receive count:
        # the count SQS moves it to the DLQ by, so the template's least time to the DLQ holds
        # (Backoff.to_dead_letter). It once backed off by deferrals alone, capped at 15 minutes: a job parked
        # after about 7.5 h.
        wait = max(message.receive_count, retries)
        hide = self.backoff.hide(wait, self.rng)
        if self.backoff.waiting_long(wait):
            log.warning("snapshot deferred long: an earlier snapshot is not completing", retries=retries,
                        receives=message.receive_count, retry_in=hide, action="see the earlier snapshot's job")
            self.count("SnapshotsDeferredLong")
        self.queue.change_visibility(message, hide)
        return Outcome.DEFERRED

    def _retired_job(self, message: QueueMessage | None, log_id: uuid.UUID, segment: int, entry: int) -> Outcome:
        log.warning("job for a retired segment: nothing to build", retired_segment=segment)
        self.pending.delete(log_id, segment, entry)
        if message is not None:
            self.queue.delete(message)
        return Outcome.ALREADY_DONE

    def _retired(self, log_id: uuid.UUID, segment: int) -> bool:
        """Whether retention retired ``segment``: archived (``A``), deleted with a tombstone left (``D``), or deleted
        the legacy way, its item gone too, which leaves a num below the log's oldest segment item. Only the last
        lasts: a deleted segment's job once failed on every receive, through the DLQ and after every redrive."""
        segments = list(self.store.segments(log_id))
        if segments and segment < segments[0].num:
            return True
        return any(s.num == segment and (s.archive is not None or s.retired is not None) for s in segments)

    def _bodies(self, plan: Plan, lease: Lease) -> list[Body]:
        """The decoded document bodies between the base snapshot and ours, renewing the claim as it goes (large
        bodies are read from the bucket); SnapshotBlockedError names the first entry this code cannot read."""
        bodies: list[Body] = []
        for e in plan.between:
            if e.type in _LOG_LEVEL:
                continue
            lease.renew()
            try:
                bodies.append(self.body_of(e))
            except UNREADABLE as exc:
                raise SnapshotBlockedError(exc, segment=e.segment, entry=e.num) from exc
        return bodies

    def _blocked(self, message: QueueMessage, snapshot: Entry, blocked: SnapshotBlockedError, *, now: int,
                 own: bool = True) -> Outcome:
        """Defer a snapshot that this code cannot build, at the blocked backoff (only a deployment helps), with
        the reason logged and recorded on its pending item for ``seglog log verify`` and ``emulate status``. A
        helper records the reason and leaves the message to its own job (which defers behind it)."""
        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num
        try:
            retries = self.pending.defer(log_id, segment, entry, now=now, blocked=str(blocked))
        except errors.ItemExistsError:  # completed meanwhile (by newer code): step 1 will say so
            retries = 0
        cause = blocked.cause
        hide = self.backoff.hide(max(message.receive_count, retries), self.rng, blocked=True)
        log.error("snapshot blocked: an entry before it needs newer code", reason=str(blocked),
                  blocked_segment=blocked.segment, blocked_entry=blocked.entry, entry_type=str(cause.type),
                  body_version=getattr(cause, "version", None), known_version=getattr(cause, "known", None),
                  retries=retries, retry_in=hide if own else None, action="deploy newer code")
        if own:
            self.count("SnapshotsBlocked")
            self.queue.change_visibility(message, hide)
        return Outcome.BLOCKED

    def _complete(self, message: QueueMessage | None, snapshot: Entry, root: str) -> None:
        """Step 6, in order; the message is deleted last, when given (a helped snapshot's completion deletes none)."""
        log_id, segment, entry = snapshot.log_id, snapshot.segment, snapshot.num
        if snapshot.snapshot_root is None:
            self.store.set_snapshot_root(log_id, segment, entry, root)
            self.crash("after_root")
        self.store.advance_snapshot(log_id, segment, entry)
        self.crash("after_segment_update")
        self.pending.delete(log_id, segment, entry)
        if message is not None:
            self.crash("before_delete_message")
            self.queue.delete(message)


_LOG_LEVEL = frozenset({EntryType.SNAPSHOT, EntryType.END_SEGMENT})
