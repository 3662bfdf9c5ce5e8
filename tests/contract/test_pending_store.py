"""Contract of the PendingStore port (DESIGN §5): every conditional write, in memory and on DynamoDB."""

from __future__ import annotations

import uuid

import pytest

from seglog_core import errors
from seglog_core.ports import PendingStore
from seglog_core.schema import PendingSnapshot


def _new(store: PendingStore, segment: int = 0, entry: int = 5, claimer: str | None = None) -> PendingSnapshot:
    item = PendingSnapshot(log_id=uuid.uuid4(), segment=segment, entry=entry, created=100, modified=100,
                           claimer=claimer)
    store.create(item)
    return item


def test_create_get_and_refuse_a_second_create(pending_store: PendingStore) -> None:
    item = _new(pending_store, claimer="m1")
    assert pending_store.get(item.log_id, 0, 5) == item
    with pytest.raises(errors.ItemExistsError):
        pending_store.create(item)
    assert pending_store.get(item.log_id, 0, 6) is None


def test_set_claimer_only_once_and_only_at_the_increment_read(pending_store: PendingStore) -> None:
    item = _new(pending_store)
    with pytest.raises(errors.ItemExistsError):
        pending_store.set_claimer(item.log_id, 0, 5, "m1", increment=3, now=101)
    pending_store.set_claimer(item.log_id, 0, 5, "m1", increment=0, now=101)
    with pytest.raises(errors.ItemExistsError):
        pending_store.set_claimer(item.log_id, 0, 5, "m2", increment=0, now=102)
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert (got.claimer, got.modified) == ("m1", 101)


def test_defer_counts_retries(pending_store: PendingStore) -> None:
    item = _new(pending_store)
    assert [pending_store.defer(item.log_id, 0, 5, now=n) for n in (101, 102)] == [1, 2]
    with pytest.raises(errors.ItemExistsError):
        pending_store.defer(item.log_id, 9, 9, now=103)


def test_claim_is_exclusive_until_the_takeover_timeout(pending_store: PendingStore) -> None:
    item = _new(pending_store, claimer="m1")
    assert pending_store.claim(item.log_id, 0, 5, "m2", now=101, takeover_after=30) is None  # not the claimer
    assert pending_store.claim(item.log_id, 0, 5, "m1", now=101, takeover_after=30) == 1
    assert pending_store.claim(item.log_id, 0, 5, "m1", now=120, takeover_after=30) is None  # active, fresh
    assert pending_store.claim(item.log_id, 0, 5, "m1", now=140, takeover_after=30) == 2  # stale: takeover
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert (got.active, got.increment, got.modified) == (True, 2, 140)


def test_checkpoint_and_release_are_guarded_by_the_increment(pending_store: PendingStore) -> None:
    item = _new(pending_store, claimer="m1")
    first = pending_store.claim(item.log_id, 0, 5, "m1", now=101, takeover_after=30)
    assert first == 1
    assert pending_store.checkpoint(item.log_id, 0, 5, increment=1, state=b"chunk-1", now=102)
    second = pending_store.claim(item.log_id, 0, 5, "m1", now=200, takeover_after=30)
    assert second == 2
    assert not pending_store.checkpoint(item.log_id, 0, 5, increment=1, state=b"stale", now=201)
    assert not pending_store.release(item.log_id, 0, 5, increment=1, now=201)
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert (got.checkpoint, got.active) == (b"chunk-1", True)
    assert pending_store.release(item.log_id, 0, 5, increment=2, now=202)
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert not got.active


def test_for_log_is_in_segment_then_entry_order_and_delete_is_idempotent(pending_store: PendingStore) -> None:
    log_id = uuid.uuid4()
    for segment, entry in [(1, 0), (0, 300), (0, 20), (2, 5)]:
        pending_store.create(PendingSnapshot(log_id=log_id, segment=segment, entry=entry, created=1, modified=1))
    assert [(p.segment, p.entry) for p in pending_store.for_log(log_id)] == [(0, 20), (0, 300), (1, 0), (2, 5)]
    pending_store.delete(log_id, 0, 20)
    pending_store.delete(log_id, 0, 20)
    assert [(p.segment, p.entry) for p in pending_store.for_log(log_id)] == [(0, 300), (1, 0), (2, 5)]
    assert {(p.segment, p.entry) for p in pending_store.scan() if p.log_id == log_id} == {(0, 300), (1, 0), (2, 5)}
