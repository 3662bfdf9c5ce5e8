"""Reading a function's ScheduleV2 event (AWS SAM sam-property-function-schedulev2: the AWS::Scheduler::Schedule SAM
makes, its target the function) for :class:`~seglog_awsmodel.template_reader.TemplateReader`, whose helpers and
problem list it uses. Ranges from the EventBridge Scheduler API Reference (CreateSchedule, FlexibleTimeWindow)."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from seglog_awsmodel.config import ScheduleV2Rule
from seglog_awsmodel.schedule_expressions import parse_scheduler_expression

if TYPE_CHECKING:
    from seglog_awsmodel.template_reader import TemplateReader

#: What the emulator runs; Description only describes.
_READ: Final = frozenset({"ScheduleExpression", "ScheduleExpressionTimezone", "Input", "State", "FlexibleTimeWindow",
                          "StartDate", "EndDate", "Name", "GroupName", "Description"})
#: Read and noted: RetryPolicy and DeadLetterConfig cover Scheduler failing to invoke the function (throttling, a
#: missing function or permission), which cannot happen locally (the function's own errors are Lambda's
#: asynchronous retries, which run); the others configure AWS-side resources.
_NOTED: Final = frozenset({"RetryPolicy", "DeadLetterConfig", "KmsKeyArn", "RoleArn", "PermissionsBoundary",
                           "OmitName"})


def schedule_v2(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any],
                where: str) -> ScheduleV2Rule | None:
    """A ScheduleV2 event, or None with its problems recorded."""
    reader._note_unread(props, _READ | _NOTED, where)
    for name in sorted(_NOTED & set(props)):
        reader._note(f"{where}.{name}: read, no local effect (EventBridge Scheduler's own delivery and resources; "
                     "the function's errors are retried as Lambda's asynchronous invocations are)")
    problems = len(reader.problems)
    expression = reader._expression(props.get("ScheduleExpression"), parse_scheduler_expression,
                                    "a rate(), cron() or at()", f"{where}.ScheduleExpression")
    timezone = reader._parameter(props.get("ScheduleExpressionTimezone", "UTC"))
    try:
        zoneinfo.ZoneInfo(str(timezone))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        reader._problem(f"{where}.ScheduleExpressionTimezone: {timezone!r} is not a time zone name (e.g. "
                        "America/New_York)")
    state = reader._parameter(props.get("State", "ENABLED"))
    if state not in ("ENABLED", "DISABLED"):
        reader._problem(f"{where}.State: {state!r} is neither ENABLED nor DISABLED")
    payload = reader._parameter(props.get("Input"))
    if payload is not None and not isinstance(_json(payload), dict):
        reader._problem(f"{where}.Input: {payload!r} is not the JSON text of an object (a templated Lambda target's "
                        "Input must be well-formed JSON; the emulator passes objects only)")
    window = _window(reader, props.get("FlexibleTimeWindow") or {"Mode": "OFF"}, f"{where}.FlexibleTimeWindow")
    start = _date(reader, props.get("StartDate"), f"{where}.StartDate")
    end = _date(reader, props.get("EndDate"), f"{where}.EndDate")
    names = {key: reader._parameter(props.get(key)) for key in ("Name", "GroupName")}
    for key, value in names.items():
        if value is not None and not isinstance(value, str):
            reader._problem(f"{where}.{key}: {value!r} is not a string")
    if len(reader.problems) > problems or expression is None or window is None:
        return None
    return ScheduleV2Rule(function=function, event=event, Schedule=expression, Timezone=str(timezone),
                          Name=names["Name"], GroupName=names["GroupName"] or "default", Enabled=state == "ENABLED",
                          Input=payload, FlexibleWindowMinutes=window, StartDate=start, EndDate=end)


def _window(reader: TemplateReader, value: Any, where: str) -> int | None:
    """FlexibleTimeWindow: Mode OFF (0), or FLEXIBLE with MaximumWindowInMinutes 1..1440."""
    mode = reader._parameter(value.get("Mode")) if isinstance(value, Mapping) else None
    if mode == "OFF":
        return 0
    if mode == "FLEXIBLE" and isinstance(value, Mapping):
        return reader._int(value.get("MaximumWindowInMinutes"), f"{where}.MaximumWindowInMinutes", low=1, high=1440)
    reader._problem(f"{where}: Mode OFF, or FLEXIBLE with MaximumWindowInMinutes, got {value!r}")
    return None


def _date(reader: TemplateReader, raw: Any, where: str) -> dt.datetime | None:
    """An ISO 8601 date and time; one without an offset is read as UTC."""
    value = reader._parameter(raw)
    if value is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        reader._problem(f"{where}: {value!r} is not an ISO 8601 date and time")
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None
