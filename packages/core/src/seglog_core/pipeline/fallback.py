"""Manual fallbacks (seed 001 "Manual Fallback", DESIGN §5): reprocess from a date, rebuild from the log.

Both are safe while the pipeline runs: reprocess only adds jobs (duplicates are absorbed by the worker) and
removes the discardable tag only from bodies an entry references; rebuild builds a snapshot only under a claim of
its own in the worker's protocol (below), so it and a worker never cut one snapshot two ways, and completes
snapshots in log order.

Both respect retention (DESIGN §3, §5). Reprocess sends no job for a retired segment (archived, deleted, or half
deleted by a run that stopped). Rebuild folds the history that is left, segment by segment, and never writes a
state it does not know (issue 18: it folded from an empty sheet past deleted segments, and past a gap, and wrote
that over every completed snapshot under the same keys — the deleted history lost for loads too):

* A completed snapshot is never written over. Where the fold before it is known, its stored state is compared
  with the fold, a row at a time (memory of one chunk, as a build): equal, it is the base of the next; different,
  or unreadable by this code, it is reported and left as it is, and the fold is unknown from there. Only a
  completed snapshot whose objects are gone (the bucket lost them) is written again, with the fold's state: the
  state it was completed with.
* Where the history before a snapshot is gone (deleted segments, a gap in the middle, a segment half deleted,
  an archive lost), the fold starts again at the next completed snapshot whose stored state can be read, taken
  as given (``started_from``). Incomplete snapshots before it cannot be built and are reported (``unbuildable``);
  nothing is ever built from an empty sheet past retired history.
* An incomplete snapshot is built and completed only in a live segment (its entries in the table), and only
  under a claim of rebuild's own, as a worker's message would hold it (DESIGN §5 steps 2, 4-6; the pending upsert
  is the worker's own :class:`~seglog_core.pipeline.claims.PendingClaims`): rebuild creates the pending item or
  becomes its claimer (a claim untouched for the takeover timeout is taken over), claims it, pinning its chunk
  size unless a build in progress pinned one first, checkpoints under its increment after each chunk, and
  completes R, S, pending delete. A live claim of another builder is left to it, and so is every incomplete
  snapshot after it (they complete after it, I4): ``left``, their jobs complete them.

Why the claim, not a look at the pinned size (``Scenario(rebuild=True)``, seed 79): rebuild read the pending item,
found no checkpoint yet, and cut the snapshot with its own size; the job that had created the item was only
waiting for its turn, and claimed and cut it with another (a second code version) under the same chunk keys::

    job m1 (chunk 7)                    pending item 2/9             rebuild (chunk 4)
      create, Q=m1; defer (order)  -->  {Q: m1, A: false, S: -}
                                        {Q: m1, A: false, S: -}  <-- read: nothing pinned, cut at 4
      claim: A, X=1, S={7} ------->     {Q: m1, A: true, S: {7}}     chunks 0, 1 (cut at 4)
      chunk 0 (cut at 7) over rebuild's chunk 0                      root -> chunks 0, 1
      root -> chunk 0; R, S, delete                                  R, S, delete
                                        the last root wins: chunk 1 orphaned (I6), or a root whose chunk 0
                                        is the other cut's (I3)

Now both go through the same item, whose conditional writes let one builder at a time hold the claim::

    job m1 (chunk 7)                    pending item 2/9             rebuild (chunk 4, claimer "rebuild-...")
      create, Q=m1; defer (order)  -->  {Q: m1, M: t0}
                                        {Q: m1, M: t0}           <-- upsert: Q is m1's, M fresh: left to m1
      claim, cut at 7, complete                                      (and every incomplete snapshot after)
    or, rebuild first:
                                        {Q: rb, A: true, S: {4}} <-- create Q=rb; claim, pin 4; chunk, checkpoint
      upsert: Q is rebuild's, M fresh:
        hidden until the claim is stale                              ... R, S, delete
      back: R is set: step 1, done
    or, rebuild stalls past the takeover timeout (or dies) after its claim:
      take over, claim X+1, cut at 4 -> {Q: m1, X: 2, S: {4, n}}     checkpoint: X is 2, refused: stops, left

Only the holder of the highest increment gets past a checkpoint, and every cut follows the chunk size in ``S``,
pinned once by the first claim: a builder taken over writes at most one more chunk, the bytes its taker writes
under that key, and every root written references chunks of one cut. Rebuild's claim gets no
message; a job for the snapshot exists while it is incomplete (the router's, a reprocess, the sweep's), so a
claim rebuild leaves behind (it died) goes stale and that job takes it over, as after a worker's death.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import msgspec
import structlog

from seglog_core.errors import BlobNotFoundError, SnapshotCompleteError
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS, Checkpoint, PendingClaims
from seglog_core.ports import BlobStore, JobQueue, LogStore, PendingStore
from seglog_core.retention import deleting as _deleting
from seglog_core.retention import discard_late_snapshot, read_archive
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Body, Entry, EntryType, SnapshotJob
from seglog_core.snapshot import DEFAULT_CHUNK_CELLS, SnapshotBuild, SnapshotFormatError, iter_row_cells, stray_keys
from seglog_core.verify import finished_archive, is_whole_segment

log = structlog.get_logger("seglog.fallback")


@dataclass(kw_only=True)
class ReprocessReport:
    logs: int = 0
    entries: int = 0
    enqueued: list[tuple[str, int, int]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _entries_since(store: LogStore, log_id: uuid.UUID, since: float) -> Iterator[Entry]:
    segments = list(store.segments(log_id))
    for index, segment in enumerate(segments):
        following = segments[index + 1] if index + 1 < len(segments) else None
        if segment.archive is not None or segment.retired is not None:
            continue  # retired: a job would find nothing to build
        if following is not None and following.created < since:
            continue  # every entry of this segment predates the next segment's creation
        # Strong: a hole here means retention is at work (is_whole_segment), which a lagging read would fake.
        entries = list(store.entries(log_id, segment.num))
        if not is_whole_segment(entries, final=following is None):
            # A retention run is deleting it (or died doing so): its snapshots are retired history.
            log.info("segment being retired: no jobs for it", log_id=str(log_id), retiring_segment=segment.num)
            continue
        yield from (entry for entry in entries if entry.created >= since)


def reprocess(store: LogStore, blobs: BlobStore, queue: JobQueue, *, since: float,
              log_ids: list[uuid.UUID] | None = None) -> ReprocessReport:
    """Re-enqueue every incomplete Snapshot entry created at or after ``since`` and untag every large body
    such an entry references (what the stream router would have done); retired segments are left alone."""
    report = ReprocessReport()
    for log_id in log_ids if log_ids is not None else store.log_ids():
        report.logs += 1
        for entry in _entries_since(store, log_id, since):
            report.entries += 1
            if entry.type is EntryType.SNAPSHOT and entry.snapshot_root is None:
                queue.send(SnapshotJob(log=str(log_id), segment=entry.segment, entry=entry.num))
                report.enqueued.append((str(log_id), entry.segment, entry.num))
            if entry.external is not None and blobs.is_discardable(entry.external):
                blobs.keep(entry.external)
                report.kept.append(entry.external)
    log.info("reprocessed", logs=report.logs, enqueued=len(report.enqueued), kept=len(report.kept))
    return report


@dataclass(kw_only=True)
class RebuildReport:
    """What a rebuild did; (segment, entry) pairs name Snapshot entries."""

    #: Snapshots judged against the fold: compared, restored or built.
    snapshots: int = 0
    #: Incomplete snapshots built and completed.
    completed: list[tuple[int, int]] = field(default_factory=list)
    #: Completed snapshots whose objects were gone, written again with the fold's state.
    restored: list[tuple[int, int]] = field(default_factory=list)
    #: Completed snapshots taken as given where the history before them is gone: the fold starts again there.
    started_from: list[tuple[int, int]] = field(default_factory=list)
    #: Completed snapshots whose stored state differs from the fold, or that this code cannot read: left as they
    #: are (never written over), with the reason.
    refused: list[tuple[int, int, str]] = field(default_factory=list)
    #: Incomplete snapshots that cannot be built: the history before them is gone and no completed snapshot since.
    unbuildable: list[tuple[int, int]] = field(default_factory=list)
    #: Incomplete snapshots left to the pipeline: one a worker holds a live claim on, and every incomplete one
    #: after it (they complete after it, I4). Their jobs complete them.
    left: list[tuple[int, int]] = field(default_factory=list)
    #: Segments whose entries are gone (retention deleted them, or is deleting them; an archive is lost).
    gone: list[int] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing refused and nothing left unbuildable."""
        return not self.refused and not self.unbuildable

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "snapshots": self.snapshots, "completed": self.completed, "restored": self.restored,
                "started_from": self.started_from, "refused": self.refused, "unbuildable": self.unbuildable,
                "left": self.left, "gone": self.gone, "strays": self.strays}


