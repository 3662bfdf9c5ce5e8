"""One fidelity suite, run against both drivers of the event-source-mapping model (DESIGN §9, §12; issue 19).

Each test states records or messages and a mapping in AWS's names, runs them through a driver
(:mod:`fidelity.drivers`) and checks what AWS documents, by DESIGN §9's item. ``emulator`` runs the emulator's
pollers on the local stack (real processes, real time); ``simulator`` runs the simulator's pollers in a
simulated world (greenlets, simulated time). Both drive :mod:`seglog_awsmodel`'s rules, so a rule broken in the
model fails both, and a driver that stops carrying out one of the model's steps fails here on its own
(:func:`test_the_suite_fails_against_a_driver_that_skips_one_step_of_the_model` shows it for each).

What only one driver can show stays with it: the emulator's event shapes, polling rate, payload limit, parent
shards and function timeouts (test_stream_poller, test_stream_failures, test_queue_poller); the simulator's
concurrency and visibility races (packages/sim/tests/test_sim_fidelity.py).

Where all messages must come in one batch a test runs one poller (MaximumConcurrency 1, below AWS's minimum of
2: how messages split between pollers is not what it checks) and keeps the visibility timeout longer than the
batching window (a message received at the window's start would otherwise come back into the same batch).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import pytest

from fidelity.drivers import Driver, EmulatorDriver, Rec
from seglog_awsmodel.config import FunctionResponseType
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.filtering import compile_filter_criteria
from seglog_awsmodel.stream_batches import Settled, StreamBatch
from seglog_emulator.pollers import stream as emulator_stream
from seglog_sim import pollers as sim_pollers

REPORT = (FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,)


@pytest.fixture(params=[pytest.param("emulator", marks=pytest.mark.stack), "simulator"])
def driver(request: pytest.FixtureRequest) -> Driver:
    if request.param == "simulator":
        from fidelity.sim_driver import SimDriver

        return SimDriver()
    fixtures: dict[str, Any] = {name: request.getfixturevalue(name)
                                for name in ("stack", "table", "probe", "make_invoker", "checkpoints", "make_queue")}
    return EmulatorDriver(**fixtures)


# ------------------------------------------------------------------------------------------ streams, §9.1


def test_stream_one_batch_in_flight_per_shard_and_checkpoint_moves_only_on_success(driver: Driver) -> None:
    """AWS Lambda Developer Guide, services-ddb-params (ParallelizationFactor 1: one batch of a shard at a time)
    and services-ddb-batchfailurereporting (https://docs.aws.amazon.com/lambda/latest/dg/
    services-ddb-batchfailurereporting.html): "by default Lambda checkpoints to the highest sequence number of a
    batch only when the batch is a complete success", retrying a failed batch whole."""
    run = driver.stream([Rec("r1", "sleep", seconds=0.3), Rec("r2"), Rec("r3", "fail", times=1),
                         Rec("r4", "sleep", seconds=0.3)], BatchSize=2)

    assert [["r1", "r2"], ["r3", "r4"], ["r3", "r4"]] == run.batches
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(run.spans)), "two batches at once"
    assert ["r2", "r4"] == run.checkpoints


def test_stream_report_batch_item_failures_resumes_from_the_lowest_reported_sequence_number(driver: Driver) -> None:
    """services-ddb-batchfailurereporting: "If the batchItemFailures array contains multiple items, Lambda uses
    the record with the lowest sequence number as the checkpoint. Lambda then retries all records starting from
    that checkpoint". The probe lists its failures highest first."""
    run = driver.stream([Rec("r1"), Rec("r2", "report", times=1), Rec("r3"), Rec("r4", "report", times=1),
                         Rec("r5")], BatchSize=10, FunctionResponseTypes=REPORT)

    assert [["r1", "r2", "r3", "r4", "r5"], ["r2", "r3", "r4", "r5"]] == run.batches
    assert ["r1", "r5"] == run.checkpoints


# ------------------------------------------------------------------------------------- streams, §9.3, §9.4


def test_stream_retries_until_maximum_retry_attempts_then_discards_the_batch_to_on_failure(driver: Driver) -> None:
    """services-dynamodb-errors (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html): a
    function error is retried until MaximumRetryAttempts, then Lambda sends the batch's description to OnFailure
    and goes on with the shard."""
    run = driver.stream([Rec("r1", "fail"), Rec("r2"), Rec("r3")], BatchSize=2, MaximumRetryAttempts=2,
                        OnFailure="FailureQueue")

    assert [["r1", "r2"]] * 3 + [["r3"]] == run.batches
    assert [("RetryAttemptsExhausted", ["r1", "r2"], 3)] == run.discarded
    assert ["r2", "r3"] == run.checkpoints


def test_stream_bisect_isolates_the_poison_record_without_spending_retries(driver: Driver) -> None:
    """services-dynamodb-errors: BisectBatchOnFunctionError "splits a failed batch into two smaller batches,
    isolating bad records", and "Splitting a batch does not count towards the retry quota": with
    MaximumRetryAttempts 0 only the poison record is discarded."""
    run = driver.stream([Rec("r1"), Rec("r2"), Rec("r3", "fail"), Rec("r4")], BatchSize=4,
                        BisectBatchOnFunctionError=True, MaximumRetryAttempts=0, OnFailure="FailureQueue")

    assert [["r1", "r2", "r3", "r4"], ["r1", "r2"], ["r3", "r4"], ["r3"], ["r4"]] == run.batches
    # [r3] ran twice since the last part finished: in [r3, r4] and alone (the model counts both).
    assert [("RetryAttemptsExhausted", ["r3"], 2)] == run.discarded
    assert ["r2", "r3", "r4"] == run.checkpoints


