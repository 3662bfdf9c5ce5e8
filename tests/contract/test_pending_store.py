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
    # Only those before a segment and entry (the worker's order wait): bounded in the query, not filtered after.
    assert [(p.segment, p.entry) for p in pending_store.for_log(log_id, before=(1, 0))] == [(0, 20), (0, 300)]
    assert [(p.segment, p.entry) for p in pending_store.for_log(log_id, before=(2, 6))] == [
        (0, 20), (0, 300), (1, 0), (2, 5)]
    assert pending_store.for_log(log_id, before=(0, 20)) == []
    pending_store.delete(log_id, 0, 20)
    pending_store.delete(log_id, 0, 20)
    assert [(p.segment, p.entry) for p in pending_store.for_log(log_id)] == [(0, 300), (1, 0), (2, 5)]
    assert {(p.segment, p.entry) for p in pending_store.scan() if p.log_id == log_id} == {(0, 300), (1, 0), (2, 5)}


def test_claim_is_refused_at_exactly_the_takeover_timeout_and_allowed_one_second_later(
        pending_store: PendingStore) -> None:
    """Stale means M < now - takeover_after on every backend: the fake allowing the boundary second would let
    tests pass that DynamoDB fails."""
    item = _new(pending_store, claimer="m1")
    assert 1 == pending_store.claim(item.log_id, 0, 5, "m1", now=101, takeover_after=30)
    assert None is pending_store.claim(item.log_id, 0, 5, "m1", now=131, takeover_after=30)
    assert 2 == pending_store.claim(item.log_id, 0, 5, "m1", now=132, takeover_after=30)


def _claimer(store: PendingStore, item: PendingSnapshot) -> tuple[str | None, bool, int, int]:
    got = store.get(item.log_id, item.segment, item.entry)
    assert got is not None
    return got.claimer, got.active, got.increment, got.modified


def test_take_over_refuses_a_fresh_claim_active_or_not(pending_store: PendingStore) -> None:
    """A claim changed within the takeover timeout is live: another message must not take it (DESIGN §5 step 2)."""
    deferred = _new(pending_store, claimer="m1")  # inactive, M = 100 (a deferral sets M the same way)
    assert not pending_store.take_over(deferred.log_id, 0, 5, "m2", previous="m1", increment=0, now=130,
                                       takeover_after=30)
    building = _new(pending_store, claimer="m1")
    assert 1 == pending_store.claim(building.log_id, 0, 5, "m1", now=110, takeover_after=30)
    assert not pending_store.take_over(building.log_id, 0, 5, "m2", previous="m1", increment=1, now=135,
                                       takeover_after=30)
    assert [("m1", False, 0, 100), ("m1", True, 1, 110)] == [_claimer(pending_store, i) for i in (deferred, building)]


def test_a_helper_seizes_a_claim_no_live_builder_holds_in_one_write_and_never_a_live_one(
        pending_store: PendingStore) -> None:
    """A job of a later snapshot that builds this one first (issue 34) names itself claimer and claims at once: an
    inactive claim whatever its age (its claimer deferred, or lost its message), a stale one, never an active fresh
    one; of two helpers on one read only one gets it (the claimer and the increment are in the condition)."""
    deferred = _new(pending_store, claimer="m1")  # inactive, M = 100
    assert 1 == pending_store.seize(deferred.log_id, 0, 5, "helper", previous="m1", increment=0, now=101,
                                    takeover_after=30, initial_state=b"pinned")
    assert None is pending_store.seize(deferred.log_id, 0, 5, "helper-2", previous="m1", increment=0, now=101,
                                       takeover_after=30)  # the other helper's read is gone
    building = _new(pending_store, claimer="m1")
    assert 1 == pending_store.claim(building.log_id, 0, 5, "m1", now=110, takeover_after=30)
    assert None is pending_store.seize(building.log_id, 0, 5, "helper", previous="m1", increment=1, now=135,
                                       takeover_after=30)
    assert 2 == pending_store.seize(building.log_id, 0, 5, "helper", previous="m1", increment=1, now=141,
                                    takeover_after=30)  # stale: its builder is gone
    got = [pending_store.get(i.log_id, 0, 5) for i in (deferred, building)]
    assert [("helper", True, 1, 101, b"pinned"), ("helper", True, 2, 141, None)] == [
        (g.claimer, g.active, g.increment, g.modified, g.checkpoint) for g in got if g is not None]


