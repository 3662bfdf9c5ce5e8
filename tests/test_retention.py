"""Retention that is safe to interrupt and to run twice at once (DESIGN §3 Retention), and the pass over every
log that the scheduled retention function makes a bounded piece of at a time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from seglog_cli import log_commands
from seglog_cli.main import cli
from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.ports import BlobStore, LogStore
from seglog_core.reader import LogReader
from seglog_core.retention import (
    CURSOR_KEY,
    RetentionPolicy,
    apply_retention,
    archive_key,
    read_archive,
    retain_logs,
)
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, SetCell
from seglog_core.verify import verify_log

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)
KEEP_TWO = RetentionPolicy(keep=2)


def make_log(store: LogStore, blobs: BlobStore, segments: int) -> uuid.UUID:
    """A log with ``segments`` segments, three edits in each, every segment's first snapshot complete."""
    log = EventLog(store=store, blobs=blobs, retry=FAST)
    log_id = log.create()
    for segment in range(1, segments):
        for value in range(3):
            log.append(log_id, SetCell(row=1, col=1, value=value))
        log.start_segment(log_id)
        store.complete_snapshot(log_id, segment, 0, "empty")  # stands in for the pipeline's build
    return log_id


class DeletingRunView:
    """The store as a run sees it while an earlier run deletes ``segment``: the entries below ``gone`` are
    no longer there (deletes go in num order, DynamoDBLogStore.delete_segment). ``die_deleting`` makes
    delete_segment fail the way a function timeout ends it."""

    def __init__(self, store: LogStore, segment: int, *, gone: int = 0, die_deleting: bool = False) -> None:
        self._store, self._segment, self._gone, self._die = store, segment, gone, die_deleting

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500) -> Iterator[Entry]:
        low = max(start, self._gone) if segment == self._segment else start
        return self._store.entries(log_id, segment, low, end, page_size=page_size)

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                       retired: int | None = None) -> int:
        if self._die:
            raise errors.TransientStoreError("the run died while deleting", outcome_unknown=True)
        return self._store.delete_segment(log_id, segment, archive, retired=retired)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_run_that_finds_entries_already_deleted_keeps_the_whole_archive(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Run A archived segment 0 and died deleting it; run B then reads only what A left. Were B to archive what
    it read, the archive (the only copy of the deleted entries) would lose them: B must keep A's archive and
    only finish the deletion."""
    store, blobs = stores
    log_id = make_log(store, blobs, segments=4)
    whole = list(store.entries(log_id, 0))
    with pytest.raises(errors.TransientStoreError):
        apply_retention(DeletingRunView(store, 0, die_deleting=True), blobs, log_id, KEEP_TWO)  # type: ignore[arg-type]

    done = apply_retention(DeletingRunView(store, 0, gone=2), blobs, log_id, KEEP_TWO)  # type: ignore[arg-type]

    assert [0, 1] == done
    assert whole == read_archive(blobs, archive_key(log_id, 0))
    assert [True, True, False, False] == [s.archive is not None for s in store.segments(log_id)]
    assert verify_log(store, log_id).ok


def test_a_segment_missing_entries_without_a_complete_archive_is_left_alone(
        stores: tuple[LogStore, BlobStore]) -> None:
    """Entries gone and no archive holding them: retention cannot make that right, so it deletes nothing more,
    writes no partial archive, and says what happened."""
    store, blobs = stores
    log_id = make_log(store, blobs, segments=3)
    left = list(store.entries(log_id, 0))[2:]

    with pytest.raises(errors.CorruptLogError, match="segment 0 misses entries"):
        apply_retention(DeletingRunView(store, 0, gone=2), blobs, log_id, KEEP_TWO)  # type: ignore[arg-type]

    assert [] == list(blobs.keys(archive_key(log_id, 0)))
    assert left == list(store.entries(log_id, 0))[2:]
    assert [None, None, None] == [s.archive for s in store.segments(log_id)]


class OtherFormMidway:
    """The bucket as one retention run sees it while a run of the other form runs whole beside it: the first
    call matching ``at`` (after it is made) runs ``other`` to its end, once."""

    def __init__(self, blobs: BlobStore, at: Callable[[str, str], bool], other: Callable[[], object]) -> None:
        self._blobs, self._at, self._other = blobs, at, other

    def _maybe(self, call: str, key: str) -> None:
        if self._at(call, key):
            self._at = lambda *_: False
            self._other()

    def put(self, key: str, data: bytes, **kw: Any) -> None:
        self._blobs.put(key, data, **kw)
        self._maybe("put", key)

    def keys(self, prefix: str) -> Iterator[str]:
        found = list(self._blobs.keys(prefix))
        self._maybe("keys", prefix)
        return iter(found)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._blobs, name)


def _log_with_objects(store: LogStore, blobs: BlobStore, segments: int) -> uuid.UUID:
    """Like make_log, but every body is large (an object) and every segment's first snapshot has a root object."""
    log = EventLog(store=store, blobs=blobs, retry=FAST, large_threshold=8)
    log_id = log.create()
    for segment in range(1, segments):
        for value in range(3):
            log.append(log_id, SetCell(row=1, col=1, value=f"a large enough body {value}"))
        log.start_segment(log_id)
        root = f"snapshots/{log_id}/{segment}/0/root"
        blobs.put(root, b"a root")
        store.complete_snapshot(log_id, segment, 0, root)
    return log_id


@pytest.mark.parametrize("first", ["archive", "delete"])
def test_an_archive_run_and_a_delete_run_on_one_segment_retire_it_in_one_form(
        stores: tuple[LogStore, BlobStore], first: str) -> None:
    """Seeds 356 and 170 of Scenario(retain_delete=True): the scheduled (archive) retention and `seglog log retain
    --delete` on the same log at once. The delete run removed the objects the archive run's archive names (an
    archived snapshot whose root is gone), or the archive run deleted the entries before the delete run read them
    for its bodies (bodies nothing references, kept for ever); the segment ended marked both A and D. Each run
    now claims the segment before removing anything: one form wins, whole."""
    store, blobs = stores
    log_id = _log_with_objects(store, blobs, segments=4)
    objects = {e.external for e in store.entries(log_id, 1) if e.external} | {f"snapshots/{log_id}/1/0/root"}
    assert len(objects) == 4

    def other(archive: bool) -> Callable[[], object]:
        return lambda: apply_retention(store, blobs, log_id, RetentionPolicy(keep=2, archive=archive))

    if first == "archive":  # the other run goes once this one's archive of segment 1 is written
        view = OtherFormMidway(blobs, lambda call, key: key == archive_key(log_id, 1), other(False))
    else:  # ... once this one listed segment 1's snapshot objects
        view = OtherFormMidway(blobs, lambda call, key: key == f"snapshots/{log_id}/1/", other(True))
    apply_retention(store, view, log_id, RetentionPolicy(keep=2, archive=first == "archive"))

    for segment in list(store.segments(log_id))[:2]:
        assert (segment.archive is None) != (segment.retired is None), segment
        assert not segment.retiring
    tombstone = list(store.segments(log_id))[1]
    if tombstone.archive is not None:  # archived: everything its archive names is still there
        named = {e.external for e in read_archive(blobs, tombstone.archive) if e.external}
        named |= {e.snapshot_root for e in read_archive(blobs, tombstone.archive)
                  if e.snapshot_root and e.snapshot_root.startswith("snapshots/")}
        assert named == objects
        assert all(blobs.get(key) for key in named)
    else:  # deleted: nothing of it is left behind, not even an archive
        left = [key for key in [*objects, archive_key(log_id, 1)] if _exists(blobs, key)]
        assert left == []


class LosesItsClaimAndDies:
    """The bucket as an archive run sees it when a delete run retires the same segment whole while this run's
    archive of it is on its way (the PUT lands after the deletion finished), and this run then dies — a function
    timeout — before it can remove the archive the lost claim leaves nothing to name."""

    def __init__(self, blobs: BlobStore, key: str, other: Callable[[], object]) -> None:
        self._blobs, self._key, self._other = blobs, key, other

    def put(self, key: str, data: bytes, **kw: Any) -> None:
        if key == self._key:
            self._other()
        self._blobs.put(key, data, **kw)

    def delete(self, key: str) -> None:
        if key == self._key:
            raise errors.TransientStoreError("the run died (function timeout)", outcome_unknown=True)
        self._blobs.delete(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._blobs, name)


def test_an_archive_left_by_a_run_that_lost_its_claim_and_died_is_reported_and_removed_by_the_next_run(
        stores: tuple[LogStore, BlobStore]) -> None:
    """The scheduled archive run and `seglog log retain --delete` on one segment: the deletion wins the claim, and
    the archive run dies before deleting the archive it wrote. Nothing names that archive (a segment marked D never
    gets an A), no lifecycle rule expires it, and it holds entries the operator deleted. `log verify --quiescent`
    reports it; the next run of either form removes it."""
    store, blobs = stores
    log_id = make_log(store, blobs, segments=4)
    key = archive_key(log_id, 0)

    def deleting() -> list[int]:
        return apply_retention(store, blobs, log_id, RetentionPolicy(keep=2, archive=False))

    with pytest.raises(errors.TransientStoreError, match="the run died"):
        apply_retention(store, LosesItsClaimAndDies(blobs, key, deleting), log_id, KEEP_TWO)  # type: ignore[arg-type]
    deleted = next(iter(store.segments(log_id)))
    assert (deleted.retired is not None, deleted.archive, _exists(blobs, key)) == (True, None, True)
    stray = [v for v in verify_log(store, log_id, blobs=blobs, quiescent=True).violations if v.invariant == "I6"]
    assert [(0, True)] == [(v.segment, key in v.message) for v in stray]

    assert [] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=10))  # nothing more to retire

    assert not _exists(blobs, key)
    assert [] == [v for v in verify_log(store, log_id, blobs=blobs, quiescent=True).violations if v.invariant == "I6"]