@dataclass(frozen=True)
class _Span:
    """One segment of the history as rebuild reads it: ``entries`` None when they are gone; ``live`` when they are
    the table's own (only there may a snapshot be completed)."""

    num: int
    entries: list[Entry] | None
    live: bool = False


def _history(store: LogStore, blobs: BlobStore, log_id: uuid.UUID) -> Iterator[_Span]:
    segments = list(store.segments(log_id))
    expected = 0
    for index, segment in enumerate(segments):
        if segment.num != expected:
            yield _Span(expected, None)  # deleted by retention before tombstones: no item left
        expected = segment.num + 1
        if segment.retired is not None:
            yield _Span(segment.num, None)
        elif segment.archive is not None:
            try:
                yield _Span(segment.num, read_archive(blobs, segment.archive))
            except (BlobNotFoundError, msgspec.DecodeError):
                yield _Span(segment.num, None)  # `seglog log verify` reports the lost archive
        else:
            # Strong: rebuild compares completed snapshots with this fold, and reports a mismatch (DESIGN §5).
            entries = list(store.entries(log_id, segment.num))
            if is_whole_segment(entries, final=index == len(segments) - 1):
                yield _Span(segment.num, entries, live=True)
            else:  # half retired: the archive the run wrote first, if any
                yield _Span(segment.num, finished_archive(blobs, log_id, segment.num))