# ------------------------------------------------------------------------------------------ streams, §9.5


def test_stream_filtered_out_records_advance_the_checkpoint_without_an_invocation(driver: Driver) -> None:
    """invocation-eventfiltering (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html):
    "If none of your filters are satisfied, Lambda discards the record"; a batch none of whose records match is
    not invoked, and the checkpoint moves past it."""
    criteria = compile_filter_criteria({"Filters": [
        {"Pattern": json.dumps({"dynamodb": {"NewImage": {"kind": {"S": ["keep"]}}}})}]})
    records = [Rec(name, extra={"kind": {"S": kind}})
               for name, kind in [("s1", "skip"), ("s2", "skip"), ("k1", "keep"), ("s3", "skip")]]
    run = driver.stream(records, BatchSize=2, FilterCriteria=criteria)

    assert [["k1"]] == run.batches
    assert ["s2", "s3"] == run.checkpoints


# ---------------------------------------------------------------------------------------------- SQS, §9.6-8


def test_sqs_failure_reappears_after_the_visibility_timeout_then_goes_to_the_dead_letter_queue(
        driver: Driver) -> None:
    """services-sqs-configure (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): a
    batch that succeeds is deleted; on an error "all messages in that batch return to the queue. After the
    visibility timeout, the messages become visible to Lambda again" (ApproximateReceiveCount goes up); past
    the RedrivePolicy's maxReceiveCount the queue moves the message to the dead-letter queue."""
    run = driver.queue([Rec("good"), Rec("bad", "fail")], visibility=1, max_receive=2, BatchSize=1,
                       MaximumConcurrency=2)

    assert {"good": ["1"], "bad": ["1", "2"]} == run.receive_counts
    first, second = run.starts["bad"]
    assert second - first >= 0.9, "a failed message came back before its visibility timeout"
    assert ["bad"] == run.dead_lettered
    assert (0, 0) == run.left


def test_sqs_report_batch_item_failures_deletes_all_but_reported(driver: Driver) -> None:
    """services-sqs-errorhandling (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
    with ReportBatchItemFailures Lambda deletes the messages not reported; only the reported ones come back."""
    run = driver.queue([Rec("a"), Rec("b", "report", times=1), Rec("c"), Rec("d", "report", times=1)],
                       visibility=2, BatchSize=10, MaximumBatchingWindowInSeconds=1, MaximumConcurrency=1,
                       FunctionResponseTypes=REPORT)

    assert [["a", "b", "c", "d"], ["b", "d"]] == [sorted(b) for b in run.batches]
    assert {"a": ["1"], "b": ["1", "2"], "c": ["1"], "d": ["1", "2"]} == run.receive_counts


@pytest.mark.parametrize("action", ["fail", "report_empty", "report_unknown"])
def test_sqs_exception_or_an_empty_or_unknown_item_identifier_fails_the_whole_batch(driver: Driver,
                                                                                   action: str) -> None:
    """services-sqs-errorhandling: "If your function throws an exception, the entire batch is considered a
    complete failure", and so is a response whose itemIdentifier is empty or not a messageId of the batch:
    nothing is deleted and every message comes back."""
    run = driver.queue([Rec("x", action, times=1), Rec("y")], visibility=2, BatchSize=10,
                       MaximumBatchingWindowInSeconds=1, MaximumConcurrency=1, FunctionResponseTypes=REPORT)

    assert {"x": ["1", "2"], "y": ["1", "2"]} == run.receive_counts
    assert (0, 0) == run.left


def test_duplicate_delivery_invokes_the_batch_again_as_received_and_only_the_first_settles(driver: Driver) -> None:
    """FaultKind.DUPLICATE_DELIVERY (with-sqs, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html: "Lambda
    might process a message more than once"): a second invocation gets the batch exactly as received — the same
    receipt handle and receive count, unlike a visibility timeout running out (a new handle, the count one
    higher) — and settles nothing; the first invocation's deletes do, so nothing comes back."""
    run = driver.queue([Rec("a")], visibility=30, BatchSize=1, MaximumConcurrency=2,
                       faults={FaultKind.DUPLICATE_DELIVERY: 1.0})

    assert {"a": ["1", "1"]} == run.receive_counts
    assert 2 == len(run.handles["a"]) and 1 == len(set(run.handles["a"]))
    assert (0, 0) == run.left


# ----------------------------------------------------------------------------------- the suite has teeth


class _SkipsThePartialCheckpoint(StreamBatch):
    """A driver's model with one step left out: after a partial failure the checkpoint stays where it was,
    instead of moving to just before the lowest reported record."""

    __slots__ = ()

    def settle(self, payload: Any, *, failed: bool, now: float) -> Settled:
        settled = super().settle(payload, failed=failed, now=now)
        return dataclasses.replace(settled, checkpoint=None) if settled.outcome == "partial" else settled


def test_the_suite_fails_against_a_driver_that_skips_one_step_of_the_model(
        driver: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both drivers run their pollers in this process (the emulator's in threads, the simulator's in greenlets),
    so the model each one drives can be swapped for one with a step left out: the suite then fails against that
    driver alone."""
    module = sim_pollers if driver.name == "simulator" else emulator_stream
    monkeypatch.setattr(module, "StreamBatch", _SkipsThePartialCheckpoint)
    with pytest.raises(AssertionError, match=r"\['r1', 'r5'\] == \['r5'\]"):
        test_stream_report_batch_item_failures_resumes_from_the_lowest_reported_sequence_number(driver)
