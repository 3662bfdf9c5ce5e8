"""Exactly-once appends for clients that cannot share a process with the log: append after a known position.

DESIGN §3 "Idempotent append". An HTTP client that lost an answer cannot know whether its first try landed, nor
whether that try is still running; the server cannot know either unless the client says where to look. So every
try of an entry names the same *position* ``since`` — the last entry the client had seen before its first try —
and the server, on every try:

1. reads the log forward from ``since`` (inclusive, so an unknown position is refused) with **strongly
   consistent** reads, following EndSegment into the next segment, and returns the entry if its entry id is there
   (if it is the same entry: an entry id stored with another body is refused, ``EntryIdReusedError``);
2. otherwise writes at the num right after the last entry it read, with a conditional put;
3. on a taken num, writes at once at the next num when the lost put brought the winner's item back (a *rebase*:
   no read, no pause); after ``EventLog.rebases_before_backoff`` lost in a row, or with no winner to go by, pauses,
   reads on from where it stopped and decides again.

Why two tries of one entry id can never both land, whatever their timing (the first may still be running when
the retry arrives): say try A lands at ``a`` and try B at ``b > a``. B wrote at ``b`` because its consistent read
saw every num up to ``b - 1`` occupied, ``a`` included — and ``a`` can only have held A's entry, which sits after
``since``, so B's read returned it and B never wrote. Nums are written once (conditional put), so ``a == b`` means
one of them lost the race, and found the other in the winner's item or by reading on. A rebase is a read of one
num: the item a lost conditional put returns (ALL_OLD) is the num's only holder for ever, so a put right after a
winner that is not ours still follows every num from ``since`` on. No wait is involved, and the clock only keeps a
rebase out of a retired segment (``_may_rebase``)::

    try A (since=7)                   entries            try B (same entry id, since=7)
      read 7..   -> tail 9              7 8 9             read 7..   -> tail 9
      put #10 K ----------------->   7 8 9 10(K)          put #10 K  -> taken
                                                          the winner (ALL_OLD) is K: answer "deduplicated"

A read that is only eventually consistent, or a num skipped because a failed put "proved" it taken, would break
the argument: both are avoided here. Cost on the normal path (the client sends the position of its previous
answer): one consistent Query that returns that entry (1 RRU for up to 4 KB) and one PutItem; a lost put, one
more PutItem (rebased), not a pause and a Query, until rebases keep losing.

The strict variant (``expected``) writes only at ``since + 1`` and answers a conflict with the entry that took it.

Retired positions (issue 18: once retention retired ``since``'s segment, a retry got 409 ``unknown_position`` and
the answer's advice, load and resend, stored the entry twice). Retention (seglog_core.retention) keeps a segment
until ``H`` seconds after it was *closed* — the retry horizon, RetentionMinAgeSeconds — and then leaves its item
and its EndSegment as a tombstone. Every try of an entry lands after the entry's first try ``t0`` and before its
segment closes, so:

    (H) an entry whose first try was at ``t0`` lies, for as long as ``now < t0 + H``, in a retained segment.

The scan reads nums one by one: a hole (a num missing below one that is there) or a missing ``since`` in a
segment whose item is marked, or that has a complete archive, or that sits below the oldest item (deleted by an
older version), means retention removed what the scan was to read — never anything else (I1). Then:

4. *archived*: the scan goes on in the archive from the num it was at, and across its EndSegment as before: the
   same read, from another place, and the same proof. A ``since`` past the archive's end is refused as unknown.
5. *deleted* (segment ``q``): let ``p`` be the first segment after ``q`` and after every retired segment. The
   server scans from ``p``/0 to the tail for the entry id: found, it answers it (deduplicated). Not found, it
   refuses (410 ``since_retired``) with ``resend = p/0`` and ``H``: a client whose first try was less than ``H``
   ago resends with ``since = p/0``, any other must not resend. Why that cannot store a second copy: a try that
   landed in a segment ``q' < p`` landed before ``q'`` closed, and before this answer some retention run found
   ``p - 1`` (closed no earlier than ``q'``) closed more than ``H`` ago, so ``t0 < now - H``: that client does
   not resend. A try that
   landed (or will land) in ``p`` or later is read by the resend's own scan (steps 1-3). The resend whose ``p``
   is retired in turn meets step 5 again with a later ``p``: no dead end, and no read of retired history.
   A strict append refused this way is a version conflict (its position is long gone).

::

    first try K (since=3/7)      retention                    retry K (since=3/7), later
      read 3/7..  -> tail 5/2      segments 3, 4 closed > H ago    read 3/7 -> gone: 3 deleted, so is 4
      put 5/3 K                    delete 3, 4 (EndSegments kept)   scan 5/0.. -> 5/3 holds K: deduplicated
                                                                    (not found: 410, resend since=5/0)

What rests on what: steps 1-4 are exact whatever the horizon (a plain retry never needs it); only following a
410 relies on (H), hence on RetentionMinAgeSeconds being what the API says (``seglog log retain`` defaults to the
same 7 days), on the clocks of the writer (``C``) and of retention agreeing to within the client's margin, and on
the client counting its age from the entry's *first* try (seglog_client does). A client that does not follow a
410 stores nothing: the refusal wrote nothing.

Cost: the normal path reads nothing more (the hole check compares nums it reads anyway). A retired ``since`` costs
one consistent paged Query of the Segments table, one GET per archive read, and on the deleted path a consistent
read of the retained segments from ``p`` to the tail (RetentionKeep segments at least; a resend reads them again).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import structlog

from seglog_core import errors
from seglog_core.log import Appended, EventLog
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retention import archive_key, is_complete_segment, read_archive
from seglog_core.schema import Body, EndSegment, Entry, EntryType

log = structlog.get_logger("seglog.idempotence")


@dataclass(frozen=True, kw_only=True, order=True)
class Position:
    """An entry's place in the log: segment and num (what the API answers as ``position``)."""

    segment: int
    num: int

    @classmethod
    def of(cls, entry: Entry) -> Position:
        return cls(segment=entry.segment, num=entry.num)

    def __str__(self) -> str:
        return f"{self.segment}/{self.num}"