def test_a_deletion_cut_short_after_its_claim_is_finished_by_any_later_run(
        stores: tuple[LogStore, BlobStore]) -> None:
    """A `seglog log retain --delete` that dies after claiming segment 0 (its D and P are set) and deleting its
    objects, before its entries are gone: the segment reads as deleted from the claim on, and the next run
    finishes it whatever its own policy — here the scheduled archive form, keeping more segments than exist."""
    store, blobs = stores
    log_id = _log_with_objects(store, blobs, segments=4)
    bodies = [e.external for e in store.entries(log_id, 0) if e.external]
    assert len(bodies) == 3
    dying = DeletingRunView(store, segment=0, die_deleting=True)
    with pytest.raises(errors.TransientStoreError):
        apply_retention(dying, blobs, log_id, RetentionPolicy(keep=2, archive=False))  # type: ignore[arg-type]
    half = next(iter(store.segments(log_id)))
    assert half.retired is not None and half.archive is None and half.retiring
    assert len(list(store.entries(log_id, 0))) > 1  # its entries are still there

    assert [0] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=10, archive=True))
    done = next(iter(store.segments(log_id)))
    assert (done.retired, done.archive, done.retiring) == (half.retired, None, False)
    assert [EntryType.END_SEGMENT] == [e.type for e in store.entries(log_id, 0)]
    assert [key for key in bodies if _exists(blobs, key)] == []
    assert [1] == apply_retention(store, blobs, log_id, KEEP_TWO)  # and retention goes on as its policy says


