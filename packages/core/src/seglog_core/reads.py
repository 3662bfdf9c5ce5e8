"""Reading a segment at half the price: eventually consistent, and read again when it comes back short (issue 35).

An eventually consistent Query costs half a strongly consistent one and answers the table as it was a moment ago
(DynamoDB Developer Guide, "Read consistency": the answer "might not reflect the results of a recently completed
write"; replicas usually catch up "within a second"). On this log the past is a *prefix* of the present, with
fewer roots. Entries are appended at the next num and never change but for ``R``, set once on a Snapshot entry
when it completes (DESIGN §3, §5); retention removes entries only from retired segments, which these readers do
not read (loads and syncs read the two latest segments, which retention always keeps; a fold reads its own live
segment eventually consistently and any earlier one consistently, seglog_core.pipeline.order)::

    now             0s'  1  2  3  4s'  5  6  7         s: a Snapshot entry   ': its root R is set
    a moment ago    0s'  1  2  3  4s   5               a prefix, and 4 without its R yet

So a stale answer can be wrong in two ways only, and both make it *short*: it ends early, or a Snapshot entry
shows no root although it has one by now. It never holds an entry the log lacks or an entry out of order. It can
hold a *hole*, stale or not: a Query is read-committed, not a snapshot ("DynamoDB read consistency"), so one that
passes num k just before a racing append writes it, then reads k + 1 written after, answers without k. A hole is
short at its first missing num (0.) whatever the reader knows. A reader that knows what the segment holds
(:class:`Known`) can tell the other short answers:

1. a num it knows is there — the entry before the Snapshot entry a fold builds (the log has no holes, so every
   num before an entry is there), the position a paged load answered on its first page;
2. that the segment is closed (a later segment exists, so the segment ends with its EndSegment, written in one
   transaction with that segment) — a load or sync that goes on into the next segment must not skip its end;
3. a completed snapshot (the segment's ``S``, set only after the entry's ``R``) — its entry must show its root.

The Segments table lags the same way: a read of the newest segments may miss a log or a segment created a moment
ago, so an answer without one the reader knows of is confirmed consistently (:func:`latest_segments`).

A short answer is read again from where it fell short (the entries before that point are kept: they are right):

4. once more eventually consistent, since most replicas are current and a lag lasts about a second;
5. then consistently, as the last resort: a consistent read cannot lag;
6. a consistent read still short means the log lacks what it must hold: :class:`~seglog_core.errors.ShortReadError`.

Where the reader knows nothing further — the tail of a load, the entries after a sync's ``since`` — a short answer
is still a right one: the log as it stood a moment ago, one state of it, which the next sync extends. Only a writer
must see the newest entry: the idempotent scan (seglog_core.idempotence) and the append's lookback read
consistently, and keep doing so.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Final

import structlog

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.schema import Entry, EntryType, Segment

log = structlog.get_logger("seglog.reads")

#: Eventually consistent reads of a short segment before the consistent one (step 4): one more, since a second
#: lagging replica in a row is rare, and each costs half the consistent read that would follow anyway.
EVENTUAL_TRIES: Final = 2


@dataclass(frozen=True, kw_only=True)
class Known:
    """What a reader knows a segment holds, so that it can tell a short read from the segment's end.

    Attributes:
        through: a num the segment holds (so every num before it: the log has no holes).
        closed: a later segment exists: the segment ends with its EndSegment.
        completed: the num of a Snapshot entry whose root is set (the segment's ``S``).
    """

    through: int | None = None
    closed: bool = False
    completed: int | None = None


NOTHING: Final = Known()


def read_segment(store: LogStore, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                 known: Known = NOTHING, limit: int | None = None, page_size: int = 500) -> list[Entry]:
    """Entries ``start <= num <= end`` of one segment (at most ``limit``), read eventually consistently and read
    again from where the answer fell short of ``known`` (the module docstring, steps 1-6).

    Raises:
        ShortReadError: a consistent read still fell short.
    """
    got: list[Entry] = []
    at, wanted, read_to = start, "", None
    for attempt, consistent in enumerate([False] * EVENTUAL_TRIES + [True], 1):
        left = None if limit is None else limit - len(got)
        pages = min(page_size, left) if left else page_size
        read = store.entries(log_id, segment, at, end, page_size=pages, consistent=consistent)
        got += itertools.islice(read, left)
        short = shortfall(got, start, end, known, limit)
        if short is None:
            return got
        read_to = got[-1].num if got else None
        log.info("short read", segment=segment, read_to=read_to, again_from=short.num, wanted=short.wanted,
                 attempt=attempt, consistent=consistent)
        got, at, wanted = [e for e in got if e.num < short.num], short.num, short.wanted
    raise errors.ShortReadError(log_id, segment, at=at, wanted=wanted, read_to=read_to)


def latest_segments(store: LogStore, log_id: uuid.UUID, limit: int, *, reaches: int = 0) -> list[Segment]:
    """The ``limit`` newest segments, newest first, eventually consistent; read again consistently when the answer
    lacks what the reader knows is there: any segment (a log created a moment ago is no missing log) or segment
    ``reaches`` (one a position the reader holds is in). Still lacking it, the answer is the consistent one."""
    segments = store.latest_segments(log_id, limit)
    if segments and segments[0].num >= reaches:
        return segments
    return store.latest_segments(log_id, limit, consistent=True)


@dataclass(frozen=True, kw_only=True)
class Shortfall:
    """Where a read fell short: the num to read again from, and what it should have reached."""

    num: int
    wanted: str


def shortfall(got: list[Entry], start: int, end: int | None, known: Known, limit: int | None) -> Shortfall | None:
    """Where ``got`` (a read of ``start``..``end``, at most ``limit`` entries) falls short of ``known``, or None."""
    for before, after in itertools.pairwise(got):
        if after.num != before.num + 1:  # 0.: a hole, which the log never has
            return Shortfall(num=before.num + 1, wanted=f"entry {before.num + 1}, read past by the answer")
    last = got[-1].num if got else start - 1
    completed = known.completed
    if completed is not None and start <= completed <= last:
        entry = next((e for e in got if e.num == completed), None)
        if entry is None or entry.snapshot_root is None:
            return Shortfall(num=completed, wanted=f"completed snapshot {completed} with its root")
    if limit is not None and len(got) >= limit:
        return None  # the reader asked for no more
    through = known.through if end is None or known.through is None else min(known.through, end)
    if completed is not None and (end is None or completed <= end):
        through = completed if through is None else max(through, completed)
    if through is not None and last < through:
        return Shortfall(num=last + 1, wanted=f"entry {through}")
    if known.closed and end is None and (not got or got[-1].type is not EntryType.END_SEGMENT):
        return Shortfall(num=last + 1, wanted="its EndSegment")
    return None
