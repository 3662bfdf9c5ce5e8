"""A writer's knowledge of the tail never outlives the segment it names (DESIGN §3 Retention; seed 904).

A conditional put at ``tail + 1`` is refused while that num is taken, so a stale tail used to cost only a conflict.
Retention deletes a retired segment's items, and a put at a deleted num succeeds: a writer whose tail pointed into
a segment retired since wrote into retired history. Two ways found by the simulator with clients that pause:

* a library client's cached tail, trusted after the segment was closed and archived (EventLog.tail_ttl);
* the API's retry whose entry was found in an archive: the deduplicated answer set the tail to the archived
  segment, and the Snapshot entry the policy writes after the next append went there (EventLog.landed).
"""

from __future__ import annotations

import pytest

from seglog_core.idempotence import Position, append_after
from seglog_core.log import EventLog
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import EntryType, SetCell
from seglog_core.verify import verify_log
from test_verify_retention import FAST, MemoryPipeline


def _archive_all_but_latest(p: MemoryPipeline) -> int:
    """Archive every segment but the two latest; the first one kept."""
    segments = [s.num for s in p.store.segments(p.log_id)]
    apply_retention(p.store, p.blobs, p.log_id, RetentionPolicy(keep=2), clock=lambda: p.now + 10_000)
    return segments[-2]


def _writer(p: MemoryPipeline, **options: object) -> EventLog:
    return EventLog(store=p.store, blobs=p.blobs, retry=FAST, clock=lambda: p.now, snapshot_every=3,
                    segment_entries=6, **options)  # type: ignore[arg-type]


def _entries_after_retention(p: MemoryPipeline, below: int) -> list[tuple[int, int, str]]:
    """Items in segments retention retired, other than the EndSegment tombstones it keeps."""
    return [(e.segment, e.num, str(e.type)) for s in p.store.segments(p.log_id) if s.num < below
            for e in p.store.entries(p.log_id, s.num) if e.type is not EntryType.END_SEGMENT]


def test_a_cached_tail_older_than_its_ttl_is_read_again_not_written_after() -> None:
    """A writer appends in segment 0 and idles; others fill segments 1.. and retention archives 0: its next
    append lands in the latest segment, not at its cached tail + 1 in the archived segment."""
    p = MemoryPipeline(edits=2)
    idle = _writer(p, tail_ttl=30.0)
    idle.append(p.log_id, SetCell(row=1, col=1, value="before the pause"))
    for i in range(30):
        p.log.append(p.log_id, SetCell(row=2, col=1, value=i))
        p.drain()
    p.now += 31  # past the writer's tail_ttl (the retry horizon it was given)
    kept = _archive_all_but_latest(p)
    assert kept >= 2
    appended = idle.append(p.log_id, SetCell(row=1, col=1, value="after the pause"))
    assert appended.entry.segment >= kept
    assert [] == _entries_after_retention(p, kept)
    p.drain()
    assert [] == verify_log(p.store, p.log_id, blobs=p.blobs, pending=p.pending, quiescent=True).violations


@pytest.mark.parametrize("told", [None, 10.0], ids=["horizon-unknown", "told-the-horizon"])
def test_a_writer_on_default_settings_never_trusts_its_tail_past_a_retry_horizon_under_a_minute(
        told: float | None) -> None:
    """RetentionMinAgeSeconds may be anything from 0 (template.yaml): here 10 s. A writer on default settings
    appends, idles 20 s — less than the minute it once trusted its tail for — and meanwhile others fill and close
    segments, which retention archives 10 s after they closed. Its next append must land in the latest segment:
    not told the horizon it reads the tail first; told it, it trusts the tail for the horizon only."""
    p = MemoryPipeline(edits=2)
    idle = _writer(p) if told is None else _writer(p, retry_horizon=told)
    idle.append(p.log_id, SetCell(row=1, col=1, value="before the pause"))
    for i in range(30):
        p.log.append(p.log_id, SetCell(row=2, col=1, value=i))
        p.drain()
    p.now += 20
    apply_retention(p.store, p.blobs, p.log_id, RetentionPolicy(keep=2, min_age=10.0), clock=lambda: p.now)
    kept = next(s.num for s in p.store.segments(p.log_id) if s.archive is None)
    assert kept >= 2
    appended = idle.append(p.log_id, SetCell(row=1, col=1, value="after the pause"))
    assert appended.entry.segment >= kept
    assert [] == _entries_after_retention(p, kept)


def test_a_tail_ttl_longer_than_the_retry_horizon_it_is_given_with_is_refused() -> None:
    """Both given and contradicting each other: the writer says so at once, naming what to give instead, rather
    than pick one (the horizon is what retention keeps; the ttl, how long the writer would trust its tail)."""
    p = MemoryPipeline(edits=0)
    with pytest.raises(ValueError, match=r"tail_ttl=60 s is longer than retry_horizon=10 s.*at most 10 s"):
        _writer(p, retry_horizon=10.0, tail_ttl=60.0)
    assert [10.0, 60.0, 0.0, 5.0] == [_writer(p, retry_horizon=10.0).tail_ttl,
                                      _writer(p, retry_horizon=604_800.0).tail_ttl,
                                      _writer(p).tail_ttl, _writer(p, tail_ttl=5.0).tail_ttl]


def test_a_retry_answered_from_an_archive_leaves_the_next_snapshot_entry_in_the_live_segment() -> None:
    """The API's path: a retry whose ``since`` is archived is answered from the archive (deduplicated); the same
    writer's next appends, and the Snapshot entry its policy writes, go after the live tail."""
    p = MemoryPipeline(edits=1)
    api = _writer(p, cache_tail=False)
    first = append_after(api, p.log_id, SetCell(row=1, col=1, value="landed"), entry_id=p.log.id_factory(),
                         since=Position(segment=0, num=0))
    for i in range(30):
        p.log.append(p.log_id, SetCell(row=2, col=1, value=i))
        p.drain()
    kept = _archive_all_but_latest(p)
    fresh = _writer(p, cache_tail=False)  # a new container: nothing cached
    again = append_after(fresh, p.log_id, SetCell(row=1, col=1, value="landed"), entry_id=first.entry.entry_id,
                         since=Position(segment=0, num=0))
    assert again.deduplicated and again.entry.segment == 0
    for i in range(6):  # enough that the policy writes a Snapshot entry after one of them
        append_after(fresh, p.log_id, SetCell(row=3, col=1, value=i), entry_id=p.log.id_factory(),
                     since=Position(segment=again.entry.segment, num=again.entry.num))
    assert [] == _entries_after_retention(p, kept)
    p.drain()
    assert [] == verify_log(p.store, p.log_id, blobs=p.blobs, pending=p.pending, quiescent=True).violations
