"""Checking a log against the invariants of DESIGN §6.

Independent of the write path on purpose: it reads every stored entry and judges the raw sequence; snapshot
states are recomputed with the document model's plain fold, not the worker's streaming build.

I1 gap-free segments, I2 entry ids once, I3 snapshot equals fold, I4 order of completion, I5 nothing pending
(reported; a violation only when ``quiescent`` is asked for), I6 no orphaned or wrongly tagged objects.

After retention (DESIGN §3) a segment is archived (its item keeps ``A``, its entries live in one object of the
bucket) or deleted. Verify reads archived segments from their archives and judges them like stored ones: I1
checks their shape too, I2 counts their entry ids, and the I3 fold goes through them, so every retained
snapshot is checked against the whole history from the log's creation rather than trusted. An archive costs
one GET, and I2 must read it anyway (an acknowledged entry may live only there). Where the history is gone —
segments deleted by retention, an archive missing or unreadable (an I1 violation of its own), or archives with
no bucket given to read them — the fold starts again from the next completed snapshot, whose stored state is
taken as given (listed in ``unchecked``), and acknowledged ids not found are listed in ``unaccounted`` instead
of reported missing: they may have lived in what is gone.

Every retention pattern is judged (issue 18: archiving older segments and deleting later ones gave 11 false
I1/I2/I3 violations on a healthy log). Retention retires segments oldest first, so what it leaves is a *retired
prefix*: every segment before the first live one is archived (``A``), deleted (a tombstone: ``D`` and its
EndSegment; or, before tombstones, no item at all — a missing num), or half retired by a run that died (no mark
yet, entries missing: read from its archive when one holds the whole segment, as retention's own completeness
rule does, else listed in ``retiring``). A missing num or a segment with entries missing *after* a live segment,
or in the two latest segments, is still an I1 violation. The I3 fold restarts after every gone segment, and
acknowledged ids are declared missing only when the whole history from segment 0 was read.

A segment retention claimed (``P``) reads as retired in the form it was claimed; verify lists it in ``claimed``
(a run works on it now, or died after its claim: the next run finishes it), a note rather than a violation, as
retention is no part of the pipeline ``quiescent`` speaks of. An archive of a segment retention deleted is an I6
orphan (judged when ``quiescent``: an archive run that lost its claim to the deletion removes it a moment later).
"""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from seglog_core.errors import BlobNotFoundError, SeglogError
from seglog_core.ports import BlobStore, LogStore, PendingStore
from seglog_core.retention import (
    MIN_KEEP,
    STRAY_ARCHIVE_SECONDS,
    archive_key,
    archive_prefix,
    is_complete_segment,
    read_archive,
)
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Entry, EntryType, Segment
from seglog_core.sheet import Sheet
from seglog_core.snapshot import read_sheet, snapshot_keys
from seglog_core.violations import Violation


@dataclass(kw_only=True)
class VerifyReport:
    log_id: uuid.UUID
    entries: int = 0
    segments: int = 0
    violations: list[Violation] = field(default_factory=list)
    snapshots: int = 0
    completed: int = 0
    pending: list[dict[str, object]] = field(default_factory=list)
    objects: int = 0
    #: Entries read from archives (counted in ``entries`` too).
    archived: int = 0
    #: (segment, entry) of completed snapshots the I3 fold started from unchecked: the history before is gone.
    unchecked: list[tuple[int, int]] = field(default_factory=list)
    #: Acknowledged entry ids not found where part of the history is gone (they may have been in it).
    unaccounted: list[uuid.UUID] = field(default_factory=list)
    #: Segments a retention run left half deleted (entries gone, not yet marked, no whole archive): run it again.
    retiring: list[int] = field(default_factory=list)
    #: Segments retention claimed (``P``) and has not finished retiring: a run works on them, or died after its
    #: claim. They read as retired already; any later run finishes them, whatever its policy.
    claimed: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        return {"log_id": str(self.log_id), "ok": self.ok, "violations": [v.to_dict() for v in self.violations],
                "entries": self.entries, "segments": self.segments, "snapshots": self.snapshots,
                "completed_snapshots": self.completed, "pending": self.pending, "objects": self.objects,
                "archived_entries": self.archived, "unchecked_snapshots": [list(u) for u in self.unchecked],
                "unaccounted": [str(u) for u in self.unaccounted], "retiring": self.retiring,
                "claimed": self.claimed}