@dataclass(frozen=True, kw_only=True)
class _Scan:
    """What a forward read found: the entry with our id, else the last entry read (the tail)."""

    found: Entry | None
    last: Entry


class _Deleted(Exception):
    """The scan reached a segment whose entries retention deleted (step 5)."""

    def __init__(self, segment: int) -> None:
        self.segment = segment
        super().__init__(f"segment {segment} deleted")


def _segment_entries(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: int, start: int,
                     must_exist: bool) -> Iterator[Entry]:
    """Entries ``start``.. of one segment in num order without a hole: the table's, or once a hole shows retention
    archived the rest, the archive's (step 4).

    Raises:
        _Deleted: retention deleted the entries the read needs (step 5).
        UnknownPositionError: ``must_exist`` and the log holds no entry ``start`` there; LogNotFoundError.
    """
    expect, hole = start, False
    # Strong (the default), never seglog_core.reads: the proof above needs every num, and none is known to exist.
    for entry in store.entries(log_id, segment, start):
        if entry.num != expect:
            hole = True  # retention removed entries under us (I1 rules out any other cause)
            break
        yield entry
        expect += 1
    if not hole and (expect > start or not must_exist):
        return
    archived = _retired(store, blobs, log_id, segment, expect, hole=hole)
    rest = [e for e in archived if e.num >= expect]
    if must_exist and expect == start and (not rest or rest[0].num != start):
        raise errors.UnknownPositionError(log_id, segment, start)
    yield from rest


def _retired(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: int, num: int, *, hole: bool
             ) -> list[Entry]:
    """The archived entries of a segment whose ``num`` is missing. ``hole``: a later num is there (or was read).

    Raises:
        _Deleted: retention deleted the segment (``D``, no item below the oldest, or a hole and no archive).
        UnknownPositionError: the segment holds no such num and was not retired; LogNotFoundError.
    """
    segments = list(store.segments(log_id))
    if not segments:
        raise errors.LogNotFoundError(log_id)
    item = next((s for s in segments if s.num == segment), None)
    if item is None:
        if segment < segments[0].num:
            raise _Deleted(segment)  # deleted with its item by an older version
        raise errors.UnknownPositionError(log_id, segment, num)
    if item.retired is not None:
        raise _Deleted(segment)
    if item.archive is None and not hole:
        # Nothing at or after ``num``: past the segment's end, unless an older version is deleting the segment right
        # now (it deleted the EndSegment too): its Snapshot entry 0 gone, its item not yet.
        if item is not segments[-1] and next(iter(store.entries(log_id, segment, 0, 0)), None) is None:
            raise _Deleted(segment)
        raise errors.UnknownPositionError(log_id, segment, num)
    key = item.archive or archive_key(log_id, segment)
    try:
        archived = read_archive(blobs, key)
    except errors.BlobNotFoundError:
        if item.archive is not None:
            raise errors.CorruptLogError(log_id, f"segment {segment} is archived to {key}, which is gone") from None
        raise _Deleted(segment) from None  # a hole and no archive: being deleted, its mark not written yet
    if item.archive is None and not is_complete_segment(archived):
        raise _Deleted(segment)  # an interrupted archive written by no run of this code: treat as deleted
    log.info("since in an archived segment: reading its archive", segment=segment, entry=num, archive=key)
    return archived


