"""Schedule and ScheduleV2 events: the template reader, EventBridge's schedule expressions, and the scheduler's
firing, scaled clock and asynchronous retries; for ScheduleV2, time zones, at(), start and end dates, flexible
windows and EventBridge Scheduler's event.

Pages cited: SAM sam-property-function-schedule and -schedulev2; Amazon EventBridge User Guide eb-rate-expressions
and eb-scheduled-rule-pattern; EventBridge Scheduler User Guide schedule-types, managing-schedule-context-attributes;
AWS Lambda Developer Guide invocation-async-error-handling.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.config import EmulatorConfig, ScheduleRule, ScheduleV2Rule, TemplateConfigError
from seglog_awsmodel.errors import ScheduleExpressionError
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.schedule_expressions import (
    AtExpression,
    CronExpression,
    RateExpression,
    parse_schedule_expression,
    parse_scheduler_expression,
)
from seglog_awsmodel.template import Template, load_template
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import InvocationResult, Outcome
from seglog_emulator.scheduler import Scheduler
from seglog_emulator.supervisor import child_names

REPO_ROOT = Path(__file__).resolve().parents[3]
UTC = dt.UTC


def resolve(value: Any) -> str:
    return f"local:{value}"


def read(events: dict[str, Any], **overrides: Any) -> EmulatorConfig:
    body = {"Resources": {"Fn": {"Type": "AWS::Serverless::Function", "Properties": {
        "Handler": "pkg.handler", "Runtime": "python3.13", "Events": events}}}}
    return EmulatorConfig.from_template(Template(path=Path("hand-made.yaml"), body=body), resolve,
                                        parameters=overrides)


def schedule_event(**props: Any) -> dict[str, Any]:
    return {"Nightly": {"Type": "Schedule", "Properties": props}}


# ------------------------------------------------------------------------------------------------ template


def test_the_templates_retention_schedule_is_read_from_its_parameter() -> None:
    """RetentionFunction's Schedule event: the expression comes from RetentionSchedule (Default rate(1 hour), or
    an override), and the supervisor starts a schedule: child for it."""
    template = load_template(REPO_ROOT / "template.yaml")
    config = EmulatorConfig.from_template(template, resolve)
    expected = ScheduleRule(function="RetentionFunction", event="Retention",
                            Schedule=RateExpression(text="rate(1 hour)", seconds=3600))
    sweep = ScheduleRule(function="SnapshotSweepFunction", event="Sweep",
                         Schedule=RateExpression(text="rate(1 hour)", seconds=3600))
    assert (expected, sweep) == config.schedules
    assert "RetentionFunctionRetention" == config.schedules[0].logical_id
    assert {"schedule:RetentionFunction.Retention", "schedule:SnapshotSweepFunction.Sweep"} <= set(child_names(config))
    nightly = EmulatorConfig.from_template(template, resolve, parameters={"RetentionSchedule": "cron(0 3 * * ? *)"})
    cron = nightly.schedules[0].Schedule
    assert isinstance(cron, CronExpression)
    assert (frozenset({0}), frozenset({3}), None) == (cron.minutes, cron.hours, cron.days_of_week)


def test_state_input_and_name_are_read_and_a_disabled_rule_gets_no_child() -> None:
    """sam-property-function-schedule: State DISABLED (or Enabled false) turns the rule off; Input is sent
    instead of the event; Name names the rule; properties the emulator does not run are noted."""
    config = read(schedule_event(Schedule="rate(5 minutes)", State="DISABLED", Input='{"k": 1}', Name="nightly",
                                 RetryPolicy={"MaximumRetryAttempts": 0}))
    (rule,) = config.schedules
    assert (False, '{"k": 1}', "nightly") == (rule.Enabled, rule.Input, rule.Name)
    assert [] == child_names(config)
    assert ("Fn.Events.Nightly.RetryPolicy: not emulated, ignored",) == config.notes


@pytest.mark.parametrize(("props", "fragment"), [
    ({}, "Fn.Events.Nightly.Schedule: required, a rate() or cron() expression"),
    ({"Schedule": "rate(1 minutes)"}, "with the value 1 the unit must be 'minute'"),
    ({"Schedule": "cron(0 12 L * ? *)"}, "Day-of-month uses L, which the emulator does not run"),
    ({"Schedule": "rate(1 day)", "Enabled": True, "State": "ENABLED"}, "set Enabled or State, not both"),
    ({"Schedule": "rate(1 day)", "State": "PAUSED"}, "State: 'PAUSED' is neither ENABLED nor DISABLED"),
    ({"Schedule": "rate(1 day)", "Input": "{not json"}, "Input: '{not json' is not the JSON text of an object"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 60 else None)
def test_schedule_events_aws_or_the_emulator_refuses_name_the_event(props: dict[str, Any], fragment: str) -> None:
    """A template the emulator cannot run as AWS would fails with the event and property named."""
    with pytest.raises(TemplateConfigError) as caught:
        read(schedule_event(**props))
    assert any(fragment in problem for problem in caught.value.problems), caught.value.problems


# ------------------------------------------------------------------------------------------------ expressions

NOW = dt.datetime(2026, 11, 22, 10, 17, 30, tzinfo=UTC)  # a Sunday


@pytest.mark.parametrize(("text", "expected"), [
    ("rate(1 minute)", dt.datetime(2026, 11, 22, 10, 18, 30, tzinfo=UTC)),
    ("rate(2 hours)", dt.datetime(2026, 11, 22, 12, 17, 30, tzinfo=UTC)),
    ("cron(0/15 * * * ? *)", dt.datetime(2026, 11, 22, 10, 30, tzinfo=UTC)),
    ("cron(0 8 ? * MON-FRI *)", dt.datetime(2026, 11, 23, 8, 0, tzinfo=UTC)),
    ("cron(0 12 ? * 1 *)", dt.datetime(2026, 11, 22, 12, 0, tzinfo=UTC)),  # 1 is SUN
    ("cron(5,10 9 1 JAN,jul ? 2027-2028)", dt.datetime(2027, 1, 1, 9, 5, tzinfo=UTC)),
    ("cron(0 0 29 FEB ? *)", dt.datetime(2028, 2, 29, 0, 0, tzinfo=UTC)),
])
def test_the_next_time_is_the_one_eventbridge_names(text: str, expected: dt.datetime) -> None:
    """eb-rate-expressions: a rate counts from the rule's creation (here NOW); eb-scheduled-rule-pattern: cron
    fields in UTC, Day-of-week 1-7 = SUN-SAT, names in any case, lists, ranges, increments from a start."""
    assert expected == parse_schedule_expression(text).next_after(NOW, origin=NOW)


def test_a_cron_with_no_time_left_before_2200_never_fires_again() -> None:
    """eb-scheduled-rule-pattern: Year runs 1970-2199."""
    assert None is parse_schedule_expression("cron(0 0 1 1 ? 2025)").next_after(NOW, origin=NOW)


@pytest.mark.parametrize(("text", "fragment"), [
    ("rate(5 minute)", "must be 'minutes'"),
    ("rate(0 hours)", "not a positive whole number"),
    ("rate(1 week)", "not one of minute, minutes"),
    ("cron(0 8 * * * *)", "? in exactly one of Day-of-month and Day-of-week"),
    ("cron(0 8 ? * ? *)", "? in exactly one of Day-of-month and Day-of-week"),
    ("cron(0 8 * *)", "has six fields"),
    ("cron(60 * * * ? *)", "Minutes value '60' is not in 0-59"),
    ("cron(0 8 ? * 2#1 *)", "Day-of-week uses #"),
    ("at(2027-01-01T00:00:00)", "at() is a one-time schedule of EventBridge Scheduler"),
    ("every hour", "expected rate(value unit) or cron("),
])
def test_expressions_eventbridge_refuses_or_the_emulator_does_not_run_are_clear_errors(text: str,
                                                                                        fragment: str) -> None:
    """eb-rate-expressions: singular unit for 1, plural above; eb-scheduled-rule-pattern: six fields, ranges,
    ? in one day field; L, W and # are EventBridge's but not run here: each refusal says why."""
    with pytest.raises(ScheduleExpressionError, match=re.escape(fragment)):
        parse_schedule_expression(text)


