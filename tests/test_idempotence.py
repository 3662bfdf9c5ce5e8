"""Appends after a client-known position (the HTTP retry protocol, DESIGN §3), on every backend.

The interleaving tests pause one try between its read and its put — the window in which a retry, or another
writer, runs whole — and check that the entry id is still stored once.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from seglog_core import errors
from seglog_core.idempotence import Position, append_after
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.ports import BlobStore, LogStore
from seglog_core.retention import RetentionPolicy, apply_retention, read_archive
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, SetCell
from seglog_core.verify import verify_log

START = Position(segment=0, num=0)


def _log(store: LogStore, blobs: BlobStore, **kw: Any) -> EventLog:
    return EventLog(store=store, blobs=blobs, retry=RetryPolicy(base=0.001, cap=0.01), cache_tail=False, **kw)


def _ids(store: LogStore, log_id: uuid.UUID) -> list[uuid.UUID | None]:
    return [e.entry_id for s in store.segments(log_id) for e in store.entries(log_id, s.num)]


class PausedPut:
    """A LogStore whose first ``put_entry`` of one entry id waits until released: the try is paused after its
    read and before its write."""

    def __init__(self, inner: LogStore, entry_id: uuid.UUID) -> None:
        self._inner, self._entry_id = inner, entry_id
        self.reached, self.release = threading.Event(), threading.Event()

    def put_entry(self, entry: Entry) -> None:
        if entry.entry_id == self._entry_id and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(10)
        self._inner.put_entry(entry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _paused_first_try(stores: tuple[LogStore, BlobStore], log_id: uuid.UUID, entry_id: uuid.UUID,
                      meanwhile: Callable[[], None]) -> list[Any]:
    """Run a first try that pauses before its put, ``meanwhile`` in the pause, then let the first try finish."""
    store, blobs = stores
    paused = PausedPut(store, entry_id)
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(append_after(
        _log(paused, blobs), log_id, SetCell(row=1, col=1, value="first"), entry_id=entry_id, since=START)))  # type: ignore[arg-type]
    first.start()
    assert paused.reached.wait(10)
    meanwhile()
    paused.release.set()
    first.join(10)
    return results


def test_a_retry_while_the_first_try_is_paused_stores_the_entry_once(stores: tuple[LogStore, BlobStore]) -> None:
    """The retry lands first; the paused first try then loses the race for the same num, reads on, and finds
    it: deduplicated, not a second copy."""
    store, blobs = stores
    log_id = _log(store, blobs).create()
    entry_id = uuid.uuid4()
    retry: list[Any] = []

    first = _paused_first_try(stores, log_id, entry_id, lambda: retry.append(append_after(
        _log(store, blobs), log_id, SetCell(row=1, col=1, value="first"), entry_id=entry_id, since=START)))

    assert (False, True) == (retry[0].deduplicated, first[0].deduplicated)
    assert retry[0].entry.num == first[0].entry.num
    assert 1 == _ids(store, log_id).count(entry_id)


def test_a_paused_first_try_behind_another_writer_and_its_retry_stores_once(
        stores: tuple[LogStore, BlobStore]) -> None:
    """The first try read tail 0 and will put #1; meanwhile another writer takes #1 and the retry lands at #2.
    A put that skipped the taken #1 without reading it would write #2... and a second copy at #3."""
    store, blobs = stores
    log_id = _log(store, blobs).create()
    entry_id = uuid.uuid4()

    def others() -> None:
        _log(store, blobs).append(log_id, SetCell(row=2, col=1, value="other"))
        append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value="first"), entry_id=entry_id, since=START)

    (first,) = _paused_first_try(stores, log_id, entry_id, others)

    assert (True, 2) == (first.deduplicated, first.entry.num)
    assert 1 == _ids(store, log_id).count(entry_id)
    assert verify_log(store, log_id, acknowledged=[entry_id]).ok