@dataclass(frozen=True)
class _Read:
    """One segment as verify read it: ``entries`` is None when they are gone (retired by deletion, an archive that
    cannot be read); ``leftover`` holds what a half-deleted segment still stores (its ids count for I2)."""

    segment: Segment
    entries: list[Entry] | None
    leftover: tuple[Entry, ...] = ()


def verify_log(store: LogStore, log_id: uuid.UUID, *, acknowledged: Iterable[uuid.UUID] = (),
               blobs: BlobStore | None = None, pending: PendingStore | None = None,
               quiescent: bool = False) -> VerifyReport:
    """Check the invariants of DESIGN §6.

    Args:
        acknowledged: entry ids that clients were told were appended; each must be in the log exactly once.
        blobs: the bucket; with it, I3 (every completed snapshot equals the fold) and I6 (objects) are checked.
        pending: the pending-snapshots table; its items for this log are reported (I5).
        quiescent: the pipeline should be idle: any incomplete Snapshot entry or pending item is a violation.
    """
    report = VerifyReport(log_id=log_id)
    _verify(report, store, blobs, pending, acknowledged, quiescent=quiescent)
    for violation in report.violations:
        violation.log_id = str(log_id)
    return report


def _verify(report: VerifyReport, store: LogStore, blobs: BlobStore | None, pending: PendingStore | None,
            acknowledged: Iterable[uuid.UUID], *, quiescent: bool) -> None:
    log_id = report.log_id
    segments = list(store.segments(log_id))
    report.segments = len(segments)
    if not segments:
        report.violations.append(Violation(invariant="I1", message="the log has no segments"))
        return
    reads: list[_Read] = []
    report.claimed = [s.num for s in segments if s.retiring]
    # Retention removes the oldest segments first: a first segment above 0 means 0..n-1 were deleted.
    whole = segments[0].num == 0
    retired_prefix = True  # every segment so far is retired: retention may still be at work on this one
    for index, segment in enumerate(segments):
        if index > 0 and segment.num != segments[index - 1].num + 1:
            whole = False
            if not retired_prefix:  # deleted before tombstones: only ever below the first live segment
                report.violations.append(Violation(invariant="I1", segment=segment.num,
                                                   message=f"segment {segments[index - 1].num} is followed by "
                                                           f"segment {segment.num}"))
        if segment.retired is not None:
            read = _Read(segment, None)  # deleted by retention: its tombstone (item, EndSegment) is no segment to judge
            if not retired_prefix:  # retention retires oldest first: never one after a live segment
                report.violations.append(Violation(invariant="I1", segment=segment.num,
                                                   message=f"segment {segment.num} was deleted while an older "
                                                           "segment is live: its entries are lost"))
        else:
            read = _read_segment(report, store, blobs, log_id, segment)
            if (retired_prefix and segment.archive is None and index < len(segments) - MIN_KEEP
                    and read.entries is not None and not is_whole_segment(read.entries, final=False)):
                read = _retiring(report, blobs, log_id, read)
        retired_prefix = retired_prefix and (segment.archive is not None or segment.retired is not None
                                             or read.segment.num in report.retiring)
        whole = whole and read.entries is not None
        reads.append(read)
    everything = [e for r in reads for e in r.entries or ()]
    report.entries = len(everything)
    ids: Counter[uuid.UUID] = Counter(e.entry_id for r in reads for e in (*(r.entries or ()), *r.leftover)
                                      if e.entry_id is not None)
    for index, r in enumerate(reads):
        if r.entries is not None:
            _check_segment(report, r.segment, r.entries, final=index == len(reads) - 1)
    for entry_id, count in ids.items():
        if count > 1:
            report.violations.append(Violation(invariant="I2", message=f"entry id {entry_id} appears {count} times"))
    missing = [entry_id for entry_id in acknowledged if ids[entry_id] == 0]
    if whole:
        report.violations += [Violation(invariant="I2", message=f"acknowledged entry id {entry_id} is missing")
                              for entry_id in missing]
    else:
        report.unaccounted = missing
    _check_order(report, segments, everything)
    if pending is not None:
        items = pending.for_log(log_id)
        report.pending = [{"segment": p.segment, "entry": p.entry, "retries": p.retries, "active": p.active,
                           "blocked": p.blocked} for p in items]
        # I5 cannot hold while the worker's code cannot read an entry: say so now, with the worker's reason.
        report.violations += [Violation(invariant="I5", segment=p.segment, entry=p.entry,
                                        message=f"snapshot blocked: {p.blocked}") for p in items if p.blocked]
    if quiescent:
        live = {r.segment.num for r in reads if r.segment.archive is None}
        for e in everything:
            # An archived segment's incomplete snapshot can never complete (its entries left the table): not I5.
            if e.type is EntryType.SNAPSHOT and e.snapshot_root is None and e.segment in live:
                report.violations.append(Violation(invariant="I5", segment=e.segment, entry=e.num,
                                                   message="Snapshot entry not complete after quiescence"))
        if report.pending:
            report.violations.append(Violation(invariant="I5", message=f"pending items left: {report.pending}"))
    if blobs is not None:
        _check_snapshots(report, blobs, reads)
        # Deleted segments' objects went first (retention._delete_objects): any left under them are orphans.
        lost = {r.segment.num for r in reads if r.entries is None and r.segment.retired is None}
        _check_objects(report, blobs, log_id, everything, quiescent=quiescent, lost=lost)
        if quiescent:
            _check_archives(report, blobs, log_id, segments)