# ------------------------------------------------------------------------------------------------ scheduler


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class RecordingInvoker:
    """Answers each invocation with the next outcome (success once they run out) and records the calls."""

    def __init__(self, outcomes: Iterable[Outcome] = ()) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[Mapping[str, Any], int, str, Mapping[str, Any]]] = []
        self.cuts: list[float | None] = []  # the function_timeout each invocation was handed
        self.lock = threading.Lock()
        self.all_done = threading.Event()

    def invoke(self, event: Mapping[str, Any], *, attempt: int = 1, source: str = "",
               crash_points: Iterable[str] = (), timeout: float | None = None, clock_skew: float = 0.0,
               log_fields: Mapping[str, Any] | None = None, **_: Any) -> InvocationResult:
        with self.lock:
            self.calls.append((event, attempt, source, dict(log_fields or {})))
            self.cuts.append(timeout)
            outcome = self.outcomes.pop(0) if self.outcomes else Outcome.SUCCESS
            if not self.outcomes:
                self.all_done.set()
        return InvocationResult(outcome=outcome, function="Fn", request_id="r", pid=1, duration_ms=1.0,
                                cold_start=False)


class Waits:
    """The scheduler's ``wait`` on a fake clock: waits pass at once; after ``firings`` waits of the main loop
    it answers "stop" (once ``then`` is set, when given). Records the real seconds each wait asked for."""

    def __init__(self, clock: FakeClock, firings: int, *, then: threading.Event | None = None) -> None:
        self.clock, self.firings, self.then = clock, firings, then
        self.main = threading.current_thread()
        self.loop: list[float] = []
        self.retries: list[float] = []

    def __call__(self, seconds: float) -> bool:
        if threading.current_thread() is not self.main:
            self.retries.append(seconds)
            return False
        if len(self.loop) == self.firings:
            if self.then is not None:
                self.then.wait(10)
            return True
        self.loop.append(seconds)
        self.clock.now += seconds
        return False


