"""Retention: delete or archive segments older than a policy allows, never the two latest (DESIGN §3).

An archive is the segment's entries as one msgpack object at ``archive/{log}/{segment}``; the segment item
stays, with ``A`` pointing at it, so history remains readable and verify folds it (seglog_core.verify).
Deleting a segment takes what only its entries reference with it: its snapshots' objects and its large bodies.

Retired segments leave a tombstone: the segment item (``A`` = the archive key, or ``D`` = when it was deleted)
and the segment's EndSegment entry stay; only the other entries go. A reader paging forward through a segment
while it is retired (idempotence._scan) then still meets the EndSegment after a hole in the nums and knows the
segment was retired under it; with the EndSegment gone it would take the last entry it read for the log's tail
and write into retired history. Segments an older version deleted have no item at all (a segment num below the
oldest item is deleted).

Claim first (seed 356 and seeds 96 and 170 of ``Scenario(retain_delete=True)``): an archive run and a delete run
on the same segment used to overlap — the delete run removed the snapshots' objects and large bodies the other
run's archive still names (an archived snapshot whose root is gone), or the archive run deleted the entries before
the delete run read them for the bodies to delete (bodies kept that nothing references, I6). So before removing
anything, a run *claims* the segment with one conditional write: it sets its form's mark (``A`` once the archive
is written and complete, else ``D``) and ``P`` (retiring), only while the item bears no mark of the other form.
Of two runs in different forms exactly one wins; the other leaves the segment alone (an archive it wrote for a
segment the delete form won is deleted: nothing will ever name it; an archive run that died before deleting it left
it to the next run, see ``STRAY_ARCHIVE_SECONDS``). From the claim on, readers, verify, rebuild
and late jobs treat the segment as retired — archived (its archive is complete before the mark) or deleted —
so nothing reads what is then removed: the delete form's objects (found through its entries), then the entries
but the EndSegment; ``P`` is cleared last. A run that dies after the claim leaves ``P``, and every later run
finishes such a segment in its claimed form whatever its own policy (the policy that chose it may be gone: a
``--delete`` by hand, a different keep), so a half-removed segment never stays.

The retry horizon (``min_age``, template RetentionMinAgeSeconds): a segment is retired only once it was *closed*
more than ``min_age`` ago — closed when the next segment was created (its ``C``: the same transaction wrote the
EndSegment) — never by its own creation time, which says nothing about when its last entry landed. Every entry
lands before its segment's EndSegment, so an entry that landed at ``t`` is in the retained log until at least
``t + min_age``: the idempotent append's retry protocol builds on that (seglog_core.idempotence, "Retired
positions"). Rule checked by tests/test_retention.py::test_retention_waits_for_close_not_creation.

Runs may overlap (a scheduled run still going when the next one starts, or ``seglog log retain`` beside it) and
may die half-way (a function timeout). Either way a later reader of a segment can find some of its entries
already deleted, and an archive written from what it read would overwrite the whole archive with a part. So an
archive is written only from a *complete* segment (nums 0..n without a hole, ending with its EndSegment, which
every segment but the latest has, DESIGN §6 I1); a run that finds entries missing finishes the deletion only
when the archive already stored holds the complete segment.

Due segments (issue 35: the hourly run used to Scan the Segments table and Query every log, due or not: at 10,000
idle sheets about 7 million Queries a month). The scheduled run, :func:`retain_due`, reads the Segments table's
sparse index ``Due`` (partition key ``U``, sort key ``C``, keys only) instead:

1. Closing a segment marks the new segment's item ``U`` = 1 in the transaction that writes the EndSegment
   (LogStore.new_segment): its ``C`` is the old segment's close. No close goes unmarked, and the mark costs no
   request of its own.
2. A run lists the marks with ``C <= now - min_age`` (LogStore.due_segments) and looks at each listed log once:
   :func:`apply_retention`, which reads the log's segments consistently and decides from them alone.
3. It clears a log's marks (``REMOVE U``) only once the look left the log *settled*: not stopped, not failed, no
   claim left open (its own or another run's), no deletion claimed within STRAY_ARCHIVE_SECONDS. Otherwise the
   marks stay and the next run looks again.
4. A claim marks its own segment due too (``SET P, U``, LogStore.mark_retiring), a clear leaves a claimed item's
   mark (``attribute_not_exists(P)``), and a settled look clears the marks of the segments it finished. So a claim
   left by a run that died is listed whatever a concurrent run cleared (seed 5783: two scheduled runs on one log;
   the first retired segment 1 and cleared the log's marks, the second claimed segment 1 again and died, and no
   later run looked at the log)::

    close of n-1 (new_segment)     a run at C_n + min_age or later      every later run
      EndSegment into n-1            Query Due: C <= now - min_age        Query Due: (L, n) is not there
      item n: U = 1, C = C_n  --->   (L, n): apply_retention(L)           L costs nothing until
                                     settled: REMOVE U on item n          its next close

Why nothing retirable goes unlooked-at: segment ``s`` is retired once (a) ``keep`` segments follow it and (b) it
closed ``min_age`` ago. Let ``m`` be the segment whose creation made (a) true; ``s`` closed no later than ``C_m``,
so both hold from ``C_m + min_age``, and item ``m`` stays marked until a settled look at or after that time, which
retires ``s``. A settled look leaves nothing the policy could retire before the log's next close. So ``s`` goes at
``C_m + min_age``, up to ``min_age`` later than a pass over every log retired it (at ``C_(s+1) + min_age`` once
``m`` existed): history is kept longer, never shorter; the simulator's check ``retention_behind`` holds the
scheduled run to that time.

What rests on what: no safety property rests on the index; it only names logs to look at, and every decision
reads the log as :func:`apply_retention` always did. So the index is read eventually consistent (a global
secondary index has no other read): a stale page costs a look at a log already cleared, or leaves a close of the
last seconds to the next run. Liveness rests on steps 1 and 3 (mutants ``due_mark_on_close`` and
``due_cleared_unsettled``). Segments closed before the index existed carry no mark, nor do those a lowered
RetentionKeep makes retirable: one pass over every log finds them (:func:`retain_logs`, the function's event
``{"pass": "all"}``). Cost: a run with nothing due is one Query (0.5 RRU) whatever the number of logs; a close adds
two index writes (the mark, its removal) against the segment's SegmentEntries entries.

Why no TTL (issue 35: DynamoDB's TTL deletes for free where a retired entry costs a paid delete, 1 WRU). TTL
deletes an item once its TTL attribute (a Number, epoch s) is past, "typically within two days", and reads return
it until then. An entry may go only once it is out of the kept segments and past the retry horizon, archived when
the policy archives, and neither a Snapshot entry, nor an EndSegment (the tombstone), nor after the latest completed
snapshot.

1. TTL reads the item alone. An entry gets its expiry either in its append's put (free), or by a later write to it
   (an UpdateItem: 1 WRU for an item under 1 KB, a delete's price).
2. At append none of those conditions is known: whether the segment ever closes depends on appends that may never
   come. An idle sheet's tail (the entries after its last snapshot, in a latest segment retention never touches)
   is its only copy for ever. With a TTL at append, however far its horizon ``T``, it vanishes between ``t + T``
   and ``t + T`` + two days: tests/test_retention_ttl.py runs that counterexample on the simulated DynamoDB with
   TTL modelled (seglog_sim.aws.dynamodb_ttl), the retention run going every day, and three acknowledged edits
   are gone after a year (I2).
3. So a TTL at append is safe only with a guard that writes every entry still needed before it expires (extend or
   remove its TTL, 1 WRU each), and the day the guard stops or falls behind (a disabled schedule, a log whose
   retention keeps failing, a stack reduced to its retained tables) is a loss, not a bill. A stopped schedule
   costs today only the storage it keeps.
4. Setting the TTL when the segment is retired instead of deleting costs the same 1 WRU, and the entries would go
   at TTL's pace, not between the claim and ``P``'s clearing where readers expect the holes (the scan of
   seglog_core.idempotence, steps 4-5).

So 0 WRU per retired entry is not safe, and the cheapest safe figure is the paid delete: 1 WRU per retired entry
(bench_retention measures 1.004 with the segment's own writes), after the archive is written and the claim taken.

:func:`retain_logs` applies a policy to every log, a bounded amount of work per call, and remembers where it
stopped (``retention/cursor`` in the bucket) so the next call goes on from there.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import msgspec
import structlog

from seglog_core import errors
from seglog_core.ports import BlobStore, LogStore
from seglog_core.schema import Entry, EntryType, Segment

log = structlog.get_logger("seglog.retention")

_ARCHIVE_ENCODER = msgspec.msgpack.Encoder()
_ARCHIVE_DECODER = msgspec.msgpack.Decoder(list[Entry])

#: Load reads the two latest segments; they are never removed. Keeping two is also what keeps every pending
#: snapshot buildable: a segment is closed only once it has a completed snapshot, so the latest completed
#: snapshot (where every build starts folding) is always in one of the two latest segments.
MIN_KEEP: Final = 2
#: Where :func:`retain_logs` keeps the last log it finished: ``{"after": "<log id>"}``.
CURSOR_KEY: Final = "retention/cursor"
#: How long after a deletion claimed a segment every run still looks for an archive of it. An archive run that read
#: the segment whole before the claim writes its archive, loses the claim and deletes the archive (nothing will ever
#: name it) — unless it dies in between (a function timeout, a kill), or its put lands after the deletion finished.
#: Either happens while that run lives: at most the function's timeout (15 minutes on Lambda), or as long as a
#: ``seglog log retain`` runs. A day covers both; a run stalled longer leaves its archive to ``log verify``.
STRAY_ARCHIVE_SECONDS: Final = 86_400.0


def archive_prefix(log_id: uuid.UUID) -> str:
    """Where a log's archives are kept: one object per archived segment under it."""
    return f"archive/{log_id}/"