def test_retries_are_found_across_a_segment_boundary(stores: tuple[LogStore, BlobStore]) -> None:
    """The first try landed in segment 0, which then ended: the retry follows EndSegment and finds it there."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    entry_id = uuid.uuid4()
    first = append_after(writer, log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)
    writer.start_segment(log_id)
    writer.append(log_id, SetCell(row=1, col=1, value=2))

    retry = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)

    assert (True, Position.of(first.entry)) == (retry.deduplicated, Position.of(retry.entry))
    fresh = append_after(_log(store, blobs), log_id, SetCell(row=3, col=1, value=3), entry_id=uuid.uuid4(),
                         since=START)
    assert (1, 2) == (fresh.entry.segment, fresh.entry.num)


def test_a_position_the_log_does_not_hold_is_refused_and_nothing_is_written(
        stores: tuple[LogStore, BlobStore]) -> None:
    store, blobs = stores
    log = _log(store, blobs)
    log_id = log.create()
    for since in (Position(segment=0, num=1), Position(segment=1, num=0)):
        with pytest.raises(errors.UnknownPositionError, match="load the sheet again"):
            append_after(log, log_id, SetCell(row=1, col=1, value=1), entry_id=uuid.uuid4(), since=since)
    with pytest.raises(errors.LogNotFoundError):
        append_after(log, uuid.uuid4(), SetCell(row=1, col=1, value=1), entry_id=uuid.uuid4(), since=START)
    assert [None] == _ids(store, log_id)


def test_strict_appends_write_only_right_after_since(stores: tuple[LogStore, BlobStore]) -> None:
    store, blobs = stores
    log = _log(store, blobs)
    log_id = log.create()
    mine = uuid.uuid4()
    won = append_after(log, log_id, SetCell(row=1, col=1, value="mine"), entry_id=mine, since=START, strict=True)
    again = append_after(log, log_id, SetCell(row=1, col=1, value="mine"), entry_id=mine, since=START, strict=True)

    with pytest.raises(errors.VersionConflictError) as conflict:
        append_after(log, log_id, SetCell(row=1, col=1, value="theirs"), entry_id=uuid.uuid4(), since=START,
                     strict=True)

    assert (1, True) == (won.entry.num, again.deduplicated)
    assert conflict.value.existing is not None and mine == conflict.value.existing.entry_id
    assert [None, mine] == _ids(store, log_id)


class FailingPuts:
    """A LogStore whose first puts fail as DynamoDB throttles, or answer 500 after the write (lost answer)."""

    def __init__(self, inner: LogStore, *, throttles: int = 0, lost: int = 0) -> None:
        self._inner, self.throttles, self.lost = inner, throttles, lost

    def put_entry(self, entry: Entry) -> None:
        if self.throttles:
            self.throttles -= 1
            raise errors.ThrottledError("throttled", code="ThrottlingException")
        self._inner.put_entry(entry)
        if self.lost:
            self.lost -= 1
            raise errors.TransientStoreError("500 after the write", code="InternalServerError", outcome_unknown=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("fault", ["throttles", "lost"])
def test_a_failed_put_at_the_tail_is_retried_after_reading_on_from_it(
        stores: tuple[LogStore, BlobStore], fault: str) -> None:
    """Chaos found it: a throttled put when ``since`` was the tail re-read an empty page after it and took that
    for a position the log does not hold (409 unknown_position). A lost answer is found by the re-read."""
    store, blobs = stores
    log_id = _log(store, blobs).create()
    failing = FailingPuts(store, **{fault: 2})
    entry_id = uuid.uuid4()

    done = append_after(_log(failing, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id,  # type: ignore[arg-type]
                        since=START)

    assert (1, fault == "lost") == (done.entry.num, done.deduplicated)
    assert [None, entry_id] == _ids(store, log_id)


# ------------------------------------------------------------------------------------------------ retired since
# Issue 18: once retention retired since's segment, a retry got 409 unknown_position and the answer's advice (load,
# resend) stored the entry twice. Retention here runs with min_age 0 (a horizon of 0 s), the worst case.

NOW_RETIRED = RetentionPolicy(keep=2, min_age=0)


def _next_segment(writer: EventLog, store: LogStore, log_id: uuid.UUID) -> None:
    """Close the current segment (its snapshot standing in as built) and start the next."""
    writer.start_segment(log_id)
    latest = store.latest_segments(log_id, 1, consistent=True)[0]
    store.complete_snapshot(log_id, latest.num, 0, "empty")


def _copies(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, entry_id: uuid.UUID) -> int:
    """How many times the log holds ``entry_id``: retained segments and archives alike."""
    count = 0
    for segment in store.segments(log_id):
        held = read_archive(blobs, segment.archive) if segment.archive else store.entries(log_id, segment.num)
        count += sum(e.entry_id == entry_id for e in held)
    return count


@pytest.mark.parametrize("archive", [True, False], ids=["archived", "deleted"])
def test_a_retry_whose_first_try_landed_after_a_since_retention_then_retired_is_deduplicated(
        stores: tuple[LogStore, BlobStore], archive: bool) -> None:
    """since is in segment 0; the first try landed in segment 1; segments 0 (and 1 when archiving) are retired
    before the retry: it finds the entry (in the archive, or in the retained log) instead of a dead end."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    entry_id = uuid.uuid4()
    _next_segment(writer, store, log_id)
    first = append_after(writer, log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)
    for _ in range(2):
        _next_segment(writer, store, log_id)
    retired = apply_retention(store, blobs, log_id, RetentionPolicy(keep=2 if archive else 3, min_age=0,
                                                                    archive=archive))
    assert ([0, 1] if archive else [0]) == retired

    retry = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)

    assert (True, Position.of(first.entry)) == (retry.deduplicated, Position.of(retry.entry))
    assert 1 == _copies(store, blobs, log_id, entry_id)