RULE = ScheduleRule(function="Fn", event="Nightly", Schedule=RateExpression(text="rate(1 hour)", seconds=3600))


def test_rate_fires_every_period_of_the_scaled_clock_with_the_scheduled_time() -> None:
    """scale 60: an hour of schedule is a real minute; each firing is one asynchronous invocation of a new
    event whose time is the schedule's, logged with the event id and scheduled time."""
    start = dt.datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()
    clock = FakeClock(start)
    invoker = RecordingInvoker()
    waits = Waits(clock, 3)

    Scheduler(RULE, invoker, rule_name="r", region="us-east-1", scale=60, clock=clock, wait=waits).run()

    assert [60.0, 60.0, 60.0] == waits.loop
    invoker.calls.sort(key=lambda call: str(call[0]["time"]))  # each firing is delivered by a thread of its own
    times = [event["time"] for event, *_ in invoker.calls]
    assert ["2026-11-22T11:00:00Z", "2026-11-22T12:00:00Z", "2026-11-22T13:00:00Z"] == times
    assert [(1, "Fn.Nightly")] * 3 == [(attempt, source) for _, attempt, source, _ in invoker.calls]
    assert [{"scheduled_time": e["time"], "event_id": e["id"]} for e, *_ in invoker.calls] == \
        [fields for *_, fields in invoker.calls]
    assert 3 == len({event["id"] for event, *_ in invoker.calls})


def test_a_failed_invocation_is_retried_twice_one_then_two_minutes_later_then_dropped() -> None:
    """invocation-async-error-handling: two more attempts, one minute then two minutes apart (scaled); errors,
    timeouts and crashes all count; the same event each time."""
    clock = FakeClock(0.0)
    invoker = RecordingInvoker([Outcome.ERROR, Outcome.TIMEOUT, Outcome.CRASHED])
    waits = Waits(clock, 1, then=invoker.all_done)

    Scheduler(RULE, invoker, rule_name="r", region="us-east-1", scale=60, clock=clock, wait=waits).run()

    assert [1, 2, 3] == [attempt for _, attempt, *_ in invoker.calls]
    assert 1 == len({event["id"] for event, *_ in invoker.calls})
    assert [60 / 60, 120 / 60] == waits.retries



def test_function_timeout_cuts_each_attempt_of_a_firing_and_it_is_retried() -> None:
    """function_timeout on a schedule (issue 37, point 1): each attempt is a site of its own (the rule, the
    scheduled time, the attempt), the cut is handed to the invoker and recorded; the timed-out firing is retried."""
    clock = FakeClock(0.0)
    invoker = RecordingInvoker([Outcome.TIMEOUT, Outcome.TIMEOUT, Outcome.TIMEOUT])
    waits = Waits(clock, 1, then=invoker.all_done)
    faults = FaultSchedule(FaultPlan.from_mapping({"seed": 3, "faults": {"function_timeout": {"rate": 1.0}}}))

    Scheduler(RULE, invoker, rule_name="r", region="us-east-1", scale=60, clock=clock, wait=waits,
              faults=faults).run()

    assert [1, 2, 3] == [attempt for _, attempt, *_ in invoker.calls]
    assert 3 == len(invoker.cuts) and all(cut is not None and 0 <= cut <= 3.0 for cut in invoker.cuts)
    assert 3 == faults.summary()[FaultKind.FUNCTION_TIMEOUT]
    assert 3 == len({fault.key for fault in faults.injected()})

