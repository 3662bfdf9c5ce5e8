"""Step 2 of the snapshot worker protocol (DESIGN §5), and the checkpoint state a claim carries: who may build a
snapshot, for every builder of it — the worker's own messages, a worker helping an earlier snapshot of its log
(step 3), and ``seglog rebuild`` — so at most one of them holds a claim at a time.

The pending item names its claimer (``Q``, a messageId; rebuild's own id). Whoever else comes:

* a message of the same snapshot (a duplicate) takes the claim only once it is stale — untouched for
  ``takeover_after`` — and is otherwise hidden until it would be, and no shorter than a deferral on its receive
  (the diagrams below);
* a helper — a job of a later snapshot of the log, which found this one the earliest incomplete snapshot before
  it — seizes a claim that no live builder holds (not active, whatever its age — its claimer deferred, or lost its
  message, or has not claimed yet — or stale): names itself claimer and claims in one write
  (:meth:`PendingClaims.seize`), and builds at once; the claimer's message, when it comes back, finds the
  snapshot done. A live claim (active and fresh) is left to its holder by every rule.

Taking a claim never lets two build at once: the claim itself (``A``, ``X``) decides that, and the checkpoint's
``X`` condition fences a holder that was taken over.

Timing diagram of the redelivery the seed's "delete the loser" would get wrong::

    invocation A (m1, receipt r1)   pending item        invocation B (m1, receipt r2, visibility expired)
      create, Q=m1 ------------->   {Q: m1, X: 0}
      claim X=1, building ...                           create: exists; Q == m1: ours, do NOT delete
      ...                                               claim refused (A active): hide m1 for time left
      dies (kill -9)                                    ... m1 comes back after the timeout, takes over

Timing diagrams of the takeover of a stale claimer (T = ``takeover_after``). The claimer's message is the
only one that must survive; a message is hidden as a duplicate only while the claim is live (M within T), and
a stale claim passes to whichever message comes next, so a snapshot whose claimer's message is gone (the DLQ)
completes with the next job for it (``seglog reprocess``, ``seglog redrive``: a new messageId)::

    claimer m1 (dies)                  pending item                    m2 (reprocess / redrive)
      claim X=1, M=t0 ---------------> {Q: m1, A: true, X: 1, M: t0}
      killed; m1 redelivered until
      maxReceiveCount, then in the DLQ                                 t > t0 + T: Q != m2, M stale:
                                       {Q: m2, A: false, X: 1} <------ take over (Q = m1, X = 1, M < t - T)
                                       {Q: m2, A: true, X: 2}  <------ claim, build, complete
      (had m1 been only slow, its next checkpoint fails: X is 2)

A deferred claimer is inactive, and its message hidden for up to the backoff's ``longest`` (3 h) while M stays at
the time of the deferral, so past T its claim looks stale although its message will come back::

    claimer m1 (deferred)              pending item                    m2 (a duplicate job)
      defer: R+1, M=t0, hide m1 for b  {Q: m1, A: false, M: t0}
      (b up to 3 h, often > T)                                         t0 + T < t1 < t0 + b: take over
                                       {Q: m2, A: false, M: t1} <----- then order, claim, build as usual
      t0 + b: m1 again, Q == m2:
        M within T (m2 working or just deferred): m1 is the duplicate, hidden until the claim would be stale
        M stale (m2 hidden long in turn):         m1 takes the claim back, m2 is the duplicate later
        snapshot done meanwhile:                  step 1, deleted

Either way one live message claims the snapshot at any time, and at most one invocation builds it (the claim
and the increment decide that, as before). The cost of taking over a deferred claimer is one extra receive of
a duplicate, never a lost job. A job that arrives while the claim is live is hidden until the claim would be
stale, not deleted (deleting it lost the only job when the claimer's message was gone and a fast clock had
stamped M in the future: found by the simulator). A claimer's
message reaches the DLQ one hiding period after the claimer last touched the item (the queue's visibility
timeout after a claim, 360 s in the template; at least half of ``longest`` after the many deferrals that use up
maxReceiveCount), longer than T with the template's values, so a reprocess or redrive run once the DLQ holds
the message finds the claim stale. With shorter settings, wait T before running them. The same bound lets the
sweep tell a parked claim from a live one: a live claimer's message touches its item at least once every
``longest`` plus the queue's visibility timeout, so an item untouched for longer has no live claimer, and the
sweep's new job takes it over at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

import msgspec
import structlog

from seglog_core import errors
from seglog_core.ports import BlobStore, PendingStore
from seglog_core.schema import PendingSnapshot

log = structlog.get_logger("seglog.worker")

#: How long a claim may go untouched before another builder takes it over (SnapshotTakeoverSeconds' default). A
#: live builder renews it at least every third of this (:class:`Lease`), so a claim this old has no live builder,
#: whatever the function's timeout. It was 60 s (the worker's timeout, no renewals): a helper killed holding a
#: claim held its busy sheet back a minute, twice in four minutes under the README's faults (issue 34: with 15 s,
#: the longest stall of bench_stall's run went from 66 s to 25 s).
DEFAULT_TAKEOVER_SECONDS: Final = 15


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A build in progress as its pending item holds it (``S``): chunks before ``next_chunk`` are written, cut at
    ``chunk_cells`` (0: not pinned yet). The first claim pins the chunk size; whoever writes that snapshot's chunks
    later (a resumption, a takeover, another code version, ``seglog rebuild``) must cut them so."""

    next_chunk: int = 0
    chunk_cells: int = 0

    def encode(self) -> bytes:
        return _CHECKPOINT_ENCODER.encode(self)

    @classmethod
    def of(cls, item: PendingSnapshot | None) -> Checkpoint:
        """The checkpoint a pending item holds (an empty one before the first claim, or without an item)."""
        if item is None or not item.checkpoint:
            return cls()
        return _CHECKPOINT_DECODER.decode(item.checkpoint)