def _scan(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, start: Position, entry_id: uuid.UUID,
          known: Entry | None) -> _Scan:
    """Read forward from ``start`` with consistent reads, across EndSegment, looking for ``entry_id``.

    Args:
        known: the entry at ``start`` when an earlier scan read it (the read starts after it), else None (the read
            includes ``start``, so a position the log does not hold is refused).

    Raises:
        UnknownPositionError: no entry at ``start``; LogNotFoundError: no such log at all.
        _Deleted: the read needs entries retention deleted.
    """
    segment, num, last = start.segment, start.num, known
    while True:
        for entry in _segment_entries(store, blobs, log_id, segment, num if last is None else num + 1,
                                      must_exist=last is None):
            if entry.entry_id == entry_id:
                return _Scan(found=entry, last=entry)
            last = entry
        assert last is not None  # _segment_entries raised otherwise
        if last.type is not EntryType.END_SEGMENT:
            return _Scan(found=None, last=last)
        body = last.decoded()
        assert isinstance(body, EndSegment)
        # The next segment's entries from its Snapshot entry 0 on.
        segment, num, last = body.next_segment or last.segment + 1, 0, None


def _after_deleted(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, entry_id: uuid.UUID, since: Position,
                   lost: int, horizon: float | None) -> Entry:
    """Step 5: the entry if the retained log holds it; else SinceRetiredError naming where to resend from.

    The retained log after the deleted segment includes archived segments (archive older, delete later leaves
    them after a gap), read from their archives: an entry that landed in one is answered, and an entry id reused
    there with another body is refused (seed 3474: the read began after the last retired segment of either form,
    so a reuse was stored a second time).
    """
    while True:
        segments = list(store.segments(log_id))
        retired = [s.num for s in segments if s.archive is not None or s.retired is not None]
        resend = Position(segment=max([lost, *retired]) + 1, num=0)
        kept = [s.num for s in segments if s.num > lost and s.retired is None]
        start = Position(segment=kept[0], num=0) if kept else resend
        try:
            scan = _scan(store, blobs, log_id, start, entry_id, None)
        except _Deleted as again:  # retired while we read: from after it
            lost = again.segment
            continue
        except errors.UnknownPositionError:
            # p/0 is not there: p was never created (so nothing is retained after q), or retired in between.
            latest = store.latest_segments(log_id, 1, consistent=True)
            if not latest or latest[0].num < start.segment:
                raise
            lost = start.segment
            continue
        if scan.found is not None:
            return scan.found
        log.info("since retired: refused with a position to resend from", since=str(since), resend=str(resend),
                 horizon=horizon)
        raise errors.SinceRetiredError(log_id, (since.segment, since.num), (resend.segment, resend.num), entry_id,
                                       horizon)