def test_input_is_sent_instead_of_the_scheduled_event() -> None:
    """sam-property-function-schedule, Input: "nothing from the event text itself is passed to the target"."""
    clock = FakeClock(0.0)
    invoker = RecordingInvoker()
    rule = ScheduleRule(function="Fn", event="Nightly", Schedule=RULE.Schedule, Input='{"job": "retain"}')

    Scheduler(rule, invoker, rule_name="r", region="us-east-1", clock=clock, wait=Waits(clock, 1)).run()

    assert [{"job": "retain"}] == [event for event, *_ in invoker.calls]



# ------------------------------------------------------------------------------------------------ ScheduleV2


def v2_event(**props: Any) -> dict[str, Any]:
    return {"Nightly": {"Type": "ScheduleV2", "Properties": {"ScheduleExpression": "cron(0 9 * * ? *)", **props}}}


def test_a_schedulev2_event_is_read_with_schedulers_defaults() -> None:
    """SAM names the schedule after the function and the event; group default, time zone UTC, window OFF."""
    [rule] = read(v2_event()).schedules_v2
    assert ("FnNightly", "default", "UTC", 0, True, None) == (
        rule.schedule_name, rule.GroupName, rule.Timezone, rule.FlexibleWindowMinutes, rule.Enabled, rule.Input)
    assert "schedule:Fn.Nightly" in child_names(read(v2_event()))
    full = read(v2_event(ScheduleExpression="at(2026-12-01T09:30:00)", ScheduleExpressionTimezone="Europe/Paris",
                         FlexibleTimeWindow={"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15}, Name="n",
                         GroupName="g", State="DISABLED", Input='{"a": 1}', StartDate="2026-12-01T00:00:00Z",
                         EndDate="2026-12-31T00:00:00", RetryPolicy={"MaximumRetryAttempts": 0}))
    [rule] = full.schedules_v2
    assert (AtExpression(text="at(2026-12-01T09:30:00)", when=dt.datetime(2026, 12, 1, 9, 30)), "Europe/Paris", 15,
            "n", "g", False, '{"a": 1}') == (rule.Schedule, rule.Timezone, rule.FlexibleWindowMinutes,
                                            rule.schedule_name, rule.GroupName, rule.Enabled, rule.Input)
    assert (dt.datetime(2026, 12, 1, tzinfo=UTC), dt.datetime(2026, 12, 31, tzinfo=UTC)) == (rule.StartDate,
                                                                                            rule.EndDate)
    assert ["Fn.Events.Nightly.RetryPolicy"] == [note.split(":")[0] for note in full.notes]
    assert "schedule:Fn.Nightly" not in child_names(full)  # DISABLED


def test_what_scheduler_refuses_is_refused() -> None:
    with pytest.raises(TemplateConfigError) as caught:
        read({**v2_event(ScheduleExpressionTimezone="Mars/Olympus"),
              "A": {"Type": "ScheduleV2", "Properties": {"ScheduleExpression": "at(2026-13-01T00:00:00)"}},
              "B": {"Type": "ScheduleV2", "Properties": {"ScheduleExpression": "rate(1 minute)", "Input": "[1]",
                                                         "FlexibleTimeWindow": {"Mode": "FLEXIBLE"}}},
              "C": {"Type": "ScheduleV2", "Properties": {"ScheduleExpression": "rate(1 minute)",
                                                         "StartDate": "soon", "State": "ON"}}})
    assert ["Fn.Events.Nightly.ScheduleExpressionTimezone", "Fn.Events.A.ScheduleExpression", "Fn.Events.B.Input",
            "Fn.Events.B.FlexibleTimeWindow.MaximumWindowInMinutes", "Fn.Events.C.State", "Fn.Events.C.StartDate"] == [
        p.split(":")[0] for p in caught.value.problems]
    with pytest.raises(ScheduleExpressionError):
        parse_scheduler_expression("at(2026-12-01 09:30)")


def v2_rule(expression: str, **fields: Any) -> ScheduleV2Rule:
    return ScheduleV2Rule(function="Fn", event="Nightly", Schedule=parse_scheduler_expression(expression), **fields)


def fire(rule: ScheduleV2Rule, start: dt.datetime, firings: int, **options: Any) -> list[Mapping[str, Any]]:
    clock = FakeClock(start.timestamp())
    invoker = RecordingInvoker()
    waits = Waits(clock, firings)
    Scheduler(rule, invoker, rule_name=rule.schedule_name, region="us-east-1", clock=clock, wait=waits,
              **options).run()
    events = [event for event, *_ in invoker.calls]
    return sorted(events, key=lambda event: str(event.get("time", "")))


def test_cron_reads_the_clocks_of_the_schedules_time_zone() -> None:
    """cron(0 9 * * ? *) in America/New_York is 14:00 UTC in winter, 13:00 UTC in summer (schedule-types: "the
    time zone you specify ... adjusts for daylight saving time")."""
    rule = v2_rule("cron(0 9 * * ? *)", Timezone="America/New_York")
    winter = fire(rule, dt.datetime(2026, 11, 29, 12, 0, tzinfo=UTC), 2)
    assert ["2026-11-29T14:00:00Z", "2026-11-30T14:00:00Z"] == [event["time"] for event in winter]
    summer = fire(rule, dt.datetime(2026, 7, 1, 12, 0, tzinfo=UTC), 1)
    assert ["2026-07-01T13:00:00Z"] == [event["time"] for event in summer]


def test_without_input_the_function_gets_schedulers_default_notification() -> None:
    """Field by field: the EventBridge envelope, source aws.scheduler, the schedule's ARN, detail the text "{}"
    (aws-lambda-java-libs ScheduledV2Event models detail as a string)."""
    [event] = fire(v2_rule("rate(5 minutes)", GroupName="jobs"), dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC), 1)
    assert ["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"] == list(
        event)
    assert ("0", "Scheduled Event", "aws.scheduler", "000000000000", "2026-11-29T06:05:00Z", "us-east-1",
            ["arn:aws:scheduler:us-east-1:000000000000:schedule/jobs/FnNightly"], "{}") == (
        event["version"], event["detail-type"], event["source"], event["account"], event["time"], event["region"],
        event["resources"], event["detail"])
    assert re.fullmatch(r"[0-9a-f-]{36}", event["id"])


