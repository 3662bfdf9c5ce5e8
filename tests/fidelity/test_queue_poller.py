"""QueuePoller behaves as a Lambda event source mapping on an SQS queue (DESIGN §9, items 5-10).

The queues are real (LocalStack's SQS), made per test with short visibility timeouts; the function is the probe,
run by a real LambdaInvoker in worker processes. Where a test needs every message in one batch it runs one
poller (MaximumConcurrency 1, below AWS's minimum of 2): how messages split between pollers is not what it
checks. Those tests also keep the queue's visibility timeout longer than MaximumBatchingWindowInSeconds: a
message received at the start of a window would otherwise become visible again before the window ends and be
received a second time into the same batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fidelity.conftest import MakeInvoker, MakeQueue, Probe, Queue, running
from fidelity.drivers import warm
from seglog_awsmodel.config import EmulatorConfig, FunctionResponseType, QueueMapping
from seglog_awsmodel.filtering import compile_filter_criteria
from seglog_awsmodel.template import Template, TemplateError
from seglog_emulator.invoker import LambdaInvoker
from seglog_emulator.pollers.queue import QueuePoller
from seglog_stack.local import LocalDeployment

REPORT = (FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,)


def queue_poller(queue: Queue, invoker: LambdaInvoker, stack: LocalDeployment, **settings: Any) -> QueuePoller:
    """A poller of ``queue`` with the mapping settings given (AWS's names)."""
    mapping = QueueMapping(function="probe", event="Queue", queue="Queue", **settings)
    return QueuePoller(mapping, invoker, queue.sqs, queue_url=queue.url, queue_arn=queue.arn, region=stack.region)


def eventually(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def receive_counts(probe: Probe, name: str) -> list[str]:
    """ApproximateReceiveCount of each delivery of the message ``name``."""
    return [record["attributes"]["ApproximateReceiveCount"] for record in probe.deliveries(name)]


def max_overlap(starts: list[dict[str, Any]]) -> int:
    """The most invocations that ran at the same moment (from the probe's start and end times)."""
    edges = sorted([(s["time"], 1) for s in starts] + [(s["end"]["time"], -1) for s in starts],
                   key=lambda edge: (edge[0], edge[1]))
    running_now = peak = 0
    for _, step in edges:
        running_now += step
        peak = max(peak, running_now)
    return peak


# --------------------------------------------------------------------------------------------- item 5


@pytest.mark.stack
def test_sqs_messages_no_filter_matches_are_deleted_without_an_invocation(
        stack: LocalDeployment, make_queue: MakeQueue, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, invocation-eventfiltering
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html): "If none of your filters are
    satisfied, Lambda discards the record"; for an SQS message that means deleting it from the queue, so it does
    not come back after its visibility timeout to be received again and again."""
    queue = make_queue(visibility_timeout=1)
    for name in ("drop1", "keep", "drop2"):
        queue.send(name)
    criteria = compile_filter_criteria({"Filters": [{"Pattern": json.dumps({"body": {"name": ["keep"]}})}]})
    poller = queue_poller(queue, make_invoker(), stack, BatchSize=10, FilterCriteria=criteria)

    with running(poller):
        probe.finished(1)
        eventually(lambda: (0, 0) == queue.counts(), "the queue to be empty")

    assert [["keep"]] == probe.batches()


# --------------------------------------------------------------------------------------------- item 6


# --------------------------------------------------------------------------------------------- item 7


# --------------------------------------------------------------------------------------------- item 8


@pytest.mark.stack
def test_sqs_visibility_timeout_shorter_than_the_run_gives_a_concurrent_second_delivery(
        stack: LocalDeployment, make_queue: MakeQueue, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, services-sqs-configure
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): the visibility timeout must
    cover the function's run; when it does not, the message becomes visible while the first invocation still
    runs and Lambda delivers it again, at the same time (why AWS refuses such a mapping at creation: see the
    next test; the queue's timeout can still be lowered later)."""
    queue = make_queue(visibility_timeout=1)
    # Visible again after 1 s; the other poller's next long poll (each lasts 1 s) gets it before 2.5 s.
    slow = queue.send("slow", "sleep", seconds=2.5)
    poller = queue_poller(queue, warm(make_invoker(concurrency=2), 2), stack, BatchSize=1, MaximumConcurrency=2)

    with running(poller):
        first, second = probe.wait(lambda starts: len(starts) >= 2 and starts[0]["end"] is not None,
                                   "a second delivery and the end of the first")[:2]

    assert [slow, slow] == [s["event"]["Records"][0]["messageId"] for s in (first, second)]
    assert ["1", "2"] == receive_counts(probe, "slow")[:2]
    assert first["time"] < second["time"] < first["end"]["time"], "the second delivery did not overlap the first"


def test_function_timeout_above_the_queue_visibility_timeout_is_rejected() -> None:
    """AWS Lambda Developer Guide, services-sqs-configure
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): "Your function's timeout must be
    less than or equal to the queue's visibility timeout. Lambda validates this requirement when you create or
    update an event source mapping and will return an error if the function timeout exceeds the queue's
    visibility timeout." """

    def template(timeout: int) -> Template:
        return Template(path=Path("fidelity.yaml"), body={"Resources": {
            "Jobs": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 2}},
            "Worker": {"Type": "AWS::Serverless::Function", "Properties": {
                "Handler": "probe_handler.handler", "Runtime": "python3.13", "Timeout": timeout,
                "Events": {"Work": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["Jobs", "Arn"]}}}}}}}})

    def resolve(value: Any) -> str:
        return f"local:{json.dumps(value)}"

    with pytest.raises(TemplateError) as refused:  # TemplateConfigError, with every problem listed
        EmulatorConfig.from_template(template(3), resolve)
    (problem,) = refused.value.problems  # type: ignore[attr-defined]
    assert "Worker.Events.Work: function Worker has Timeout 3 s, more than queue Jobs's VisibilityTimeout 2 s" \
        in problem
    accepted = EmulatorConfig.from_template(template(2), resolve)
    assert ["Jobs"] == [mapping.queue for mapping in accepted.queue_mappings]