def _read_segment(report: VerifyReport, store: LogStore, blobs: BlobStore | None, log_id: uuid.UUID,
                  segment: Segment) -> _Read:
    """A segment's entries from the Entries table, or from its archive once retention archived it (None once
    retention deleted them: the tombstone's EndSegment alone is no segment to judge)."""
    if segment.retired is not None:
        return _Read(segment, None)
    if segment.archive is None:
        return _Read(segment, list(store.entries(log_id, segment.num)))  # strong: verify judges what is there
    if blobs is None:
        return _Read(segment, None)  # archived, and no bucket to read the archive from
    try:
        entries = read_archive(blobs, segment.archive)
    except (BlobNotFoundError, msgspec.DecodeError) as exc:  # a transient S3 failure propagates: no false violation
        report.violations.append(Violation(
            invariant="I1", segment=segment.num,
            message=f"archive {segment.archive} cannot be read ({exc}): the segment's entries are lost unless the "
                    "object is restored (S3 versioning or a backup)"))
        return _Read(segment, None)
    report.archived += len(entries)
    strays = [e for e in entries if (e.log_id, e.segment) != (log_id, segment.num)]
    if strays:
        report.violations.append(Violation(
            invariant="I1", segment=segment.num, entry=strays[0].num,
            message=f"archive {segment.archive} holds {len(strays)} entries of another log or segment"))
    return _Read(segment, entries)


def is_whole_segment(entries: list[Entry], *, final: bool) -> bool:
    """Whether a stored segment holds every one of its entries: nums 0..n in order, the last its EndSegment unless
    it is the log's latest segment (``final``)."""
    if final:
        return bool(entries) and [e.num for e in entries] == list(range(len(entries)))
    return is_complete_segment(entries)