def test_input_is_sent_with_the_context_attributes_replaced() -> None:
    """managing-schedule-context-attributes: <aws.scheduler.scheduled-time> and the others, in the Input."""
    text = json.dumps({"at": "<aws.scheduler.scheduled-time>", "arn": "<aws.scheduler.schedule-arn>",
                       "run": "<aws.scheduler.execution-id>", "try": "<aws.scheduler.attempt-number>"})
    [event] = fire(v2_rule("rate(1 hour)", Input=text), dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC), 1)
    assert ("2026-11-29T07:00:00Z", "arn:aws:scheduler:us-east-1:000000000000:schedule/default/FnNightly", "1") == (
        event["at"], event["arn"], event["try"])
    assert re.fullmatch(r"[0-9a-f-]{36}", event["run"])


def test_at_fires_once_and_start_and_end_dates_bound_a_schedule() -> None:
    start = dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC)
    once = fire(v2_rule("at(2026-11-29T08:30:00)", Timezone="Europe/Paris"), start, 5)
    assert ["2026-11-29T07:30:00Z"] == [event["time"] for event in once]
    assert [] == fire(v2_rule("at(2026-11-29T05:00:00)"), start, 5)  # already past: never
    bounded = fire(v2_rule("rate(1 hour)", StartDate=dt.datetime(2026, 11, 29, 8, 30, tzinfo=UTC),
                           EndDate=dt.datetime(2026, 11, 29, 10, 0, tzinfo=UTC)), start, 5)
    assert ["2026-11-29T09:00:00Z", "2026-11-29T10:00:00Z"] == [event["time"] for event in bounded]


def test_a_flexible_window_delays_each_invocation_within_the_window() -> None:
    """managing-schedule-flexible-time-windows: Scheduler invokes within the window after the scheduled time."""
    clock = FakeClock(dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC).timestamp())
    invoker = RecordingInvoker()
    waits = Waits(clock, 1, then=invoker.all_done)
    scheduler = Scheduler(v2_rule("rate(1 hour)", FlexibleWindowMinutes=10), invoker, rule_name="r",
                          region="us-east-1", clock=clock, wait=waits)
    scheduler.run()
    [delay] = waits.retries
    assert delay == scheduler.window_delay("2026-11-29T07:00:00Z") and 0 < delay < 600
    # Each firing's moment is its own, and the same in every run.
    moments = {scheduler.window_delay(f"2026-11-29T{hour:02}:00:00Z") for hour in range(24)}
    assert 24 == len(moments) and all(0 <= m < 600 for m in moments)
    assert 1 == len(invoker.calls)
