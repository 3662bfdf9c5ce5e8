"""The retention function: bounded by the time its Lambda context says is left; what it leaves stays due for the
next run.

Its stores here are the in-memory ones (they pass the same contract suites as DynamoDB and S3); the function on
the local stack, fired by its schedule, is tests/emulator/test_retention_schedule.py."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryLogStore
from seglog_core.retry import RetryPolicy
from seglog_core.schema import SetCell
from seglog_services import retention, runtime


@dataclass
class FakeBackend:
    store: InMemoryLogStore = field(default_factory=InMemoryLogStore)
    blobs: InMemoryBlobStore = field(default_factory=InMemoryBlobStore)


class Context:
    """A Lambda context whose get_remaining_time_in_millis answers ``plenty`` ms ``calls`` times, then 1 s."""

    def __init__(self, calls: int = 10**6, plenty: int = 60_000) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self.left = [plenty] * calls

    def get_remaining_time_in_millis(self) -> int:
        return self.left.pop(0) if self.left else 1_000


def make_logs(backend: FakeBackend, count: int) -> list[uuid.UUID]:
    """``count`` logs of three segments each (so one segment each to archive when two are kept)."""
    log = EventLog(store=backend.store, blobs=backend.blobs, retry=RetryPolicy(max_attempts=4, base=0, cap=0))
    ids = []
    for _ in range(count):
        log_id = log.create()
        for segment in (1, 2):
            log.append(log_id, SetCell(row=1, col=1, value=segment))
            log.start_segment(log_id)
            backend.store.complete_snapshot(log_id, segment, 0, "empty")
        ids.append(log_id)
    return ids


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> FakeBackend:
    fake = FakeBackend()
    monkeypatch.setattr(runtime, "backend", lambda: fake)
    monkeypatch.setenv("SEGLOG_RETENTION_KEEP", "2")
    monkeypatch.setenv("SEGLOG_RETENTION_MIN_AGE_SECONDS", "0")
    return fake


EVENT = {"version": "0", "id": "e", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def test_a_run_stops_when_its_time_is_nearly_up_and_the_next_run_does_what_is_still_due(backend: FakeBackend) -> None:
    """The remaining time drops under the reserve after the first log: the run stops there (not done), what it
    left stays due, and the next run finishes; every log ends with its old segment archived and nothing due."""
    logs = make_logs(backend, 3)

    first = retention.handler(EVENT, Context(calls=3))
    second = retention.handler(EVENT, Context())

    assert ("due", 1, 1, False) == (first["pass"], first["logs"], first["segments_archived"], first["complete"])
    assert (2, 2, True) == (second["logs"], second["segments_archived"], second["complete"])
    assert [[True, False, False]] * 3 == [[s.archive is not None for s in backend.store.segments(i)] for i in logs]
    assert [] == list(backend.store.due_segments(2**62))


def test_a_pass_over_every_log_on_request_finds_segments_closed_before_the_index(backend: FakeBackend) -> None:
    """A segment closed by an older version has no due mark: only ``{"pass": "all"}`` (by hand, once the horizon
    after the upgrade) finds it, walking every log from the cursor as the scheduled run did before."""
    logs = make_logs(backend, 2)
    for log_id in logs:
        for segment in (1, 2):
            backend.store.clear_due(log_id, segment)  # as if closed before the index existed

    due = retention.handler(EVENT, Context())
    full = retention.handler({**EVENT, "pass": "all"}, Context())

    assert (0, 0) == (due["logs"], due["segments_archived"])
    assert ("all", 2, 2, True) == (full["pass"], full["logs"], full["segments_archived"], full["complete"])


def test_a_run_with_less_time_than_the_reserve_does_nothing(backend: FakeBackend) -> None:
    """Under RESERVE_SECONDS left at the start, no segment is touched (a step begun might not finish)."""
    logs = make_logs(backend, 1)

    summary = retention.handler(EVENT, Context(calls=0))

    assert (0, 0, False) == (summary["logs"], summary["segments_archived"], summary["complete"])
    assert [None, None, None] == [s.archive for s in backend.store.segments(logs[0])]


def test_the_deadline_keeps_twice_the_slowest_step_in_hand() -> None:
    """10 s left, a 3 s step seen: 5 s reserve + 2 x 3 s = 11 s > 10 s, so stop before the next step."""
    now = [0.0]
    deadline = retention.Deadline(lambda: 10.0, reserve=5.0, clock=lambda: now[0])
    assert not deadline()
    now[0] = 2.0
    assert not deadline()  # 5 + 2 x 2 = 9 < 10
    now[0] = 5.0
    assert deadline()  # 5 + 2 x 3 = 11 > 10
    assert 3.0 == deadline.slowest
