"""The scheduled snapshot sweep and the worker's metrics (issue 18: "nothing tells anyone", "builds nothing until
someone runs redrive"). In-memory stores (they pass the contract suites); the sweep on the local stack, resuming a
parked blocked snapshot, is in tests/test_pipeline_recovery.py."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from structlog.testing import capture_logs

from seglog_core import errors
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryJobQueue, InMemoryLogStore, InMemoryPendingStore
from seglog_core.pipeline import Backoff
from seglog_core.reader import LogReader
from seglog_core.schema import SNAPSHOT_JOB_DECODER, SNAPSHOT_JOB_ENCODER, PendingSnapshot, SetCell, SnapshotJob
from seglog_services import runtime, snapshot_sweep, snapshot_worker

NOW = 100_000.0


@dataclass
class FakeBackend:
    store: InMemoryLogStore = field(default_factory=InMemoryLogStore)
    blobs: InMemoryBlobStore = field(default_factory=InMemoryBlobStore)
    pending: InMemoryPendingStore = field(default_factory=InMemoryPendingStore)
    queue: InMemoryJobQueue = field(default_factory=lambda: InMemoryJobQueue(clock=lambda: NOW))

    def reader(self) -> LogReader:
        return LogReader(store=self.store)


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> FakeBackend:
    fake = FakeBackend()
    monkeypatch.setattr(runtime, "backend", lambda: fake)
    return fake


EVENT = {"version": "0", "id": "e", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def _item(log_id: uuid.UUID, entry: int, modified: float, blocked: str | None = None) -> PendingSnapshot:
    return PendingSnapshot(log_id=log_id, segment=0, entry=entry, created=int(modified), modified=int(modified),
                           claimer="parked", blocked=blocked)


def test_the_sweep_resends_only_items_idle_past_the_longest_hide_and_the_visibility_timeout(
        backend: FakeBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live job touches its item at least every Backoff.longest (a deferral) or visibility timeout (a failed
    receive); an item idle past both has no live job. One job per idle item, blocked ones too."""
    idle = snapshot_sweep.idle_after(360)
    assert idle > Backoff().longest
    assert snapshot_sweep.idle_after(Backoff().longest * 2) > Backoff().longest * 2
    log_id = uuid.uuid4()
    backend.pending.create(_item(log_id, 3, NOW - idle - 1))  # parked
    backend.pending.create(_item(log_id, 6, NOW - idle - 1, blocked="entry 0/5 needs newer code"))  # parked
    backend.pending.create(_item(log_id, 9, NOW - idle + 1))  # a live job's item (deferred long)
    monkeypatch.setattr(snapshot_sweep.time, "time", lambda: NOW)
    summary = snapshot_sweep.handler(EVENT, None, environ={"SEGLOG_QUEUE_VISIBILITY_SECONDS": "360"})
    assert {"items": 3, "resent": 2, "complete": True} == summary
    jobs = sorted(SNAPSHOT_JOB_DECODER.decode(m.body).entry for m in backend.queue.receive(10))
    assert [3, 6] == jobs


def test_a_sweep_out_of_time_stops_and_says_so() -> None:
    pending, queue = InMemoryPendingStore(), InMemoryJobQueue()
    log_id = uuid.uuid4()
    for entry in (3, 6):
        pending.create(_item(log_id, entry, 0))
    run = snapshot_sweep.sweep(pending, queue, now=NOW, idle=10, stop=iter([False, True]).__next__)
    assert (1, 1, False) == (run.items, len(run.sent), run.complete)


def _record(job: SnapshotJob, message_id: str, receive_count: int) -> dict[str, Any]:
    return {"messageId": message_id, "receiptHandle": "r", "body": SNAPSHOT_JOB_ENCODER.encode(
        job).decode(), "attributes": {"ApproximateReceiveCount": str(receive_count)}, "messageAttributes": {},
        "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q", "awsRegion": "us-east-1"}


def _metrics(lines: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(metric, value, namespace) of every embedded-metric-format line."""
    out = []
    for line in lines:
        for directive in line.get("_aws", {}).get("CloudWatchMetrics", []):
            out += [(m["Name"], line[m["Name"]], directive["Namespace"]) for m in directive["Metrics"]
                    if all(d in line for dims in directive["Dimensions"] for d in dims)]
    return out


@pytest.mark.parametrize(("receives", "expected"), [(1, []), (Backoff().patience, []),
                                                    (Backoff().patience + 1, [("SnapshotsDeferredLong", 1, "seglog")])])
def test_a_job_deferred_past_its_patience_is_counted_as_a_metric(backend: FakeBackend, receives: int,
                                                                 expected: list[Any]) -> None:
    """Deferred behind an earlier snapshot that never completes (another builder's live claim): counted once it has
    waited past the patience (its hides grow from there), so an alarm on SnapshotsDeferredLong fires while the job
    is still far from the DLQ."""
    log = EventLog(store=backend.store, blobs=backend.blobs, clock=lambda: NOW)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    first = log.append_snapshot(log_id)
    building = int(time.time())  # the handler's worker runs on the real clock: the claim is fresh to it
    backend.pending.create(_item(log_id, first.num, building))
    assert backend.pending.claim(log_id, 0, first.num, "parked", now=building, takeover_after=60) == 1
    ours = log.append_snapshot(log_id)
    event = {"Records": [_record(SnapshotJob(log=str(log_id), segment=0, entry=ours.num), "m1", receives)]}
    with capture_logs() as lines:
        response = snapshot_worker.handler(event, None)
    assert [{"itemIdentifier": "m1"}] == response["batchItemFailures"]  # kept, deferred
    assert ["deferred"] == [line["outcome"] for line in lines if line["event"] == "snapshot job"]
    assert expected == _metrics(lines)


def test_a_blocked_job_is_counted_on_every_receive(backend: FakeBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry before the snapshot that this code cannot read (a body version from newer code): blocked, and
    counted on each receive, the first one too."""
    log = EventLog(store=backend.store, blobs=backend.blobs, clock=lambda: NOW)
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    ours = log.append_snapshot(log_id)

    def newer(self: SheetDocument, entry: Any) -> Any:
        raise errors.BodyVersionError("set", 2, 1)

    monkeypatch.setattr(SheetDocument, "body", newer)
    with capture_logs() as lines:
        for receives in (1, 2):
            event = {"Records": [_record(SnapshotJob(log=str(log_id), segment=0, entry=ours.num), "m1", receives)]}
            snapshot_worker.handler(event, None)
    assert ["blocked", "blocked"] == [line["outcome"] for line in lines if line["event"] == "snapshot job"]
    assert [("SnapshotsBlocked", 1, "seglog")] * 2 == _metrics(lines)
