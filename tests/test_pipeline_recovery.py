"""The snapshot pipeline always recovers (DESIGN §5, §7), on the real local stack: a snapshot whose claimer's
message reached the dead-letter queue completes after `seglog reprocess` or a redrive (new messageIds take the
stale claim over), a deferred claimer hidden past the takeover timeout loses its claim without losing the job,
and an entry only newer code can fold blocks its snapshot with a reason instead of failing in a loop."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from pipeline_support import Crash, PipelineDriver
from seglog_aws.clients import client, local_session
from seglog_aws.items import entry_to_item
from seglog_aws.redrive import redrive
from seglog_cli.blocked import BlockedSnapshots
from seglog_cli.main import cli
from seglog_core.pipeline import Outcome
from seglog_core.pipeline.fallback import reprocess
from seglog_core.ports import QueueMessage
from seglog_core.retention import RetentionPolicy, apply_retention
from seglog_core.schema import Entry, EntryType, PendingSnapshot, SetCell, SnapshotJob, encode_body
from seglog_core.verify import verify_log
from seglog_emulator.status import read_status
from seglog_plugin.resources import local_env, resources_of
from seglog_services.snapshot_sweep import sweep
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack

#: Short, so the tests wait seconds, not minutes; claims are stamped in whole seconds.
TAKEOVER = 1


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


@pytest.fixture
def dlq_driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    """A queue whose messages go to its DLQ at the second receive (the template's maxReceiveCount, shrunk)."""
    d = PipelineDriver(deployment, max_receive=1)
    yield d
    d.close()


def _sheet(driver: PipelineDriver, snapshots: int) -> uuid.UUID:
    """A log with Snapshot entries at 0/3, 0/6, ... (two cells before each)."""
    log_id = driver.create_log()
    log = driver.event_log()
    for s in range(snapshots):
        log.append(log_id, SetCell(row=s + 1, col=1, value=s))
        log.append(log_id, SetCell(row=s + 1, col=2, value=f"s{s}"))
        log.append_snapshot(log_id)
    return log_id


def _entry(message: QueueMessage) -> int:
    return int(message.body.split('"entry":')[1].rstrip("}"))


def _receive(driver: PipelineDriver, count: int) -> list[QueueMessage]:
    got: list[QueueMessage] = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        got += driver.receive(10, visibility=30)
    assert count == len(got)
    return sorted(got, key=_entry)


def _until_stale(driver: PipelineDriver, log_id: uuid.UUID, entry: int, takeover_after: int) -> None:
    """Wait until the claim of 0/entry is older than the takeover timeout (M < now - takeover_after)."""
    item = driver.backend.pending.get(log_id, 0, entry)
    assert item is not None
    while int(time.time()) - takeover_after <= item.modified:
        time.sleep(0.2)


def _until_in_dlq(driver: PipelineDriver, message: QueueMessage) -> None:
    """Receive from the queue until SQS has moved ``message`` to the DLQ (it does so at a receive past
    maxReceiveCount: Amazon SQS Developer Guide, sqs-dead-letter-queues), working any other message."""
    assert driver.dlq_url is not None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for other in driver.receive(10, visibility=30):
            assert message.message_id != other.message_id, "delivered past maxReceiveCount"
            driver.worker(takeover_after=TAKEOVER).process(other)
        peek = driver.sqs.receive_message(QueueUrl=driver.dlq_url, VisibilityTimeout=0).get("Messages", [])
        if [message.message_id] == [m["MessageId"] for m in peek]:
            return
        time.sleep(0.3)
    raise AssertionError(f"message {message.message_id} did not reach the DLQ")


def _verified(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    b = driver.backend
    report = verify_log(b.store, log_id, blobs=b.blobs, pending=b.pending, quiescent=True)
    assert [] == report.violations
    assert report.snapshots == report.completed


def _die_after_claim(point: str) -> None:
    if point == "after_claim":
        raise Crash(point)


def test_a_snapshot_whose_claimer_died_and_went_to_the_dlq_completes_after_reprocess(
        dlq_driver: PipelineDriver) -> None:
    """The active claimer died and its message reached the DLQ; reprocess's job (a new messageId) takes the dead
    claim over. Without the takeover rule that job is deleted as a duplicate and the snapshot never completes."""
    driver = dlq_driver
    log_id = _sheet(driver, 1)
    driver.route_new()
    first = driver.receive_one(visibility=1)
    with pytest.raises(Crash):
        driver.worker(crash=_die_after_claim, takeover_after=TAKEOVER).process(first)
    _until_in_dlq(driver, first)
    b = driver.backend
    report = reprocess(b.store, b.blobs, driver.queue, since=time.time() - 3600, log_ids=[log_id])
    assert [(str(log_id), 0, 3)] == report.enqueued
    job = driver.receive_one()
    assert first.message_id != job.message_id
    _until_stale(driver, log_id, 3, TAKEOVER)
    with capture_logs() as logs:
        assert Outcome.COMPLETED == driver.worker(takeover_after=TAKEOVER).process(job)
    assert [(first.message_id, True)] == [(line["previous_claimer"], line["was_active"]) for line in logs
                                          if line["event"] == "stale claim taken over"]
    _verified(driver, log_id)


def test_a_predecessor_whose_claimer_went_to_the_dlq_is_built_by_its_successor(dlq_driver: PipelineDriver) -> None:
    """No operator: 0/3's claimer died holding its claim and its message is in the DLQ; 0/6's job finds the claim
    stale, takes it over, builds 0/3 and then itself (issue 34: it helps, rather than sending 0/3 a new job that
    waited behind every other message of a busy queue). Without it 0/6 defers until it too reaches the DLQ."""
    driver = dlq_driver
    log_id = _sheet(driver, 2)
    driver.route_new()
    first, second = _receive(driver, 2)
    with pytest.raises(Crash):
        driver.worker(crash=_die_after_claim, takeover_after=TAKEOVER).process(first)
    driver.queue.change_visibility(first, 0)  # as the killed invocation's visibility timeout running out would
    _until_in_dlq(driver, first)
    _until_stale(driver, log_id, 3, TAKEOVER)
    with capture_logs() as logs:
        assert Outcome.COMPLETED == driver.worker(takeover_after=TAKEOVER).process(second)
    assert ["completed"] == [line["outcome"] for line in logs if line["event"] == "snapshot helped"]
    _verified(driver, log_id)


def _hold(driver: PipelineDriver, log_id: uuid.UUID, entry: int, claimer: str) -> int:
    """A live build of ``entry`` by ``claimer``'s job: its claim, active and stamped a minute ahead (a builder
    renewing all along), so it stays fresh to every worker of the test however slow the machine."""
    now = int(time.time()) + 60
    if driver.backend.pending.get(log_id, 0, entry) is None:
        driver.backend.pending.create(PendingSnapshot(log_id=log_id, segment=0, entry=entry, created=now,
                                                      modified=now, claimer=claimer))
    increment = driver.backend.pending.claim(log_id, 0, entry, claimer, now=now, takeover_after=TAKEOVER)
    assert increment is not None
    return increment


def test_a_deferred_snapshot_whose_message_went_to_the_dlq_completes_after_a_redrive(
        dlq_driver: PipelineDriver) -> None:
    """The claimer deferred behind its predecessor, which a live builder held (inactive claim), and its message
    reached the DLQ; a redrive gives it a new messageId, which takes the claim over once stale and completes."""
    driver = dlq_driver
    log_id = _sheet(driver, 2)
    driver.route_new()
    first, second = _receive(driver, 2)
    worker = driver.worker(takeover_after=TAKEOVER)
    building = _hold(driver, log_id, 3, first.message_id)
    assert Outcome.DEFERRED == worker.process(second)
    assert driver.backend.pending.release(log_id, 0, 3, increment=building, now=int(time.time()))
    assert Outcome.COMPLETED == worker.process(first)
    _until_in_dlq(driver, second)
    item = driver.backend.pending.get(log_id, 0, 6)
    assert item is not None
    assert (second.message_id, False) == (item.claimer, item.active)
    assert driver.dlq_url is not None
    assert 1 == redrive(driver.sqs, dlq_url=driver.dlq_url, queue_url=driver.queue.queue_url)
    job = driver.receive_one()
    assert second.message_id != job.message_id
    _until_stale(driver, log_id, 6, TAKEOVER)
    assert Outcome.COMPLETED == worker.process(job)
    _verified(driver, log_id)


def test_a_deferred_claimer_hidden_past_the_takeover_timeout_is_taken_over_and_returns_as_a_duplicate(
        driver: PipelineDriver) -> None:
    """The claims module's deferral diagram: a duplicate job takes the stale claim of a claimer hidden by its
    backoff; the claimer's message, back while the new claim is live, is hidden; the snapshot is built once. 0/3
    is held by a live builder throughout (else the jobs of 0/6 would build it themselves). Time passes by a clock
    ahead (``later``), not by sleeping: a live window a sleep had to hit was missed by a loaded machine."""
    takeover = 30
    log_id = _sheet(driver, 2)
    driver.route_new()
    first, second = _receive(driver, 2)
    worker = driver.worker(takeover_after=takeover)
    building = _hold(driver, log_id, 3, first.message_id)
    assert Outcome.DEFERRED == worker.process(second)
    driver.queue.change_visibility(second, 60)  # as a long backoff would: hidden past the takeover timeout
    later = driver.worker(takeover_after=takeover, clock=lambda: time.time() + takeover + 1)
    duplicate = driver.queue.send(SnapshotJob(log=str(log_id), segment=0, entry=6))
    hidden: list[QueueMessage] = []  # the router's job for 0/3: kept aside
    got: list[QueueMessage] = []
    while not got:
        for m in driver.receive(10, visibility=60):
            (got if m.message_id == duplicate else hidden).append(m)
    with capture_logs() as logs:
        assert Outcome.DEFERRED == later.process(got[0])  # took the claim, then waits for 0/3 like its claimer
    assert ["stale claim taken over"] == [line["event"] for line in logs if "taken over" in line["event"]]
    driver.queue.change_visibility(second, 0)
    back = driver.receive_one()
    assert (second.message_id, Outcome.DUPLICATE) == (back.message_id, later.process(back))
    assert driver.backend.pending.release(log_id, 0, 3, increment=building, now=int(time.time()) + 60)
    assert Outcome.COMPLETED == worker.process(first)
    driver.queue.change_visibility(got[0], 0)
    assert Outcome.COMPLETED == later.process(driver.receive_one())  # the duplicate, now the claimer, builds 0/6
    for message in [back, *hidden]:
        driver.queue.change_visibility(message, 0)
    driver.drain(later)
    _verified(driver, log_id)


# ------------------------------------------------------------------------------------ entries newer code wrote


def _put_raw(deployment: LocalDeployment, entry: Entry, *, type_: str | None = None) -> None:
    """Write an entry as newer code would: straight to the table, with a type this code may not know."""
    item = entry_to_item(entry)
    if type_ is not None:
        item["T"] = {"S": type_}
    ddb = client("dynamodb", session=local_session(deployment.region), endpoint_url=deployment.endpoints["dynamodb"])
    ddb.put_item(TableName=resources_of(deployment).entries_table, Item=item)


def test_an_entry_of_a_type_only_newer_code_knows_blocks_the_snapshots_after_it_with_a_reason(
        driver: PipelineDriver, deployment: LocalDeployment, tmp_path: Path) -> None:
    """The snapshot before the entry still builds (it does not read past itself); the one after is deferred with
    the entry, its type and "deploy newer code" logged and recorded, and its message kept, not failed."""
    log_id = _sheet(driver, 1)  # Snapshot entry 0/3
    now = int(time.time())
    _put_raw(deployment, Entry(log_id=log_id, segment=0, num=4, created=now, type=EntryType.SET_CELL,
                               body=encode_body(SetCell(row=9, col=9, value="pivot"))), type_="pivot")
    _put_raw(deployment, Entry(log_id=log_id, segment=0, num=5, created=now, type=EntryType.SNAPSHOT))
    for entry in (3, 5):
        driver.queue.send(SnapshotJob(log=str(log_id), segment=0, entry=entry))
    before, after = _receive(driver, 2)
    worker = driver.worker()
    with capture_logs() as logs:
        assert [Outcome.COMPLETED, Outcome.BLOCKED] == [worker.process(before), worker.process(after)]
    reason = ("entry 0/4 has type 'pivot', unknown to this code: deploy newer code of the snapshot worker; the "
              "snapshot is deferred until then")
    item = driver.backend.pending.get(log_id, 0, 5)
    assert item is not None
    assert (reason, 1, False) == (item.blocked, item.retries, item.active)
    assert [("pivot", 0, 4, "deploy newer code", "error")] == [
        (line["entry_type"], line["blocked_segment"], line["blocked_entry"], line["action"], line["log_level"])
        for line in logs if line["event"].startswith("snapshot blocked")]
    assert after.message_id == driver.receive_one().message_id  # kept: back after the deferral
    section = BlockedSnapshots.read(driver.backend.pending)
    status = read_status(tmp_path, app=section)
    assert section.blocked is not None
    assert [(0, 5, reason)] == [(b.segment, b.entry, b.reason) for b in section.blocked if b.log_id == str(log_id)]
    assert "snapshots blocked: " in status.render()


def test_a_body_version_from_newer_code_blocks_its_snapshot_until_newer_code_builds_it(
        driver: PipelineDriver, deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocked after the claim (bodies are decoded to build): the claim is released, the reason recorded; an
    upgraded `seglog log verify` reports it; the worker with the newer code completes the snapshot."""
    log_id = driver.create_log()
    log = driver.event_log()
    log.append(log_id, SetCell(row=1, col=1, value="v1"))
    _put_raw(deployment, Entry(log_id=log_id, segment=0, num=2, created=int(time.time()), type=EntryType.SET_CELL,
                               version=2, body=encode_body(SetCell(row=2, col=1, value="v2"))))
    log.append_snapshot(log_id)  # 0/3: an append reads the latest entry's num, never its body
    driver.route_new()
    message = driver.receive_one()
    assert Outcome.BLOCKED == driver.worker().process(message)
    reason = ("entry 0/2 has 'set' body version 2, this code knows up to 1: deploy newer code of the snapshot "
              "worker; the snapshot is deferred until then")
    item = driver.backend.pending.get(log_id, 0, 3)
    assert item is not None
    assert (reason, False, 1) == (item.blocked, item.active, item.increment)
    monkeypatch.setattr(SetCell, "VERSION", 2)  # newer code: first the operator's CLI, then the worker
    for key, value in local_env(deployment).items():
        monkeypatch.setenv(key, value)
    shown = CliRunner().invoke(cli, ["log", "verify", str(log_id)])
    assert 1 == shown.exit_code
    assert f"  I5 {log_id} at 0/3: snapshot blocked: {reason}\n" in shown.output
    assert Outcome.COMPLETED == driver.worker().process(driver.receive_one())
    _verified(driver, log_id)
    state, _ = driver.document.load(log_id)
    assert ("v1", "v2") == (state.get(1, 1), state.get(2, 1))


def test_a_late_job_for_a_segment_retention_deleted_ends_as_already_done(driver: PipelineDriver) -> None:
    """`retain --delete` removed the segment of a snapshot whose job comes late (a redrive, a reprocess, the sweep):
    done, its message deleted and its pending item gone. It once failed on every receive and after every redrive
    (only archived segments counted as retired)."""
    b = driver.backend
    log_id = driver.create_log()
    log = driver.event_log()
    for segment in range(1, 4):
        log.append(log_id, SetCell(row=1, col=1, value=segment))
        log.start_segment(log_id)
        b.store.complete_snapshot(log_id, segment, 0, "root")  # stands in for the pipeline's build
    assert [0, 1] == apply_retention(b.store, b.blobs, log_id, RetentionPolicy(keep=2, archive=False))
    b.pending.create(PendingSnapshot(log_id=log_id, segment=1, entry=0, created=1, modified=1))
    driver.queue.send(SnapshotJob(log=str(log_id), segment=1, entry=0))
    assert Outcome.ALREADY_DONE == driver.worker().process(driver.receive_one())
    assert (0, None) == (driver.queue.depth(), b.pending.get(log_id, 1, 0))


class _OneLog:
    """The session's pending table as a sweep of one log's items sees it (other tests leave items there)."""

    def __init__(self, pending: Any, log_id: uuid.UUID) -> None:
        self._pending, self._log_id = pending, log_id

    def scan(self) -> Iterator[PendingSnapshot]:
        return (p for p in self._pending.scan() if p.log_id == self._log_id)


def test_a_blocked_snapshot_whose_job_was_parked_is_built_by_newer_code_after_the_sweep(
        dlq_driver: PipelineDriver, deployment: LocalDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocked until its job reached the DLQ; newer code is deployed; nothing would build it until an operator
    redrives. The scheduled sweep finds its pending item idle past the longest hide and sends a job, which takes
    the stale claim over and completes the snapshot."""
    driver = dlq_driver
    log_id = driver.create_log()
    driver.event_log().append(log_id, SetCell(row=1, col=1, value="v1"))
    _put_raw(deployment, Entry(log_id=log_id, segment=0, num=2, created=int(time.time()), type=EntryType.SET_CELL,
                               version=2, body=encode_body(SetCell(row=2, col=1, value="v2"))))
    driver.event_log().append_snapshot(log_id)  # 0/3
    driver.route_new()
    message = driver.receive_one(visibility=1)
    assert Outcome.BLOCKED == driver.worker(takeover_after=TAKEOVER).process(message)
    _until_in_dlq(driver, message)
    one_log: Any = _OneLog(driver.backend.pending, log_id)
    assert [] == sweep(one_log, driver.queue, now=time.time(), idle=60).sent  # not idle long enough yet
    monkeypatch.setattr(SetCell, "VERSION", 2)  # newer code deployed
    run = sweep(one_log, driver.queue, now=time.time() + 61, idle=60)
    assert [(str(log_id), 0, 3)] == run.sent
    job = driver.receive_one()
    assert message.message_id != job.message_id
    _until_stale(driver, log_id, 3, TAKEOVER)
    assert Outcome.COMPLETED == driver.worker(takeover_after=TAKEOVER).process(job)
    _verified(driver, log_id)