def append_after(
    event_log: EventLog, log_id: uuid.UUID, body: Body, *, entry_id: uuid.UUID, since: Position, strict: bool = False,
    horizon: float | None = None,
) -> Appended:
    """Append ``body`` once, after ``since``, however often (and however concurrently) it is retried.

    Args:
        since: a position the caller had seen before its first try of this entry; every try must send the same.
        strict: write only at ``since + 1`` (expected-version append); another entry there is a conflict.
        horizon: the retry horizon retention keeps (seconds), named in a SinceRetiredError.

    Raises:
        UnknownPositionError: no entry at ``since``.
        SinceRetiredError: ``since`` was deleted by retention and the retained log does not hold the entry.
        VersionConflictError: ``strict`` and the num after ``since`` holds another entry.
        EntryIdReusedError: ``entry_id`` is stored with another entry (type, version or body): nothing is written.
        InvalidInputError, AppendContentionError, StoreError: as :meth:`EventLog.append`.
    """
    prepared = event_log.prepare(log_id, body, entry_id)
    store, retry = event_log.store, event_log.retry
    # Entries up to ``tail`` are read (or were brought back by a lost put) and do not hold our id; None until the
    # first read succeeds. ``read_at``: when a read last proved ``tail``'s segment open.
    tail: Entry | None = None
    read_at = 0.0
    rebase = False  # the next put goes right after ``tail`` without a read (step 3's rebase)
    rebases = 0  # puts lost in a row and rebased at once
    bound = structlog.contextvars.bound_contextvars
    attempt, tries = 1, 0  # the retry policy's count (a rebase spends none), and every try
    while True:
        tries += 1
        with bound(log_id=str(log_id), attempt=tries):
            try:
                if not rebase:
                    try:
                        scan = _scan(store, event_log.blobs, log_id, since if tail is None else Position.of(tail),
                                     entry_id, tail)
                    except _Deleted as lost:
                        if strict:
                            raise errors.VersionConflictError(log_id, since.segment, since.num + 1, None) from None
                        found = _after_deleted(store, event_log.blobs, log_id, entry_id, since, lost.segment,
                                               horizon)
                        # The same judgement as every found entry: another body under this id is refused (seed 3474).
                        return event_log.deduplicated(prepared, found, tries)
                    if scan.found is not None:
                        return event_log.deduplicated(prepared, scan.found, tries)
                    tail, read_at = scan.last, event_log.clock()
                    if strict and Position.of(tail) != since:
                        holder = next(iter(store.entries(log_id, since.segment, since.num + 1, since.num + 1)), None)
                        raise errors.VersionConflictError(log_id, since.segment, since.num + 1, holder or tail)
                assert tail is not None
                rebase = False
                entry = prepared.at(tail.segment, tail.num + 1, int(event_log.clock()))
                store.put_entry(entry)
                appended = event_log.landed(entry, tries)
                event_log.apply_policy_after(entry)
                return appended
            except errors.ItemExistsError as exc:
                assert tail is not None
                existing = exc.existing
                if existing is not None and existing.entry_id == entry_id:
                    return event_log.deduplicated(prepared, existing, tries)
                if strict and existing is not None:
                    raise errors.VersionConflictError(log_id, tail.segment, tail.num + 1, existing) from exc
                rebases += 1
                if existing is not None:
                    tail = existing  # read on after the winner (a scan starting at an EndSegment follows it)
                if rebases < event_log.rebases_before_backoff and _may_rebase(existing, read_at, event_log.clock(),
                                                                              horizon):
                    # Step 3 without a read (issue 35): the lost put brought the winner back (ALL_OLD). It is not
                    # ours, so every num from ``since`` to it is known and none holds our id: the argument above
                    # holds for a put right after it, as for one after a read. No num is skipped.
                    log.debug("append conflict, rebased", segment=tail.segment, entry=tail.num,
                              rebases=rebases)
                    rebase = True
                    continue
                # Lost repeatedly (others are writing too), or nothing to rebase on: pause, then read on from the
                # tail (a rebase after the pause would walk up one num per conflict: bench_contention).
                rebases = 0
                log.debug("append conflict", segment=tail.segment, entry=tail.num)
            except errors.StoreError as exc:
                if not exc.retryable:
                    raise
                # A write whose outcome is unknown is found (or not) by the next consistent read.
                rebase, rebases = False, 0
                log.info("append retry", error=type(exc).__name__, code=exc.code)
        if attempt >= retry.max_attempts:
            break
        retry.backoff(attempt)
        attempt += 1
    raise errors.AppendContentionError(log_id, retry.max_attempts)


def _may_rebase(existing: Entry | None, read_at: float, now: float, horizon: float | None) -> bool:
    """Whether a put lost to ``existing`` may be retried right after it, without a read.

    Not after an EndSegment (the scan follows it into the next segment), nor without the winner's item. And only
    while the segment is surely not retired: a read at ``read_at`` proved it open then, so retention, which keeps a
    closed segment ``horizon`` seconds, has not deleted its nums before ``read_at + horizon`` (the argument of
    :meth:`EventLog._fresh`); a put at a deleted num would succeed, into retired history.
    """
    return (existing is not None and existing.type is not EntryType.END_SEGMENT and horizon is not None
            and now - read_at < horizon)