class _Lost(Exception):
    """A stored snapshot's objects are gone."""


def _stored_rows(blobs: BlobStore, root: str) -> Iterator[bytes]:
    try:
        for row in iter_row_cells(blobs, root):
            yield _ROW_ENCODER.encode(row)
    except BlobNotFoundError as exc:
        raise _Lost(str(exc)) from exc


_ROW_ENCODER = msgspec.msgpack.Encoder()


def _differs(fold: SnapshotBuild, blobs: BlobStore, root: str) -> bool:
    """Whether the stored snapshot at ``root`` holds another state than ``fold``, a row at a time. Rows compare as
    encoded, so 1, 1.0, True and "1" are four different cells, as Sheet equality says.

    Raises:
        _Lost: an object of the stored snapshot is gone.
        SnapshotFormatError: it cannot be read by this code.
    """
    folded = (_ROW_ENCODER.encode(row) for row in fold.rows())
    return any(a != b for a, b in itertools.zip_longest(folded, _stored_rows(blobs, root)))


def _readable(blobs: BlobStore, root: str) -> bool:
    try:
        for _ in _stored_rows(blobs, root):
            pass
    except (_Lost, SnapshotFormatError):
        return False
    return True


def rebuild(store: LogStore, blobs: BlobStore, pending: PendingStore, log_id: uuid.UUID, *,
            body_of: Callable[[Entry], Body], chunk_cells: int = DEFAULT_CHUNK_CELLS,
            takeover_after: int = DEFAULT_TAKEOVER_SECONDS, clock: Callable[[], float] = time.time,
            claimer: str | None = None) -> RebuildReport:
    """Recreate the snapshots of a log from the log itself, in order, completing those not yet complete; see the
    module for what it never does. Archived segments are read from their archives.

    Args:
        chunk_cells: the chunk size of a snapshot rebuild claims first (one whose build is in progress is cut as
            its first claim pinned).
        takeover_after: the worker's takeover timeout (the stack's SnapshotTakeoverSeconds): a claim untouched for
            longer is taken over, a fresher one is left to its worker.
        claimer: the id rebuild claims pending items under (default: ``rebuild-`` and a new uuid); no queue
            message has it.

    Objects under a snapshot's prefix that its root does not reference (a build with another chunk size) are
    reported, not deleted: a worker may be using them.
    """
    run = _Rebuild(store=store, blobs=blobs, pending=pending, body_of=body_of, chunk_cells=chunk_cells,
                   claims=PendingClaims(pending=pending, takeover_after=takeover_after), clock=clock,
                   claimer=_RebuildClaimer(claimer or f"rebuild-{uuid.uuid4()}"))
    report = run.report
    previous: str | None = None  # the root holding the fold so far; None: unknown, the history before is gone
    bodies: list[Body] = []
    for span in _history(store, blobs, log_id):
        if span.entries is None:
            report.gone.append(span.num)
            previous, bodies = None, []
            continue
        for entry in span.entries:
            if entry.type is EntryType.SNAPSHOT:
                moved, previous = _snapshot(run, entry, previous, bodies, live=span.live)
                if moved:
                    bodies = []
            elif entry.type is not EntryType.END_SEGMENT and previous is not None:
                try:
                    bodies.append(body_of(entry))
                except BlobNotFoundError:
                    # A large body gone: retention is deleting the segment we read a moment ago (seed 801's
                    # interleaving); its history is gone from here, as for a deleted segment. Otherwise a lost body.
                    if not (span.live and _deleting(store, log_id, span.num)):
                        raise
                    report.gone.append(span.num)
                    bodies, previous = [], None
                    break
    log.info("rebuilt", log_id=str(log_id), snapshots=report.snapshots, completed=len(report.completed),
             restored=len(report.restored), started_from=report.started_from, refused=report.refused,
             unbuildable=report.unbuildable, left=report.left, gone=report.gone)
    return report


