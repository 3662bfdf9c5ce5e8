"""The stream router's decision for one entry (seglog_core.pipeline.router)."""

from __future__ import annotations

import uuid

from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue
from seglog_core.pipeline import route
from seglog_core.schema import Entry, EntryType


def _entry(kind: EntryType, external: str | None) -> Entry:
    return Entry(log_id=uuid.uuid4(), segment=2, num=5, created=0, type=kind, external=external)


def test_a_large_body_is_kept_and_a_snapshot_entry_becomes_a_job() -> None:
    blobs, queue = InMemoryBlobStore(), InMemoryJobQueue()
    blobs.put("bodies/a", b"x", discardable=True)

    action = route(_entry(EntryType.SNAPSHOT, "bodies/a"), queue=queue, blobs=blobs)

    assert ("bodies/a", None) == (action.kept, action.gone)
    assert not blobs.is_discardable("bodies/a")
    assert action.enqueued is not None and 1 == len(queue.receive(10))


def test_a_large_body_retention_already_deleted_is_passed_over_instead_of_holding_the_shard() -> None:
    """Seeds 759 and 869 (restart_repeats): a router behind `log retain --delete` raised on the missing object
    and retried the record until it left the stream a day later, holding every later record of the shard."""
    blobs, queue = InMemoryBlobStore(), InMemoryJobQueue()

    action = route(_entry(EntryType.SET_CELL, "bodies/gone"), queue=queue, blobs=blobs)

    assert (None, "bodies/gone", None) == (action.kept, action.gone, action.enqueued)
