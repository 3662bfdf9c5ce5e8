"""Faults on an application that names no invocation hook or no crash points (issue 36): worker_crash and
router_crash_after_send need the hook to be armed and a function's declared points (template Metadata SeglogEmulator
CrashPoints), so a poller of such an app never draws them (an invoker without a hook refuses them: drawn, they would
stop the poller), while the delivery faults still fire, and clock_skew too: without a hook the worker runs its time
module ahead (issue 37). seglog declares its hook and points, so its seeds draw exactly as before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from seglog_awsmodel.config import QueueMapping
from seglog_emulator.errors import FaultPlanError
from seglog_emulator.faults import FaultPlan, FaultSchedule
from seglog_emulator.faults.plan import check_crash_points
from seglog_emulator.invoker import InvocationResult
from seglog_emulator.pollers.queue import QueuePoller

RECORDS = [{"body": "job", "attributes": {"ApproximateReceiveCount": "1"}, "messageId": "m1"}]


class Invoker:
    def __init__(self, hooked: bool, crash_points: tuple[str, ...] = ()) -> None:
        self.hooked = hooked
        self.crash_points = crash_points

    def invoke(self, event: Mapping[str, Any], **_: Any) -> InvocationResult:
        raise AssertionError("not called")


def poller(hooked: bool, points: tuple[str, ...] = (), named: list[str] | None = None) -> QueuePoller:
    crash: dict[str, Any] = {"rate": 1.0, **({"crash_points": named} if named else {})}
    plan = FaultPlan.from_mapping({"seed": 3, "faults": {"worker_crash": crash, "clock_skew": {"rate": 1.0},
                                                         "function_timeout": {"rate": 1.0}}})
    return QueuePoller(QueueMapping(function="Worker", event="Jobs", queue="Queue"), Invoker(hooked, points), sqs=None,
                       queue_url="https://q/jobs", queue_arn="arn:aws:sqs:us-east-1:000000000000:jobs",
                       region="us-east-1", faults=FaultSchedule(plan))


def test_without_a_hook_no_crash_point_is_drawn_and_the_rest_still_fires() -> None:
    plain = poller(hooked=False)
    crash_points, timeout = plain._invocation_faults(RECORDS)
    assert [] == crash_points
    assert timeout is not None  # function_timeout needs no hook
    assert plain._clock_skew(RECORDS, "skew") > 0  # nor clock_skew: the worker skews its time module
    hooked = poller(hooked=True, points=("after_write", "before_ack"))
    crash_points, _ = hooked._invocation_faults(RECORDS)
    assert len(crash_points) == 1 and set(crash_points) < {"after_write", "before_ack"}
    assert hooked._clock_skew(RECORDS, "skew") > 0


def test_a_hooked_function_without_points_is_never_crashed() -> None:
    assert [] == poller(hooked=True)._invocation_faults(RECORDS)[0]


def test_a_plan_naming_points_crashes_only_at_those_of_the_function() -> None:
    assert ["before_ack"] == poller(True, ("after_write", "before_ack"), ["before_ack"])._invocation_faults(RECORDS)[0]
    assert [] == poller(True, ("after_write",), ["before_ack"])._invocation_faults(RECORDS)[0]


def test_a_plan_is_checked_against_the_points_the_template_declares() -> None:
    plan = FaultPlan.from_mapping({"seed": 1, "faults": {"worker_crash": {"rate": 0.5, "crash_points": ["nope"]},
                                                         "router_crash_after_send": 0.5}})
    with pytest.raises(FaultPlanError, match="crash_points nope are not declared; the template declares a, b"):
        check_crash_points(plan, {"Worker": ("a",), "Router": ("b",)})
    with pytest.raises(FaultPlanError, match="router_crash_after_send: this application declares no crash points"):
        check_crash_points(plan, {})
    check_crash_points(FaultPlan.from_mapping({"seed": 1, "faults": {"worker_crash": 0.5}}), {"Worker": ("a",)})
