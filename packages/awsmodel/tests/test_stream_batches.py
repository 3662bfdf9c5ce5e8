"""The model's stream-batch rules (DESIGN §9.1, §9.3, §9.4), step by step, without a driver."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from seglog_awsmodel.config import FunctionResponseType, StreamMapping, StreamPosition
from seglog_awsmodel.queue_batches import settled_messages
from seglog_awsmodel.stream_batches import (
    RETENTION_SECONDS,
    Discard,
    Done,
    Invoke,
    StreamBatch,
    retry_pause,
)

NOW = 1_700_000_000.0


def mapping(**settings: Any) -> StreamMapping:
    base = StreamMapping(function="Router", event="Entries", table="Entries",
                         StartingPosition=StreamPosition.TRIM_HORIZON)
    return replace(base, **settings)


def records(n: int, *, created: float = NOW) -> list[dict[str, Any]]:
    return [{"dynamodb": {"SequenceNumber": str(100 + i), "ApproximateCreationDateTime": created}}
            for i in range(n)]


def seqs(part: list[Any]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in part]


REPORTS = (FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,)


def test_success_checkpoints_the_last_record_read_filtered_ones_included() -> None:
    batch = StreamBatch(mapping(), records(3), last_sequence="109")
    step = batch.step(NOW)
    assert isinstance(step, Invoke) and seqs(step.part) == ["100", "101", "102"] and step.attempt == 1
    settled = batch.settle(None, failed=False, now=NOW)
    assert (settled.outcome, settled.checkpoint, settled.pause) == ("ok", "109", 0.0)
    assert batch.step(NOW) == Done(None)  # the settle already put the end: each position is put once


def test_a_batch_the_filter_emptied_is_done_at_once() -> None:
    assert StreamBatch(mapping(), [], last_sequence="104").step(NOW) == Done("104")


def test_a_partial_failure_checkpoints_before_the_lowest_reported_record_and_resumes_there() -> None:
    batch = StreamBatch(mapping(FunctionResponseTypes=REPORTS), records(4), last_sequence="103")
    batch.step(NOW)
    settled = batch.settle({"batchItemFailures": [{"itemIdentifier": "103"}, {"itemIdentifier": "101"}]},
                           failed=False, now=NOW)
    assert (settled.outcome, settled.checkpoint) == ("partial", "100")
    assert batch.retries == 1 and settled.pause == retry_pause(1)
    step = batch.step(NOW)
    assert isinstance(step, Invoke) and seqs(step.part) == ["101", "102", "103"]  # later successes run again


def test_with_bisect_a_partial_failure_splits_at_the_reported_record_without_a_retry() -> None:
    batch = StreamBatch(mapping(FunctionResponseTypes=REPORTS, BisectBatchOnFunctionError=True), records(4),
                        last_sequence="103")
    batch.step(NOW)
    settled = batch.settle({"batchItemFailures": [{"itemIdentifier": "102"}]}, failed=False, now=NOW)
    assert (settled.outcome, settled.checkpoint, batch.retries) == ("partial", "101", 0)


def test_a_malformed_response_fails_the_whole_batch() -> None:
    batch = StreamBatch(mapping(FunctionResponseTypes=REPORTS), records(2), last_sequence="101")
    batch.step(NOW)
    settled = batch.settle({"batchItemFailures": [{"itemIdentifier": "999"}]}, failed=False, now=NOW)
    assert (settled.outcome, settled.checkpoint, batch.retries) == ("failed", None, 1)


def test_bisect_on_a_function_error_halves_the_batch_and_spends_no_retry() -> None:
    batch = StreamBatch(mapping(BisectBatchOnFunctionError=True), records(5), last_sequence="104")
    batch.step(NOW)
    settled = batch.settle(None, failed=True, now=NOW)
    assert (settled.outcome, settled.pause, batch.retries) == ("bisected", 0.0, 0)
    first = batch.step(NOW)
    assert isinstance(first, Invoke) and seqs(first.part) == ["100", "101"]
    assert batch.settle(None, failed=False, now=NOW).checkpoint == "101"  # the first half's last record
    second = batch.step(NOW)
    assert isinstance(second, Invoke) and seqs(second.part) == ["102", "103", "104"]
    assert batch.settle(None, failed=False, now=NOW).checkpoint == "104"


def test_a_single_failing_record_is_retried_with_a_growing_pause_then_discarded_after_the_retry_limit() -> None:
    batch = StreamBatch(mapping(MaximumRetryAttempts=2, BisectBatchOnFunctionError=True), records(1),
                        last_sequence="100")
    pauses = []
    for _ in range(3):
        assert isinstance(batch.step(NOW), Invoke)
        pauses.append(batch.settle(None, failed=True, now=NOW).pause)
    assert pauses == [retry_pause(1), retry_pause(2), 0.0] and pauses[0] < pauses[1]
    step = batch.step(NOW)
    assert isinstance(step, Discard)
    assert (step.condition, step.attempts, step.checkpoint) == ("RetryAttemptsExhausted", 3, "100")
    assert batch.step(NOW) == Done(None)


def test_records_past_their_maximum_age_are_discarded_without_an_invocation() -> None:
    old = records(2, created=NOW - 120)
    batch = StreamBatch(mapping(MaximumRecordAgeInSeconds=60), old, last_sequence="101")
    step = batch.step(NOW)
    assert isinstance(step, Discard) and (step.condition, step.attempts) == ("RecordAgeExceeded", 0)
    # -1 means the stream's retention, 24 hours
    assert isinstance(StreamBatch(mapping(), old, last_sequence="101").step(NOW), Invoke)
    ancient = records(1, created=NOW - RETENTION_SECONDS - 1)
    assert isinstance(StreamBatch(mapping(), ancient, last_sequence="100").step(NOW), Discard)


def test_the_retry_pause_is_capped() -> None:
    assert retry_pause(0) == 0.1 and retry_pause(50) == 2.0


def test_an_sqs_batch_deletes_all_but_the_reported_failures_and_nothing_after_an_error() -> None:
    from seglog_awsmodel.config import QueueMapping

    jobs = QueueMapping(function="Worker", event="Jobs", queue="Jobs",
                        FunctionResponseTypes=REPORTS)
    ids = ["a", "b", "c"]
    assert settled_messages(jobs, ids, {"batchItemFailures": [{"itemIdentifier": "b"}]}, failed=False) == ["a", "c"]
    assert settled_messages(jobs, ids, None, failed=False) == ids
    assert settled_messages(jobs, ids, None, failed=True) is None
    assert settled_messages(jobs, ids, {"batchItemFailures": [{"itemIdentifier": ""}]}, failed=False) is None
    plain = replace(jobs, FunctionResponseTypes=())
    assert settled_messages(plain, ids, {"batchItemFailures": [{"itemIdentifier": "b"}]}, failed=False) == ids