def finished_archive(blobs: BlobStore | None, log_id: uuid.UUID, segment: int) -> list[Entry] | None:
    """The whole segment from the archive a retention run writes before it deletes any entry, for a segment that
    run left half deleted and unmarked (it died, or runs now); None when no archive holds the whole segment (a
    deletion, not an archive, was under way). The same completeness rule as retention._archive."""
    if blobs is None:
        return None
    try:
        entries = read_archive(blobs, archive_key(log_id, segment))
    except (BlobNotFoundError, msgspec.DecodeError):
        return None
    return entries if is_complete_segment(entries) else None


def _retiring(report: VerifyReport, blobs: BlobStore | None, log_id: uuid.UUID, read: _Read) -> _Read:
    """A segment of the retired prefix with entries missing and no mark: a retention run stopped half way."""
    entries = finished_archive(blobs, log_id, read.segment.num)
    if entries is not None:
        report.archived += len(entries)
        return _Read(read.segment, entries)
    report.retiring.append(read.segment.num)
    return _Read(read.segment, None, tuple(read.entries or ()))


def _check_order(report: VerifyReport, segments: list[Segment], entries: list[Entry]) -> None:
    """I4: no snapshot completes before its predecessor; a segment's S is its latest completed snapshot."""
    snapshots = [e for e in entries if e.type is EntryType.SNAPSHOT]
    report.snapshots = len(snapshots)
    report.completed = sum(e.snapshot_root is not None for e in snapshots)
    seen_incomplete: Entry | None = None
    for e in snapshots:
        if e.snapshot_root is None:
            seen_incomplete = seen_incomplete or e
        elif seen_incomplete is not None:
            report.violations.append(Violation(
                invariant="I4", segment=e.segment, entry=e.num,
                message=f"completed before its predecessor {seen_incomplete.segment}/{seen_incomplete.num}"))
    for seg in segments:
        done = [e.num for e in snapshots if e.segment == seg.num and e.snapshot_root is not None]
        if done and seg.last_snapshot is not None and seg.last_snapshot > max(done):
            report.violations.append(Violation(invariant="I4", segment=seg.num,
                                               message=f"S={seg.last_snapshot} names no completed snapshot"))


def _check_snapshots(report: VerifyReport, blobs: BlobStore, reads: list[_Read]) -> None:
    """I3: each completed snapshot's state equals the plain fold of every document entry before it.

    The fold starts from the empty sheet at the log's creation; where entries are gone (deleted segments — a
    tombstone, a missing num, one half deleted — or a lost archive) it starts again from the next completed
    snapshot's stored state, recorded in ``report.unchecked``.
    """
    state: Sheet | None = None
    expected = 0
    for read in reads:
        if read.entries is None or read.segment.num != expected:
            state = None
        expected = read.segment.num + 1
        if read.entries is None:
            continue
        if read.segment.num == 0:
            state = Sheet()  # the log's creation
        for e in read.entries:
            if e.type is EntryType.SNAPSHOT and e.snapshot_root is not None:
                try:
                    stored = Sheet() if e.snapshot_root == EMPTY_SNAPSHOT_ROOT else read_sheet(blobs, e.snapshot_root)
                except SeglogError as exc:
                    report.violations.append(Violation(invariant="I3", segment=e.segment, entry=e.num,
                                                       message=f"snapshot unreadable: {exc}"))
                    continue
                if state is None:
                    state = stored
                    report.unchecked.append((e.segment, e.num))
                elif stored != state:
                    report.violations.append(Violation(invariant="I3", segment=e.segment, entry=e.num,
                                                       message="snapshot state differs from the fold of the log"))
            elif e.type not in (EntryType.SNAPSHOT, EntryType.END_SEGMENT) and state is not None:
                data = blobs.get(e.external) if e.external is not None else None
                state.apply(e.decoded(data))


