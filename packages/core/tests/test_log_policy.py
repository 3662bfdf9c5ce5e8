"""An append that landed stands, whatever happens to the Snapshot entry its writer owes (DESIGN §3 policy)."""

from __future__ import annotations

import uuid

from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Entry, EntryType, SetCell


class SnapshotPutsFail(InMemoryLogStore):
    """Every put of a Snapshot entry fails as a throttled write would (not written)."""

    def put_entry(self, entry: Entry) -> None:
        if entry.type is EntryType.SNAPSHOT:
            raise errors.ThrottledError("throttled (injected)", code="ThrottlingException")
        super().put_entry(entry)


def test_a_failed_snapshot_after_an_append_does_not_write_the_entry_again() -> None:
    """Found by chaos: the writer of num 10 appends the Snapshot entry; when that failed past its retries,
    the append loop took it for its own failure and wrote the client's entry a second time (I2)."""
    store = SnapshotPutsFail()
    event_log = EventLog(store=store, blobs=InMemoryBlobStore(), snapshot_every=3,
                         retry=RetryPolicy(max_attempts=3, base=0.0, cap=0.0))
    log_id = event_log.create()
    ids = [uuid.uuid4() for _ in range(4)]
    for n, entry_id in enumerate(ids):
        appended = event_log.append(log_id, SetCell(row=1, col=n + 1, value=n), entry_id=entry_id)
        assert not appended.deduplicated

    entries = list(store.entries(log_id, 0))
    assert [e.entry_id for e in entries[1:]] == ids  # each once, in order, no Snapshot entry (skipped)
    assert [e.num for e in entries] == [0, 1, 2, 3, 4]


class FirstLatestReadThrottled(InMemoryLogStore):
    """The first "latest entry" Query is throttled, as DynamoDB may answer under load."""

    throttled = False

    def latest_entry(self, log_id: uuid.UUID, segment: int) -> Entry | None:
        if not self.throttled:
            self.throttled = True
            raise errors.ThrottledError("throttled (injected)", code="ThrottlingException")
        return super().latest_entry(log_id, segment)


def test_a_throttled_read_before_a_snapshot_entry_is_retried() -> None:
    """Found by chaos: the Snapshot entry's read of the latest entry was outside the retry loop, so one
    throttled Query skipped the snapshot."""
    store = FirstLatestReadThrottled()
    event_log = EventLog(store=store, blobs=InMemoryBlobStore(), retry=RetryPolicy(max_attempts=3, base=0.0, cap=0.0))
    log_id = event_log.create()
    event_log.forget(log_id)  # no cached tail: the next num comes from a read

    entry = event_log.append_snapshot(log_id)

    assert store.throttled
    assert (entry.num, entry.type) == (1, EntryType.SNAPSHOT)
