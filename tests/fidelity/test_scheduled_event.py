"""A Schedule event's rule invokes the function with EventBridge's "Scheduled Event", field for field, at the
times its expression names on the scaled clock."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
import uuid

from fidelity.conftest import MakeInvoker, Probe
from seglog_awsmodel.config import ScheduleRule
from seglog_awsmodel.schedule_expressions import parse_schedule_expression
from seglog_emulator.invoker import LOCAL_ACCOUNT_ID
from seglog_emulator.scheduler import Scheduler


def test_scheduled_event_is_eventbridges_field_for_field(probe: Probe, make_invoker: MakeInvoker) -> None:
    """AWS Lambda Developer Guide, with-scheduled-events
    (https://docs.aws.amazon.com/lambda/latest/dg/with-scheduled-events.html), "Example CloudWatch Events
    Message Event", and the envelope of Amazon EventBridge User Guide, eb-events-structure
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html): keys in that order,
    version "0", a UUID4 id per event, detail-type "Scheduled Event", source "aws.events", the account, the
    scheduled time in UTC to the second, the region, the rule's ARN as the one resource, an empty detail.
    rate(1 hour) at scale 3600 fires every real second, counted from the rule's creation (eb-rate-expressions)."""
    rule = ScheduleRule(function="probe", event="Nightly", Schedule=parse_schedule_expression("rate(1 hour)"))
    scheduler = Scheduler(rule, make_invoker(), rule_name="stack-probeNightly", region="eu-west-1", scale=3600)
    thread = threading.Thread(target=scheduler.run, daemon=True)
    started = time.time()
    thread.start()
    try:
        starts = probe.wait(lambda s: len(s) >= 2, "two scheduled invocations", timeout=20)
    finally:
        scheduler.stop()
        thread.join(timeout=30)

    first, second = (start["event"] for start in starts[:2])
    assert ["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"] == \
        list(first)
    arn = f"arn:aws:events:eu-west-1:{LOCAL_ACCOUNT_ID}:rule/stack-probeNightly"
    assert {"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "account": LOCAL_ACCOUNT_ID,
            "region": "eu-west-1", "resources": [arn], "detail": {}} == {
        k: v for k, v in first.items() if k not in ("id", "time")}
    assert (4, 4) == (uuid.UUID(first["id"]).version, uuid.UUID(second["id"]).version)
    assert first["id"] != second["id"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["time"])
    times = [dt.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S%z") for e in (first, second)]
    assert dt.timedelta(hours=1) == times[1] - times[0]
    # The first firing is an hour of schedule after the start (a second of real time), not at the start.
    assert 3600 - 2 <= times[0].timestamp() - started <= 3600 + 2
