"""Writing the log: create, append (optimistic, expected-version, idempotent), large entries; the snapshot policy
and new segments are :mod:`seglog_core.policy`'s.

DESIGN §3. The normal append costs one eventually consistent Query (Limit 1) and one conditional PutItem;
with a cached tail it may trust (told the retry horizon: ``EventLog.retry_horizon``) it costs the PutItem alone.
Every storage failure is retried with backoff or surfaced.

Idempotence, timing diagram of a lost response (the write happened, the client saw an error)::

    client                      store
      | put #7 K=abc  ------->  | stored #7
      |  <---- 500 / reset ---  |            outcome unknown: remember "maybe at #7"
      | entries(7..)  ------->  | [#7 K=abc] K found: return #7, no second copy

An entry id names one entry (DESIGN §3): a try that finds its id stored with another type, version or body is
refused (:class:`~seglog_core.errors.EntryIdReusedError`), never answered "deduplicated". How a large body is
kept from being overwritten by such a try: :mod:`seglog_core.bodies`.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import structlog

from seglog_core import errors, reads
from seglog_core.bodies import DEFAULT_LARGE_THRESHOLD, Prepared, prepare
from seglog_core.policy import SnapshotPolicy
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retry import RetryPolicy, call_with_retries
from seglog_core.schema import (
    EMPTY_SNAPSHOT_ROOT,
    Body,
    EndSegment,
    Entry,
    EntryType,
    Segment,
)
from seglog_core.sheet.validate import validate_body
from seglog_core.turns import PROCESS as PROCESS_TURNS
from seglog_core.turns import Tail, Turns

log = structlog.get_logger("seglog.log")

#: How long a writer told a longer retry horizon trusts a known tail without a read (EventLog.tail_ttl).
DEFAULT_TAIL_TTL: Final = 60.0


@dataclass(frozen=True, kw_only=True)
class Appended:
    """The outcome of an append: the stored entry and how it got there."""

    entry: Entry
    attempts: int
    #: True when the entry was already in the log (an earlier try of the same entry id had landed).
    deduplicated: bool = False


@dataclass(kw_only=True)
class EventLog(SnapshotPolicy):
    """The write side of the log, for one client (it caches each log's current segment and tail).

    Args:
        store: the Segments and Entries tables.
        blobs: the bucket, for large bodies.
        retry: attempts and backoff for contention, throttling and transient errors.
        clock: seconds since the epoch.
        large_threshold: bodies above this many bytes go to S3.
        cache_tail: try ``tail + 1`` first (one PutItem, no Query) when this client knows the tail and may
            still trust it (``tail_ttl``).
        retry_horizon: the retry horizon of the deployment written to, in seconds: its RetentionMinAgeSeconds,
            the least time retention keeps a segment after it closed (``math.inf``: nothing retires this log's
            segments). A cached tail is never trusted longer (:meth:`_fresh`). None: not known.
        tail_ttl: seconds a known tail is trusted without a read. By default :data:`DEFAULT_TAIL_TTL`, or
            ``retry_horizon`` if shorter; with no ``retry_horizon``, 0: RetentionMinAgeSeconds may be 0, so a writer
            not told it reads the tail before every write (and after a lost put) rather than write into a retired
            segment. Given, it is taken as is (``math.inf``: for ever); longer than a ``retry_horizon`` given with
            it, refused (ValueError).
        turns: where writers of this process take turns on a log (:mod:`seglog_core.turns`; the process's by
            default, so threads never meet at the store).
        rebases_before_backoff: the conflict lost in a row that backs off (and reads the tail again); those
            before it are retried at once at the winner's num + 1 (:meth:`append`). Measured with
            bench_contention (16 writers x 10 on DynamoDB Local): retrying at once every time costs about 8.5
            puts per append (the losers of each round all meet again at the next num) and 0.11x goodput; one
            rebase, then a pause and a read: 2.4 puts per append, goodput as with none (116-124 against
            107-111 appends/s, within the noise). A rebase still saves the read and the pause where two
            writers meet; it needs a tail still trusted (``tail_ttl``).
    """

    store: LogStore
    blobs: BlobStore
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    clock: Callable[[], float] = time.time
    id_factory: Callable[[], uuid.UUID] = uuid.uuid4
    large_threshold: int = DEFAULT_LARGE_THRESHOLD
    cache_tail: bool = True
    retry_horizon: float | None = None
    #: None only until built: ``__post_init__`` derives it (see the class's Args).
    tail_ttl: float | None = None
    rebases_before_backoff: int = 2
    #: Checks a document body before anything is written (rows and columns in range, values not too large).
    validate: Callable[[Body], None] = validate_body
    #: Snapshot policy: the writer of an entry whose num is a multiple of this appends a Snapshot entry.
    snapshot_every: int | None = None
    #: Segment size policy: past this many entries a segment is closed (at a snapshot point) once it has a
    #: completed snapshot; until then a plain Snapshot entry is appended.
    segment_entries: int | None = None
    #: Where writers of this process take turns on a log and hand each other the tail (:mod:`seglog_core.turns`).
    turns: Turns = field(default_factory=lambda: PROCESS_TURNS, repr=False)
    _tails: dict[uuid.UUID, Tail] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        horizon = self.retry_horizon
        if horizon is not None and not horizon >= 0:
            raise ValueError(f"retry_horizon={horizon} s: give the deployment's RetentionMinAgeSeconds (0 or more), "
                             "or leave it out when it is not known")
        if self.tail_ttl is None:
            self.tail_ttl = 0.0 if horizon is None else min(DEFAULT_TAIL_TTL, horizon)
        elif horizon is not None and self.tail_ttl > horizon:
            raise ValueError(
                f"tail_ttl={self.tail_ttl:g} s is longer than retry_horizon={horizon:g} s: a put after a tail that old "
                "may land in a segment retention retired (DESIGN §3). Give a tail_ttl of at most "
                f"{horizon:g} s, or leave it out (the shorter of {DEFAULT_TAIL_TTL:g} s and the horizon)")

    # ----------------------------------------------------------------------------------------- create

    def create(self, log_id: uuid.UUID | None = None) -> uuid.UUID:
        """Create a log: segment 0 and its Snapshot entry 0, complete at birth (the empty document)."""
        log_id = log_id or self.id_factory()
        now = int(self.clock())
        segment = Segment(log_id=log_id, num=0, created=now, last_snapshot=0)
        first = Entry(
            log_id=log_id, segment=0, num=0, created=now, type=EntryType.SNAPSHOT,
            snapshot_root=EMPTY_SNAPSHOT_ROOT,
        )
        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                self.store.create_log(segment, first)
                break
            except errors.TransactionCancelledError as exc:
                # A fresh id cannot be taken by anyone else: after an earlier try whose outcome was unknown,
                # "already exists" means that try landed.
                if not (exc.condition_failed and attempt > 1):
                    if not exc.retryable or attempt == self.retry.max_attempts:
                        raise
                    self.retry.backoff(attempt)
                    continue
                break
            except errors.StoreError as exc:
                if not exc.retryable or attempt == self.retry.max_attempts:
                    raise
                self.retry.backoff(attempt)
        self._tails[log_id] = Tail(segment=0, num=0, checked=self.clock())
        log.info("log created", log_id=str(log_id))
        return log_id

    # ----------------------------------------------------------------------------------------- append

    def append(
        self,
        log_id: uuid.UUID,
        body: Body,
        *,
        entry_id: uuid.UUID | None = None,
        expected: int | None = None,
    ) -> Appended:
        """Append a document entry.

        Args:
            body: a document body (SetCell, Import, ...). Log-level bodies are written by the log itself.
            entry_id: the client entry id ``K``; a retry with the same id never duplicates. Generated if absent.
            expected: the num this entry must get in the log's current segment (expected-version append: one
                write, with no read when this client's own tail is ``expected - 1``). A num that is not the
                segment's next (taken, past its tail, or of a segment that has ended) raises
                :class:`~seglog_core.errors.VersionConflictError`, with the entry holding it or the next num.

        A retry of the same entry id within this call never duplicates. A caller in another process (an HTTP
        client whose answer was lost) must name where to look: :func:`seglog_core.idempotence.append_after`.

        Raises:
            InvalidInputError: a log-level body, or a body too large.
            EntryIdReusedError: ``entry_id`` is stored with another entry (nothing was written).
            LogNotFoundError, VersionConflictError, AppendContentionError, StoreError.
        """
        prepared = self.prepare(log_id, body, entry_id or self.id_factory())
        with self.turns.take(log_id) as turn:  # writers of this process queue here, not at the store
            adopted = Tail.adopting(self._tails.get(log_id), turn.hint_for(self.store))
            if adopted is not None:
                self._tails[log_id] = adopted
            try:
                return self._append_prepared(prepared, expected)
            finally:
                mine = self._tails.get(log_id)
                turn.leave_hint(self.store, mine.hint() if mine else None)

    def _append_prepared(self, prepared: Prepared, expected: int | None) -> Appended:
        """:meth:`append`'s loop, once the body is checked and encoded and this process's turn is held."""
        log_id, entry_id = prepared.log_id, prepared.entry_id
        tail = self._tail(log_id)
        maybe_at: int | None = None  # the lowest num where an earlier try of this entry may have landed
        bound = structlog.contextvars.bound_contextvars
        attempt = 1  # the retry policy's count: a rebase retried at once spends none
        tries = 0  # every try, rebases included (Appended.attempts)
        rebases = 0  # conflicts lost in a row and retried at once at the winner's num + 1
        while True:
            num = -1
            tries += 1
            with bound(log_id=str(log_id), segment=tail.segment, attempt=tries):
                try:
                    if maybe_at is not None:
                        found = self._find_entry_id(log_id, tail, maybe_at, entry_id)
                        if found is not None:
                            return self.deduplicated(prepared, found, tries)
                    nxt = self._next_num(log_id, tail, entry_id, expected,
                                          trusted=rebases > 0 or (attempt == 1 and self.cache_tail))
                    if isinstance(nxt, Entry):
                        return self.deduplicated(prepared, nxt, tries)
                    num = nxt
                    entry = prepared.at(tail.segment, num, int(self.clock()))
                    self.store.put_entry(entry)
                    landed = self.landed(entry, tries)
                    self.apply_policy_after(entry)
                    return landed
                except errors.ItemExistsError as exc:
                    existing = exc.existing
                    if existing is None and (expected is not None or maybe_at is not None):
                        existing = self.store.get_entry(log_id, tail.segment, num)
                    if existing is not None and existing.entry_id == entry_id:
                        return self.deduplicated(prepared, existing, tries)
                    tail.num = None
                    tail.taken = max(tail.taken, num)
                    if expected is not None:
                        conflict = errors.VersionConflictError(log_id, tail.segment, num, existing)
                        if existing is not None and existing.type is EntryType.END_SEGMENT:
                            # The next append goes to the next segment: left at this one's EndSegment as
                            # ``taken``, a stale read would put it after the end (seed 728, optimistic writers).
                            self._follow_end(tail, existing)
                        raise conflict from exc
                    if existing is not None and existing.type is EntryType.END_SEGMENT:
                        self._follow_end(tail, existing)
                        rebases = 0
                        attempt += 1
                        if attempt > self.retry.max_attempts:
                            break
                        continue
                    if existing is not None and self._fresh(tail):
                        # Rebase without reading (issue 20): the conditional put that lost brought the winner's
                        # item back (ReturnValuesOnConditionCheckFailure=ALL_OLD), so the next free num is the
                        # winner's + 1; no Query, no pause. Never past a free num: only a num a holder was
                        # returned for is skipped, which keeps every copy of an entry id meeting its first
                        # (the check above). ``checked`` stays as it was: the conflict proves the num taken,
                        # not the segment open (_fresh). Lost repeatedly, it backs off below, then goes on.
                        rebases += 1
                        log.debug("append conflict, rebased", entry=num, rebases=rebases)
                        if rebases % self.rebases_before_backoff:
                            tail.num = num
                            continue
                        # Lost repeatedly: others are writing too. Pause, then read where the tail got to (a
                        # rebase after the pause would walk up one num per conflict: bench_contention).
                        rebases = 0
                    else:
                        rebases = 0
                        log.debug("append conflict", entry=num)
                except errors.StoreError as exc:
                    if not exc.retryable:
                        raise
                    if num >= 0 and getattr(exc, "outcome_unknown", False):
                        maybe_at = num if maybe_at is None else min(maybe_at, num)
                    tail.num = None
                    rebases = 0
                    log.info("append retry", error=type(exc).__name__, code=exc.code)
            if attempt >= self.retry.max_attempts:
                break
            self.retry.backoff(attempt)
            attempt += 1
        raise errors.AppendContentionError(log_id, self.retry.max_attempts)

    def prepare(self, log_id: uuid.UUID, body: Body, entry_id: uuid.UUID) -> Prepared:
        """:func:`seglog_core.bodies.prepare` with this client's bucket, retries, validation and threshold."""
        return prepare(log_id, body, entry_id, blobs=self.blobs, retry=self.retry, validate=self.validate,
                       large_threshold=self.large_threshold)

    def _latest_segment(self, log_id: uuid.UUID) -> Segment:
        """The newest segment. An eventually consistent read may miss a log created a moment ago (found by
        chaos runs: a client's first append right after its create got 404), so "no segment" is confirmed
        with a consistent read before the log is declared missing.

        Raises:
            LogNotFoundError: no segment, even read consistently.
        """
        segments = call_with_retries(self.retry, functools.partial(reads.latest_segments, self.store, log_id, 1),
                                     what="read segments", retry_unknown=True)
        if segments:
            return segments[0]
        raise errors.LogNotFoundError(log_id)

    def _tail(self, log_id: uuid.UUID) -> Tail:
        tail = self._tails.get(log_id)
        if tail is None:
            tail = self._tails[log_id] = Tail(segment=self._latest_segment(log_id).num)
        return tail

    def _next_num(
        self, log_id: uuid.UUID, tail: Tail, entry_id: uuid.UUID, expected: int | None, *, trusted: bool
    ) -> int | Entry:
        """The num to write next, or the entry itself when the latest entry already is ours. ``trusted``: the
        known tail may be written after without a read (a first try with ``cache_tail``, or a rebase)."""
        if expected is not None:
            return self._expected_num(log_id, tail, entry_id, expected)
        if tail.num is not None and trusted and self._fresh(tail):
            return tail.num + 1
        while True:
            latest = self.store.latest_entry(log_id, tail.segment)
            if latest is None:
                # A segment item without entries: an eventually consistent read of a segment just created,
                # or a log whose segment 0 was never written.
                self._latest_segment(log_id)  # raises LogNotFoundError for a log that does not exist
                raise errors.TransientStoreError(
                    f"segment {tail.segment} of log {log_id} has no entries yet", code="StaleRead"
                )
            if latest.type is EntryType.END_SEGMENT:
                self._follow_end(tail, latest)
                continue
            if latest.entry_id == entry_id:
                return latest
            # The read proves the segment open now: a conflict at the num it gives may rebase (append).
            tail.checked = self.clock()
            return self._num_after(tail, latest)

    def _expected_num(self, log_id: uuid.UUID, tail: Tail, entry_id: uuid.UUID, expected: int) -> int | Entry:
        """``expected`` unless it is past the next num of the tail's segment (no read when this client's tail
        proves it next), or the entry when it is ours. A conditional put only refuses a taken num: written past
        the tail, or after a segment moved on without the caller, an expected num would leave a gap (I1; seed 6
        of the simulator's optimistic library writers, whose own policy had started a segment since)."""
        if tail.num is not None and expected == tail.num + 1 and self._fresh(tail):
            return expected
        segment = tail.segment
        nxt = self._next_num(log_id, tail, entry_id, None, trusted=False)
        if isinstance(nxt, Entry):
            return nxt
        if tail.segment == segment and expected <= nxt:
            return expected  # a taken num is refused by the put, which brings its holder back
        raise errors.VersionConflictError(log_id, tail.segment, expected, None, next_num=nxt)

    @staticmethod
    def _num_after(tail: Tail, latest: Entry) -> int:
        """The num to write after ``latest``, read from ``tail``'s segment and not its EndSegment. A tail no longer
        trusted still names a num taken there (this writer's last write, or one handed over by turns), and so does
        ``taken``: an eventually consistent read older than either would only cost a conflict."""
        return max(latest.num, tail.taken, -1 if tail.num is None else tail.num) + 1

    def _fresh(self, tail: Tail) -> bool:
        """Whether ``tail.num`` may be written after without a read.

        A conditional put at ``num + 1`` is refused while that num is taken, so a stale tail only costs a
        conflict — as long as no item is ever deleted. Retention deletes a segment's items (archived or
        deleted) once the segment was closed more than the horizon ago (DESIGN §3 Retention), and a put at a
        deleted num succeeds: a client whose cached tail outlived its segment wrote into retired history
        (seed 904: a Snapshot entry at 0/6 of a segment archived 200 s before). A tail proved at ``checked``,
        by a read or by a write at it, is of a segment open then; it closed later, so it is not retired before
        ``checked + horizon``. Trusted for ``tail_ttl`` ≤ horizon, the tail is safe; each write at it proves it
        again. ``tail_ttl`` is never None here once built (``__post_init__``: 0 when the horizon is unknown).
        """
        return self.tail_ttl is None or self.clock() - tail.checked < self.tail_ttl

    def _follow_end(self, tail: Tail, end: Entry) -> None:
        body = end.decoded()
        assert isinstance(body, EndSegment)
        tail.segment = body.next_segment or end.segment + 1
        tail.num = None
        tail.taken = -1

    def _find_entry_id(self, log_id: uuid.UUID, tail: Tail, start: int, entry_id: uuid.UUID) -> Entry | None:
        for entry in self.store.entries(log_id, tail.segment, start):
            if entry.entry_id == entry_id:
                return entry
        return None

    def deduplicated(self, prepared: Prepared, stored: Entry, attempts: int) -> Appended:
        """The answer to a try that found its entry id stored: that entry, if it is this one.

        Raises:
            EntryIdReusedError: the stored entry is another entry (type, version or body differ).
        """
        if not prepared.same_as(stored, self.blobs):
            log.warning("entry id reused", log_id=str(stored.log_id), entry_id=str(prepared.entry_id),
                        segment=stored.segment, entry=stored.num)
            raise errors.EntryIdReusedError(prepared.log_id, prepared.entry_id, stored.segment, stored.num)
        return self.landed(stored, attempts, deduplicated=True)

    def landed(self, entry: Entry, attempts: int, *, deduplicated: bool = False) -> Appended:
        """Record that ``entry`` is in the log (it moves this client's cached tail) and say how it got there."""
        # A deduplicated entry is an old one (it may lie in a segment retired since): it says nothing of the tail.
        # A written one is the tail, in its segment, which may be later than the cached one (append_after reads
        # forward past EndSegments without moving this client's tail; seed 904: the policy's Snapshot entry
        # then went after the stale tail, into a retired segment).
        tail = self._tails.get(entry.log_id)
        known = (-1, -1) if tail is None else (tail.segment, -1 if tail.num is None else tail.num)
        if not deduplicated and (entry.segment, entry.num) > known:
            self._tails[entry.log_id] = Tail(segment=entry.segment, num=entry.num, checked=self.clock())
        log.debug("appended", log_id=str(entry.log_id), segment=entry.segment, entry=entry.num,
                  attempts=attempts, deduplicated=deduplicated)
        return Appended(entry=entry, attempts=attempts, deduplicated=deduplicated)

    def forget(self, log_id: uuid.UUID) -> None:
        """Drop what this client cached about a log (its current segment and tail)."""
        self._tails.pop(log_id, None)
