"""Contract of the JobQueue port: in memory, SqsJobQueue on the simulated SQS, and on LocalStack's SQS.

What the snapshot worker relies on (DESIGN §5): a received job is hidden until its visibility changes; a new
receive gives a new receipt handle and a higher receive count; delete and change_visibility never fail on a
receipt handle that went stale (received again, deleted, no longer in flight) — SQS answers those with
ReceiptHandleIsInvalid, InvalidParameterValue or MessageNotInflight (Amazon SQS API Reference, DeleteMessage and
ChangeMessageVisibility), and the worker must not mistake them for failures.
"""

from __future__ import annotations

from queue_support import QueueUnderTest
from seglog_core.schema import SNAPSHOT_JOB_DECODER, SnapshotJob

JOB = SnapshotJob(log="0f8e2f5c-5d1e-4a53-9b0b-6a2f1f0e9c11", segment=2, entry=40)


def test_a_sent_job_is_received_once_with_its_message_id_and_body(job_queue: QueueUnderTest) -> None:
    message_id = job_queue.queue.send(JOB)
    [message] = job_queue.receive(1)
    assert (message_id, JOB, 1) == (message.message_id, SNAPSHOT_JOB_DECODER.decode(message.body),
                                    message.receive_count)


def test_a_received_job_stays_hidden_until_its_visibility_is_changed(job_queue: QueueUnderTest) -> None:
    """Visibility 0 makes it visible now: the next receive gets it with a new receipt handle, counted twice."""
    job_queue.queue.send(JOB)
    [first] = job_queue.receive(1)
    assert [] == job_queue.receive(1)
    job_queue.queue.change_visibility(first, 0)
    [again] = job_queue.receive(1)
    assert (first.message_id, 2) == (again.message_id, again.receive_count)
    assert first.receipt_handle != again.receipt_handle


def test_depth_counts_visible_and_in_flight_jobs(job_queue: QueueUnderTest) -> None:
    for segment in range(3):
        job_queue.queue.send(SnapshotJob(log=JOB.log, segment=segment, entry=0))
    assert 1 == len(job_queue.receive(1))
    assert 3 == job_queue.depth()


def test_delete_removes_the_job_and_deleting_again_is_not_an_error(job_queue: QueueUnderTest) -> None:
    job_queue.queue.send(JOB)
    [message] = job_queue.receive(1)
    job_queue.queue.delete(message)
    job_queue.queue.delete(message)
    assert 0 == job_queue.depth()


def test_a_stale_receipt_handle_is_not_an_error_and_the_latest_one_deletes(job_queue: QueueUnderTest) -> None:
    """A handle from before the latest receive: delete and change_visibility answer without error (SQS may or may
    not act on it for a standard queue); the latest handle then deletes the job for good."""
    job_queue.queue.send(JOB)
    [old] = job_queue.receive(1)
    job_queue.queue.change_visibility(old, 0)
    [latest] = job_queue.receive(1)
    job_queue.queue.change_visibility(old, 0)
    job_queue.queue.delete(old)
    job_queue.queue.delete(latest)
    assert 0 == job_queue.depth()


def test_change_visibility_of_a_job_no_longer_in_flight_or_deleted_is_not_an_error(
        job_queue: QueueUnderTest) -> None:
    """Twice to 0 (the second time the job is visible, not in flight), then after the delete."""
    job_queue.queue.send(JOB)
    [message] = job_queue.receive(1)
    job_queue.queue.change_visibility(message, 0)
    job_queue.queue.change_visibility(message, 0)
    [again] = job_queue.receive(1)
    job_queue.queue.delete(again)
    job_queue.queue.change_visibility(again, 10)
    assert 0 == job_queue.depth()
