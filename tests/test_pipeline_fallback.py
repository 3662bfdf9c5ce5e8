"""The manual fallbacks (reprocess, rebuild) and the deployed handlers driven with real Lambda events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline_support import PipelineDriver
from seglog_awsmodel.events.dynamodb_stream import stream_event
from seglog_awsmodel.events.sqs import sqs_event
from seglog_cli.main import cli
from seglog_core.pipeline.fallback import rebuild, reprocess
from seglog_core.ports import BlobStore
from seglog_core.schema import SetCell, SetRange
from seglog_core.snapshot import load_root
from seglog_core.verify import verify_log
from seglog_plugin.resources import local_env, resources_of
from seglog_stack.local import LocalDeployment

pytestmark = pytest.mark.stack


@pytest.fixture
def driver(deployment: LocalDeployment) -> Iterator[PipelineDriver]:
    d = PipelineDriver(deployment)
    yield d
    d.close()


def _log(driver: PipelineDriver, snapshots: int = 2) -> uuid.UUID:
    log_id = driver.create_log()
    log = driver.event_log(large_threshold=512)
    for s in range(snapshots):
        log.append(log_id, SetCell(row=s + 1, col=1, value=s))
        log.append(log_id, SetRange(row=10 + s, col=1, values=[["x" * 40] * 20]))  # > 512 bytes: to S3
        log.append_snapshot(log_id)
    return log_id


def _verified(driver: PipelineDriver, log_id: uuid.UUID) -> None:
    b = driver.backend
    report = verify_log(b.store, log_id, blobs=b.blobs, pending=b.pending, quiescent=True)
    assert report.violations == []
    assert report.completed == report.snapshots


def test_reprocess_enqueues_incomplete_snapshots_and_untags_referenced_bodies(driver: PipelineDriver) -> None:
    log_id = _log(driver)
    b = driver.backend
    orphan = f"entries/{log_id}/{uuid.uuid4()}"
    b.blobs.put(orphan, b"never appended", discardable=True)
    report = reprocess(b.store, b.blobs, driver.queue, since=time.time() - 3600, log_ids=[log_id])
    assert [(seg, num) for _, seg, num in report.enqueued] == [(0, 3), (0, 6)]
    assert len(report.kept) == 2
    assert b.blobs.is_discardable(orphan)  # re-tags nothing it should not
    worker = driver.worker()
    while messages := driver.receive(10):
        for message in messages:
            worker.process(message)
        time.sleep(0.2)
    driver.drain(worker)
    _verified(driver, log_id)
    assert reprocess(b.store, b.blobs, driver.queue, since=time.time() + 60, log_ids=[log_id]).enqueued == []


def test_rebuild_recreates_lost_snapshots_and_completes_missing_ones(driver: PipelineDriver) -> None:
    log_id = _log(driver)
    driver.drain()
    b = driver.backend
    built = sorted(b.blobs.keys(f"snapshots/{log_id}/"))
    for key in built:  # S3 thrown away
        b.blobs.delete(key)
    log = driver.event_log(large_threshold=512)
    log.append(log_id, SetCell(row=1, col=3, value="after"))
    log.append_snapshot(log_id)  # never routed: rebuild completes it
    report = rebuild(b.store, b.blobs, b.pending, log_id, body_of=driver.document.body, chunk_cells=50)
    assert report.snapshots == 3
    assert report.completed == [(0, 8)]
    assert report.strays == []
    assert set(built) <= set(b.blobs.keys(f"snapshots/{log_id}/"))
    driver.route_new()  # the stream router still untags the new entries' bodies
    driver.drain()
    _verified(driver, log_id)


class _DiesBeforeRoot:
    """The bucket as a rebuild sees it that dies (killed, its laptop closed) once it has written every chunk of one
    snapshot and before its root."""

    def __init__(self, blobs: BlobStore, root: str) -> None:
        self._blobs, self._root = blobs, root

    def put(self, key: str, data: bytes, *, discardable: bool = False) -> None:
        if key == self._root:
            raise KeyboardInterrupt("rebuild killed")
        self._blobs.put(key, data, discardable=discardable)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._blobs, name)


def test_a_worker_finishing_a_rebuild_that_died_cuts_chunks_as_the_rebuild_did(driver: PipelineDriver) -> None:
    """Rebuild builds a snapshot no job has reached yet and dies before its root. The snapshot's job, in a worker of
    another chunk size, must cut the same chunks under the same keys: before, rebuild pinned nothing, the worker cut
    fewer, larger chunks and rebuild's later ones were orphaned (I6; Scenario(rebuild=True) seed 79 is the race).
    Rebuild claims the pending item as a worker does, pinning its chunk size; the job takes the claim over once it
    is stale (on the real PendingSnapshots table) and resumes after rebuild's last checkpoint."""
    log_id = _log(driver, snapshots=1)
    driver.drain()
    log = driver.event_log(large_threshold=512)
    log.append(log_id, SetRange(row=1, col=1, values=[[f"{r}{c}" for c in "abc"] for r in range(6)]))
    tail = log.append_snapshot(log_id)
    b = driver.backend
    dying = _DiesBeforeRoot(b.blobs, f"snapshots/{log_id}/{tail.segment}/{tail.num}/root")
    with pytest.raises(KeyboardInterrupt):
        rebuild(b.store, dying, b.pending, log_id, body_of=driver.document.body,  # type: ignore[arg-type]
                chunk_cells=3, takeover_after=30)
    driver.drain(driver.worker(chunk_cells=50, takeover_after=30, clock=lambda: time.time() + 31))
    _verified(driver, log_id)
    stored = b.store.get_entry(log_id, tail.segment, tail.num)
    assert stored is not None and stored.snapshot_root is not None
    root = load_root(b.blobs, stored.snapshot_root)
    assert root is not None and len(root.chunks) > 1
    # Cut at 3 cells: a chunk closes at the row that reaches 3, so only a row wider than that stands alone.
    assert all(ref.cells <= 3 or ref.first_row == ref.last_row for ref in root.chunks)


