"""Reading the log: load from the latest completed snapshot, then incremental update (seed 000, DESIGN §3).

Load cost: one Query for the two latest segments plus paged Queries from the snapshot to the tail, so it does
not grow with the length of the log once snapshots exist. Every read is eventually consistent, at half the price
(seglog_core.reads says why that is safe); each names what it knows the segment holds, so a read that lags is
read again instead of answered:

    load      the base segment   its completed snapshot's entry, with its root ................. Known.completed
                                 on to its EndSegment when a later segment exists .............. Known.closed
              the tail           nothing known: a lagging answer is the log a moment ago, one state of it
    page n    the first page's   snapshot entry, with its root (read with the entries: no GetItem)  Known.completed
              positions          each segment before the position's, on to its EndSegment ...... Known.closed
                                 up to the position itself ..................................... Known.through
    sync      the segment held   on to its EndSegment when a later segment exists (else the sync
                                 would skip its last entries and go on in the next segment) .... Known.closed
              the tail           nothing known: the next sync goes on from where this one ended
    segments  the newest two     a log, or the segment of a position held, not shown: read again consistently
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.reads import Known, latest_segments, read_segment
from seglog_core.schema import Entry, EntryType, Segment


@dataclass(kw_only=True)
class LogView:
    """What a client holds after a load: the snapshot it started from and every entry after it.

    Attributes:
        snapshot: the completed Snapshot entry the view starts from (its ``snapshot_root`` locates the state).
        entries: entries after the snapshot, in log order (across a segment boundary), log-level ones included.
        segment, num: the position of the last entry read; updates continue after it.
    """

    log_id: uuid.UUID
    snapshot: Entry
    entries: list[Entry] = field(default_factory=list)
    segment: int = 0
    num: int = 0

    def _extend(self, new: list[Entry]) -> list[Entry]:
        if new:
            self.entries.extend(new)
            self.segment, self.num = new[-1].segment, new[-1].num
        return new


@dataclass(kw_only=True)
class LogReader:
    """Loads and updates views of logs."""

    store: LogStore
    page_size: int = 500

    def load(self, log_id: uuid.UUID) -> LogView:
        """Read from the latest completed snapshot to the tail.

        Raises:
            LogNotFoundError: no such log.
            CorruptLogError: neither of the two latest segments has a completed snapshot.
        """
        segments = latest_segments(self.store, log_id, 2)
        if not segments:
            raise errors.LogNotFoundError(log_id)
        current = segments[0]
        base = current if current.last_snapshot is not None else (segments[1] if len(segments) > 1 else None)
        if base is None or base.last_snapshot is None:
            raise errors.CorruptLogError(log_id, "neither of the two latest segments has a completed snapshot")
        entries = read_segment(self.store, log_id, base.num, base.last_snapshot, page_size=self.page_size,
                               known=Known(completed=base.last_snapshot, closed=base is not current))
        if not entries or entries[0].type is not EntryType.SNAPSHOT:
            raise errors.CorruptLogError(
                log_id, f"segment {base.num} says snapshot {base.last_snapshot} but holds no Snapshot entry there"
            )
        view = LogView(log_id=log_id, snapshot=entries[0], segment=base.num, num=base.last_snapshot)
        view._extend(entries[1:])
        if base is not current:
            view._extend(self._segment_from(log_id, current, 1))
        return view

    def view_at(self, log_id: uuid.UUID, snapshot: tuple[int, int], upto: tuple[int, int]) -> LogView:
        """The view a load answered earlier: the completed snapshot at ``snapshot`` and the entries after it up to
        ``upto`` (segment, num), so a paged load reads every page from the same state.

        Raises:
            UnknownPositionError: no completed Snapshot entry there (retired since), or ``upto`` before it.
        """
        if upto < snapshot:
            raise errors.UnknownPositionError(log_id, *snapshot)
        if upto[0] > snapshot[0]:
            # A position past the log's newest segment was never answered (issue 23: a made-up cursor would have
            # read every segment number up to it, one empty Query each).
            latest = latest_segments(self.store, log_id, 1, reaches=upto[0])
            if not latest or latest[0].num < upto[0]:
                raise errors.UnknownPositionError(log_id, *upto)
        # One read per segment, the snapshot's entry included (no GetItem for it): the first page answered both
        # positions, so the log holds the snapshot, complete, and ``upto``, and every segment before upto's is closed.
        read: list[Entry] = []
        segment, start = snapshot
        while segment <= upto[0]:
            end = upto[1] if segment == upto[0] else None
            completed = snapshot[1] if segment == snapshot[0] else None
            if end is not None and end < start:  # an empty range is no read (DynamoDB refuses BETWEEN 1 AND 0)
                break
            try:
                read += read_segment(self.store, log_id, segment, start, end, page_size=self.page_size,
                                     known=Known(through=end, closed=end is None, completed=completed))
            except errors.ShortReadError as short:  # read consistently: a position the log does not hold
                raise errors.UnknownPositionError(log_id, *(snapshot if short.at == completed else upto)) from None
            segment, start = segment + 1, 1
        base = read[0]
        if base.type is not EntryType.SNAPSHOT:
            raise errors.UnknownPositionError(log_id, *snapshot)
        view = LogView(log_id=log_id, snapshot=base, segment=base.segment, num=base.num)
        view._extend(read[1:])
        if (view.segment, view.num) != upto:
            raise errors.UnknownPositionError(log_id, *upto)
        return view

    def update(self, view: LogView, *, limit: int | None = None) -> list[Entry]:
        """Bring a view up to date (at most ``limit`` entries further); returns the new entries. Reloads if the
        view fell behind both segments."""
        segments = latest_segments(self.store, view.log_id, 2, reaches=view.segment)
        if not segments:
            raise errors.LogNotFoundError(view.log_id)
        if view.segment < segments[-1].num:
            fresh = self.load(view.log_id)
            view.snapshot, view.entries, view.segment, view.num = (
                fresh.snapshot, fresh.entries, fresh.segment, fresh.num,
            )
            return list(fresh.entries)
        new: list[Entry] = []
        for seg in reversed(segments):
            left = None if limit is None else limit - len(new)
            if left == 0:
                break
            if seg.num == view.segment:
                start = view.num + 1
            elif seg.num > view.segment:
                start = 1
            else:
                continue
            new += view._extend(self._after(view, seg, start, closed=seg is not segments[0], limit=left))
        return new

    def _after(self, view: LogView, seg: Segment, start: int, *, closed: bool, limit: int | None) -> list[Entry]:
        """A sync's entries of one segment from ``start``. In a closed segment the read begins at the entry held
        (``start - 1``), so that an answer without the EndSegment is known short even when the entry held is the
        EndSegment itself (then the answer is that entry alone, and nothing after it)."""
        pages = min(self.page_size, limit or 1 << 30)
        if not closed:
            return read_segment(self.store, view.log_id, seg.num, start, limit=limit, page_size=pages)
        held = start - 1
        try:
            read = read_segment(self.store, view.log_id, seg.num, held, known=Known(closed=True),
                                limit=None if limit is None else limit + 1, page_size=pages)
        except errors.ShortReadError:  # read consistently: the position held was never in the log
            raise errors.UnknownPositionError(view.log_id, seg.num, held) from None
        return [e for e in read if e.num >= start]

    def _segment_from(self, log_id: uuid.UUID, segment: Segment, start: int) -> list[Entry]:
        return read_segment(self.store, log_id, segment.num, start, page_size=self.page_size)

    def all_entries(self, log_id: uuid.UUID) -> list[Entry]:
        """Every stored entry of every retained segment, in order (for dump); a retired segment's tombstone
        (its EndSegment, seglog_core.retention) is not shown."""
        out: list[Entry] = []
        for seg in self.store.segments(log_id):
            if seg.archive is not None or seg.retired is not None:
                continue
            # Strong: a dump shows what the table holds, and knows nothing that would tell a short read.
            out.extend(self.store.entries(log_id, seg.num, page_size=self.page_size))
        return out
