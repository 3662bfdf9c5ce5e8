"""Reading the events through which AWS services notify functions: S3 (a bucket's object events), SNS (a topic's
messages) and EventBridge (a rule's matching events), for :class:`~seglog_awsmodel.template_reader.TemplateReader`,
whose helpers and problem list they use."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from seglog_awsmodel.config import EventRule, S3Notification, SnsSubscription

if TYPE_CHECKING:
    from seglog_awsmodel.template_reader import TemplateReader


def s3_notification(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any],
                    where: str) -> S3Notification | None:
    """An S3 event (sam-property-function-s3), or None with the problem recorded."""
    # sam-property-function-s3: Bucket is "!Ref" of an AWS::S3::Bucket of the same template; Events one S3
    # event type or a list of them; Filter the notification's filter (S3Key.Rules of prefix/suffix).
    reader._note_unread(props, frozenset({"Bucket", "Events", "Filter"}), where)
    bucket = props.get("Bucket")
    ref = bucket.get("Ref") if isinstance(bucket, Mapping) and set(bucket) == {"Ref"} else None
    if not isinstance(ref, str) or (reader.resources.get(ref) or {}).get("Type") != "AWS::S3::Bucket":
        reader._problem(f"{where}.Bucket: must be !Ref of an AWS::S3::Bucket of this template, got {bucket!r}")
        return None
    events = reader._parameter(props.get("Events"))
    events = [events] if isinstance(events, str) else events
    if not isinstance(events, list) or not events or not all(
            isinstance(e, str) and e.startswith("s3:") for e in events):
        reader._problem(f"{where}.Events: one S3 event type or a list of them (s3:ObjectCreated:*, ...), got "
                      f"{props.get('Events')!r}")
        return None
    rules = []
    for rule in (((props.get("Filter") or {}).get("S3Key") or {}).get("Rules") or []):
        name, value = str(rule.get("Name", "")).lower(), reader._parameter(rule.get("Value"))
        if name not in ("prefix", "suffix") or not isinstance(value, str):
            reader._problem(f"{where}.Filter.S3Key.Rules: each rule is Name prefix or suffix with a Value, got "
                          f"{rule!r}")
            return None
        rules.append((name, value))
    return S3Notification(function=function, event=event, bucket=ref, events=tuple(events), rules=tuple(rules))


def sns_subscription(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any],
                     where: str) -> SnsSubscription | None:
    """An SNS event (sam-property-function-sns): Topic is !Ref of an AWS::SNS::Topic of this template (its ARN);
    FilterPolicy (a JSON object, or its text) and FilterPolicyScope (MessageAttributes, the default, or
    MessageBody) become the subscription's; SqsSubscription and Region are noted."""
    reader._note_unread(props, frozenset({"Topic", "FilterPolicy", "FilterPolicyScope"}), where)
    topic = props.get("Topic")
    ref = topic.get("Ref") if isinstance(topic, Mapping) and set(topic) == {"Ref"} else None
    if not isinstance(ref, str) or (reader.resources.get(ref) or {}).get("Type") != "AWS::SNS::Topic":
        reader._problem(f"{where}.Topic: must be !Ref of an AWS::SNS::Topic of this template, got {topic!r}")
        return None
    policy = _json(reader._parameter(props.get("FilterPolicy")))
    if policy is not None and not isinstance(policy, Mapping):
        reader._problem(f"{where}.FilterPolicy: a JSON object of attribute name -> list of accepted values, got "
                        f"{props.get('FilterPolicy')!r}")
        return None
    scope = reader._parameter(props.get("FilterPolicyScope", "MessageAttributes"))
    if scope not in ("MessageAttributes", "MessageBody"):
        reader._problem(f"{where}.FilterPolicyScope: MessageAttributes or MessageBody, got {scope!r}")
        return None
    return SnsSubscription(function=function, event=event, topic=ref,
                           filter_policy=json.dumps(policy) if policy is not None else None, scope=str(scope))