def archive_key(log_id: uuid.UUID, segment: int) -> str:
    return f"{archive_prefix(log_id)}{segment}"


def read_archive(blobs: BlobStore, key: str) -> list[Entry]:
    """The entries of an archived segment."""
    return _ARCHIVE_DECODER.decode(blobs.get(key))


def is_complete_segment(entries: list[Entry]) -> bool:
    """Whether ``entries`` are a whole closed segment: nums 0..n in order, the last an EndSegment."""
    return (bool(entries) and entries[-1].type is EntryType.END_SEGMENT
            and [e.num for e in entries] == list(range(len(entries))))


def is_retired(segment: Segment) -> bool:
    """Whether retention archived or deleted the segment's entries (its item is then a tombstone)."""
    return segment.archive is not None or segment.retired is not None


def deleting(store: LogStore, log_id: uuid.UUID, segment: int) -> bool:
    """Whether retention deleted ``segment`` or claimed it for deletion (``D``; its item gone: the legacy form).
    Its snapshots' objects are then retention's to delete, and nothing may write them again. One consistent
    Segments Query, made only after a writer lost its claim or wrote late (see :func:`discard_late_snapshot`)."""
    for found in store.segments(log_id):
        if found.num == segment:
            return found.retired is not None
    return True


def discard_late_snapshot(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: int, entry: int) -> bool:
    """Delete the objects of snapshot ``segment``/``entry`` if retention deleted its segment or claimed it for
    deletion; whether it did. For a writer that put snapshot objects and then found its claim gone or its work
    done by another: retention's run may have listed the segment's objects before our puts, and would leave
    what we wrote orphaned (I6). Either its listing came after our puts and deleted them, or our look (after
    the puts) sees its claim (made before its listing) and we delete them ourselves. Found by the simulator:
    a rebuild writing while the deletion ran (seed 801), a worker stalled 45 s before a chunk's put while
    another completed the snapshot and retention deleted the segment (seed 9345)."""
    if not deleting(store, log_id, segment):
        return False
    _delete_all(blobs, f"snapshots/{log_id}/{segment}/{entry}/")
    return True


