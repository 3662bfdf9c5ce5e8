"""Exactly-once appends for clients that cannot share a process with the log: append after a known position.

DESIGN §3 "Idempotent append". An HTTP client that lost an answer cannot know whether its first try landed, nor
whether that try is still running; the server cannot know either unless the client says where to look. So every
try of an entry names the same *position* ``since`` — the last entry the client had seen before its first try —
and the server, on every try:

1. reads the log forward from ``since`` (inclusive, so an unknown position is refused) with **strongly
   consistent** reads, following EndSegment into the next segment, and returns the entry if its entry id is there
   (if it is the same entry: an entry id stored with another body is refused, ``EntryIdReusedError``);
2. otherwise writes at the num right after the last entry it read, with a conditional put;
3. on a taken num, reads on from where it stopped and decides again.

Why two tries of one entry id can never both land, whatever their timing (the first may still be running when
the retry arrives): say try A lands at ``a`` and try B at ``b > a``. B wrote at ``b`` because its consistent read
saw every num up to ``b - 1`` occupied, ``a`` included — and ``a`` can only have held A's entry, which sits after
``since``, so B's read returned it and B never wrote. Nums are written once (conditional put), so ``a == b`` means
one of them lost the race, re-read, and found the other. No wait and no clock are involved::

    try A (since=7)                   entries            try B (same entry id, since=7)
      read 7..   -> tail 9              7 8 9             read 7..   -> tail 9
      put #10 K ----------------->   7 8 9 10(K)          put #10 K  -> taken
                                                          read 10..  -> 10 holds K: answer "deduplicated"

A read that is only eventually consistent, or a num skipped because a failed put "proved" it taken, would break
the argument: both are avoided here. Cost on the normal path (the client sends the position of its previous
answer): one consistent Query that returns that entry (1 RRU for up to 4 KB) and one PutItem.

The strict variant (``expected``) writes only at ``since + 1`` and answers a conflict with the entry that took it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import structlog

from seglog_core import errors
from seglog_core.log import Appended, EventLog
from seglog_core.ports import LogStore
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


def _scan(store: LogStore, log_id: uuid.UUID, start: Position, entry_id: uuid.UUID, known: Entry | None) -> _Scan:
    """Read forward from ``start`` with consistent reads, across EndSegment, looking for ``entry_id``.

    Args:
        known: the entry at ``start`` when an earlier scan read it (the read starts after it), else None (the read
            includes ``start``, so a position the log does not hold is refused).

    Raises:
        UnknownPositionError: no entry at ``start``; LogNotFoundError: no such log at all.
    """
    segment, num, last = start.segment, start.num, known
    while True:
        for entry in store.entries(log_id, segment, num if last is None else num + 1):
            if last is None and entry.num != num:
                break
            if entry.entry_id == entry_id:
                return _Scan(found=entry, last=entry)
            last = entry
        if last is None:
            if not store.latest_segments(log_id, 1, consistent=True):
                raise errors.LogNotFoundError(log_id)
            raise errors.UnknownPositionError(log_id, segment, num)
        if last.type is not EntryType.END_SEGMENT:
            return _Scan(found=None, last=last)
        body = last.decoded()
        assert isinstance(body, EndSegment)
        # The next segment's entries from its Snapshot entry 0 on.
        segment, num, last = body.next_segment or last.segment + 1, 0, None


def append_after(
    event_log: EventLog, log_id: uuid.UUID, body: Body, *, entry_id: uuid.UUID, since: Position, strict: bool = False
) -> Appended:
    """Append ``body`` once, after ``since``, however often (and however concurrently) it is retried.

    Args:
        since: a position the caller had seen before its first try of this entry; every try must send the same.
        strict: write only at ``since + 1`` (expected-version append); another entry there is a conflict.

    Raises:
        UnknownPositionError: no entry at ``since``.
        VersionConflictError: ``strict`` and the num after ``since`` holds another entry.
        EntryIdReusedError: ``entry_id`` is stored with another entry (type, version or body): nothing is written.
        InvalidInputError, AppendContentionError, StoreError: as :meth:`EventLog.append`.
    """
    prepared = event_log.prepare(log_id, body, entry_id)
    store, retry = event_log.store, event_log.retry
    # Entries up to ``tail`` are read and do not hold our id; None until the first read succeeds.
    tail: Entry | None = None
    bound = structlog.contextvars.bound_contextvars
    for attempt in range(1, retry.max_attempts + 1):
        with bound(log_id=str(log_id), attempt=attempt):
            try:
                scan = _scan(store, log_id, since if tail is None else Position.of(tail), entry_id, tail)
                if scan.found is not None:
                    return event_log.deduplicated(prepared, scan.found, attempt)
                tail = scan.last
                if strict and Position.of(tail) != since:
                    holder = next(iter(store.entries(log_id, since.segment, since.num + 1, since.num + 1)), None)
                    raise errors.VersionConflictError(log_id, since.segment, since.num + 1, holder or tail)
                entry = prepared.at(tail.segment, tail.num + 1, int(event_log.clock()))
                store.put_entry(entry)
                appended = event_log.landed(entry, attempt)
                event_log.apply_policy_after(entry)
                return appended
            except errors.ItemExistsError as exc:
                # The next read starts after our tail and sees who took the num.
                assert tail is not None
                if exc.existing is not None and exc.existing.entry_id == entry_id:
                    return event_log.deduplicated(prepared, exc.existing, attempt)
                if strict and exc.existing is not None:
                    raise errors.VersionConflictError(log_id, tail.segment, tail.num + 1, exc.existing) from exc
                log.debug("append conflict", segment=tail.segment, entry=tail.num + 1)
            except errors.StoreError as exc:
                if not exc.retryable:
                    raise
                # A write whose outcome is unknown is found (or not) by the next consistent read.
                log.info("append retry", error=type(exc).__name__, code=exc.code)
            if attempt < retry.max_attempts:
                retry.backoff(attempt)
    raise errors.AppendContentionError(log_id, retry.max_attempts)
