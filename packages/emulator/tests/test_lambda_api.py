"""The Lambda Invoke API the emulator serves to functions (issue 36, point 3; AWS Lambda API Reference, API_Invoke;
Developer Guide, invocation-async): names, errors, synchronous answers, and asynchronous retries with their waits,
then the OnFailure destination's record or the dead-letter queue's message. No stack: the invokers are stand-ins
and the queue client records what it is sent. IAM: LambdaInvokePolicy allows the function it names, nothing else."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seglog_awsmodel.template import load_template
from seglog_emulator.iam.operations import Target, checks
from seglog_emulator.iam.roles import function_permissions
from seglog_emulator.invoker import InvocationResult, Outcome
from seglog_emulator.lambda_api import AsyncConfig, LambdaApi, wanted

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "quote-invoke" / "template.yaml"
PATH = "/2015-03-31/functions/{}/invocations"


class Scripted:
    """Fails the first ``failures`` invocations, then answers the event back."""

    def __init__(self, failures: int = 0) -> None:
        self.failures, self.events = failures, list[Any]()

    def invoke(self, event: Mapping[str, Any], **kwargs: Any) -> InvocationResult:
        self.events.append((event, kwargs.get("attempt", 1)))
        if len(self.events) <= self.failures:
            return InvocationResult(outcome=Outcome.ERROR, function="F", request_id=f"r{len(self.events)}", pid=1,
                                    duration_ms=1.0, cold_start=False, error_type="ValueError",
                                    error_message="bad", stack_trace=("frame",))
        return InvocationResult(outcome=Outcome.SUCCESS, function="F", request_id="ok", pid=1, duration_ms=1.0,
                                cold_start=False, payload={"got": event})


class Queue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **kwargs: Any) -> None:
        self.sent.append(kwargs)


def api(invoker: Scripted, config: AsyncConfig | None = None) -> tuple[LambdaApi, Queue, list[float]]:
    config = config or AsyncConfig()
    waits: list[float] = []
    queue = Queue()
    return LambdaApi({"F": "F"}, lambda _f: invoker, configs={"F": config}, sqs=queue, region="us-east-1",
                     sleep=waits.append), queue, waits


def wait_threads(lambda_api: LambdaApi) -> None:
    lambda_api.asynchronous.join(5)


def test_a_synchronous_invoke_answers_the_value_or_the_error_with_function_error() -> None:
    ok, _, _ = api(Scripted())
    assert (200, {"got": {"a": 1}}) == (lambda a: (a[0], json.loads(a[2])))(
        ok.answer("POST", PATH.format("F"), {}, b'{"a": 1}'))
    failing, _, _ = api(Scripted(failures=1))
    status, headers, body = failing.answer("POST", PATH.format("arn:aws:lambda:us-east-1:000000000000:function:F"),
                                           {}, b"{}")
    assert (200, "Unhandled") == (status, headers["x-amz-function-error"])
    assert {"errorMessage": "bad", "errorType": "ValueError", "requestId": "r1", "stackTrace": ["frame"]} == \
        json.loads(body)


def test_unknown_functions_bad_bodies_and_dry_runs_are_answered_as_lambda_does() -> None:
    lambda_api, _, _ = api(Scripted())
    status, headers, body = lambda_api.answer("POST", PATH.format("Nope"), {}, b"{}")
    assert (404, "ResourceNotFoundException") == (status, headers["x-amzn-errortype"])
    assert "Function not found: arn:aws:lambda:us-east-1:000000000000:function:Nope" == json.loads(body)["message"]
    assert 400 == lambda_api.answer("POST", PATH.format("F"), {}, b"{not json")[0]
    assert 204 == lambda_api.answer("POST", PATH.format("F:live"), {"x-amz-invocation-type": "DryRun"}, b"{}")[0]


def test_an_event_is_retried_twice_after_one_and_two_minutes_then_goes_to_on_failure() -> None:
    invoker = Scripted(failures=3)
    lambda_api, queue, waits = api(invoker, AsyncConfig(on_failure="https://q/failures"))
    assert 202 == lambda_api.answer("POST", PATH.format("F"), {"x-amz-invocation-type": "Event"}, b'{"n": 1}')[0]
    wait_threads(lambda_api)
    assert ([1, 2, 3], [60.0, 120.0]) == ([attempt for _, attempt in invoker.events], waits)
    [sent] = queue.sent
    record = json.loads(sent["MessageBody"])
    assert "https://q/failures" == sent["QueueUrl"]
    assert ({"n": 1}, "RetriesExhausted", 3, "Unhandled") == (
        record["requestPayload"], record["requestContext"]["condition"],
        record["requestContext"]["approximateInvokeCount"], record["responseContext"]["functionError"])


def test_a_retry_that_succeeds_sends_nothing_and_a_dead_letter_queue_gets_the_event() -> None:
    lambda_api, queue, waits = api(Scripted(failures=1), AsyncConfig(on_failure="https://q/failures"))
    lambda_api.answer("POST", PATH.format("F"), {"x-amz-invocation-type": "Event"}, b"{}")
    wait_threads(lambda_api)
    assert ([], [60.0]) == (queue.sent, waits)
    dead, queue, _ = api(Scripted(failures=1), AsyncConfig(max_retries=0, dead_letter="https://q/dlq"))
    dead.answer("POST", PATH.format("F"), {"x-amz-invocation-type": "Event"}, b'{"n": 2}')
    wait_threads(dead)
    [sent] = queue.sent
    assert ("https://q/dlq", {"n": 2}, "bad") == (sent["QueueUrl"], json.loads(sent["MessageBody"]),
                                                  sent["MessageAttributes"]["ErrorMessage"]["StringValue"])


def test_lambda_invoke_policy_allows_the_function_it_names_and_no_other() -> None:
    template = load_template(EXAMPLE)
    assert wanted(template)
    permissions = function_permissions(template, stack="quote", region="us-east-1", parameters={},
                                       fallback=lambda _value: "unused")["QuoteFunction"]
    target = Target(region="us-east-1", account="000000000000")

    def allowed(function: str) -> bool:
        [check] = checks("lambda", "Invoke", {"FunctionName": function}, target) or []
        return permissions.decide(check.action, check.resource).allowed

    # PriceFunction's explicit FunctionName is its name (its principal's session name too); the others run under
    # their logical ids.
    names = function_permissions(template, stack="quote", region="us-east-1", parameters={},
                                 fallback=lambda _value: "unused")
    assert ("quote-price", "QuoteFunction") == (names["PriceFunction"].function, names["QuoteFunction"].function)
    assert (True, False, True, False) == (allowed("quote-price"), allowed("PriceFunction"), allowed("AuditFunction"),
                                          allowed("QuoteFunction"))


def test_an_event_answer_does_not_wait_for_the_function() -> None:
    class Slow(Scripted):
        def invoke(self, event: Mapping[str, Any], **kwargs: Any) -> InvocationResult:
            time.sleep(0.5)
            return super().invoke(event, **kwargs)

    lambda_api, _, _ = api(Slow())
    started = time.monotonic()
    assert 202 == lambda_api.answer("POST", PATH.format("F"), {"x-amz-invocation-type": "Event"}, b"{}")[0]
    assert time.monotonic() - started < 0.4
    wait_threads(lambda_api)


def test_a_payload_over_lambdas_limit_is_refused_as_too_large() -> None:
    """API_Invoke: 6 MB synchronous, 1 MB asynchronous (aws-samples' lambda-s3-async-lambda falls back to S3 on it)."""
    lambda_api, _, _ = api(Scripted())
    big = json.dumps(["x" * (1024 * 1024)]).encode()
    status, headers, _ = lambda_api.answer("POST", PATH.format("F"), {"x-amz-invocation-type": "Event"}, big)
    assert (413, "RequestEntityTooLargeException") == (status, headers["x-amzn-errortype"])
    status, _, _ = lambda_api.answer("POST", PATH.format("F"), {}, big)  # under the synchronous limit
    assert 200 == status