def test_the_deployed_handlers_run_on_real_lambda_events(deployment: LocalDeployment, driver: PipelineDriver,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from seglog_services import runtime, snapshot_worker, stream_router

    for key, value in local_env(deployment).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SEGLOG_CHUNK_CELLS", "50")
    runtime.backend.cache_clear()
    log_id = _log(driver, snapshots=1)
    ours: list[dict[str, object]] = []
    for shard in driver.reader.shards():  # the session's whole stream, a page at a time: keep our records
        after = None
        while records := driver.reader.read_after(shard["ShardId"], after):
            ours += [r for r in records if r["dynamodb"]["Keys"]["G"]["B"][:16] == log_id.bytes]
            after = records[-1]["dynamodb"]["SequenceNumber"]
    event = stream_event(ours, event_source_arn=driver.reader.stream_arn, region=deployment.region)
    assert stream_router.handler(event, None) == {"batchItemFailures": []}
    b = driver.backend
    queue_arn = b.sqs.get_queue_attributes(QueueUrl=resources_of(deployment).queue_url,
                                           AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    done = False
    deadline = time.monotonic() + 20
    while not done and time.monotonic() < deadline:
        messages = b.sqs.receive_message(QueueUrl=resources_of(deployment).queue_url, MaxNumberOfMessages=1,
                                         VisibilityTimeout=30, MessageSystemAttributeNames=["All"],
                                         MessageAttributeNames=["All"]).get("Messages", [])
        for m in messages:
            if str(log_id) not in m["Body"]:  # another test's job: leave it
                b.sqs.change_message_visibility(QueueUrl=resources_of(deployment).queue_url,
                                                ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
                continue
            response = snapshot_worker.handler(sqs_event([m], queue_arn=queue_arn, region=deployment.region), None)
            assert response == {"batchItemFailures": []}
            done = True
    assert done
    runtime.backend.cache_clear()
    _verified(driver, log_id)


def test_cli_rebuild_after_retain_delete_keeps_every_snapshot_and_verify_is_clean(
        deployment: LocalDeployment, driver: PipelineDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    """`seglog log retain --delete`, then `seglog rebuild`: it folded from an empty sheet at the first remaining
    segment and wrote that over every completed snapshot (issue 18). Now nothing is written, the fold starts at the
    oldest retained snapshot, and `seglog log verify` finds nothing after deleted, then archived history."""
    log_id = driver.create_log()
    log = driver.event_log(snapshot_every=3, segment_entries=6)
    for i in range(24):
        log.append(log_id, SetCell(row=i % 5 + 1, col=i % 3 + 1, value=i))
        driver.drain()
    for key, value in local_env(deployment).items():
        monkeypatch.setenv(key, value)
    runner = CliRunner()
    b = driver.backend
    segments = [s.num for s in b.store.segments(log_id)]
    assert len(segments) >= 4
    retained = runner.invoke(cli, ["log", "retain", str(log_id), "--keep", str(len(segments) - 1), "--delete",
                                     "--min-age-days", "0"])
    assert (0, "deleted segments [0]") == (retained.exit_code, retained.stdout.strip())
    archived = runner.invoke(cli, ["log", "retain", str(log_id), "--keep", "2", "--min-age-days", "0"])
    assert 0 == archived.exit_code
    before = {key: b.blobs.get(key) for key in b.blobs.keys(f"snapshots/{log_id}/")}
    rebuilt = runner.invoke(cli, ["rebuild", str(log_id), "--json"])
    assert 0 == rebuilt.exit_code, rebuilt.stdout
    report = json.loads(rebuilt.stdout)
    assert (True, [[1, 0]], [0], []) == (report["ok"], report["started_from"], report["gone"], report["completed"])
    assert before == {key: b.blobs.get(key) for key in b.blobs.keys(f"snapshots/{log_id}/")}
    verified = runner.invoke(cli, ["log", "verify", str(log_id), "--json", "--quiescent"])
    assert (0, [], [[1, 0]]) == (verified.exit_code, json.loads(verified.stdout)["violations"],
                                 json.loads(verified.stdout)["unchecked_snapshots"])
