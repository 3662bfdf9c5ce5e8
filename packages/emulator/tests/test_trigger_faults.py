"""function_timeout on every trigger (issue 37, point 1), not only the queue and stream pollers: the gateway and a
synchronous and an asynchronous Invoke (a schedule: test_schedule) each hand the invoker the cut the seed draws for
the delivery, record it in the fault log, and answer the timed-out invocation as AWS does (the gateway's 503;
Invoke's ``X-Amz-Function-Error: Unhandled``; an asynchronous event tried again). A caller's retry of the same
request rolls again. And an ``Event`` Invoke meets duplicate_delivery, as Lambda's own queue may hand an event over
twice (streams: test_stream_poller). No stack: the invokers are stand-ins that time out when they are given a cut.
(The invoker itself ending an invocation at its cut is test_invoker's ``test_function_timeout_kills_...``.)"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from seglog_awsmodel.config import HttpRoute
from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.gateway import Gateway
from seglog_emulator.invoker import InvocationResult, Outcome
from seglog_emulator.lambda_api import AsyncConfig, LambdaApi

ROUTE = HttpRoute(function="Fn", event="Api", Path="/orders", Method="POST")
PATH = "/2015-03-31/functions/Fn/invocations"


def faults(rate: float, seed: int = 7) -> FaultSchedule:
    return FaultSchedule(FaultPlan.from_mapping({"seed": seed, "faults": {"function_timeout": {"rate": rate}}}))


class TimesOut:
    """Times out when handed a cut (as the invoker does when the handler outlives it), else succeeds; records the
    cuts it was handed."""

    def __init__(self) -> None:
        self.cuts: list[float | None] = []
        self.lock = threading.Lock()

    def invoke(self, event: Mapping[str, Any], *, timeout: float | None = None, **_: Any) -> InvocationResult:
        with self.lock:
            self.cuts.append(timeout)
        outcome = Outcome.TIMEOUT if timeout is not None else Outcome.SUCCESS
        return InvocationResult(outcome=outcome, function="Fn", request_id=f"r{len(self.cuts)}", pid=1,
                                duration_ms=1.0, cold_start=False, error_message="Task timed out" if timeout else None,
                                payload=None if timeout is not None else {"statusCode": 200, "body": "{}"})


def timeouts(schedule: FaultSchedule) -> int:
    return schedule.summary()[FaultKind.FUNCTION_TIMEOUT]


def test_the_gateway_cuts_the_invocation_and_answers_as_for_a_timeout() -> None:
    invoker, schedule = TimesOut(), faults(1.0)
    gateway = Gateway([ROUTE], invoker, faults=schedule)
    try:
        answer = gateway.answer("POST", "/orders", [("content-type", "application/json")], b'{"id": 1}')
    finally:
        gateway.server.server_close()
    assert answer is not None and 503 == answer[0]
    [cut] = invoker.cuts
    assert cut is not None and 0 <= cut <= 3.0
    assert 1 == timeouts(schedule)


def test_a_clients_retry_of_the_same_request_rolls_again() -> None:
    """At rate 0.5 over twenty tries of one request, some are cut and some are not: each try is a site of its own."""
    invoker = TimesOut()
    gateway = Gateway([ROUTE], invoker, faults=faults(0.5))
    try:
        for _ in range(20):
            gateway.answer("POST", "/orders", [], b'{"id": 1}')
    finally:
        gateway.server.server_close()
    assert 0 < sum(cut is not None for cut in invoker.cuts) < 20


def test_the_same_seed_cuts_the_same_requests() -> None:
    def cuts(seed: int) -> list[bool]:
        invoker = TimesOut()
        gateway = Gateway([ROUTE], invoker, faults=faults(0.5, seed))
        try:
            for n in range(12):
                gateway.answer("POST", "/orders", [], f'{{"id": {n}}}'.encode())
        finally:
            gateway.server.server_close()
        return [cut is not None for cut in invoker.cuts]

    assert cuts(3) == cuts(3)
    assert cuts(3) != cuts(4)


def test_a_synchronous_invoke_answers_unhandled_and_an_asynchronous_one_is_tried_again() -> None:
    invoker, schedule = TimesOut(), faults(1.0)
    waits: list[float] = []
    api = LambdaApi({"Fn": "Fn"}, lambda _f: invoker, configs={"Fn": AsyncConfig()}, sqs=None, region="us-east-1",
                    sleep=waits.append, faults=schedule)
    status, headers, _ = api.answer("POST", PATH, {}, b"{}")
    assert (200, "Unhandled") == (status, headers.get("x-amz-function-error"))
    assert 202 == api.answer("POST", PATH, {"x-amz-invocation-type": "Event"}, b'{"n": 1}')[0]
    api.asynchronous.join(5)
    # The synchronous call, then the asynchronous event's three attempts, each cut (rate 1): retried as Lambda
    # retries a failed asynchronous invocation, one and two minutes apart.
    assert 4 == len(invoker.cuts) and None not in invoker.cuts
    assert [60.0, 120.0] == waits
    assert 4 == timeouts(schedule)



def test_an_event_invoke_is_handed_to_the_function_again_under_duplicate_delivery() -> None:
    """duplicate_delivery on an ``Event`` Invoke: the same event runs twice though the first run succeeded."""
    events: list[Any] = []

    class Succeeds:
        def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
            events.append(event)
            return InvocationResult(outcome=Outcome.SUCCESS, function="Fn", request_id="r", pid=1, duration_ms=1.0,
                                    cold_start=False, payload=None)

    schedule = FaultSchedule(FaultPlan.from_mapping({"seed": 1, "faults": {"duplicate_delivery": {"rate": 1.0}}}))
    api = LambdaApi({"Fn": "Fn"}, lambda _f: Succeeds(), configs={"Fn": AsyncConfig()}, sqs=None, region="us-east-1",
                    faults=schedule)
    assert 202 == api.answer("POST", PATH, {"x-amz-invocation-type": "Event"}, b'{"n": 1}')[0]
    api.asynchronous.join(5)
    assert [{"n": 1}, {"n": 1}] == events
    assert 1 == schedule.summary()[FaultKind.DUPLICATE_DELIVERY]