# --------------------------------------------------------------------------------------------- item 9


@pytest.mark.stack
def test_sqs_batches_run_concurrently_up_to_maximum_concurrency(
        stack: LocalDeployment, make_queue: MakeQueue, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, services-sqs-scaling
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html): Lambda processes batches of a
    queue concurrently, and ScalingConfig's MaximumConcurrency "limits the number of concurrent instances that
    the Amazon SQS event source can invoke". The invoker allows five at once: the limit of two is the mapping's."""
    queue = make_queue(visibility_timeout=10)
    for n in range(5):
        queue.send(f"m{n}", "sleep", seconds=0.6)
    poller = queue_poller(queue, warm(make_invoker(concurrency=5), 2), stack, BatchSize=1, MaximumConcurrency=2)

    with running(poller):
        starts = probe.finished(5)

    assert ["m0", "m1", "m2", "m3", "m4"] == sorted(name for s in starts for name in s["names"])
    assert 2 == max_overlap(starts)


@pytest.mark.stack
def test_sqs_invocation_past_the_function_timeout_is_killed_and_counts_as_failed(
        stack: LocalDeployment, make_queue: MakeQueue, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, services-sqs-errorhandling
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html) and configuration-timeout
    (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html): an invocation that runs past the
    function's timeout is stopped and fails; its batch is not deleted and comes back after the visibility
    timeout."""
    queue = make_queue(visibility_timeout=2)
    queue.send("stuck", "sleep", seconds=4, times=1)
    # One poller: a retry slowed by a cold start cannot be overtaken by a third delivery.
    poller = queue_poller(queue, warm(make_invoker(timeout=1.0), 1), stack, BatchSize=1, MaximumConcurrency=1)

    with running(poller):
        probe.finished(1)
        eventually(lambda: (0, 0) == queue.counts(), "the queue to be empty")

    killed, retried = probe.starts()[:2]
    assert killed["end"] is None, "the handler ran to its end past the function's timeout"
    assert ["1", "2"] == receive_counts(probe, "stuck")
    assert retried["end"] is not None
    assert killed["pid"] != retried["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)  # the timed-out execution environment was killed


# --------------------------------------------------------------------------------------------- item 10


@pytest.mark.stack
def test_sqs_event_the_function_receives_matches_aws_field_for_field(
        stack: LocalDeployment, make_queue: MakeQueue, probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, with-sqs (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html),
    "Example standard queue message event": camelCase keys in AWS's order, every attribute value a string,
    message attributes as stringValue/binaryValue (base64)/list values/dataType — as the function receives it."""
    queue = make_queue(visibility_timeout=5)
    sent = queue.send("ev", MessageAttributes={
        "kind": {"DataType": "String", "StringValue": "job"},
        "count": {"DataType": "Number", "StringValue": "3"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}})
    poller = queue_poller(queue, make_invoker(), stack, BatchSize=1)

    with running(poller):
        (start,) = probe.finished(1)

    assert ["Records"] == list(start["event"])
    (record,) = start["event"]["Records"]
    assert ["messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfMessageAttributes",
            "md5OfBody", "eventSource", "eventSourceARN", "awsRegion"] == list(record)
    assert (sent, "aws:sqs", queue.arn, stack.region) == (
        record["messageId"], record["eventSource"], record["eventSourceARN"], record["awsRegion"])
    assert {"name": "ev", "action": "ok"} == json.loads(record["body"])
    assert hashlib.md5(record["body"].encode()).hexdigest() == record["md5OfBody"]
    attributes = record["attributes"]
    assert ["ApproximateReceiveCount", "SentTimestamp", "SenderId",
            "ApproximateFirstReceiveTimestamp"] == list(attributes)[:4]
    assert all(isinstance(value, str) for value in attributes.values())
    assert "1" == attributes["ApproximateReceiveCount"] and attributes["SentTimestamp"].isdigit()
    assert {
        "kind": {"stringValue": "job", "stringListValues": [], "binaryListValues": [], "dataType": "String"},
        "count": {"stringValue": "3", "stringListValues": [], "binaryListValues": [], "dataType": "Number"},
        "blob": {"binaryValue": "AP8=", "stringListValues": [], "binaryListValues": [], "dataType": "Binary"},
    } == record["messageAttributes"]