def test_a_retry_after_archiving_whose_first_try_did_not_land_is_stored_once(
        stores: tuple[LogStore, BlobStore]) -> None:
    """An archive is exact: the retry reads it from since on, across its EndSegment, and writes at the tail."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    entry_id = uuid.uuid4()
    for _ in range(3):
        _next_segment(writer, store, log_id)
    assert [0, 1] == apply_retention(store, blobs, log_id, NOW_RETIRED)

    retry = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)
    again = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)

    assert (False, True, 3, 1) == (retry.deduplicated, again.deduplicated, retry.entry.segment, retry.entry.num)
    assert 1 == _copies(store, blobs, log_id, entry_id)


def test_a_retry_after_deleting_is_refused_with_where_to_resend_and_the_resend_is_stored_once(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Deleted history cannot be read: the entry is not in the retained log, so the answer says where to resend
    from (the first retained segment's entry 0) and the horizon; the resend lands once, and resending it again
    is deduplicated. The tries that landed in the deleted segment are refused the same way: never stored twice."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    landed = append_after(writer, log_id, SetCell(row=1, col=1, value=0), entry_id=uuid.uuid4(), since=START)
    for _ in range(3):
        _next_segment(writer, store, log_id)
    assert [0, 1] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=2, min_age=0, archive=False))
    entry_id = uuid.uuid4()

    for eid in (entry_id, landed.entry.entry_id):
        assert eid is not None
        with pytest.raises(errors.SinceRetiredError) as refused:
            append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=eid, since=START,
                         horizon=60)
        assert ((2, 0), 60) == (refused.value.resend, refused.value.horizon)
    assert "less than 60 s (the retry horizon) ago, resend it with the same entry_id and since = 2/0" in str(
        refused.value)
    resend = Position(segment=2, num=0)
    stored = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id,
                          since=resend)
    again = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)
    assert (False, True, Position.of(stored.entry)) == (stored.deduplicated, again.deduplicated,
                                                        Position.of(again.entry))
    assert (1, 0) == (_copies(store, blobs, log_id, entry_id), _copies(store, blobs, log_id, landed.entry.entry_id))
    with pytest.raises(errors.VersionConflictError):
        append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=uuid.uuid4(),
                     since=Position(segment=0, num=0), strict=True)


@pytest.mark.parametrize("form", ["retained", "archived"])
def test_an_entry_id_found_after_a_deleted_since_with_another_body_is_refused(
        stores: tuple[LogStore, BlobStore], form: str) -> None:
    """A since retention deleted, the entry id found after it — in a retained segment, or in one archived before
    the deletion (archive older, delete later leaves it after the gap) — with another body: refused
    (entry_id_reused), not answered as stored; and with its own body it is answered from where it is (seeds 1031,
    3474: the deleted-since path skipped the judgement, and began its read after archived segments)."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    _next_segment(writer, store, log_id)
    entry_id = uuid.uuid4()
    first = append_after(writer, log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START)
    assert first.entry.segment == 1
    for _ in range(3):
        _next_segment(writer, store, log_id)
    assert [0] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=4, min_age=0, archive=False))
    if form == "archived":  # then 1 archived: since (0/0) deleted, the entry in an archive after the gap
        assert [1] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=3, min_age=0))

    with pytest.raises(errors.EntryIdReusedError) as reused:
        append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value="another"), entry_id=entry_id,
                     since=START, horizon=60)
    assert (reused.value.segment, reused.value.num) == (1, first.entry.num)
    same = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=entry_id, since=START,
                        horizon=60)
    assert (True, Position.of(first.entry)) == (same.deduplicated, Position.of(same.entry))
    assert 1 == _copies(store, blobs, log_id, entry_id)