#: EventBridgeRule properties the emulator runs (sam-property-function-eventbridgerule); the delivery settings
#: below are read and noted.
_RULE_PROPERTIES = frozenset({"Pattern", "EventBusName", "Input", "InputPath", "RuleName", "State"})
#: EventBridge's own retries and dead-letter queue cover its failures to invoke the function ("when sending an event
#: to a Lambda function that doesn't exist, or when EventBridge has insufficient permissions", same page), which
#: cannot happen locally; the function's own errors are Lambda's asynchronous retries, which run.
_RULE_DELIVERY = frozenset({"DeadLetterConfig", "RetryPolicy", "Target"})


def event_rule(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any],
               where: str) -> EventRule | None:
    """An EventBridgeRule or CloudWatchEvent event (sam-property-function-eventbridgerule, -cloudwatchevent): the
    rule's Pattern (an object, or its JSON text), its bus (EventBusName: omitted for the default bus, a name, or
    !Ref of an AWS::Events::EventBus of this template), Input or InputPath, RuleName and State. InputTransformer is
    refused (the function would get another event than AWS sends it); DeadLetterConfig and RetryPolicy are noted."""
    reader._note_unread(props, _RULE_PROPERTIES | _RULE_DELIVERY | {"InputTransformer"}, where)
    for name in sorted(_RULE_DELIVERY & set(props)):
        reader._note(f"{where}.{name}: read, never used: EventBridge's delivery to the function does not fail "
                     "locally (the function's own errors are retried as Lambda's asynchronous invocations are)")
    problems = len(reader.problems)
    if "InputTransformer" in props:
        reader._problem(f"{where}.InputTransformer: not emulated; use Input or InputPath, or deploy with `seglog "
                        "deploy`")
    pattern = _json(reader._parameter(props.get("Pattern")))
    if not isinstance(pattern, Mapping) or not pattern:
        reader._problem(f"{where}.Pattern: required, an event pattern (a JSON object), got {props.get('Pattern')!r}")
    bus_value = reader._parameter(props.get("EventBusName", "default"))
    bus = bus_value.get("Ref") if isinstance(bus_value, Mapping) and set(bus_value) == {"Ref"} else None
    if bus is not None and (reader.resources.get(bus) or {}).get("Type") != "AWS::Events::EventBus":
        reader._problem(f"{where}.EventBusName: !Ref {bus} is not an AWS::Events::EventBus of this template")
    elif bus is None and not isinstance(bus_value, str):
        reader._problem(f"{where}.EventBusName: a bus name or !Ref of an AWS::Events::EventBus, got {bus_value!r}")
    text = {key: reader._parameter(props.get(key)) for key in ("Input", "InputPath", "RuleName")}
    for key, value in text.items():
        if value is not None and not isinstance(value, str):
            reader._problem(f"{where}.{key}: {value!r} is not a string")
    if text["Input"] is not None and text["InputPath"] is not None:
        reader._problem(f"{where}: set Input or InputPath, not both (AWS::Events::Rule Target)")
    elif isinstance(text["Input"], str) and _json(text["Input"]) is None:
        reader._problem(f"{where}.Input: {text['Input']!r} is not valid JSON text")
    state = reader._parameter(props.get("State", "ENABLED"))
    if state not in ("ENABLED", "DISABLED"):
        reader._problem(f"{where}.State: {state!r} is neither ENABLED nor DISABLED")
    if len(reader.problems) > problems:
        return None
    return EventRule(function=function, event=event, Pattern=json.dumps(pattern),
                     EventBusName=bus_value if bus is None else bus, bus=bus, Input=text["Input"],
                     InputPath=text["InputPath"], RuleName=text["RuleName"], Enabled=state == "ENABLED")


def _json(value: Any) -> Any:
    """``value``, or the value its JSON text holds (None when it is text that is not JSON)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None