def _delete_all(blobs: BlobStore, prefix: str) -> int:
    """Delete every object under ``prefix``; how many there were."""
    keys = list(blobs.keys(prefix))
    for key in keys:
        blobs.delete(key)
    return len(keys)


@dataclass(frozen=True, kw_only=True)
class RetentionPolicy:
    """Keep the ``keep`` latest segments and any closed less than ``min_age`` seconds ago (the retry horizon);
    archive or delete the rest."""

    keep: int = 3
    min_age: float = 0.0
    archive: bool = True


def _never() -> bool:
    return False


def apply_retention(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, policy: RetentionPolicy,
                    *, clock: Callable[[], float] = time.time, stop: Callable[[], bool] = _never) -> list[int]:
    """Apply a policy to one log; returns the segment nums archived or deleted. Safe to run again, and beside
    another run.

    Args:
        stop: asked before each segment; True ends the call there (what is done stays done).

    Raises:
        CorruptLogError: a segment has lost entries and no complete archive holds them (see the module).
        StoreError: from the stores.
    """
    return _apply(store, blobs, log_id, policy, clock=clock, stop=stop)[0]


def _apply(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, policy: RetentionPolicy, *,
           clock: Callable[[], float], stop: Callable[[], bool]) -> tuple[list[int], bool]:
    """:func:`apply_retention`, and whether the log is *settled*: nothing is left for a later run to do or watch
    until a new segment is created (no claim left unfinished, by this run or another; no deletion claimed in the
    last STRAY_ARCHIVE_SECONDS; the call was not stopped)."""
    segments = list(store.segments(log_id))
    settled = True
    keep = max(policy.keep, MIN_KEEP)
    done: list[int] = []
    # A run cut short after its claim left the mark and P: finish it in the form it was claimed, whatever this
    # run's policy (see the module, "Claim first"); the policy chose the segment once already.
    for segment in segments:
        if segment.retiring:
            if stop():
                settled = False
                continue
            _finish(store, blobs, log_id, segment)
            done.append(segment.num)
    for segment in segments:
        # A deletion claimed less than STRAY_ARCHIVE_SECONDS ago: an archive run that lost its claim may have died
        # before removing the archive it wrote, which nothing will ever name.
        if (segment.retired is not None and not segment.retiring
                and clock() - segment.retired < STRAY_ARCHIVE_SECONDS):
            settled = False  # watched until the day is over (see "Due segments")
            if not stop():
                _remove_stray_archive(blobs, log_id, segment.num)
    for segment, following in itertools.pairwise(segments[: max(0, len(segments) - keep) + 1]):
        # ``following.created`` is when this segment was closed (see the module: the retry horizon).
        if is_retired(segment) or clock() - following.created < policy.min_age:
            continue
        if stop():
            settled = False
            break
        key = _archive(store, blobs, log_id, segment.num) if policy.archive else None
        if policy.archive and key is None:
            settled = False
            continue  # another run claimed it for deletion meanwhile
        now = int(clock())
        if not store.mark_retiring(log_id, segment.num, archive=key, retired=now):
            if key is not None:
                blobs.delete(key)  # nothing will ever name it: a segment marked D never gets an A
            log.info("segment claimed by another retention run in the other form: left to it", log_id=str(log_id),
                     segment=segment.num, form="archive" if policy.archive else "delete")
            settled = False  # that run may die before it finishes: looked at again
            continue
        _finish(store, blobs, log_id, msgspec.structs.replace(segment, archive=key, retired=None if key else now))
        done.append(segment.num)
    return done, settled