class RetiredBetweenPages:
    """A LogStore whose read of ``segment`` retires it (retention with ``policy``) right after the read returned
    entry ``after``, then goes on as DynamoDB's next page would: a new Query from the following num."""

    def __init__(self, inner: LogStore, blobs: BlobStore, segment: int, after: int, policy: RetentionPolicy) -> None:
        self._inner, self._blobs, self._segment, self._after, self._policy = inner, blobs, segment, after, policy
        self.retired: list[int] | None = None

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500) -> Iterator[Entry]:
        for entry in self._inner.entries(log_id, segment, start, end, page_size=page_size):
            yield entry
            if self.retired is None and (segment, entry.num) == (self._segment, self._after):
                self.retired = apply_retention(self._inner, self._blobs, log_id, self._policy)
                yield from self._inner.entries(log_id, segment, entry.num + 1, end, page_size=page_size)
                return

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("archive", [True, False], ids=["archived", "deleted"])
def test_a_retry_reading_a_segment_that_retention_retires_under_it_never_writes_a_second_copy(
        stores: tuple[LogStore, BlobStore], archive: bool) -> None:
    """The first try landed at 0/5; the retry reads segment 0 from since 0/1 and, after 0/3, retention retires
    segment 0. The next page starts at 0/4: only the tombstone's EndSegment is left there. Without it the retry
    took 0/3 for the tail and wrote a second copy into retired history; without noticing the hole it followed
    the EndSegment and wrote one at the tail. It must answer the first try (from the archive) or refuse."""
    store, blobs = stores
    writer = _log(store, blobs)
    log_id = writer.create()
    for value in range(4):
        writer.append(log_id, SetCell(row=1, col=1, value=value))
    entry_id = uuid.uuid4()
    first = append_after(writer, log_id, SetCell(row=2, col=1, value=1), entry_id=entry_id, since=START)
    assert (0, 5) == (first.entry.segment, first.entry.num)
    for _ in range(2):
        _next_segment(writer, store, log_id)
    racing = RetiredBetweenPages(store, blobs, 0, 3, RetentionPolicy(keep=2, min_age=0, archive=archive))

    try:
        retry = append_after(_log(racing, blobs), log_id, SetCell(row=2, col=1, value=1), entry_id=entry_id,  # type: ignore[arg-type]
                             since=Position(segment=0, num=1))
        assert (True, Position.of(first.entry)) == (retry.deduplicated, Position.of(retry.entry))
    except errors.SinceRetiredError as refused:
        assert not archive  # an archive is read exactly: it must answer the entry
        assert (1, 0) == refused.resend
    assert [0] == racing.retired
    # Deleting took the first try's copy with it (its client is past the horizon); no try wrote another.
    assert (1 if archive else 0) == _copies(store, blobs, log_id, entry_id)
    assert [EntryType.END_SEGMENT] == [e.type for e in store.entries(log_id, 0)]


