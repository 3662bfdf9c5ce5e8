"""Contract of the LogStore port: every implementation (in memory, DynamoDB Local, LocalStack) passes it."""

from __future__ import annotations

import uuid

import pytest

from seglog_core import errors
from seglog_core.ports import LogStore
from seglog_core.schema import EndSegment, Entry, EntryType, Segment, SetCell, encode_body


def _entry(log_id: uuid.UUID, segment: int, num: int, **kw: object) -> Entry:
    fields: dict[str, object] = {"type": EntryType.SET_CELL, "body": encode_body(SetCell(row=1, col=1, value=num))}
    fields.update(kw)
    return Entry(log_id=log_id, segment=segment, num=num, created=1_700_000_000, **fields)  # type: ignore[arg-type]


def _new_log(store: LogStore) -> uuid.UUID:
    log_id = uuid.uuid4()
    store.create_log(Segment(log_id=log_id, num=0, created=1, last_snapshot=0),
                     Entry(log_id=log_id, segment=0, num=0, created=1, type=EntryType.SNAPSHOT, snapshot_root="empty"))
    return log_id


def test_create_log_writes_segment_zero_and_its_snapshot_entry(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    assert [(s.num, s.last_snapshot) for s in log_store.latest_segments(log_id)] == [(0, 0)]
    first = log_store.get_entry(log_id, 0, 0)
    assert first is not None
    assert (first.type, first.snapshot_root) == (EntryType.SNAPSHOT, "empty")


def test_create_log_twice_is_cancelled_by_its_condition(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    with pytest.raises(errors.TransactionCancelledError) as caught:
        log_store.create_log(Segment(log_id=log_id, num=0, created=2),
                             Entry(log_id=log_id, segment=0, num=0, created=2, type=EntryType.SNAPSHOT))
    assert caught.value.condition_failed
    assert not caught.value.retryable


def test_put_entry_refuses_a_taken_num_and_returns_the_holder(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    mine = _entry(log_id, 0, 1, entry_id=uuid.uuid4())
    log_store.put_entry(mine)
    with pytest.raises(errors.ItemExistsError) as caught:
        log_store.put_entry(_entry(log_id, 0, 1, entry_id=uuid.uuid4()))
    assert caught.value.existing == mine


def test_entry_round_trips_every_attribute(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    entry = _entry(log_id, 0, 1, version=1, external="entries/x/y", body=None, entry_id=uuid.uuid4(),
                   type=EntryType.IMPORT)
    log_store.put_entry(entry)
    assert log_store.get_entry(log_id, 0, 1) == entry


def test_latest_entry_is_the_highest_num(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    for num in range(1, 6):
        log_store.put_entry(_entry(log_id, 0, num))
    latest = log_store.latest_entry(log_id, 0)
    assert latest is not None
    assert latest.num == 5
    assert log_store.latest_entry(log_id, 7) is None


def test_entries_reads_ranges_in_order_across_pages(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    for num in range(1, 24):
        log_store.put_entry(_entry(log_id, 0, num))
    assert [e.num for e in log_store.entries(log_id, 0, page_size=5)] == list(range(24))
    assert [e.num for e in log_store.entries(log_id, 0, 10, 14, page_size=2)] == [10, 11, 12, 13, 14]
    assert [e.num for e in log_store.entries(log_id, 0, 30)] == []


def test_entries_read_eventually_consistently_answer_a_prefix_of_the_segment(log_store: LogStore) -> None:
    """An eventually consistent read may lag (seglog_core.reads), but answers the segment as it was: entries from
    ``start`` in order, without a hole and none past ``end``; a consistent read, the default, answers every entry
    written before it (read-after-write), as the idempotent scan's proof needs."""
    log_id = _new_log(log_store)
    for num in range(1, 12):
        log_store.put_entry(_entry(log_id, 0, num))
    assert [e.num for e in log_store.entries(log_id, 0, 3, 9, page_size=4)] == list(range(3, 10))
    lagging = [e.num for e in log_store.entries(log_id, 0, 3, 9, page_size=4, consistent=False)]
    assert lagging == list(range(3, 10))[: len(lagging)]
    whole = [e.num for e in log_store.entries(log_id, 0, page_size=5, consistent=False)]
    assert whole == list(range(12))[: len(whole)]


def test_new_segment_is_one_transaction(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    end = _entry(log_id, 0, 1, type=EntryType.END_SEGMENT, body=encode_body(EndSegment(next_segment=1)))
    first = Entry(log_id=log_id, segment=1, num=0, created=3, type=EntryType.SNAPSHOT)
    log_store.new_segment(end, Segment(log_id=log_id, num=1, created=3), first)
    assert [s.num for s in log_store.latest_segments(log_id, 2)] == [1, 0]
    assert [s.num for s in log_store.segments(log_id)] == [0, 1]
    # The same transaction again fails as a whole: nothing half-written.
    with pytest.raises(errors.TransactionCancelledError) as caught:
        log_store.new_segment(end, Segment(log_id=log_id, num=1, created=4), first)
    assert caught.value.condition_failed
    assert len(caught.value.reasons) == 3
    assert log_store.get_entry(log_id, 0, 1) == end


def test_new_segment_with_one_taken_item_writes_nothing(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    log_store.put_entry(_entry(log_id, 0, 1))
    end = _entry(log_id, 0, 1, type=EntryType.END_SEGMENT, body=encode_body(EndSegment(next_segment=1)))
    with pytest.raises(errors.TransactionCancelledError) as caught:
        log_store.new_segment(end, Segment(log_id=log_id, num=1, created=3),
                              Entry(log_id=log_id, segment=1, num=0, created=3, type=EntryType.SNAPSHOT))
    assert caught.value.reasons[0] == "ConditionalCheckFailed"
    assert [s.num for s in log_store.segments(log_id)] == [0]
    assert log_store.get_entry(log_id, 1, 0) is None


def test_complete_snapshot_sets_root_and_moves_segment_forward_only(log_store: LogStore) -> None:
    log_id = _new_log(log_store)
    log_store.put_entry(_entry(log_id, 0, 1))
    log_store.put_entry(Entry(log_id=log_id, segment=0, num=2, created=1, type=EntryType.SNAPSHOT))
    log_store.put_entry(Entry(log_id=log_id, segment=0, num=3, created=1, type=EntryType.SNAPSHOT))
    log_store.complete_snapshot(log_id, 0, 3, "root-3")
    log_store.complete_snapshot(log_id, 0, 2, "root-2")
    assert log_store.latest_segments(log_id, 1)[0].last_snapshot == 3
    assert [e.snapshot_root for e in log_store.entries(log_id, 0, 2, 3)] == ["root-2", "root-3"]
    with pytest.raises(errors.InvalidInputError):
        log_store.complete_snapshot(log_id, 0, 1, "not-a-snapshot")


def _closed_log(store: LogStore, entries: int) -> uuid.UUID:
    """A log whose segment 0 holds nums 0..entries-1 and its EndSegment at ``entries``; segment 1 follows."""
    log_id = _new_log(store)
    for num in range(1, entries):
        store.put_entry(_entry(log_id, 0, num))
    store.new_segment(
        Entry(log_id=log_id, segment=0, num=entries, created=2, type=EntryType.END_SEGMENT,
              body=encode_body(EndSegment(next_segment=1))),
        Segment(log_id=log_id, num=1, created=2),
        Entry(log_id=log_id, segment=1, num=0, created=2, type=EntryType.SNAPSHOT))
    return log_id


def test_delete_segment_archives_and_keeps_the_item_and_end_segment_as_a_tombstone(log_store: LogStore) -> None:
    log_id = _closed_log(log_store, 30)
    assert log_store.delete_segment(log_id, 0, archive="archive/x/0") == 30
    assert [(e.num, e.type) for e in log_store.entries(log_id, 0)] == [(30, EntryType.END_SEGMENT)]
    assert [(s.num, s.archive, s.retired) for s in log_store.segments(log_id)] == [
        (0, "archive/x/0", None), (1, None, None)]


def test_delete_segment_deletes_and_marks_when_the_item_stays(log_store: LogStore) -> None:
    log_id = _closed_log(log_store, 30)
    assert log_store.delete_segment(log_id, 0, retired=1_800_000_000) == 30
    assert [(e.num, e.type) for e in log_store.entries(log_id, 0)] == [(30, EntryType.END_SEGMENT)]
    assert [(s.num, s.archive, s.retired) for s in log_store.segments(log_id)] == [
        (0, None, 1_800_000_000), (1, None, None)]
    # Again (an overlapping run): nothing left to delete, the tombstone unchanged but for its time.
    assert log_store.delete_segment(log_id, 0, retired=1_800_000_001) == 0
    assert [e.num for e in log_store.entries(log_id, 0)] == [30]


@pytest.mark.parametrize("archive", [True, False], ids=["archive first", "delete first"])
def test_mark_retiring_lets_one_form_claim_a_segment(log_store: LogStore, archive: bool) -> None:
    log_id = _closed_log(log_store, 3)
    key = "archive/x/0" if archive else None
    assert log_store.mark_retiring(log_id, 0, key, retired=1_800_000_000)
    assert log_store.mark_retiring(log_id, 0, key, retired=1_800_000_000)  # a rerun (or a lost answer's retry)
    # The other form is refused and changes nothing.
    assert not log_store.mark_retiring(log_id, 0, None if archive else "archive/x/0", retired=1_800_000_001)
    claimed = (0, key, None if archive else 1_800_000_000, True)
    assert next((s.num, s.archive, s.retired, s.retiring) for s in log_store.segments(log_id)) == claimed
    assert len(list(log_store.entries(log_id, 0))) == 4  # a claim removes nothing
    assert log_store.delete_segment(log_id, 0, key, retired=1_800_000_000) == 3
    assert next((s.num, s.archive, s.retired, s.retiring) for s in log_store.segments(log_id)) == (*claimed[:3], False)


def test_mark_retiring_never_creates_an_item(log_store: LogStore) -> None:
    log_id = uuid.uuid4()
    assert not log_store.mark_retiring(log_id, 0, retired=1)
    assert list(log_store.segments(log_id)) == []


def test_delete_segment_never_recreates_an_item_a_legacy_deletion_removed(log_store: LogStore) -> None:
    log_id = uuid.uuid4()  # no item at all: a segment an older retention deleted with its item
    assert log_store.delete_segment(log_id, 0, retired=1) == 0
    assert list(log_store.segments(log_id)) == []


def test_logs_do_not_see_each_other(log_store: LogStore) -> None:
    a, b = _new_log(log_store), _new_log(log_store)
    log_store.put_entry(_entry(a, 0, 1))
    assert [e.num for e in log_store.entries(b, 0)] == [0]
