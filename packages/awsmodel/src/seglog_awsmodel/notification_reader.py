"""Reading the events through which AWS services notify functions: S3 (a bucket's object events) and SNS (a topic's
messages), for :class:`~seglog_awsmodel.template_reader.TemplateReader`, whose helpers and problem list they use."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from seglog_awsmodel.config import S3Notification, SnsSubscription

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
    policy = reader._parameter(props.get("FilterPolicy"))
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except ValueError:
            policy = None
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
