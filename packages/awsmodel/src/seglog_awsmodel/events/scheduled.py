"""EventBridge: the event a scheduled rule sends its Lambda target (a SAM ``Schedule`` event).

SAM turns a function's ``Schedule`` event into an ``AWS::Events::Rule`` with the function as its target
(sam-property-function-schedule); at each time the rule's schedule expression names, EventBridge invokes the
function asynchronously with this event. The shape, from "Example CloudWatch Events Message Event" of
https://docs.aws.amazon.com/lambda/latest/dg/with-scheduled-events.html and the envelope every EventBridge event
has, in this order (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html)::

    {"version": "0", "id": "cdc73f9d-aea9-11e3-9d5a-835b769c0d9c", "detail-type": "Scheduled Event",
     "source": "aws.events", "account": "123456789012", "time": "2019-03-01T01:23:45Z", "region": "us-east-2",
     "resources": ["arn:aws:events:us-east-1:123456789012:rule/my-schedule"], "detail": {}}

``version`` is "0" in all events; ``id`` a version 4 UUID generated for every event; ``time`` the scheduled
time in UTC to the second; ``resources`` the rule's ARN; ``detail`` an empty object. With the event's ``Input``
property set, the target gets that JSON text instead and "nothing from the event text itself" (same SAM page).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Final

DETAIL_TYPE: Final = "Scheduled Event"
SOURCE: Final = "aws.events"


def rule_arn(rule: str, *, region: str, account: str) -> str:
    """The ARN of a rule on the default event bus: ``arn:aws:events:{region}:{account}:rule/{name}``."""
    return f"arn:aws:events:{region}:{account}:rule/{rule}"


def scheduled_event(*, rule: str, time: dt.datetime, region: str, account: str,
                    event_id: uuid.UUID | None = None) -> dict[str, Any]:
    """The event EventBridge sends for one firing of the scheduled rule ``rule`` at ``time``.

    Args:
        rule: the rule's name (SAM names it after the function and the event when the template does not).
        time: when the schedule fired; sent in UTC, to the second.
        region, account: where the rule lives.
        event_id: the event's id; a new UUID4 by default, as EventBridge makes one per event.
    """
    stamp = time.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": str(event_id or uuid.uuid4()),
        "detail-type": DETAIL_TYPE,
        "source": SOURCE,
        "account": account,
        "time": stamp,
        "region": region,
        "resources": [rule_arn(rule, region=region, account=account)],
        "detail": {},
    }


#: EventBridge Scheduler's source (a ScheduleV2 event).
SCHEDULER_SOURCE: Final = "aws.scheduler"


def schedule_arn(name: str, *, group: str, region: str, account: str) -> str:
    """The ARN of an EventBridge Scheduler schedule: ``arn:aws:scheduler:{region}:{account}:schedule/{group}/{name}``
    (Service Authorization Reference, list_amazoneventbridgescheduler, resource type schedule)."""
    return f"arn:aws:scheduler:{region}:{account}:schedule/{group}/{name}"


def scheduler_event(*, schedule: str, group: str, time: dt.datetime, region: str, account: str,
                    event_id: uuid.UUID | None = None) -> dict[str, Any]:
    """What EventBridge Scheduler sends a templated Lambda target whose Input is not set: "If you do not specify
    anything for this field, EventBridge Scheduler delivers a default notification to the target" (EventBridge
    Scheduler API Reference, Target, Input). The guides do not print that notification; its shape here is the one
    Lambda's Java event library models (aws-lambda-java-libs, ScheduledV2Event: version, account, region, detail as
    a *string*, detail-type, source, id, time, resources), as captured from Scheduler: the envelope of
    :func:`scheduled_event` with source ``aws.scheduler``, the schedule's ARN in ``resources`` and ``detail`` the
    text ``"{}"``."""
    return {**scheduled_event(rule=schedule, time=time, region=region, account=account, event_id=event_id),
            "source": SCHEDULER_SOURCE,
            "resources": [schedule_arn(schedule, group=group, region=region, account=account)],
            "detail": "{}"}


def context_attributes(text: str, *, arn: str, time: dt.datetime, execution_id: str, attempt: int = 1) -> str:
    """``text`` (a schedule's Input) with EventBridge Scheduler's context attributes replaced: <aws.scheduler.
    schedule-arn>, <aws.scheduler.scheduled-time>, <aws.scheduler.execution-id>, <aws.scheduler.attempt-number>
    (EventBridge Scheduler User Guide, managing-schedule-context-attributes)."""
    stamp = time.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name, value in (("schedule-arn", arn), ("scheduled-time", stamp), ("execution-id", execution_id),
                        ("attempt-number", str(attempt))):
        text = text.replace(f"<aws.scheduler.{name}>", value)
    return text
