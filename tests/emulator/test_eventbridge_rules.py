"""What an EventBridgeRule event's function gets, measured on the local stack's EventBridge (LocalStack): the
emulator makes the rule with the event's pattern and a queue as its one target (seglog_emulator.notifications), so
LocalStack matches the pattern and applies Input or InputPath, and the queue holds what AWS would invoke the
function with. Held here to the EventBridge User Guide (eb-events-structure: the envelope's fields, in its order,
and its sample "EC2 Instance State-change Notification") and to the patterns' meaning (eb-event-patterns)."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from seglog_awsmodel.config import EventRule
from seglog_emulator.notifications import configure_rules, eventbridge_event, queue_name
from seglog_stack.clients import local_client

pytestmark = pytest.mark.stack

#: eb-events-structure, "Example: Amazon EC2 instance state-change notification": every field, in this order.
SAMPLE = {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
          "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2", "account": "111122223333",
          "time": "2017-12-22T18:43:48Z", "region": "us-west-1",
          "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
          "detail": {"instance-id": "i-1234567890abcdef0", "state": "terminated"}}
PATTERN = {"source": ["orders"], "detail": {"qty": [{"numeric": [">=", 10]}]}}


@pytest.fixture(scope="module")
def rules(stacks: Any) -> Iterator[tuple[Any, Any, dict[str, str], str]]:
    """Three rules on a fresh bus, each with its queue: the whole event, InputPath $.detail, a constant Input."""
    deployment = stacks.deployment("dynamodb-local")
    endpoints, region = deployment.endpoints, deployment.region
    events = local_client("events", endpoint_url=endpoints["events"], region=region)
    sqs = local_client("sqs", endpoint_url=endpoints["sqs"], region=region)
    stack, bus = f"eb{uuid.uuid4().hex[:6]}", f"bus-{uuid.uuid4().hex[:6]}"
    made = [EventRule(function="Fn", event="Whole", Pattern=json.dumps(PATTERN), EventBusName=bus),
            EventRule(function="Fn", event="Detail", Pattern=json.dumps(PATTERN), EventBusName=bus,
                      InputPath="$.detail"),
            EventRule(function="Fn", event="Constant", Pattern=json.dumps(PATTERN), EventBusName=bus,
                      Input='{"fixed": true}')]
    configure_rules(made, stack=stack, buses=[bus], bus_name=lambda logical: logical, events=events, sqs=sqs)
    urls = {rule.event: sqs.get_queue_url(QueueName=queue_name(stack, rule))["QueueUrl"] for rule in made}
    yield events, sqs, urls, bus
    for rule in made:
        events.remove_targets(Rule=f"{stack}-{rule.logical_id}", EventBusName=bus, Ids=["emulator"])
        events.delete_rule(Name=f"{stack}-{rule.logical_id}", EventBusName=bus)
    events.delete_event_bus(Name=bus)


def _bodies(sqs: Any, url: str, *, wait: float) -> list[Any]:
    found: list[Any] = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
                "Messages", []):
            found.append(eventbridge_event(json.loads(message["Body"])))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_matching_event_reaches_the_function_as_eventbridge_sends_it(rules: Any) -> None:
    events, sqs, urls, bus = rules
    when = dt.datetime(2026, 11, 29, 6, 30, 5, tzinfo=dt.UTC)
    resource = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"
    put = events.put_events(Entries=[
        {"Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps({"id": "o-1", "qty": 12}),
         "EventBusName": bus, "Time": when, "Resources": [resource]},
        {"Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps({"id": "o-2", "qty": 2}),
         "EventBusName": bus}])
    assert 0 == put["FailedEntryCount"]
    [event] = _bodies(sqs, urls["Whole"], wait=3)
    assert list(SAMPLE) == list(event)  # the envelope's fields, in the documented order
    assert {k: type(v) for k, v in SAMPLE.items()} == {k: type(v) for k, v in event.items()}
    assert ("0", put["Entries"][0]["EventId"], "OrderPlaced", "orders") == (
        event["version"], event["id"], event["detail-type"], event["source"])
    assert re.fullmatch(r"\d{12}", event["account"]) and re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", event["id"])
    assert ("2026-11-29T06:30:05Z", "us-east-1", [resource], {"id": "o-1", "qty": 12}) == (
        event["time"], event["region"], event["resources"], event["detail"])
    # InputPath $.detail: only the detail; Input: that JSON and nothing of the event. The small order matched none.
    assert [{"id": "o-1", "qty": 12}] == _bodies(sqs, urls["Detail"], wait=1)
    assert [{"fixed": True}] == _bodies(sqs, urls["Constant"], wait=1)


def test_an_event_the_pattern_does_not_match_reaches_no_function(rules: Any) -> None:
    events, sqs, urls, bus = rules
    events.put_events(Entries=[
        {"Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps({"qty": 9}), "EventBusName": bus},
        {"Source": "billing", "DetailType": "OrderPlaced", "Detail": json.dumps({"qty": 99}), "EventBusName": bus},
        {"Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps({"qty": 99})}])  # the default bus
    assert [] == _bodies(sqs, urls["Whole"], wait=3)
