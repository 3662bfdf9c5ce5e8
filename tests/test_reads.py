"""Eventually consistent reads of the log, read again when short (seglog_core.reads, issue 35): a load, a paged
load, a sync and a snapshot's fold each answer what a consistent read answers when a read lags, and pay for a
consistent read only when an eventually consistent one lags twice."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.faults import LaggingReads, RacedQuery

from seglog_core import errors
from seglog_core.memory import InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline.order import Order
from seglog_core.reader import LogReader, LogView
from seglog_core.reads import Known, read_segment
from seglog_core.schema import EndSegment, Entry, EntryType, Segment, SetCell, encode_body


def _cell(log_id: uuid.UUID, segment: int, num: int) -> Entry:
    return Entry(log_id=log_id, segment=segment, num=num, created=1, type=EntryType.SET_CELL,
                 body=encode_body(SetCell(row=1, col=1, value=num)))


def _snapshot(log_id: uuid.UUID, segment: int, num: int) -> Entry:
    return Entry(log_id=log_id, segment=segment, num=num, created=1, type=EntryType.SNAPSHOT)


def _log(store: InMemoryLogStore, cells: int, *, snapshots: tuple[int, ...] = ()) -> uuid.UUID:
    """A log of segment 0: its Snapshot entry 0, then ``cells`` entries, of which those at ``snapshots`` are
    Snapshot entries (not completed)."""
    log_id = uuid.uuid4()
    store.create_log(Segment(log_id=log_id, num=0, created=1, last_snapshot=0),
                     Entry(log_id=log_id, segment=0, num=0, created=1, type=EntryType.SNAPSHOT, snapshot_root="empty"))
    for num in range(1, cells + 1):
        store.put_entry(_snapshot(log_id, 0, num) if num in snapshots else _cell(log_id, 0, num))
    return log_id


def _nums(entries: list[Entry]) -> list[tuple[int, int]]:
    return [(e.segment, e.num) for e in entries]


def test_a_read_short_of_a_known_entry_is_read_on_from_where_it_stopped_eventually_consistently() -> None:
    memory = InMemoryLogStore()
    log_id = _log(memory, 12)
    store = LaggingReads(memory, upto={0: 7})
    got = read_segment(store, log_id, 0, 2, 12, known=Known(through=12))  # type: ignore[arg-type]
    assert [n for _, n in _nums(got)] == list(range(2, 13))
    assert [(0, 2, False), (0, 8, False)] == store.reads


def test_a_read_that_lags_twice_is_read_consistently_and_a_consistent_short_one_is_an_error() -> None:
    memory = InMemoryLogStore()
    log_id = _log(memory, 12)
    store = LaggingReads(memory, upto={0: 7}, times=2)
    assert [n for _, n in _nums(read_segment(store, log_id, 0, known=Known(through=12)))] == list(range(13))  # type: ignore[arg-type]
    assert [(0, 0, False), (0, 8, False), (0, 8, True)] == store.reads
    with pytest.raises(errors.ShortReadError) as short:
        read_segment(memory, log_id, 0, known=Known(through=20))
    assert (0, 12, "entry 20") == (short.value.segment, short.value.read_to, short.value.wanted)


def test_a_load_reads_again_when_its_snapshot_shows_no_root_and_takes_a_lagging_tail_as_it_is() -> None:
    """S names snapshot 6 complete, so a read showing entry 6 without R lags: read again. The tail after it holds
    nothing known: a read that lags there is one state of the log, answered at the cost of one read."""
    memory = InMemoryLogStore()
    log_id = _log(memory, 9, snapshots=(6,))
    memory.complete_snapshot(log_id, 0, 6, "snapshots/r6")
    store = LaggingReads(memory, rootless=frozenset({(0, 6)}))
    view = LogReader(store=store).load(log_id)  # type: ignore[arg-type]
    assert ("snapshots/r6", (0, 9)) == (view.snapshot.snapshot_root, (view.segment, view.num))
    assert [(0, 6, False), (0, 6, False)] == store.reads
    lagging = LaggingReads(memory, upto={0: 7})
    tail = LogReader(store=lagging).load(log_id)  # type: ignore[arg-type]
    assert ((0, 7), [(0, 6, False)]) == ((tail.segment, tail.num), lagging.reads)


def _two_segments(memory: InMemoryLogStore) -> uuid.UUID:
    """Segment 0 up to its EndSegment at 10 (snapshot 0 complete), segment 1 with entries 1-3."""
    log_id = _log(memory, 9)
    memory.new_segment(Entry(log_id=log_id, segment=0, num=10, created=1, type=EntryType.END_SEGMENT,
                             body=encode_body(EndSegment())),
                       Segment(log_id=log_id, num=1, created=1), _snapshot(log_id, 1, 0))
    for num in range(1, 4):
        memory.put_entry(_cell(log_id, 1, num))
    return log_id


def test_a_sync_into_the_next_segment_never_skips_the_end_of_the_one_it_holds() -> None:
    """The view holds 0/7 and segment 1 exists, so segment 0 ends with an EndSegment: a read of it that lags
    (up to 8) is read again, or the sync would answer 8 and go on at 1/1, skipping 0/9 and 0/10."""
    memory = InMemoryLogStore()
    log_id = _two_segments(memory)
    store = LaggingReads(memory, upto={0: 8})
    view = LogView(log_id=log_id, snapshot=_snapshot(log_id, 0, 0), segment=0, num=7)
    new = LogReader(store=store).update(view)  # type: ignore[arg-type]
    assert [(0, 8), (0, 9), (0, 10), (1, 1), (1, 2), (1, 3)] == _nums(new)
    held_end = LogView(log_id=log_id, snapshot=_snapshot(log_id, 0, 0), segment=0, num=10)
    assert [(1, 1), (1, 2), (1, 3)] == _nums(LogReader(store=memory).update(held_end, limit=5))


def test_a_segment_or_a_log_created_a_moment_ago_is_confirmed_consistently_before_it_is_taken_as_missing() -> None:
    """A read of the newest segments that lags may show none, or none after segment 0: a load still finds the log
    (no 404), a sync of a view in segment 1 still reads segment 1, and a later page in it is still answered."""
    memory = InMemoryLogStore()
    log_id = _two_segments(memory)
    memory.complete_snapshot(log_id, 1, 0, "snapshots/r1")
    nothing = LaggingReads(memory, newest=-1)
    assert (1, 3) == ((view := LogReader(store=nothing).load(log_id)).segment, view.num)  # type: ignore[arg-type]
    behind = LaggingReads(memory, newest=0)
    held = LogView(log_id=log_id, snapshot=_snapshot(log_id, 1, 0), segment=1, num=1)
    assert [(1, 2), (1, 3)] == _nums(LogReader(store=behind).update(held))  # type: ignore[arg-type]
    page = LogReader(store=behind).view_at(log_id, (0, 0), (1, 3))  # type: ignore[arg-type]
    assert (1, 3) == (page.segment, page.num)


def test_a_sync_from_a_position_past_a_closed_segments_end_is_an_unknown_position() -> None:
    memory = InMemoryLogStore()
    log_id = _two_segments(memory)
    view = LogView(log_id=log_id, snapshot=_snapshot(log_id, 0, 0), segment=0, num=12)
    with pytest.raises(errors.UnknownPositionError):
        LogReader(store=memory).update(view)


def test_a_later_page_of_a_load_reads_on_to_the_position_the_first_page_answered() -> None:
    """Without reading again, a page whose read lagged refused the position as unknown (409 unknown_position). The
    snapshot's entry comes with the entries (one Query, no GetItem), its root checked as a completed one's."""
    memory = InMemoryLogStore()
    log_id = _log(memory, 20, snapshots=(4,))
    memory.complete_snapshot(log_id, 0, 4, "snapshots/r4")
    store = LaggingReads(memory, upto={0: 15}, rootless=frozenset({(0, 4)}), times=2)
    view = LogReader(store=store).view_at(log_id, (0, 4), (0, 20))  # type: ignore[arg-type]
    assert ("snapshots/r4", (0, 20), 16) == (view.snapshot.snapshot_root, (view.segment, view.num), len(view.entries))
    assert [(0, 4, False), (0, 4, False), (0, 4, True)] == store.reads


@pytest.mark.parametrize(("snapshot", "upto", "unknown"), [
    ((0, 0), (0, 25), (0, 25)),  # past the tail
    ((0, 3), (0, 10), (0, 3)),  # not a Snapshot entry
    ((0, 6), (0, 10), (0, 6)),  # a Snapshot entry not complete
    ((0, 0), (1, 2), (1, 2)),  # past the newest segment
])
def test_a_page_at_a_position_never_answered_is_an_unknown_position(
        snapshot: tuple[int, int], upto: tuple[int, int], unknown: tuple[int, int]) -> None:
    memory = InMemoryLogStore()
    log_id = _log(memory, 20, snapshots=(6,))
    with pytest.raises(errors.UnknownPositionError) as refused:
        LogReader(store=memory).view_at(log_id, snapshot, upto)
    assert unknown == (refused.value.segment, refused.value.num)


def test_a_fold_plans_from_the_base_a_consistent_read_finds_when_its_read_lags() -> None:
    """Snapshot 9 completed (R set; S not yet moved, a crash between them) and ours is 13. A read that lags shows
    9 without its root: the plan would fold from 5 and wait behind 9, which is done. It confirms 9 consistently."""
    memory = InMemoryLogStore()
    log_id = _log(memory, 13, snapshots=(5, 9, 13))
    memory.complete_snapshot(log_id, 0, 5, "snapshots/r5")
    memory.set_snapshot_root(log_id, 0, 9, "snapshots/r9")
    store = LaggingReads(memory, upto={0: 10}, rootless=frozenset({(0, 9)}))
    order = Order(store=store, pending=InMemoryPendingStore(), wait=0.0, sleep=lambda _: None)  # type: ignore[arg-type]
    plan = order.plan(_snapshot(log_id, 0, 13))
    assert (9, [10, 11, 12], []) == (plan.base.num, [e.num for e in plan.between], plan.incomplete)
    assert [(0, 5, False), (0, 11, False), (0, 9, True)] == store.reads


_TWO_SEGMENTS = [(0, n) for n in range(11)] + [(1, n) for n in range(4)]
#: What readers answer of them: a segment's Snapshot entry 0 is where a view starts, never an entry it is told.
_READ = [p for p in _TWO_SEGMENTS if p != (1, 0)]


@settings(max_examples=150, deadline=None)
@given(held=st.sampled_from(_TWO_SEGMENTS), lag=st.tuples(st.integers(0, 10), st.integers(0, 3)),
       times=st.integers(0, 3), limit=st.none() | st.integers(1, 16))
def test_whatever_reads_lag_a_sync_and_a_load_answer_the_log_without_a_hole(
        held: tuple[int, int], lag: tuple[int, int], times: int, limit: int | None) -> None:
    """Each answers the entries after its start in order up to some point — one state of the log — never one
    after a missing one, however far and however often its eventually consistent reads lag."""
    memory = InMemoryLogStore()
    log_id = _two_segments(memory)
    store = LaggingReads(memory, upto={0: lag[0], 1: lag[1]}, times=times)
    view = LogView(log_id=log_id, snapshot=_snapshot(log_id, 0, 0), segment=held[0], num=held[1])
    synced = _nums(LogReader(store=store).update(view, limit=limit))  # type: ignore[arg-type]
    after = [p for p in _READ if p > held]
    assert after[: len(synced)] == synced
    assert limit is None or len(synced) <= limit
    store.times = times
    loaded = LogReader(store=store).load(log_id)  # type: ignore[arg-type]
    assert _READ[1: len(loaded.entries) + 1] == _nums(loaded.entries)
    assert (0, 10) in _nums(loaded.entries)  # the base segment is closed: its end is never skipped


def test_a_read_that_skipped_a_num_a_racing_append_wrote_is_read_again_from_it() -> None:
    """A Query is read-committed: it can miss num 5 and see 6, both written while it ran. Whatever the reader knows,
    the hole is read again from 5 (a load folding without 5 would show a sheet that never was)."""
    memory = InMemoryLogStore()
    log_id = _log(memory, 9)
    store = RacedQuery(memory, missing=5)
    got = read_segment(store, log_id, 0)  # type: ignore[arg-type]
    assert store.raced
    assert list(range(10)) == [n for _, n in _nums(got)]