def _finish(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: Segment) -> None:
    """Remove what retention retires from a segment it claimed: for the delete form its objects first (they are
    found through its entries), then its entries but the EndSegment; clears the claim's P last."""
    if segment.archive is None:
        _delete_objects(store, blobs, log_id, segment.num)
    count = store.delete_segment(log_id, segment.num, archive=segment.archive, retired=segment.retired)
    if segment.archive is None:
        _remove_late_snapshot_objects(blobs, log_id, segment.num)
    log.info("segment retired", log_id=str(log_id), segment=segment.num, entries=count, archive=segment.archive)


def _remove_late_snapshot_objects(blobs: BlobStore, log_id: uuid.UUID, segment: int) -> None:
    """A second look at the segment's snapshot objects, once its entries are gone (one LIST a deleted segment). A
    builder that stalled before a put while another completed its snapshot may put a chunk or the root after our
    first listing: a chunk's put is followed by a checkpoint that fails and a look that sees our claim, so it
    deletes its own (discard_late_snapshot); a root's put is followed by setting the entry's R, which fails only
    once the entry is deleted. A root put before that is found here; one after it, by the builder (seed 9345)."""
    late = _delete_all(blobs, f"snapshots/{log_id}/{segment}/")
    if late:
        log.warning("late snapshot objects of a deleted segment removed", log_id=str(log_id), segment=segment,
                    objects=late)


