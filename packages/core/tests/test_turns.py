"""Writers of one process take turns on a log and hand each other the tail (seglog_core.turns, issue 20)."""

from __future__ import annotations

import threading
import time
import uuid

from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.schema import Entry, SetCell
from seglog_core.turns import Hint, Turns
from seglog_core.verify import verify_log

WRITERS, EACH = 8, 15


class SlowPuts(InMemoryLogStore):
    """Each put takes a moment (as a network round trip does) and the refused ones are counted."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0
        self._count = threading.Lock()

    def put_entry(self, entry: Entry) -> None:
        time.sleep(0.001)
        try:
            super().put_entry(entry)
        except errors.ItemExistsError:
            with self._count:
                self.refused += 1
            raise


def _race(turns_of: list[Turns]) -> tuple[SlowPuts, uuid.UUID, list[int], list[uuid.UUID]]:
    """Each writer (an EventLog of its own, with the given turns) appends EACH entries to one log at once."""
    store, blobs = SlowPuts(), InMemoryBlobStore()
    log_id = EventLog(store=store, blobs=blobs, turns=Turns()).create()
    logs = [EventLog(store=store, blobs=blobs, turns=turns) for turns in turns_of]
    start, lock = threading.Barrier(len(logs)), threading.Lock()
    attempts: list[int] = []
    acknowledged: list[uuid.UUID] = []

    def write(event_log: EventLog) -> None:
        start.wait()
        for n in range(EACH):
            appended = event_log.append(log_id, SetCell(row=1, col=n + 1, value=n))
            with lock:
                attempts.append(appended.attempts)
                acknowledged.append(appended.entry.entry_id or uuid.UUID(int=0))

    threads = [threading.Thread(target=write, args=(event_log,)) for event_log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return store, log_id, attempts, acknowledged


def test_threads_sharing_turns_land_every_put_first_time_and_leave_nothing_behind() -> None:
    shared = Turns()
    store, log_id, attempts, acknowledged = _race([shared] * WRITERS)

    assert store.refused == 0
    assert attempts == [1] * WRITERS * EACH
    assert len(shared) == 0  # nothing kept once no writer holds or awaits a turn
    report = verify_log(store, log_id, acknowledged=acknowledged)
    assert report.ok, report.violations
    assert report.entries == WRITERS * EACH + 1


def test_without_shared_turns_the_same_race_meets_at_the_store() -> None:
    """The control: the race above is a real one (writers with turns of their own conflict)."""
    store, log_id, attempts, acknowledged = _race([Turns() for _ in range(WRITERS)])

    assert store.refused > 0
    assert max(attempts) > 1
    assert verify_log(store, log_id, acknowledged=acknowledged).ok


def test_a_hint_is_handed_only_to_writers_of_the_store_it_was_proved_against() -> None:
    turns, ours, theirs = Turns(), InMemoryLogStore(), InMemoryLogStore()
    log_id = uuid.uuid4()
    with turns.take(log_id) as turn:
        turn.leave_hint(ours, Hint(segment=0, num=7, checked=1.0))
        turn.leave_hint(ours, Hint(segment=0, num=5, checked=2.0))  # an older tail never replaces a later one
        assert turn.hint_for(ours) == Hint(segment=0, num=7, checked=1.0)
        assert turn.hint_for(theirs) is None
        turn.leave_hint(ours, Hint(segment=1, num=0, checked=3.0))
        assert turn.hint_for(ours) == Hint(segment=1, num=0, checked=3.0)
    assert len(turns) == 0


def test_a_writer_holding_a_later_tail_keeps_its_own() -> None:
    store, blobs, turns = InMemoryLogStore(), InMemoryBlobStore(), Turns()
    event_log = EventLog(store=store, blobs=blobs, turns=turns)
    log_id = event_log.create()
    for n in range(3):
        event_log.append(log_id, SetCell(row=1, col=1, value=n))
    with turns.take(log_id) as turn:
        turn.leave_hint(store, Hint(segment=0, num=1, checked=time.time()))  # behind this writer's tail (3)
        appended = event_log.append(log_id, SetCell(row=1, col=1, value=9))  # re-entrant: same thread
    assert (appended.entry.num, appended.attempts) == (4, 1)
