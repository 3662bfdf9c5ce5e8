"""Faults on an application that names no invocation hook (issue 36): worker_crash, router_crash_after_send and
clock_skew need the hook to be armed, so a poller of such an app never draws them (an invoker without a hook
refuses them: drawn, they would stop the poller), while the delivery faults still fire. seglog names its hook,
so its seeds draw exactly as before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seglog_awsmodel.config import QueueMapping
from seglog_emulator.faults import FaultPlan, FaultSchedule
from seglog_emulator.invoker import InvocationResult
from seglog_emulator.pollers.queue import QueuePoller

RECORDS = [{"body": "job", "attributes": {"ApproximateReceiveCount": "1"}, "messageId": "m1"}]


class Invoker:
    def __init__(self, hooked: bool) -> None:
        self.hooked = hooked

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        raise AssertionError("not called")


def poller(hooked: bool) -> QueuePoller:
    plan = FaultPlan.from_mapping({"seed": 3, "faults": {"worker_crash": {"rate": 1.0}, "clock_skew": {"rate": 1.0},
                                                         "function_timeout": {"rate": 1.0}}})
    return QueuePoller(QueueMapping(function="Worker", event="Jobs", queue="Queue"), Invoker(hooked), sqs=None,
                       queue_url="https://q/jobs", queue_arn="arn:aws:sqs:us-east-1:000000000000:jobs",
                       region="us-east-1", faults=FaultSchedule(plan))


def test_without_a_hook_no_crash_point_or_clock_skew_is_drawn_and_the_rest_still_fires() -> None:
    plain = poller(hooked=False)
    crash_points, timeout = plain._invocation_faults(RECORDS)
    assert ([], 0.0) == (crash_points, plain._clock_skew(RECORDS, "skew"))
    assert timeout is not None  # function_timeout needs no hook
    hooked = poller(hooked=True)
    crash_points, _ = hooked._invocation_faults(RECORDS)
    assert len(crash_points) == 1 and hooked._clock_skew(RECORDS, "skew") > 0