def _check_objects(report: VerifyReport, blobs: BlobStore, log_id: uuid.UUID, entries: list[Entry], *,
                   quiescent: bool, lost: set[int]) -> None:
    """I6: every object under snapshots/{log}/ belongs to a completed snapshot; referenced large bodies are
    untagged once the router has seen them (checked when quiescent), unreferenced ones stay tagged.

    Objects of segments whose entries are ``lost`` cannot be judged (the lost archive is reported under I1);
    with any segment lost, a kept body may be one of its entries', so unreferenced bodies are not judged either.
    """
    owned: set[str] = set()
    for e in entries:
        if e.type is EntryType.SNAPSHOT and e.snapshot_root not in (None, EMPTY_SNAPSHOT_ROOT):
            with contextlib.suppress(SeglogError):  # an unreadable root is reported by I3
                owned |= snapshot_keys(blobs, e.snapshot_root)
    stored = list(blobs.keys(f"snapshots/{log_id}/"))
    report.objects = len(stored)
    in_progress = {(e.segment, e.num) for e in entries if e.type is EntryType.SNAPSHOT and e.snapshot_root is None}
    for key in stored:
        if key in owned:
            continue
        parts = key.split("/")
        if len(parts) > 3 and (int(parts[2]), int(parts[3])) in in_progress:
            continue  # a build under way writes chunks before its root exists
        if len(parts) > 2 and int(parts[2]) in lost:
            continue
        report.violations.append(Violation(invariant="I6", message=f"orphaned snapshot object {key}"))
    referenced = {e.external for e in entries if e.external is not None}
    for key in referenced if quiescent else ():
        if blobs.is_discardable(key):
            report.violations.append(Violation(invariant="I6", message=f"referenced body {key} still discardable"))
    for key in blobs.keys(f"entries/{log_id}/") if not lost else ():
        if key not in referenced and not blobs.is_discardable(key):
            report.violations.append(Violation(invariant="I6", message=f"unreferenced body {key} is kept"))


def _check_archives(report: VerifyReport, blobs: BlobStore, log_id: uuid.UUID, segments: list[Segment]) -> None:
    """I6 for archives: a segment retention deleted (``D``, its claim finished) has none — a D never gets an A."""
    deleted = {archive_key(log_id, s.num): s.num for s in segments if s.retired is not None and not s.retiring}
    for key in blobs.keys(archive_prefix(log_id)) if deleted else ():
        if key in deleted:
            report.violations.append(Violation(
                invariant="I6", segment=deleted[key],
                message=f"archive {key} of a segment retention deleted: nothing names it (an archive run lost its "
                        "claim to the deletion and died before removing it). Any retention run up to "
                        f"{STRAY_ARCHIVE_SECONDS / 3600:g} h after the deletion removes it (`seglog log retain`, or "
                        "the schedule); past that, delete the object by hand"))


def _check_segment(report: VerifyReport, segment: Segment, entries: list[Entry], *, final: bool) -> None:
    def bad(message: str, entry: int | None = None) -> None:
        report.violations.append(Violation(invariant="I1", segment=segment.num, entry=entry, message=message))

    if not entries:
        bad("segment holds no entries")
        return
    for expected, entry in enumerate(entries):
        if entry.num != expected:
            bad(f"gap: expected entry {expected}, found {entry.num}", entry.num)
            break
    if entries[0].type is not EntryType.SNAPSHOT:
        bad(f"segment starts with {entries[0].type}, not a Snapshot entry", 0)
    ends = [e.num for e in entries if e.type is EntryType.END_SEGMENT]
    if not final and (not ends or ends[-1] != entries[-1].num):
        bad("a segment that is not the last must end with EndSegment", entries[-1].num)
    if ends and ends != [entries[-1].num]:
        bad(f"EndSegment at {ends} is not the segment's one last entry", ends[0])
    if segment.last_snapshot is not None:
        at = segment.last_snapshot
        if at >= len(entries) or entries[at].type is not EntryType.SNAPSHOT:
            bad(f"segment says its last snapshot is entry {at}, which is not a Snapshot entry", at)