_CHECKPOINT_ENCODER = msgspec.msgpack.Encoder()
_CHECKPOINT_DECODER = msgspec.msgpack.Decoder(Checkpoint)


class Claimer(Protocol):
    """Who claims a pending item (its ``Q``): a queue message, by its messageId; ``seglog rebuild`` claims under an
    id of its own that no message has."""

    @property
    def message_id(self) -> str: ...


@dataclass(frozen=True, kw_only=True)
class PendingClaims:
    """The pending upsert with its takeover rules (see the module)."""

    pending: PendingStore
    takeover_after: int

    def upsert(self, message: Claimer, log_id: uuid.UUID, segment: int, entry: int, now: int) -> bool:
        """Make sure a pending item exists and names a claimer; False when ``message`` may not claim it: a duplicate
        of a live claim's message. A stale claim (untouched for ``takeover_after``) becomes ours.

        Raises:
            SnapshotCompleteError: the snapshot completed (its item deleted) since its entry was read.
        """
        item = self.pending.get(log_id, segment, entry)
        if item is None:
            try:
                self.pending.create(PendingSnapshot(log_id=log_id, segment=segment, entry=entry, created=now,
                                                    modified=now, claimer=message.message_id))
                return True
            except errors.SnapshotCompleteError:
                raise
            except errors.ItemExistsError:
                item = self.pending.get(log_id, segment, entry)
        if item is not None and item.claimer is None:
            try:
                self.pending.set_claimer(log_id, segment, entry, message.message_id, increment=item.increment,
                                         now=now)
                return True
            except errors.ItemExistsError:
                item = self.pending.get(log_id, segment, entry)
        if (item is not None and item.claimer is not None and item.claimer != message.message_id
                and item.modified < now - self.takeover_after):
            if self.pending.take_over(log_id, segment, entry, message.message_id, previous=item.claimer,
                                      increment=item.increment, now=now, takeover_after=self.takeover_after):
                log.info("stale claim taken over", previous_claimer=item.claimer, was_active=item.active,
                         idle_seconds=now - item.modified)
                return True
            item = self.pending.get(log_id, segment, entry)  # another message took it first, or it completed
        if item is None:
            # Completed and removed by another invocation in the meantime: step 1 next time says so.
            return True
        return item.claimer == message.message_id

    def seize(self, message: Claimer, log_id: uuid.UUID, segment: int, entry: int, now: int,
              initial_state: bytes) -> int | None:
        """A helper's steps 2 and 4 at once: claim the snapshot for ``message`` unless a live builder holds it (active
        and fresh); returns our increment, or None (a live claim, or another helper came first). No window is left
        between naming the claimer and claiming: helpers that took the claimer in one write and claimed in another
        took it from one another in between, and none built (the simulator, seed 2487).

        Raises:
            SnapshotCompleteError: the snapshot completed (its item deleted) since its entry was read.
        """
        item = self.pending.get(log_id, segment, entry)
        if item is None:
            try:  # born claimed: no one can come between
                self.pending.create(PendingSnapshot(log_id=log_id, segment=segment, entry=entry, created=now,
                                                    modified=now, claimer=message.message_id, active=True,
                                                    increment=1, checkpoint=initial_state))
                return 1
            except errors.SnapshotCompleteError:
                raise
            except errors.ItemExistsError:
                item = self.pending.get(log_id, segment, entry)
                if item is None:
                    return None
        if item.active and not item.modified < now - self.takeover_after:
            return None  # a live builder: it builds
        if item.claimer in (None, message.message_id):
            if item.claimer is None:
                try:
                    self.pending.set_claimer(log_id, segment, entry, message.message_id, increment=item.increment,
                                             now=now)
                except errors.ItemExistsError:
                    return None
            return self.pending.claim(log_id, segment, entry, message.message_id, now=now,
                                      takeover_after=self.takeover_after, initial_state=initial_state)
        seized = self.pending.seize(log_id, segment, entry, message.message_id, previous=item.claimer,
                                    increment=item.increment, now=now, takeover_after=self.takeover_after,
                                    initial_state=initial_state)
        if seized is not None:
            log.info("claim seized to help", previous_claimer=item.claimer, was_active=item.active,
                     idle_seconds=now - item.modified)
        return seized