def test_a_since_an_older_version_deleted_with_its_item_is_treated_as_deleted() -> None:
    """Before tombstones, retention deleted a segment's item with its entries: a segment num below the oldest
    item is deleted history. A retry whose first try landed after it is answered; another is refused 410 with the
    oldest retained segment's entry 0 (in memory: the legacy form is written by reaching into the store)."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    writer = _log(store, blobs)
    log_id = writer.create()
    for _ in range(3):
        _next_segment(writer, store, log_id)
    landed = append_after(writer, log_id, SetCell(row=1, col=1, value=1), entry_id=uuid.uuid4(), since=START)
    store._segments[log_id].pop(0)  # what DynamoDBLogStore.delete_segment did before tombstones
    store._entries.pop((log_id, 0))
    store._nums.pop((log_id, 0))
    assert landed.entry.entry_id is not None

    again = append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=1), entry_id=landed.entry.entry_id,
                         since=START)
    with pytest.raises(errors.SinceRetiredError) as refused:
        append_after(_log(store, blobs), log_id, SetCell(row=1, col=1, value=2), entry_id=uuid.uuid4(), since=START)

    assert (True, Position.of(landed.entry)) == (again.deduplicated, Position.of(again.entry))
    assert (1, 0) == refused.value.resend


# ------------------------------------------------------------------------------------------------ rebase (issue 35)


class CountingStore:
    """A LogStore that counts reads of entries and puts; its first put of ``entry_id`` runs ``before`` first."""

    def __init__(self, inner: LogStore, entry_id: uuid.UUID, before: Callable[[], None]) -> None:
        self._inner, self._entry_id, self._before = inner, entry_id, before
        self.reads = self.puts = 0

    def entries(self, *args: Any, **kw: Any) -> Iterator[Entry]:
        self.reads += 1
        return self._inner.entries(*args, **kw)

    def put_entry(self, entry: Entry) -> None:
        self.puts += 1
        if entry.entry_id == self._entry_id and self._before is not None:
            before, self._before = self._before, None  # type: ignore[assignment]
            before()
        self._inner.put_entry(entry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize(("others", "horizon", "reads", "pauses"), [
    (1, 3600.0, 1, 0),  # lost once: the next num at once, no read, no pause
    (2, 3600.0, 2, 1),  # lost twice in a row (EventLog.rebases_before_backoff): a pause, then a read
    (1, None, 2, 1),  # no horizon known: a rebase could land in a segment retention retired, so it reads
    (1, 0.0, 2, 1),   # a horizon of 0 s: likewise
], ids=["once", "twice", "no-horizon", "zero-horizon"])
def test_a_lost_put_rebases_on_the_winner_without_a_read_or_a_pause(
        stores: tuple[LogStore, BlobStore], others: int, horizon: float | None, reads: int, pauses: int) -> None:
    """Issue 35: the API's append read again and slept inside a billed invocation after every lost put. Now it
    writes right after the winner the lost put brought back, and still stores the entry once, in order."""
    store, blobs = stores
    log_id = _log(store, blobs).create()
    entry_id = uuid.uuid4()
    slept: list[float] = []
    other_ids = [uuid.uuid4() for _ in range(others)]

    def meanwhile() -> None:  # other writers take the num this try read as next (and, for "twice", the one after)
        for n, other in enumerate(other_ids):
            store.put_entry(_log(store, blobs).prepare(log_id, SetCell(row=2, col=1, value=n), other).at(0, n + 1, 0))

    counting = CountingStore(store, entry_id, meanwhile)
    writer = EventLog(store=counting, blobs=blobs, cache_tail=False,  # type: ignore[arg-type]
                      retry=RetryPolicy(base=0.001, cap=0.01, sleep=slept.append))
    done = append_after(writer, log_id, SetCell(row=1, col=1, value="mine"), entry_id=entry_id, since=START,
                        horizon=horizon)

    assert (done.entry.num, done.deduplicated) == (others + 1, False)
    assert (counting.reads, len(slept)) == (reads, pauses)
    assert [None, *other_ids, entry_id] == _ids(store, log_id)


def test_a_rebase_that_meets_its_own_first_try_answers_it(stores: tuple[LogStore, BlobStore]) -> None:
    """A rebased retry whose next num holds its own first try answers it, deduplicated: the winner's item is read
    like any other (the argument of seglog_core.idempotence, with rebases)."""
    store, blobs = stores
    log_id = _log(store, blobs).create()
    entry_id, other = uuid.uuid4(), uuid.uuid4()
    body = SetCell(row=1, col=1, value="mine")

    def meanwhile() -> None:  # another writer at 1, and the first try of our entry at 2
        store.put_entry(_log(store, blobs).prepare(log_id, SetCell(row=2, col=1, value=0), other).at(0, 1, 0))
        store.put_entry(_log(store, blobs).prepare(log_id, body, entry_id).at(0, 2, 0))

    counting = CountingStore(store, entry_id, meanwhile)
    retry = append_after(_log(counting, blobs), log_id, body, entry_id=entry_id, since=START,  # type: ignore[arg-type]
                         horizon=3600.0)

    assert (retry.entry.num, retry.deduplicated, counting.reads) == (2, True, 1)
    assert [None, other, entry_id] == _ids(store, log_id)