def test_take_over_of_an_inactive_stale_claim_makes_the_new_message_the_claimer(pending_store: PendingStore) -> None:
    """The claimer's message is gone (DLQ) or hidden long (deferral backoff): any message may carry the work on."""
    item = _new(pending_store, claimer="m1")
    assert pending_store.take_over(item.log_id, 0, 5, "m2", previous="m1", increment=0, now=131, takeover_after=30)
    assert ("m2", False, 0, 131) == _claimer(pending_store, item)
    assert None is pending_store.claim(item.log_id, 0, 5, "m1", now=132, takeover_after=30)  # m1 no longer claims
    assert 1 == pending_store.claim(item.log_id, 0, 5, "m2", now=132, takeover_after=30)


def test_take_over_of_a_dead_active_claim_lets_the_new_claimer_claim_and_fences_the_old_holder(
        pending_store: PendingStore) -> None:
    """A holder that stopped checkpointing: the taker can claim at once (A cleared), and X + 1 makes the old
    holder's next checkpoint fail if it was only slow."""
    item = _new(pending_store, claimer="m1")
    assert 1 == pending_store.claim(item.log_id, 0, 5, "m1", now=101, takeover_after=30)
    assert pending_store.take_over(item.log_id, 0, 5, "m2", previous="m1", increment=1, now=140, takeover_after=30)
    assert ("m2", False, 1, 140) == _claimer(pending_store, item)
    assert 2 == pending_store.claim(item.log_id, 0, 5, "m2", now=140, takeover_after=30)
    assert not pending_store.checkpoint(item.log_id, 0, 5, increment=1, state=b"zombie", now=141)


def test_two_takers_on_the_same_read_one_wins(pending_store: PendingStore) -> None:
    """Both read Q = m1, X = 0, stale; the condition on the old claimer lets only the first write through."""
    item = _new(pending_store, claimer="m1")
    first = pending_store.take_over(item.log_id, 0, 5, "m2", previous="m1", increment=0, now=140, takeover_after=30)
    second = pending_store.take_over(item.log_id, 0, 5, "m3", previous="m1", increment=0, now=140, takeover_after=30)
    assert (True, False) == (first, second)
    assert "m2" == _claimer(pending_store, item)[0]


def test_take_over_is_conditional_on_the_increment_read(pending_store: PendingStore) -> None:
    """The claimer claimed (X moved) and died again since our read: our stale read must not win."""
    item = _new(pending_store, claimer="m1")
    assert 1 == pending_store.claim(item.log_id, 0, 5, "m1", now=101, takeover_after=30)
    assert not pending_store.take_over(item.log_id, 0, 5, "m2", previous="m1", increment=0, now=140,
                                       takeover_after=30)
    assert not pending_store.take_over(uuid.uuid4(), 0, 5, "m2", previous="m1", increment=0, now=140,
                                       takeover_after=30)  # no item at all
    assert ("m1", True, 1, 101) == _claimer(pending_store, item)


def test_defer_records_why_a_snapshot_is_blocked_and_a_plain_deferral_clears_it(pending_store: PendingStore) -> None:
    item = _new(pending_store, claimer="m1")
    assert 1 == pending_store.defer(item.log_id, 0, 5, now=101, blocked="entry 0/3: deploy newer code")
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert ("entry 0/3: deploy newer code", 1) == (got.blocked, got.retries)
    assert [got] == [p for p in pending_store.scan() if p.log_id == item.log_id]
    assert 2 == pending_store.defer(item.log_id, 0, 5, now=102)
    got = pending_store.get(item.log_id, 0, 5)
    assert got is not None
    assert None is got.blocked


def test_the_first_claim_pins_the_checkpoint_state_and_later_claims_keep_it(pending_store: PendingStore) -> None:
    """Two code versions at once: the chunk size the first builder recorded wins over a later builder's own."""
    item = _new(pending_store, claimer="m1")
    first = pending_store.claim(item.log_id, 0, 5, "m1", now=100, takeover_after=10, initial_state=b"first")
    assert pending_store.release(item.log_id, 0, 5, increment=first or 0, now=101)
    second = pending_store.claim(item.log_id, 0, 5, "m1", now=102, takeover_after=10, initial_state=b"second")

    stored = pending_store.get(item.log_id, 0, 5)
    assert (1, 2, b"first") == (first, second, stored.checkpoint if stored else None)
