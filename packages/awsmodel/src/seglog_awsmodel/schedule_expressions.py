"""Schedule expressions of EventBridge scheduled rules: ``rate(value unit)`` and ``cron(six fields)``, read the
way EventBridge reads them, and the times they name (UTC, to the minute).

From the Amazon EventBridge User Guide:

* eb-rate-expressions: ``rate(value unit)``, value a positive number, unit ``minute | minutes | hour | hours |
  day | days``; "If the value is equal to 1, then the unit must be singular. If the value is greater than 1, the
  unit must be plural." "A rate expression starts when you create the scheduled event rule": it fires at
  creation + k x rate.
* eb-scheduled-rule-pattern: ``cron(Minutes Hours Day-of-month Month Day-of-week Year)``, six required fields;
  values 0-59, 0-23, 1-31, 1-12 or JAN-DEC, 1-7 or SUN-SAT, 1970-2199; wildcards ``,`` ``-`` ``*`` ``/`` (and
  ``?`` in the two day fields); "You can't use * in both the Day-of-month and Day-of-week fields. If you use it
  in one, you must use ? in the other." All times are UTC; the finest resolution is one minute.

EventBridge Scheduler (a ScheduleV2 event) reads the same rate and cron expressions, evaluates cron in the schedule's
``ScheduleExpressionTimezone`` (UTC by default), and adds the one-time ``at(yyyy-mm-ddThh:mm:ss)``, also in that
time zone (EventBridge Scheduler User Guide, schedule-types: "One-time schedules", "Cron-based schedules").

The emulator runs all of that except the ``L``, ``W`` and ``#`` wildcards: an expression using them is refused
with a clear error (:class:`~seglog_awsmodel.errors.ScheduleExpressionError`), as is anything EventBridge refuses.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Final

from seglog_awsmodel.errors import ScheduleExpressionError

_RATE: Final = re.compile(r"rate\(\s*(\S+)\s+(\S+)\s*\)")
_CRON: Final = re.compile(r"cron\((.*)\)")
_AT: Final = re.compile(r"at\(\s*(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\s*\)")
_UNITS: Final = {"minute": 60, "hour": 3600, "day": 86400}
_MONTHS: Final = {name: i for i, name in enumerate(
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), start=1)}
_DAYS: Final = {name: i for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), start=1)}
_Field = tuple[str, int, int, dict[str, int], bool, str]
#: name, low, high, names, whether ``?`` is allowed, the wildcards EventBridge has there that are not run here.
_FIELDS: Final[tuple[_Field, ...]] = (
    ("Minutes", 0, 59, {}, False, ""),
    ("Hours", 0, 23, {}, False, ""),
    ("Day-of-month", 1, 31, {}, True, "LW"),
    ("Month", 1, 12, _MONTHS, False, ""),
    ("Day-of-week", 1, 7, _DAYS, True, "L#"),
    ("Year", 1970, 2199, {}, False, ""),
)
_LAST_YEAR: Final = 2199


@dataclass(frozen=True)
class RateExpression:
    """``rate(value unit)``: every ``seconds`` from the rule's creation."""

    text: str
    seconds: int

    def next_after(self, after: dt.datetime, *, origin: dt.datetime, zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
        """The first firing later than ``after`` of a rule created at ``origin`` (a rate has no time zone)."""
        elapsed = (after - origin).total_seconds()
        periods = max(0, int(elapsed // self.seconds)) + 1
        return origin + dt.timedelta(seconds=periods * self.seconds)


@dataclass(frozen=True)
class CronExpression:
    """``cron(...)``: the minutes, hours, ... it allows; exactly one of the day sets is None (its ``?``)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int] | None
    months: frozenset[int]
    days_of_week: frozenset[int] | None
    years: frozenset[int]

    def next_after(self, after: dt.datetime, *, origin: dt.datetime | None = None,
                   zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
        """The first time later than ``after`` (to the minute, on the clocks of ``zone``: UTC for a rule) the
        expression names; None if none is left before the end of 2199."""
        after = after.astimezone(zone)
        day = after.date()
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        while day.year <= _LAST_YEAR:
            if self._day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        at = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
                        if at > after:
                            return at
            day += dt.timedelta(days=1)
        return None

    def _day_matches(self, day: dt.date) -> bool:
        if day.year not in self.years or day.month not in self.months:
            return False
        if self.days_of_month is not None:
            return day.day in self.days_of_month
        assert self.days_of_week is not None
        return day.isoweekday() % 7 + 1 in self.days_of_week  # ISO Monday=1..Sunday=7 -> SUN=1..SAT=7


@dataclass(frozen=True)
class AtExpression:
    """``at(yyyy-mm-ddThh:mm:ss)``: once, at that time on the clocks of the schedule's time zone."""

    text: str
    when: dt.datetime  # naive: a wall-clock time

    def next_after(self, after: dt.datetime, *, origin: dt.datetime | None = None,
                   zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
        at = self.when.replace(tzinfo=zone)
        return at if at > after else None


ScheduleExpression = RateExpression | CronExpression
SchedulerExpression = RateExpression | CronExpression | AtExpression


def parse_schedule_expression(text: str) -> ScheduleExpression:
    """Read a ScheduleExpression as EventBridge does.

    Raises:
        ScheduleExpressionError: EventBridge would refuse it, or it uses a wildcard the emulator does not run.
    """
    stripped = text.strip()
    if stripped.startswith("rate("):
        return _rate(text)
    if stripped.startswith("cron("):
        return _cron(text)
    if stripped.startswith("at("):
        raise ScheduleExpressionError(text, "at() is a one-time schedule of EventBridge Scheduler (a ScheduleV2 "
                                            "event), not of a scheduled rule: use rate() or cron()")
    raise ScheduleExpressionError(text, "expected rate(value unit) or cron(Minutes Hours Day-of-month Month "
                                        "Day-of-week Year)")


def parse_scheduler_expression(text: str) -> SchedulerExpression:
    """Read an EventBridge Scheduler ScheduleExpression: rate(), cron() or at().

    Raises:
        ScheduleExpressionError: EventBridge Scheduler would refuse it, or the emulator does not run it.
    """
    stripped = text.strip()
    if not stripped.startswith("at("):
        return parse_schedule_expression(text)
    match = _AT.fullmatch(stripped)
    if match is None:
        raise ScheduleExpressionError(text, "a one-time schedule is at(yyyy-mm-ddThh:mm:ss)")
    try:
        return AtExpression(text=text, when=dt.datetime.fromisoformat(match.group(1)))
    except ValueError as exc:
        raise ScheduleExpressionError(text, f"not a date and time: {exc}") from exc


def _rate(text: str) -> RateExpression:
    match = _RATE.fullmatch(text.strip())
    if match is None:
        raise ScheduleExpressionError(text, "a rate expression is rate(value unit), e.g. rate(5 minutes)")
    value, unit = match.groups()
    if not value.isdigit() or int(value) < 1:
        raise ScheduleExpressionError(text, f"the value {value!r} is not a positive whole number")
    number = int(value)
    base = unit.removesuffix("s")
    if base not in _UNITS:
        raise ScheduleExpressionError(text, f"the unit {unit!r} is not one of minute, minutes, hour, hours, day, "
                                            "days")
    wanted = base if number == 1 else f"{base}s"
    if unit != wanted:
        raise ScheduleExpressionError(text, f"with the value {number} the unit must be {wanted!r} (singular for "
                                            "1, plural above)")
    return RateExpression(text=text, seconds=number * _UNITS[base])


def _cron(text: str) -> CronExpression:
    match = _CRON.fullmatch(text.strip())
    fields = match.group(1).split() if match else []
    if len(fields) != 6:
        raise ScheduleExpressionError(text, f"a cron expression has six fields (Minutes Hours Day-of-month Month "
                                            f"Day-of-week Year), this one has {len(fields)}")
    sets = [_field(text, raw, spec) for raw, spec in zip(fields, _FIELDS, strict=True)]
    minutes, hours, dom, months, dow, years = sets
    if (dom is None) == (dow is None):
        raise ScheduleExpressionError(text, "use ? in exactly one of Day-of-month and Day-of-week (a value or * "
                                            "in one needs ? in the other)")
    assert minutes is not None and hours is not None and months is not None and years is not None
    return CronExpression(text=text, minutes=minutes, hours=hours, days_of_month=dom, months=months,
                          days_of_week=dow, years=years)


def _field(text: str, raw: str, spec: _Field) -> frozenset[int] | None:
    """The values one cron field allows; None for ``?``."""
    name, low, high, names, question, unsupported = spec
    if raw == "?":
        if not question:
            raise ScheduleExpressionError(text, f"? is allowed only in Day-of-month and Day-of-week, not in {name}")
        return None
    found = sorted(set(raw.upper()) & set(unsupported))
    if found:
        raise ScheduleExpressionError(text, f"{name} uses {', '.join(found)}, which the emulator does not run: "
                                            "write the days as a list or range instead")
    values: set[int] = set()
    for part in raw.split(","):
        body, slash, step_text = part.partition("/")
        if body == "*":
            start, end = low, high
        else:
            first, dash, last = body.partition("-")
            start = _value(text, name, first, low, high, names)
            end = _value(text, name, last, low, high, names) if dash else (high if slash else start)
            if end < start:
                raise ScheduleExpressionError(text, f"{name} range {body!r} runs backwards")
        step = _value(text, name, step_text, 1, high, {}) if slash else 1
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, field: str, raw: str, low: int, high: int, names: dict[str, int]) -> int:
    upper = raw.upper()
    if upper in names:
        return names[upper]
    if not raw.isdigit() or not low <= int(raw) <= high:
        allowed = f"{low}-{high}" + (f" or {min(names, key=names.__getitem__)}-{max(names, key=names.__getitem__)}"
                                     if names else "")
        raise ScheduleExpressionError(text, f"{field} value {raw!r} is not in {allowed}")
    return int(raw)
