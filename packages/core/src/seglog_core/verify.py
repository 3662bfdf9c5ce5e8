"""Checking a log against the invariants of DESIGN §6.

Independent of the write path on purpose: it reads every stored entry and judges the raw sequence; snapshot
states are recomputed with the document model's plain fold, not the worker's streaming build.

I1 gap-free segments, I2 entry ids once, I3 snapshot equals fold, I4 order of completion, I5 nothing pending
(reported; a violation only when ``quiescent`` is asked for), I6 no orphaned or wrongly tagged objects.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from seglog_core.errors import SeglogError
from seglog_core.ports import BlobStore, LogStore, PendingStore
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, Entry, EntryType, Segment
from seglog_core.sheet import Sheet
from seglog_core.snapshot import read_sheet, snapshot_keys


@dataclass(kw_only=True)
class Violation:
    invariant: str
    message: str
    segment: int | None = None
    entry: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"invariant": self.invariant, "message": self.message, "segment": self.segment,
                "entry": self.entry}


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

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        return {"log_id": str(self.log_id), "ok": self.ok, "violations": [v.to_dict() for v in self.violations],
                "entries": self.entries, "segments": self.segments, "snapshots": self.snapshots,
                "completed_snapshots": self.completed, "pending": self.pending, "objects": self.objects}


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
    segments = list(store.segments(log_id))
    report.segments = len(segments)
    if not segments:
        report.violations.append(Violation(invariant="I1", message="the log has no segments"))
        return report
    ids: Counter[uuid.UUID] = Counter()
    everything: list[Entry] = []
    for index, segment in enumerate(segments):
        entries = [] if segment.archive else list(store.entries(log_id, segment.num))
        everything += entries
        report.entries += len(entries)
        _check_segment(report, segment, entries, final=index == len(segments) - 1)
        if index > 0 and segment.num != segments[index - 1].num + 1:
            report.violations.append(Violation(invariant="I1", segment=segment.num,
                                               message=f"segment {segments[index - 1].num} is followed by "
                                                       f"segment {segment.num}"))
        ids.update(e.entry_id for e in entries if e.entry_id is not None)
    for entry_id, count in ids.items():
        if count > 1:
            report.violations.append(Violation(invariant="I2", message=f"entry id {entry_id} appears {count} times"))
    for entry_id in acknowledged:
        if ids[entry_id] == 0:
            report.violations.append(Violation(invariant="I2", message=f"acknowledged entry id {entry_id} is missing"))
    _check_order(report, segments, everything)
    if pending is not None:
        items = pending.for_log(log_id)
        report.pending = [{"segment": p.segment, "entry": p.entry, "retries": p.retries, "active": p.active,
                           "blocked": p.blocked} for p in items]
        # I5 cannot hold while the worker's code cannot read an entry: say so now, with the worker's reason.
        report.violations += [Violation(invariant="I5", segment=p.segment, entry=p.entry,
                                        message=f"snapshot blocked: {p.blocked}") for p in items if p.blocked]
    if quiescent:
        for e in everything:
            if e.type is EntryType.SNAPSHOT and e.snapshot_root is None:
                report.violations.append(Violation(invariant="I5", segment=e.segment, entry=e.num,
                                                   message="Snapshot entry not complete after quiescence"))
        if report.pending:
            report.violations.append(Violation(invariant="I5", message=f"pending items left: {report.pending}"))
    if blobs is not None:
        _check_snapshots(report, blobs, everything)
        _check_objects(report, blobs, log_id, everything, quiescent=quiescent)
    return report


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


def _check_snapshots(report: VerifyReport, blobs: BlobStore, entries: list[Entry]) -> None:
    """I3: each completed snapshot's state equals the plain fold of every document entry before it."""
    state = Sheet()
    for e in entries:
        if e.type is EntryType.SNAPSHOT and e.snapshot_root is not None:
            try:
                stored = Sheet() if e.snapshot_root == EMPTY_SNAPSHOT_ROOT else read_sheet(blobs, e.snapshot_root)
            except SeglogError as exc:
                report.violations.append(Violation(invariant="I3", segment=e.segment, entry=e.num,
                                                   message=f"snapshot unreadable: {exc}"))
                continue
            if stored != state:
                report.violations.append(Violation(invariant="I3", segment=e.segment, entry=e.num,
                                                   message="snapshot state differs from the fold of the log"))
        elif e.type not in (EntryType.SNAPSHOT, EntryType.END_SEGMENT):
            data = blobs.get(e.external) if e.external is not None else None
            state.apply(e.decoded(data))


def _check_objects(report: VerifyReport, blobs: BlobStore, log_id: uuid.UUID, entries: list[Entry], *,
                   quiescent: bool) -> None:
    """I6: every object under snapshots/{log}/ belongs to a completed snapshot; referenced large bodies are
    untagged once the router has seen them (checked when quiescent), unreferenced ones stay tagged."""
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
        report.violations.append(Violation(invariant="I6", message=f"orphaned snapshot object {key}"))
    referenced = {e.external for e in entries if e.external is not None}
    for key in referenced if quiescent else ():
        if blobs.is_discardable(key):
            report.violations.append(Violation(invariant="I6", message=f"referenced body {key} still discardable"))
    for key in blobs.keys(f"entries/{log_id}/"):
        if key not in referenced and not blobs.is_discardable(key):
            report.violations.append(Violation(invariant="I6", message=f"unreferenced body {key} is kept"))


def _check_segment(report: VerifyReport, segment: Segment, entries: list[Entry], *, final: bool) -> None:
    def bad(message: str, entry: int | None = None) -> None:
        report.violations.append(Violation(invariant="I1", segment=segment.num, entry=entry, message=message))

    if segment.archive:
        return
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
