"""crash_after_call's two halves (issue 37, point 1): the worker's call counter kills the process as the armed call
completes and not before, counting every service's calls anew for each invocation; the decision is drawn where an
invocation is sent, for any app (no crash points, no hook), and recorded only by the worker when the crash happens.
The kill is a seam here; tests/emulator/test_crash_after_call.py kills a real worker on the local stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from structlog.testing import capture_logs

from seglog_awsmodel.faults import EMULATED, FaultKind
from seglog_emulator.faults import FaultPlan, FaultSchedule
from seglog_emulator.faults.call_crash import (
    CRASH_AFTER_CALL_EVENT,
    CallCounter,
    draw_crash_after_call,
    request_field,
)
from seglog_emulator.faults.plan import check_crash_points
from seglog_emulator.faults.schedule import Decision


class Killed(Exception):
    """What the fake kill raises: the handler's code after the killing call never runs, as after SIGKILL."""


class Harness:
    def __init__(self) -> None:
        self.recorded: list[Decision] = []
        self.counter = CallCounter(record=self.recorded.append, kill=self._kill)

    @staticmethod
    def _kill() -> None:
        raise Killed

    def client(self, service: str, operation: str, answer: dict[str, Any], times: int) -> Any:
        """A client of ``service`` whose next ``times`` calls of ``operation`` (its method name) get ``answer``
        (botocore's Stubber answers at before-call; after-call runs as for a real answer)."""
        made = boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        self.counter.attach(made)
        stubber = Stubber(made)
        for _ in range(times):
            stubber.add_response(operation, answer)
        stubber.activate()
        return made


@pytest.fixture
def harness() -> Iterator[Harness]:
    yield Harness()


def test_the_armed_call_kills_after_it_completes_whatever_the_service(harness: Harness) -> None:
    ddb = harness.client("dynamodb", "put_item", {}, 1)
    sqs = harness.client("sqs", "send_message", {"MessageId": "m", "MD5OfMessageBody": "d"}, 2)
    harness.counter.arm({"call": 3, "key": "site-1"})
    ddb.put_item(TableName="t", Item={"pk": {"S": "a"}})
    sqs.send_message(QueueUrl="https://q/jobs", MessageBody="one")
    with capture_logs() as logs, pytest.raises(Killed):
        sqs.send_message(QueueUrl="https://q/jobs", MessageBody="two")
    [line] = [line for line in logs if line["event"] == CRASH_AFTER_CALL_EVENT]
    assert ("crash_after_call", 3, "sqs", "SendMessage", "site-1") == (
        line["fault"], line["call"], line["service"], line["operation"], line["key"])
    assert [Decision(kind=FaultKind.CRASH_AFTER_CALL, key="site-1", amount=3)] == harness.recorded


def test_an_invocation_with_fewer_calls_is_not_crashed_and_the_next_counts_from_zero(harness: Harness) -> None:
    s3 = harness.client("s3", "put_object", {}, 7)
    harness.counter.arm({"call": 3, "key": "first"})
    s3.put_object(Bucket="b", Key="k1", Body=b"1")
    s3.put_object(Bucket="b", Key="k2", Body=b"2")
    harness.counter.disarm()
    s3.put_object(Bucket="b", Key="k3", Body=b"3")  # after the invocation: not counted
    assert [] == harness.recorded
    harness.counter.arm({"call": 2, "key": "second"})
    s3.put_object(Bucket="b", Key="k4", Body=b"4")
    harness.counter.arm(None)  # an invocation that was not drawn: nothing kills, whatever it calls
    for n in range(3):
        s3.put_object(Bucket="b", Key=f"x{n}", Body=b"x")
    assert [] == harness.recorded


def test_it_is_drawn_for_any_app_peeked_not_recorded() -> None:
    plan = FaultPlan.from_mapping({"seed": 5, "faults": {"crash_after_call": {"rate": 1.0, "call": [2, 4]}}})
    check_crash_points(plan, {})  # an app that declares no crash points: not refused
    schedule = FaultSchedule(plan)
    decision = draw_crash_after_call(schedule, "sqs", '{"job": 1}', "1")
    assert decision is not None and decision.amount in (2, 3, 4)
    assert decision == draw_crash_after_call(schedule, "sqs", '{"job": 1}', "1")  # a pure function of the site
    assert {"call": decision.amount, "key": decision.key} == request_field(decision)
    assert [] == schedule.injected()  # the worker records it, if the call comes
    assert draw_crash_after_call(None, "sqs", "x", "1") is None
    off = FaultSchedule(FaultPlan.from_mapping({"seed": 5, "faults": {"crash_after_call": 0.0}}))
    assert draw_crash_after_call(off, "sqs", '{"job": 1}', "1") is None


def test_it_is_an_emulated_kind_with_a_call_number_the_simulator_never_draws() -> None:
    from seglog_awsmodel.faults import AMOUNTS, SIMULATED

    assert FaultKind.CRASH_AFTER_CALL in EMULATED and FaultKind.CRASH_AFTER_CALL not in SIMULATED
    assert ("call", (1, 6)) == AMOUNTS[FaultKind.CRASH_AFTER_CALL]
