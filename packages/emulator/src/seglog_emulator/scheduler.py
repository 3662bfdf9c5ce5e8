"""Scheduler: a function's Schedule event, run the way EventBridge runs the scheduled rule SAM makes of it, and its
ScheduleV2 event, run the way EventBridge Scheduler runs the schedule SAM makes of that.

What it reproduces:

* the rule fires at each time its expression names (:mod:`seglog_awsmodel.schedule_expressions`): a rate
  expression from the rule's creation (here: the scheduler's start), a cron expression at its UTC minutes;
* each firing invokes the function *asynchronously* with the "Scheduled Event" (or the event's Input) built by
  :func:`seglog_awsmodel.events.scheduled.scheduled_event`: EventBridge does not wait for one invocation before the
  next firing, so a slow function overlaps itself;
* a failed invocation (an error, a timeout, a crash) is retried twice, one minute and then two minutes later
  (AWS Lambda Developer Guide, invocation-async-error-handling: "by default Lambda attempts to run it two more
  times, with a one-minute wait between the first two attempts, and two minutes between the second and third
  attempts"), then dropped with a warning;
* a ScheduleV2 schedule (EventBridge Scheduler User Guide, schedule-types, managing-schedule-flexible-time-windows)
  reads cron() and at() on the clocks of its ScheduleExpressionTimezone, fires at most once for at(), never before
  its StartDate nor after its EndDate, and with a flexible time window invokes at a random moment within the
  window after each scheduled time; its event is Scheduler's default notification
  (:func:`seglog_awsmodel.events.scheduled.scheduler_event`) or its Input with the context attributes replaced;
* the duplicate_delivery fault delivers the same event a second time beside the first (same page: "it's
  possible for it to receive the same event from Lambda multiple times").

Time is scalable for tests and demos: with ``scale`` 60 the schedule's clock runs 60 times faster than real time
from the scheduler's start (``rate(1 hour)`` fires every real minute, and the retry waits shrink alike). The
event's ``time`` is the schedule's clock. A restarted scheduler is a rule created anew: rates count from then.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog

from seglog_awsmodel.config import ScheduleRule, ScheduleV2Rule
from seglog_awsmodel.events.scheduled import context_attributes, schedule_arn, scheduled_event, scheduler_event
from seglog_awsmodel.fault_sites import draw, site
from seglog_awsmodel.faults import FaultKind
from seglog_emulator.errors import InvokerClosedError
from seglog_emulator.faults.call_crash import draw_crash_after_call
from seglog_emulator.faults.invocation import draw_clock_skew, draw_timeout
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import LOCAL_ACCOUNT_ID
from seglog_emulator.pollers.common import Invoker

log = structlog.get_logger("seglog.scheduler")

#: Waits before the second and third attempt of a failed asynchronous invocation (invocation-async-error-handling).
RETRY_DELAYS: Final = (60.0, 120.0)


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


class Scheduler:
    """Fires one scheduled rule until :meth:`stop`.

    Args:
        rule: the Schedule or ScheduleV2 event from the template.
        invoker: runs the function (its concurrency bounds overlapping invocations).
        rule_name: the rule's or schedule's physical name (in the event's ``resources``).
        region, account: the rule's region and account.
        scale: how many times faster than real time the schedule's clock runs.
        faults: the seeded schedule, if faults are in play.
        clock: real time, epoch seconds.
        wait: waits so many real seconds; returns True when the scheduler is stopping (default: the stop event).
        rng: draws the moment within a flexible time window.
    """

    def __init__(self, rule: ScheduleRule | ScheduleV2Rule, invoker: Invoker, *, rule_name: str, region: str,
                 account: str = LOCAL_ACCOUNT_ID, scale: float = 1.0, faults: FaultSchedule | None = None,
                 clock: Callable[[], float] = time.time, wait: Callable[[float], bool] | None = None) -> None:
        if not scale > 0:
            raise ValueError(f"the schedule scale must be above 0 (1 is real time), got {scale}")
        self.rule, self.invoker, self.rule_name = rule, invoker, rule_name
        self.region, self.account, self.scale, self.faults = region, account, scale, faults
        self.name = f"{rule.function}.{rule.event}"
        self._clock = clock
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait
        self._origin = clock()
        self._lock = threading.Lock()
        self._deliveries: list[threading.Thread] = []
        #: Times the rule fired so far.
        self.fired = 0
        v2 = rule if isinstance(rule, ScheduleV2Rule) else None
        self._zone: dt.tzinfo = zoneinfo.ZoneInfo(v2.Timezone) if v2 is not None else dt.UTC
        self._start, self._end = (v2.StartDate, v2.EndDate) if v2 is not None else (None, None)
        self._window = 60.0 * v2.FlexibleWindowMinutes if v2 is not None else 0.0

    def schedule_time(self) -> float:
        """Now on the schedule's clock (epoch seconds): real time at the start, then ``scale`` times faster."""
        return self._origin + (self._clock() - self._origin) * self.scale

    def _sleep(self, real_seconds: float) -> bool:
        """Wait; True when stopping."""
        return bool(self._wait(max(0.0, real_seconds))) or self._stop.is_set()

    def run(self) -> None:
        """Fire at every scheduled time until :meth:`stop`; returns once the invocations in flight ended."""
        self._origin = self._clock()
        origin = _utc(self._origin)
        expression = self.rule.Schedule
        log.info("scheduler started", rule=self.rule_name, schedule=expression.text, scale=self.scale)
        due = self._next(origin, origin)
        if due is None:
            log.warning("schedule never fires: its one time, or its end date, is past", rule=self.rule_name,
                        schedule=expression.text)
        while due is not None and not self._sleep((due.timestamp() - self.schedule_time()) / self.scale):
            self._fire(due)
            following = self._next(due, origin)
            now = _utc(self.schedule_time())
            if following is not None and following < now:
                # Behind (a suspended machine, an overloaded one): EventBridge does not replay missed times.
                log.warning("scheduled times missed", rule=self.rule_name, since=following.isoformat())
                following = self._next(now, origin)
            due = following
        with self._lock:
            deliveries = list(self._deliveries)
        for thread in deliveries:
            thread.join()
        log.info("scheduler stopped", rule=self.rule_name, fired=self.fired)

    def stop(self) -> None:
        self._stop.set()

    def _next(self, after: dt.datetime, origin: dt.datetime) -> dt.datetime | None:
        """The first scheduled time later than ``after``, within StartDate..EndDate (None: no more)."""
        if self._start is not None and after < self._start:
            after = self._start - dt.timedelta(microseconds=1)
        due = self.rule.Schedule.next_after(after, origin=origin, zone=self._zone)
        return None if due is None or (self._end is not None and due > self._end) else due

    def _event(self, due: dt.datetime) -> dict[str, Any]:
        rule = self.rule
        if not isinstance(rule, ScheduleV2Rule):
            return (json.loads(rule.Input) if rule.Input is not None
                    else scheduled_event(rule=self.rule_name, time=due, region=self.region, account=self.account))
        if rule.Input is None:
            return scheduler_event(schedule=self.rule_name, group=rule.GroupName, time=due, region=self.region,
                                   account=self.account)
        arn = schedule_arn(self.rule_name, group=rule.GroupName, region=self.region, account=self.account)
        parsed: dict[str, Any] = json.loads(context_attributes(rule.Input, arn=arn, time=due,
                                                               execution_id=str(uuid.uuid4())))
        return parsed

    def _fire(self, due: dt.datetime) -> None:
        self.fired += 1
        event = self._event(due)
        copies = 1
        if self.faults is not None:
            decision = self.faults.decide(FaultKind.DUPLICATE_DELIVERY, site("schedule", self.name, due.isoformat()))
            if decision is not None:
                copies += decision.amount or 1
        fields = {"scheduled_time": due.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if "id" in event:
            fields["event_id"] = str(event["id"])
        for _ in range(copies):
            thread = threading.Thread(target=self._deliver, args=(event, fields), name=f"{self.name}-delivery",
                                      daemon=True)
            with self._lock:
                self._deliveries = [t for t in self._deliveries if t.is_alive()] + [thread]
            thread.start()

    def window_delay(self, scheduled_time: str) -> float:
        """Seconds into the flexible time window this firing is invoked at: a moment fixed by the schedule's name
        and the scheduled time, so a run replays (no random stream whose draws depend on thread timing)."""
        return self._window * (draw(0, "flexible_window", self.rule_name, scheduled_time) / 2.0**64)

    def _deliver(self, event: Mapping[str, Any], fields: dict[str, str]) -> None:
        """One asynchronous invocation with its retries (invocation-async-error-handling), at a random moment of
        the flexible time window when there is one."""
        if self._window and self._sleep(self.window_delay(fields["scheduled_time"]) / self.scale):
            return  # stopping before the window's moment came
        for attempt in range(1, len(RETRY_DELAYS) + 2):
            try:
                delivery = (self.name, fields["scheduled_time"], attempt)
                result = self.invoker.invoke(
                    event, attempt=attempt, source=self.name, log_fields=fields,
                    crash_after_call=draw_crash_after_call(self.faults, "schedule", *delivery),
                    timeout=draw_timeout(self.faults, site("timeout", "schedule", *delivery)),
                    clock_skew=draw_clock_skew(self.faults, site("skew", "schedule", *delivery)))
            except InvokerClosedError:
                return  # stopping
            if result.ok:
                return
            if attempt > len(RETRY_DELAYS):
                log.warning("scheduled event dropped: every attempt failed", rule=self.rule_name, attempts=attempt,
                            **fields)
                return
            if self._sleep(RETRY_DELAYS[attempt - 1] / self.scale):
                log.warning("retry of a scheduled event abandoned: the emulator is stopping", rule=self.rule_name,
                            attempt=attempt + 1, **fields)
                return