@dataclass(frozen=True)
class _RebuildClaimer:
    """Rebuild as a claimer of pending items (:class:`~seglog_core.pipeline.worker.Claimer`)."""

    message_id: str


@dataclass(kw_only=True)
class _Rebuild:
    """One rebuild run of one log: the stores, the claim rules it shares with the worker, and its report."""

    store: LogStore
    blobs: BlobStore
    pending: PendingStore
    body_of: Callable[[Entry], Body]
    chunk_cells: int
    claims: PendingClaims
    clock: Callable[[], float]
    claimer: _RebuildClaimer
    report: RebuildReport = field(default_factory=RebuildReport)

    def build(self, entry: Entry, previous: str, bodies: Sequence[Body]) -> str | Entry | None:
        """Build and complete an incomplete snapshot the way the worker does, under a claim of rebuild's own (see
        the module). Returns its root; the entry as completed meanwhile by another builder; or None: left to the
        builder that holds its claim."""
        store, pending = self.store, self.pending
        log_id, segment, num = entry.log_id, entry.segment, entry.num
        increment = self._claim(entry)
        if not isinstance(increment, int):
            return increment
        resumed = Checkpoint.of(pending.get(log_id, segment, num))
        build = SnapshotBuild(self.blobs, log_id, segment, num, previous, bodies,
                              chunk_cells=resumed.chunk_cells or self.chunk_cells)
        # Step 5: after each chunk, checkpoint under our increment; a taker (we stalled past the takeover timeout)
        # raised it, and then finishes the snapshot in our place.
        for chunk in build.chunks(resumed.next_chunk):
            self.blobs.put(chunk.key, chunk.data)
            state = Checkpoint(next_chunk=chunk.index + 1, chunk_cells=build.chunk_cells).encode()
            if not pending.checkpoint(log_id, segment, num, increment=increment, state=state, now=int(self.clock())):
                return None
        key, data = build.root()
        self.blobs.put(key, data)
        # Step 6, in the worker's order: R, S, the pending item (a crash between two: the next job redoes the rest).
        store.set_snapshot_root(log_id, segment, num, key)
        store.advance_snapshot(log_id, segment, num)
        pending.delete(log_id, segment, num)
        return key

    def _claim(self, entry: Entry) -> int | Entry | None:
        """Steps 2 and 4 for rebuild: our increment; the entry, completed meanwhile; or None: another builder
        holds a live claim (or our claim's answer was lost: it goes stale and the snapshot's job takes it over)."""
        store, pending = self.store, self.pending
        log_id, segment, num = entry.log_id, entry.segment, entry.num
        now = int(self.clock())
        increment: int | None = None
        try:  # create the pending item, or become its claimer (a stale claim is taken over)
            if self.claims.upsert(self.claimer, log_id, segment, num, now):
                # Our chunk size is pinned, unless a build in progress pinned one first.
                increment = pending.claim(log_id, segment, num, self.claimer.message_id, now=now,
                                          takeover_after=self.claims.takeover_after,
                                          initial_state=Checkpoint(chunk_cells=self.chunk_cells).encode())
        except SnapshotCompleteError:
            pass  # completed since the log was read: the read below says so
        # Completed meanwhile? The pending item goes only after R is set, so one consistent read now tells (the
        # worker's guard, seed 742).
        current = store.get_entry(log_id, segment, num)
        if current is not None and current.snapshot_root is not None:
            if increment is not None:  # our item outlived the completion: its last steps, as the worker's step 1
                store.advance_snapshot(log_id, segment, num)
                pending.delete(log_id, segment, num)
            return current
        return increment