def test_log_verify_names_a_segment_left_claimed_by_a_retention_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `seglog log retain --delete` died after claiming segment 0 (D and P set): `log verify` says so and what to
    do, in its text and its JSON, and counts no violation for it (the segment reads as deleted from the claim on,
    and a run may be at work on it). Once a later run finished it, nothing is named. (make_log's stand-in snapshot
    roots are I3 violations of their own, the same before and after.)"""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    log_id = make_log(store, blobs, segments=4)
    with pytest.raises(errors.TransientStoreError):
        apply_retention(DeletingRunView(store, segment=0, die_deleting=True), blobs, log_id,  # type: ignore[arg-type]
                        RetentionPolicy(keep=2, archive=False))
    backend = SimpleNamespace(store=store, blobs=blobs, pending=InMemoryPendingStore(), queue=InMemoryJobQueue())
    monkeypatch.setattr(log_commands, "settings", lambda _: SimpleNamespace(backend=lambda: backend))

    def verify(*options: str) -> str:
        return CliRunner().invoke(cli, ["log", "verify", str(log_id), *options], catch_exceptions=False).output

    text = verify()
    assert "segments [0] claimed by a retention run that has not finished (P)" in text
    assert "run `seglog log retain`" in text
    claimed = json.loads(verify("--json"))

    apply_retention(store, blobs, log_id, RetentionPolicy(keep=10))
    finished = json.loads(verify("--json"))
    assert ([0], []) == (claimed["claimed"], finished["claimed"])
    assert claimed["violations"] == finished["violations"]
    assert "claimed" not in verify()


def _exists(blobs: BlobStore, key: str) -> bool:
    try:
        blobs.get(key)
    except errors.BlobNotFoundError:
        return False
    return True


def test_retention_waits_for_close_not_creation(stores: tuple[LogStore, BlobStore]) -> None:
    """The retry horizon counts from when a segment was closed (the next segment's creation): a segment created
    long ago but closed a moment ago may hold an entry that landed a moment ago, whose client may still retry
    with a ``since`` inside it. Retiring it by its creation time is the dead end of issue 18."""
    store, blobs = stores
    now = [1_000.0]
    log = EventLog(store=store, blobs=blobs, retry=FAST, clock=lambda: now[0])
    log_id = log.create()  # segment 0 created at 1000
    log.append(log_id, SetCell(row=1, col=1, value=1))
    for segment, closed in enumerate((5_000.0, 5_100.0, 5_200.0), start=1):  # 0 closed at 5000, 1 at 5100, ...
        now[0] = closed
        log.start_segment(log_id)
        store.complete_snapshot(log_id, segment, 0, "empty")
    policy = RetentionPolicy(keep=2, min_age=1_000)

    assert [] == apply_retention(store, blobs, log_id, policy, clock=lambda: 5_999.0)  # created 4999 s ago
    assert [0] == apply_retention(store, blobs, log_id, policy, clock=lambda: 6_001.0)
    assert [1] == apply_retention(store, blobs, log_id, policy, clock=lambda: 6_101.0)


@pytest.mark.parametrize("archive", [True, False], ids=["archived", "deleted"])
def test_readers_step_over_tombstones(stores: tuple[LogStore, BlobStore], archive: bool) -> None:
    """A retired segment keeps its item and its EndSegment (the tombstone): a load still reads the two latest
    segments, an update from a retired position reloads, and a dump lists retained entries only (no lone
    EndSegment of a segment whose other entries are gone)."""
    store, blobs = stores
    log_id = make_log(store, blobs, segments=4)
    reader = LogReader(store=store)
    old = reader.load(log_id)
    old.segment, old.num = 0, 1

    assert [0, 1] == apply_retention(store, blobs, log_id, RetentionPolicy(keep=2, archive=archive))

    assert [EntryType.END_SEGMENT] == [e.type for e in store.entries(log_id, 0)]
    view = reader.load(log_id)
    reader.update(old)
    assert [(3, 0), (3, 0)] == [(v.snapshot.segment, v.snapshot.num) for v in (view, old)]
    assert [2, 3] == sorted({e.segment for e in reader.all_entries(log_id)})
    tombstones = [(s.num, s.archive is not None, s.retired is not None) for s in store.segments(log_id)][:2]
    assert [(0, archive, not archive), (1, archive, not archive)] == tombstones


def test_stop_ends_a_log_between_segments_and_a_second_call_finishes_it(
        stores: tuple[LogStore, BlobStore]) -> None:
    """The time budget is checked before each segment: what is done stays done, the rest waits."""
    store, blobs = stores
    log_id = make_log(store, blobs, segments=5)
    answers = iter([False, True])

    assert [0] == apply_retention(store, blobs, log_id, KEEP_TWO, stop=lambda: next(answers))
    assert [1, 2] == apply_retention(store, blobs, log_id, KEEP_TWO)


# ------------------------------------------------------------------------------------------------ every log
# retain_logs scans every log of the table, so it runs on stores of its own (the session's stack table holds
# other tests' logs); the stack path is the end-to-end test of the scheduled function (tests/emulator).


def stop_after(calls: int) -> Any:
    """A stop() that answers False ``calls`` times, then True."""
    count = iter(range(calls + 1))
    return lambda: next(count, calls) >= calls


def test_a_pass_that_runs_out_of_time_resumes_after_the_last_log_it_finished() -> None:
    """retain_logs stops when told, writes the cursor, and the next call starts after it: every log is reached
    however short each call is, and a complete pass clears the cursor."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    logs = [make_log(store, blobs, segments=3) for _ in range(3)]

    first = retain_logs(store, blobs, KEEP_TWO, stop=stop_after(3))  # log 1 done; stops before log 2's segment
    assert (1, 1, None, False) == (first.logs, first.segments, first.resumed_after, first.complete)
    second = retain_logs(store, blobs, KEEP_TWO, stop=lambda: False)

    assert (str(logs[0]), 2, 2, True) == (second.resumed_after, second.logs, second.segments, second.complete)
    assert [[True, False, False]] * 3 == [[s.archive is not None for s in store.segments(i)] for i in logs]
    assert b'{"after":null}' == blobs.get(CURSOR_KEY)


def test_one_failing_log_does_not_hold_up_the_others() -> None:
    """A log retention cannot fix is logged and counted; the pass goes on to the next log."""
    store, blobs = InMemoryLogStore(), InMemoryBlobStore()
    bad, good = make_log(store, blobs, segments=3), make_log(store, blobs, segments=3)
    view = DeletingRunView(store, 0, gone=1)  # segment 0 of every log lost entry 0, and no archive holds it

    class OnlyBadIsBroken(DeletingRunView):
        def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                    page_size: int = 500) -> Iterator[Entry]:
            source = view if log_id == bad else store
            return source.entries(log_id, segment, start, end, page_size=page_size)

    run = retain_logs(OnlyBadIsBroken(store, 0), blobs, KEEP_TWO, stop=lambda: False)  # type: ignore[arg-type]

    assert ([str(bad)], 2, 1, True) == (list(run.failed), run.logs, run.segments, run.complete)
    assert [True, False, False] == [s.archive is not None for s in store.segments(good)]
