"""A load's later pages re-read the state its first page answered (LogReader.view_at); positions it never
answered are refused without reading the log (issue 23, found by the API fuzzer)."""

from __future__ import annotations

import pytest

from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.ports import BlobStore, LogStore
from seglog_core.reader import LogReader


def test_a_view_that_ends_at_its_own_snapshot_reads_nothing_after_it(stores: tuple[LogStore, BlobStore]) -> None:
    """The next page of a load whose snapshot is the tail (a new log, or a segment just started): DynamoDB refuses
    the key range the reader used to ask for (N BETWEEN 1 AND 0), and the API answered 503."""
    store, blobs = stores
    log_id = EventLog(store=store, blobs=blobs).create()
    view = LogReader(store=store).view_at(log_id, (0, 0), (0, 0))
    assert (view.segment, view.num, view.entries) == (0, 0, [])


class CountingReads:
    def __init__(self, store: LogStore) -> None:
        self.store, self.entry_reads = store, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def entries(self, *args: object, **kwargs: object) -> object:
        self.entry_reads += 1
        return self.store.entries(*args, **kwargs)  # type: ignore[arg-type]


def test_a_position_past_the_newest_segment_is_refused_without_reading_segments(
        stores: tuple[LogStore, BlobStore]) -> None:
    store, blobs = stores
    log_id = EventLog(store=store, blobs=blobs).create()
    counting = CountingReads(store)
    with pytest.raises(errors.UnknownPositionError):
        LogReader(store=counting).view_at(log_id, (0, 0), (3, 1))  # type: ignore[arg-type]
    assert counting.entry_reads == 0
