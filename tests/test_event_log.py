"""The log's operations (DESIGN §3) on every backend: append, expected-version, idempotence, large entries,
segments, load and update, retention."""

from __future__ import annotations

import uuid

import pytest

from seglog_core import errors
from seglog_core.bodies import external_body_key
from seglog_core.document import SheetDocument
from seglog_core.idempotence import Position, append_after
from seglog_core.log import EventLog
from seglog_core.ports import BlobStore, LogStore
from seglog_core.reader import LogReader
from seglog_core.retention import RetentionPolicy, apply_retention, read_archive
from seglog_core.retry import RetryPolicy
from seglog_core.schema import EntryType, SetCell, SetRange, SnapshotMarker, encode_body
from seglog_core.verify import verify_log

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)
#: The template's RetentionMinAgeSeconds: a writer told it trusts a known tail for EventLog's minute.
HORIZON = 604_800.0


def _log(stores: tuple[LogStore, BlobStore], **kw: object) -> EventLog:
    return EventLog(store=stores[0], blobs=stores[1], **{"retry": FAST, **kw})  # type: ignore[arg-type]


def test_appends_get_consecutive_nums_from_one(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    nums = [log.append(log_id, SetCell(row=1, col=i, value=i)).entry.num for i in range(1, 6)]
    assert nums == [1, 2, 3, 4, 5]


def test_a_second_client_with_a_stale_tail_rebases_past_the_conflict_without_a_read_or_a_pause(
        stores: tuple[LogStore, BlobStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20: a put that loses gets the winner's item back (ReturnValuesOnConditionCheckFailure=ALL_OLD on
    DynamoDB, DynamoDB Local and LocalStack; the simulator's and the in-memory stores alike), and the writer tries
    the next num at once: no Query for the tail, no backoff — a writer told the retry horizon, so it may trust its
    tail (tests/test_tail_after_retention.py: one that is not reads it before every write)."""
    pauses: list[float] = []
    a = _log(stores, retry=RetryPolicy(max_attempts=8, base=5.0, cap=5.0, sleep=pauses.append),
             retry_horizon=HORIZON)
    b = _log(stores)
    log_id = a.create()
    b.append(log_id, SetCell(row=1, col=1, value="b"))
    reads: list[int] = []
    latest = stores[0].latest_entry
    monkeypatch.setattr(stores[0], "latest_entry", lambda *args: reads.append(1) or latest(*args))

    done = a.append(log_id, SetCell(row=1, col=1, value="a"))  # a's cached tail says 0: 1 is taken

    assert (done.entry.num, done.attempts) == (2, 2)
    assert (reads, pauses) == ([], [])


def test_a_second_conflict_in_a_row_backs_off_and_reads_and_a_stale_tail_is_read_instead(
        stores: tuple[LogStore, BlobStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """Lost again right after a rebase, the writer pauses once and reads where the tail got to (others are
    writing: rebasing after a pause would walk up one num per conflict). A tail older than ``tail_ttl`` is never
    rebased on (a conflict proves a num taken, not the segment open: retention may have retired it)."""
    clock = [1_000.0]
    pauses: list[float] = []
    a = _log(stores, retry=RetryPolicy(max_attempts=8, base=0.01, cap=0.01, sleep=pauses.append),
             clock=lambda: clock[0], retry_horizon=HORIZON)
    b = _log(stores, retry_horizon=HORIZON)  # its appends read nothing: only a's are counted
    log_id = a.create()
    for _ in range(4):
        b.append(log_id, SetCell(row=1, col=1, value="b"))
    reads: list[int] = []
    latest = stores[0].latest_entry
    monkeypatch.setattr(stores[0], "latest_entry", lambda *args: reads.append(1) or latest(*args))

    done = a.append(log_id, SetCell(row=1, col=1, value="a"))  # tries 1, 2 (rebased), pauses, reads 4, writes 5
    assert (done.entry.num, done.attempts, len(pauses), len(reads)) == (5, 3, 1, 1)

    b.append(log_id, SetCell(row=1, col=1, value="b"))
    clock[0] += 61.0  # past tail_ttl: the cached tail (5) is read again, not written after
    done = a.append(log_id, SetCell(row=1, col=1, value="a"))
    assert (done.entry.num, done.attempts, len(reads)) == (7, 1, 2)


def test_a_writer_not_trusting_its_tail_never_writes_below_it_after_a_stale_read(
        stores: tuple[LogStore, BlobStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer not told the retry horizon reads the tail before every write (tests/test_tail_after_retention.py).
    An eventually consistent Query may answer from before its own last write (DynamoDB Developer Guide,
    HowItWorks.ReadConsistency); the num it wrote is still taken, so it writes after that one, first time."""
    log = _log(stores)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value="first"))
    latest = stores[0].latest_entry

    def stale(log_id: uuid.UUID, segment: int) -> object:
        found = latest(log_id, segment)
        return found if found is None or found.num == 0 else stores[0].get_entry(log_id, segment, found.num - 1)

    monkeypatch.setattr(stores[0], "latest_entry", stale)
    done = log.append(log_id, SetCell(row=1, col=1, value="second"))
    assert (2, 1) == (done.entry.num, done.attempts)


def test_the_policys_snapshot_entry_goes_after_the_append_it_follows_without_a_read(
        stores: tuple[LogStore, BlobStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer not told the retry horizon reads the tail before its append, and not again for the Snapshot entry
    its policy writes right after it: the tail its own put proved a moment ago is as fresh as a read (the API's
    path: its writer is not told the horizon)."""
    log = _log(stores, snapshot_every=3)
    log_id = log.create()
    for value in (1, 2):
        log.append(log_id, SetCell(row=1, col=1, value=value))
    reads: list[int] = []
    latest = stores[0].latest_entry
    monkeypatch.setattr(stores[0], "latest_entry", lambda *args: reads.append(1) or latest(*args))

    assert 3 == log.append(log_id, SetCell(row=1, col=1, value=3)).entry.num

    assert 1 == len(reads)
    assert EntryType.SNAPSHOT is next(iter(stores[0].entries(log_id, 0, 4))).type


def test_expected_version_conflict_returns_the_holder(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    first = log.append(log_id, SetCell(row=1, col=1, value=1)).entry
    with pytest.raises(errors.VersionConflictError) as caught:
        log.append(log_id, SetCell(row=1, col=1, value=2), expected=1)
    assert caught.value.existing == first
    assert log.append(log_id, SetCell(row=1, col=1, value=2), expected=2).entry.num == 2


def test_an_expected_num_past_the_tail_or_in_an_ended_segment_is_refused_and_leaves_no_gap(
        stores: tuple[LogStore, BlobStore]) -> None:
    """A conditional put refuses only a taken num: an expected num past the tail, or one the caller meant for a
    segment that ended since (its own writer started the next one), would have been put there and left a gap
    (I1; the simulator's optimistic library writers, seed 6). Refused instead, naming the next num."""
    store = stores[0]
    log, fresh = _log(stores), _log(stores)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    for writer in (log, fresh):  # one whose tail is known, one that must read it
        with pytest.raises(errors.VersionConflictError) as caught:
            writer.append(log_id, SetCell(row=1, col=1, value="gap"), expected=3)
        assert (caught.value.segment, caught.value.next_num) == (0, 2)
    last = log.append(log_id, SetCell(row=1, col=1, value=2), expected=2).entry
    log.start_segment(log_id)  # this writer's tail is now 1/0; the caller still counts in segment 0
    with pytest.raises(errors.VersionConflictError) as caught:
        fresh.append(log_id, SetCell(row=1, col=1, value="late"), expected=last.num + 1)
    assert (caught.value.segment, caught.value.next_num) == (1, 1)
    assert [(e.segment, e.num) for e in LogReader(store=store).all_entries(log_id)] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    assert verify_log(store, log_id).ok


def test_an_expected_num_held_by_an_end_segment_sends_the_next_append_to_the_next_segment(
        stores: tuple[LogStore, BlobStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 728 of the simulator's optimistic writers: the conflict at an EndSegment left the writer in the ended
    segment with the EndSegment's num as taken, and a stale read (one entry short) then had its next append put
    after the EndSegment. The conflict follows the EndSegment, as a plain append's does."""
    store = stores[0]
    log, other = _log(stores, retry_horizon=HORIZON), _log(stores)  # log trusts its tail: no read before its put
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    other.start_segment(log_id)  # EndSegment at 0/2
    store.complete_snapshot(log_id, 1, 0, "empty")
    with pytest.raises(errors.VersionConflictError) as caught:
        log.append(log_id, SetCell(row=1, col=1, value=2), expected=2)
    assert caught.value.existing is not None and caught.value.existing.type is EntryType.END_SEGMENT
    latest = store.latest_entry
    monkeypatch.setattr(store, "latest_entry",  # a stale read of segment 0: the entry before its EndSegment
                        lambda lid, segment, *a, **k: next(iter(store.entries(lid, 0, 1, 1))) if segment == 0
                        else latest(lid, segment, *a, **k))
    done = log.append(log_id, SetCell(row=1, col=1, value=3))
    assert (done.entry.segment, done.entry.num) == (1, 1)
    monkeypatch.undo()
    assert verify_log(store, log_id).ok


def test_same_entry_id_twice_is_one_entry(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    entry_id = uuid.uuid4()
    first = log.append(log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id)
    again = _log(stores).append(log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id)
    assert again.deduplicated
    assert again.entry == first.entry
    log.append(log_id, SetCell(row=1, col=1, value=2))
    # Further back in the log: found by reading forward from where the client last knew the log.
    later = append_after(_log(stores), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id,
                         since=Position(segment=0, num=0))
    assert later.deduplicated
    assert later.entry.num == first.entry.num
    assert verify_log(stores[0], log_id, acknowledged=[entry_id]).ok


def test_large_bodies_go_to_s3_tagged_discardable(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores, large_threshold=1024)
    log_id = log.create()
    values = [[f"row {r} " + "x" * 50] for r in range(100)]
    body = SetRange(row=1, col=1, values=values)
    done = log.append(log_id, body)
    assert done.entry.body is None
    assert done.entry.external == external_body_key(
        log_id, done.entry.entry_id, encode_body(body))  # type: ignore[arg-type]
    assert stores[1].is_discardable(done.entry.external)
    state, _ = SheetDocument(reader=LogReader(store=stores[0]), blobs=stores[1]).load(log_id)
    assert state.get(100, 1) == "row 99 " + "x" * 50


def test_log_level_bodies_and_unknown_logs_are_refused(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    with pytest.raises(errors.InvalidInputError):
        log.append(log.create(), SnapshotMarker())
    with pytest.raises(errors.LogNotFoundError):
        log.append(uuid.uuid4(), SetCell(row=1, col=1, value=1))
    with pytest.raises(errors.LogNotFoundError):
        LogReader(store=stores[0]).load(uuid.uuid4())


def test_new_segment_needs_a_completed_snapshot_and_appends_follow_it(stores: tuple[LogStore, BlobStore]) -> None:
    store = stores[0]
    log, other = _log(stores), _log(stores)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value="before"))
    other.append(log_id, SetCell(row=2, col=1, value="cached"))  # other caches segment 0
    log.start_segment(log_id)
    with pytest.raises(errors.SegmentNotReadyError):
        log.start_segment(log_id)  # segment 1's snapshot is not built yet
    done = other.append(log_id, SetCell(row=3, col=1, value="after"))  # meets EndSegment, moves on
    assert (done.entry.segment, done.entry.num) == (1, 1)
    entries = [(e.segment, e.num, e.type) for e in LogReader(store=store).all_entries(log_id)]
    assert entries[3] == (0, 3, EntryType.END_SEGMENT)
    assert entries[4] == (1, 0, EntryType.SNAPSHOT)
    assert verify_log(store, log_id).ok


def test_load_and_update_fold_the_entries_after_the_snapshot(stores: tuple[LogStore, BlobStore]) -> None:
    log = _log(stores)
    log_id = log.create()
    document = SheetDocument(reader=LogReader(store=stores[0], page_size=3), blobs=stores[1])
    for i in range(1, 8):
        log.append(log_id, SetCell(row=i, col=1, value=i))
    state, view = document.load(log_id)
    assert [r[0] for r in state.rows()] == [1, 2, 3, 4, 5, 6, 7]
    assert (view.segment, view.num) == (0, 7)
    log.append(log_id, SetCell(row=1, col=2, value="new"))
    state = document.update(state, view)
    assert state.get(1, 2) == "new"
    assert view.num == 8


def test_update_reloads_when_the_view_fell_behind_both_segments(stores: tuple[LogStore, BlobStore]) -> None:
    store = stores[0]
    log = _log(stores)
    log_id = log.create()
    document = SheetDocument(reader=LogReader(store=store), blobs=stores[1])
    log.append(log_id, SetCell(row=1, col=1, value=1))
    state, view = document.load(log_id)
    for segment in (1, 2):
        log.start_segment(log_id)
        store.complete_snapshot(log_id, segment, 0, "empty")  # stands in for the pipeline's build
    log.append(log_id, SetCell(row=5, col=5, value=5))
    state = document.update(state, view)
    assert view.segment == 2
    assert state.rows() == [[], [], [], [], [None, None, None, None, 5]]


def test_retention_archives_old_segments_but_never_the_two_latest(stores: tuple[LogStore, BlobStore]) -> None:
    store, blobs = stores
    log = _log(stores)
    log_id = log.create()
    for segment in range(1, 4):
        log.append(log_id, SetCell(row=1, col=1, value=segment))
        log.start_segment(log_id)
        store.complete_snapshot(log_id, segment, 0, "empty")
    kept_before = list(store.entries(log_id, 0))
    assert apply_retention(store, blobs, log_id, RetentionPolicy(keep=1)) == [0, 1]
    assert [s.archive is not None for s in store.segments(log_id)] == [True, True, False, False]
    assert read_archive(blobs, f"archive/{log_id}/0") == kept_before
    assert apply_retention(store, blobs, log_id, RetentionPolicy(keep=1)) == []
    assert verify_log(store, log_id).ok


def test_a_retried_large_append_does_not_put_the_discardable_tag_back(stores: tuple[LogStore, BlobStore]) -> None:
    """Once the router kept a landed entry's body, a retry of the same entry id must not re-tag it: no new
    stream record would untag it again and the lifecycle rule would expire a referenced body."""
    log = _log(stores, large_threshold=256)
    log_id = log.create()
    entry_id = uuid.uuid4()
    body = SetRange(row=1, col=1, values=[["y" * 64] * 8])
    first = log.append(log_id, body, entry_id=entry_id).entry
    assert first.external is not None
    stores[1].keep(first.external)  # what the stream router does
    again = append_after(_log(stores, large_threshold=256), log_id, body, entry_id=entry_id,
                         since=Position(segment=0, num=0))
    assert again.deduplicated
    assert not stores[1].is_discardable(first.external)