def _remove_stray_archive(blobs: BlobStore, log_id: uuid.UUID, segment: int) -> None:
    """Delete the archive of a segment retention deleted, if there is one. Listed first: in the versioned bucket a
    simple DELETE adds a delete marker (S3 User Guide, "Working with delete markers"), which every run of the day
    would otherwise add to a key nothing ever wrote."""
    key = archive_key(log_id, segment)
    if key in blobs.keys(key):
        blobs.delete(key)
        log.warning("archive of a deleted segment removed: an archive run lost its claim and died before removing it",
                    log_id=str(log_id), segment=segment, key=key)


def _archive(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: int) -> str | None:
    """Write the segment's archive if the segment is complete, else check the stored one is; returns its key
    (None: another run claimed the segment for deletion after this run listed it)."""
    key = archive_key(log_id, segment)
    entries = list(store.entries(log_id, segment))
    if is_complete_segment(entries):
        # Written (and readable) before any entry is deleted: a crash in between loses nothing, and every
        # writer writes the same bytes.
        blobs.put(key, _ARCHIVE_ENCODER.encode(entries))
        return key
    # Another run has deleted some entries: it died after writing the archive, or runs right now.
    try:
        archived = read_archive(blobs, key)
    except errors.BlobNotFoundError:
        archived = []
    if not is_complete_segment(archived):
        if any(s.num == segment and s.retired is not None for s in store.segments(log_id)):
            return None  # a delete run claimed it after this run listed it, and is removing its entries
        raise errors.CorruptLogError(
            log_id, f"segment {segment} misses entries ({len(entries)} left) and {key} does not hold the whole "
                    "segment; nothing more was deleted. If a `seglog log retain --delete` was interrupted, run it "
                    "again; otherwise restore the segment from a backup")
    log.info("segment already archived by another run: finishing its deletion", log_id=str(log_id),
             segment=segment, entries_left=len(entries))
    return key


def _delete_objects(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, segment: int) -> None:
    """Delete the objects only this segment's entries reference (its snapshots', its large bodies, an archive an
    archive run wrote before losing the claim), before the entries themselves: a run that dies in between leaves
    the claim's P, so a later run deletes again, never objects that nothing references and no lifecycle rule
    expires (DESIGN §6 I6). Nothing else reads them: every build starts from a snapshot in the two latest segments
    (see MIN_KEEP), and readers leave a segment marked D alone from the claim on."""
    blobs.delete(archive_key(log_id, segment))
    _delete_all(blobs, f"snapshots/{log_id}/{segment}/")
    for entry in store.entries(log_id, segment):
        if entry.external is not None:
            blobs.delete(entry.external)


# ------------------------------------------------------------------------------------------------ every log


@dataclass(kw_only=True)
class RetentionRun:
    """What one :func:`retain_logs` call did."""

    #: Logs whose retention ran to their end in this call.
    logs: int = 0
    #: Segments archived (or deleted) in this call.
    segments: int = 0
    #: Logs whose retention failed, with the error (they are tried again on the next pass).
    failed: dict[str, str] = field(default_factory=dict)
    #: Where this call began: after this log id (None: at the first log).
    resumed_after: str | None = None
    #: True when the pass reached the last log (the next call starts again from the first).
    complete: bool = False


