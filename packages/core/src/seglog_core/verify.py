"""Checking a log against the invariants of DESIGN §6 that hold without the snapshot pipeline (I1, I2).

Independent of the write path on purpose: it reads every stored entry and judges the raw sequence.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from seglog_core.ports import LogStore
from seglog_core.schema import Entry, EntryType, Segment


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

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        return {"log_id": str(self.log_id), "ok": self.ok, "violations": [v.to_dict() for v in self.violations],
                "entries": self.entries, "segments": self.segments}


def verify_log(store: LogStore, log_id: uuid.UUID, *, acknowledged: Iterable[uuid.UUID] = ()) -> VerifyReport:
    """Check I1 (gap-free, segment boundaries) and I2 (each entry id once; every acknowledged id present).

    Args:
        acknowledged: entry ids that clients were told were appended; each must be in the log exactly once.
    """
    report = VerifyReport(log_id=log_id)
    segments = list(store.segments(log_id))
    report.segments = len(segments)
    if not segments:
        report.violations.append(Violation(invariant="I1", message="the log has no segments"))
        return report
    ids: Counter[uuid.UUID] = Counter()
    for index, segment in enumerate(segments):
        entries = [] if segment.archive else list(store.entries(log_id, segment.num))
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
    return report


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