class LeaseLostError(Exception):
    """A renewal found the claim taken over (X is no longer ours): the builder stops."""


@dataclass(kw_only=True)
class Lease:
    """A builder's hold on its claim between checkpoints: renewed (``M = now``, under the condition ``X = ours``)
    whenever a third of ``takeover_after`` has passed since the last write, while the builder reads large bodies and
    the previous snapshot. So a claim untouched for ``takeover_after`` has no live builder, whatever the function's
    timeout, and a dead builder's snapshot is taken over that soon (the lease of the DynamoDB Lock Client: a holder
    heartbeats well within its lease). Renewals cost one conditional write each, only in builds slower than a third
    of the takeover time."""

    pending: PendingStore
    log_id: uuid.UUID
    segment: int
    entry: int
    increment: int
    state: bytes
    takeover_after: int
    clock: Callable[[], float]
    last: float = 0.0

    def __post_init__(self) -> None:
        self.last = self.clock()

    def checkpointed(self, state: bytes) -> None:
        """The builder wrote a checkpoint (which renews the claim too)."""
        self.state, self.last = state, self.clock()

    def renew(self) -> None:
        """Renew the claim if it is due.

        Raises:
            LeaseLostError: another builder took the claim over.
        """
        now = self.clock()
        if now - self.last < self.takeover_after / 3:
            return
        if not self.pending.checkpoint(self.log_id, self.segment, self.entry, increment=self.increment,
                                       state=self.state, now=int(now)):
            raise LeaseLostError(f"claim of {self.segment}/{self.entry} taken over")
        self.last = now
        log.info("claim renewed", renewed_segment=self.segment, renewed_entry=self.entry)

    def blobs(self, blobs: BlobStore) -> BlobStore:
        """``blobs``, renewing this lease before each read (a build reads the previous snapshot through it)."""
        return _RenewingBlobs(blobs, self)


@dataclass(frozen=True)
class _RenewingBlobs:
    """A BlobStore that renews a lease before each read."""

    inner: BlobStore
    lease: Lease

    def get(self, key: str) -> bytes:
        self.lease.renew()
        return self.inner.get(key)

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        self.inner.put(key, data, discardable=discardable, content_type=content_type)

    def put_if_absent(self, key: str, data: bytes, *, discardable: bool = False) -> bool:
        return self.inner.put_if_absent(key, data, discardable=discardable)

    def is_discardable(self, key: str) -> bool:
        return self.inner.is_discardable(key)

    def keep(self, key: str) -> None:
        self.inner.keep(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def keys(self, prefix: str) -> Iterator[str]:
        return self.inner.keys(prefix)