def retain_logs(store: LogStore, blobs: BlobStore, policy: RetentionPolicy, *, stop: Callable[[], bool],
                clock: Callable[[], float] = time.time) -> RetentionRun:
    """Apply ``policy`` to every log, from where the last call stopped, until ``stop()`` says so.

    A log interrupted half-way is done again from its start next time (each segment is retired once: the rest
    skip it). A log whose retention fails is logged and skipped, so one bad log does not hold up the others.
    """
    after = _read_cursor(blobs)
    run = RetentionRun(resumed_after=None if after is None else str(after))
    last = after
    ids = store.log_ids()
    if after is not None:
        for log_id in ids:  # the scan's order is stable: skip to just past the cursor
            if log_id == after:
                break
        # A cursor log that is gone (the scan ended without it) ends this pass with nothing to do.
    for log_id in ids:
        if stop():
            _move_cursor(blobs, after, last)
            return run
        with structlog.contextvars.bound_contextvars(log_id=str(log_id)):
            try:
                retired = apply_retention(store, blobs, log_id, policy, clock=clock, stop=stop)
            except errors.SeglogError as exc:
                log.error("retention of a log failed: it is tried again on the next pass", error=str(exc),
                          error_type=type(exc).__name__)
                run.failed[str(log_id)] = str(exc)
                retired = []
        run.segments += len(retired)
        if stop():  # maybe mid-log: this log is done again next time
            _move_cursor(blobs, after, last)
            return run
        run.logs += 1
        last = log_id
    run.complete = True
    _move_cursor(blobs, after, None)
    return run


def retain_due(store: LogStore, blobs: BlobStore, policy: RetentionPolicy, *, stop: Callable[[], bool],
               clock: Callable[[], float] = time.time) -> RetentionRun:
    """Apply ``policy`` to the logs with a segment due (see the module, "Due segments"), until ``stop()`` says so.

    Each due log is looked at once per call; its due segments are cleared only once the look left it settled, so
    a log cut short, failed, or with a claim still open is listed again by the next call. Reads grow with the due
    segments, not with the logs: with nothing due a call is one Query of the index.
    """
    run = RetentionRun()
    settled: dict[uuid.UUID, bool] = {}
    for log_id, segment in store.due_segments(int(clock() - policy.min_age)):
        if stop():
            return run
        if log_id not in settled:
            with structlog.contextvars.bound_contextvars(log_id=str(log_id)):
                try:
                    retired, settled[log_id] = _apply(store, blobs, log_id, policy, clock=clock, stop=stop)
                except errors.SeglogError as exc:
                    log.error("retention of a log failed: it stays due and is tried again on the next run",
                              error=str(exc), error_type=type(exc).__name__, segment=segment)
                    run.failed[str(log_id)] = str(exc)
                    settled[log_id], retired = False, []
            run.segments += len(retired)
            run.logs += 1
            if settled[log_id]:
                # A claim marks its own segment due (LogStore.mark_retiring): those this look finished are done.
                for num in retired:
                    store.clear_due(log_id, num)
        if settled[log_id]:
            store.clear_due(log_id, segment)
    run.complete = True
    return run


def _read_cursor(blobs: BlobStore) -> uuid.UUID | None:
    try:
        data = msgspec.json.decode(blobs.get(CURSOR_KEY))
    except errors.BlobNotFoundError:
        return None
    except msgspec.DecodeError:
        log.warning("retention cursor unreadable: starting from the first log", key=CURSOR_KEY)
        return None
    after = data.get("after") if isinstance(data, dict) else None
    try:
        return uuid.UUID(after) if isinstance(after, str) else None
    except ValueError:
        log.warning("retention cursor names no log id: starting from the first log", key=CURSOR_KEY, after=after)
        return None


def _move_cursor(blobs: BlobStore, was: uuid.UUID | None, after: uuid.UUID | None) -> None:
    """Store where the next call starts (no write when that is where this one started)."""
    if after == was:
        return
    blobs.put(CURSOR_KEY, msgspec.json.encode({"after": None if after is None else str(after)}),
              content_type="application/json")