def _snapshot(run: _Rebuild, entry: Entry, previous: str | None, bodies: Sequence[Body], *,
              live: bool) -> tuple[bool, str | None]:
    """Judge, build or skip one Snapshot entry. Returns whether the fold moved to it (its bodies are folded in)
    and the root holding the fold from here (None: unknown)."""
    report, blobs = run.report, run.blobs
    log_id, at, root = entry.log_id, (entry.segment, entry.num), entry.snapshot_root
    if at == (0, 0) and root == EMPTY_SNAPSHOT_ROOT:
        return True, root  # the log's creation: the empty document, complete from the start
    if previous is None:  # the history before is gone: only a stored state can start the fold again
        if root is not None and _readable(blobs, root):
            report.started_from.append(at)
            return True, root
        if root is None:
            report.unbuildable.append(at)
        elif _deleting(run.store, log_id, entry.segment):
            report.gone.append(entry.segment)  # unreadable because retention is deleting it meanwhile (seed 1716)
        else:
            report.refused.append((*at, "its stored state cannot be read and the history before it is gone"))
        return True, None
    if root is None and not live:
        return False, previous  # in retired history: it can never complete, and the fold goes on past it
    if root is None:
        if report.left:  # an earlier one is left to its job: this one completes after it (I4), by its own job
            report.left.append(at)
            return False, previous
        built = run.build(entry, previous, bodies)
        if built is None:
            report.left.append(at)
            return False, previous  # the fold goes on past it in memory, as past a snapshot in retired history
        if isinstance(built, str):
            report.snapshots += 1
            report.completed.append(at)
            report.strays += stray_keys(blobs, built)
            return True, built
        root = built.snapshot_root  # completed by another builder meanwhile: judged as every completed one
    report.snapshots += 1
    fold = SnapshotBuild(blobs, log_id, entry.segment, entry.num, previous, bodies, chunk_cells=run.chunk_cells)
    if root is not None:
        try:
            if _differs(fold, blobs, root):
                report.refused.append((*at, "its stored state differs from the fold of the log: left as it is"))
                return True, None
            report.strays += stray_keys(blobs, root)
            return True, root
        except SnapshotFormatError as exc:
            report.refused.append((*at, f"this code cannot read its stored state ({exc}): left as it is"))
            return True, None
        except _Lost:
            if _deleting(run.store, log_id, entry.segment):
                report.gone.append(entry.segment)  # retention is deleting it (seed 801): its objects go with it
                return True, None  # (a later snapshot in a kept segment starts the fold again)
            report.restored.append(at)  # its objects are gone: write them again with the state it was completed with
    built = fold.run()
    if discard_late_snapshot(run.store, blobs, log_id, entry.segment, entry.num):
        # Retention claimed the segment for deletion while we wrote (seed 801): what we wrote is gone again.
        report.restored.remove(at)
        report.gone.append(entry.segment)
        return True, None
    report.strays += stray_keys(blobs, built)
    return True, built
