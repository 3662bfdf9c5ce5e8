"""Services notifying functions: S3 event notifications, SNS subscriptions and EventBridge rules (issue 36, point 3;
AWS SAM sam-property-function-s3, -sns and -eventbridgerule; S3 User Guide, notification-content-structure; Lambda
Developer Guide, with-sns; EventBridge User Guide, eb-events-structure, for the event a function gets).

On AWS, a bucket, a topic or a rule invokes the function asynchronously. Locally the bucket, the topic and the
event bus are LocalStack's, which cannot reach the emulator's functions, so:

1. the supervisor makes one queue per S3 or SNS event of the template (:func:`configure_s3`: each bucket's
   notification configuration sends the event types and keys a function asked for to its queue;
   :func:`configure_sns`: the queue subscribes to the topic, with the event's filter policy;
   :func:`configure_rules`: a rule with the event's pattern on its bus, the queue its target with the event's Input
   or InputPath, so LocalStack matches the pattern and shapes what the target gets), and LocalStack writes each
   notification as a message;
2. a child per event (:class:`NotificationPoller`) takes each message off its queue, makes the event the function
   gets (S3's is the message itself; SNS's is Lambda's ``Records[].Sns`` made of SNS's envelope; EventBridge's is
   the message itself: the event, its Input or the part its InputPath selects) and hands it over as
   Lambda's asynchronous invocation does (:class:`seglog_emulator.lambda_api.AsyncInvoker`: retries, then the
   OnFailure destination or DeadLetterQueue), dropping S3's ``s3:TestEvent``.

::

    client ──PutObject / Publish / PutEvents──► LocalStack ──► queue <stack>-{s3,sns,events}-<Function>-<Event>
                                                     └─ NotificationPoller ──submit──► AsyncInvoker ──► function

Delivery faults (a chaos run's plan): S3, SNS and EventBridge deliver at least once and in no promised order (S3
User Guide, EventNotifications: "event notifications are designed to be delivered at least once"; SNS Developer
Guide, sns-message-delivery-retries; EventBridge User Guide, eb-rule-dlq / "at-least-once"), so a poller may hand an
event over twice (``duplicate_delivery``, its ``copies`` extra) or late (``reorder``: after ``delay_ms``, while later
events go first). A decision's site is the poller's name and the event's number in its incarnation: the order
notifications arrive in, not their content (their ids and times differ from run to run).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

import structlog

from seglog_awsmodel.config import EventRule, S3Notification, SnsSubscription
from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.lambda_api import AsyncInvoker

log = structlog.get_logger("seglog.notifications")

#: SQS's longest queue name.
MAX_QUEUE_NAME: Final = 80
WAIT_SECONDS: Final = 2

Notification = S3Notification | SnsSubscription | EventRule


def kind(notification: Notification) -> str:
    """The notifying service: s3, sns or events (also the prefix of the child that polls the event's queue)."""
    if isinstance(notification, S3Notification):
        return "s3"
    return "sns" if isinstance(notification, SnsSubscription) else "events"


def queue_name(stack: str, notification: Notification) -> str:
    """The queue an event's notifications go to (SQS names: letters, digits, - and _, at most 80)."""
    raw = f"{stack}-{kind(notification)}-{notification.function}-{notification.event}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:MAX_QUEUE_NAME]


def _queue(sqs: Any, name: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def configure_s3(notifications: Sequence[S3Notification], *, stack: str, bucket_name: Any, s3: Any,
                 sqs: Any) -> None:
    """Make the queues and set every notified bucket's notification configuration (which replaces the bucket's
    previous one, as a template's deploy does); ``bucket_name`` maps a bucket's logical id to its name."""
    by_bucket: dict[str, list[dict[str, Any]]] = {}
    for notification in notifications:
        _url, arn = _queue(sqs, queue_name(stack, notification))
        entry: dict[str, Any] = {"Id": f"{notification.function}-{notification.event}", "QueueArn": arn,
                                 "Events": list(notification.events)}
        if notification.rules:
            entry["Filter"] = {"Key": {"FilterRules": [{"Name": name, "Value": value}
                                                       for name, value in notification.rules]}}
        by_bucket.setdefault(bucket_name(notification.bucket), []).append(entry)
    for bucket, entries in by_bucket.items():
        s3.put_bucket_notification_configuration(Bucket=bucket,
                                                 NotificationConfiguration={"QueueConfigurations": entries})
        log.info("bucket notifications set", bucket=bucket, targets=[e["Id"] for e in entries])


def configure_sns(subscriptions: Sequence[SnsSubscription], *, stack: str, topic_arn: Any, sns: Any,
                  sqs: Any) -> None:
    """Make the queues and subscribe each to its topic (``topic_arn``: a topic's ARN by logical id), with the
    event's filter policy; a subscription already there is found again, not doubled (SNS's Subscribe is
    idempotent for the same topic, protocol, endpoint and attributes)."""
    for subscription in subscriptions:
        _url, arn = _queue(sqs, queue_name(stack, subscription))
        attributes = {"FilterPolicy": subscription.filter_policy,
                      "FilterPolicyScope": subscription.scope} if subscription.filter_policy else {}
        made = sns.subscribe(TopicArn=topic_arn(subscription.topic), Protocol="sqs", Endpoint=arn,
                             Attributes=attributes, ReturnSubscriptionArn=True)
        log.info("topic subscription set", topic=subscription.topic, function=subscription.function,
                 subscription=made.get("SubscriptionArn"))


def configure_rules(rules: Sequence[EventRule], *, stack: str, buses: Sequence[str], bus_name: Any, events: Any,
                    sqs: Any) -> None:
    """Make the template's event buses (``buses``: their physical names), then each event's queue and rule: the
    event's pattern on its bus (``bus_name`` maps a bus's logical id to its name), the queue its one target with the
    event's Input or InputPath (PutRule and PutTargets replace a rule and a target of the same name and id, as a
    stack update does). LocalStack's queue policy is open, so the rule needs none to send."""
    for bus in buses:
        with contextlib.suppress(events.exceptions.ResourceAlreadyExistsException):
            events.create_event_bus(Name=bus)
    for rule in rules:
        _url, arn = _queue(sqs, queue_name(stack, rule))
        bus = bus_name(rule.bus) if rule.bus else rule.EventBusName
        name = rule_name(stack, rule)
        events.put_rule(Name=name, EventBusName=bus, EventPattern=rule.Pattern,
                        State="ENABLED" if rule.Enabled else "DISABLED")
        target: dict[str, Any] = {"Id": "emulator", "Arn": arn}
        if rule.Input is not None:
            target["Input"] = rule.Input
        if rule.InputPath is not None:
            target["InputPath"] = rule.InputPath
        events.put_targets(Rule=name, EventBusName=bus, Targets=[target])
        log.info("event rule set", rule=name, bus=bus, function=rule.function, enabled=rule.Enabled)


def rule_name(stack: str, rule: EventRule) -> str:
    """The rule's name: RuleName, else CloudFormation's ``{stack}-{LogicalId}`` (at most 64 characters)."""
    return rule.RuleName or f"{stack}-{rule.logical_id}"[:64]


def eventbridge_event(body: Any) -> Any:
    """What a rule's Lambda target gets is what it sent the queue: the event (version, id, detail-type, source,
    account, time, region, resources, detail: eb-events-structure), its Input or the part InputPath selects."""
    return body


def s3_event(body: Any) -> dict[str, Any] | None:
    """S3 writes the event a function gets as the message itself (None: not an event, e.g. s3:TestEvent)."""
    return body if isinstance(body, dict) and isinstance(body.get("Records"), list) else None


def sns_event(body: Any, *, subscription_arn: str = "") -> dict[str, Any] | None:
    """Lambda's SNS event of one notification SNS delivered to a queue (the envelope: Type, MessageId, TopicArn,
    Subject, Message, Timestamp, signature fields, MessageAttributes); Lambda names two URL fields otherwise
    (SigningCertUrl, UnsubscribeUrl) and sets Subject null when there is none (with-sns, the sample event)."""
    if not isinstance(body, dict) or body.get("Type") != "Notification":
        return None
    sns = {"Type": "Notification", "MessageId": body.get("MessageId"), "TopicArn": body.get("TopicArn"),
           "Subject": body.get("Subject"), "Message": body.get("Message"), "Timestamp": body.get("Timestamp"),
           "SignatureVersion": body.get("SignatureVersion", "1"), "Signature": body.get("Signature", ""),
           "SigningCertUrl": body.get("SigningCertURL", ""), "UnsubscribeUrl": body.get("UnsubscribeURL", ""),
           "MessageAttributes": body.get("MessageAttributes") or {}}
    return {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0",
                         "EventSubscriptionArn": subscription_arn or f"{body.get('TopicArn')}:local", "Sns": sns}]}


class NotificationPoller:
    """Hands the notifications of one queue to one function, asynchronously (see the module docstring).

    Args:
        convert: the event the function gets of one message's (JSON) body, or None for one to drop.
    """

    def __init__(self, notification: Notification, *, queue_url: str, sqs: Any,
                 asynchronous: AsyncInvoker, convert: Callable[[Any], Any],
                 faults: FaultSchedule | None = None) -> None:
        self.notification = notification
        self.queue_url = queue_url
        self.sqs = sqs
        self.asynchronous = asynchronous
        self.convert = convert
        self.kind = kind(notification)
        self.name = f"{notification.function}.{notification.event}"
        self.faults = faults
        self._handed = 0
        self._stop = threading.Event()

    def run(self) -> None:
        log.info("notification poller started", poller=self.name, queue=self.queue_url)
        while not self._stop.is_set():
            self.poll_once()

    def poll_once(self) -> int:
        """One receive: each event handed to the function, each message deleted; the events handed over."""
        answer = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                          WaitTimeSeconds=WAIT_SECONDS)
        handed = 0
        for message in answer.get("Messages", []):
            try:
                body = json.loads(message["Body"])
            except ValueError:
                body = None
            event = self.convert(body)
            if event is not None:
                self._hand_over(event)
                handed += 1
            elif not (isinstance(body, dict) and body.get("Event") == "s3:TestEvent"):
                log.warning("not a notification: dropped", poller=self.name, body=message["Body"][:200])
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return handed

    def _hand_over(self, event: Any) -> None:
        """Submit ``event`` as the service would: once, or late, or more than once, as the plan decides."""
        source = f"{self.kind}:{self.name}"
        self._handed += 1
        incarnation = self.faults.incarnation if self.faults is not None else 0
        where = site("notify", self.name, incarnation, self._handed)
        late = self.faults.decide(FaultKind.REORDER, where) if self.faults is not None else None
        delay = (late.amount or 0) / 1000 if late is not None else 0.0
        self.asynchronous.submit(self.notification.function, event, source=source, delay=delay)
        extra = self.faults.decide(FaultKind.DUPLICATE_DELIVERY, where) if self.faults is not None else None
        if extra is not None:
            for _ in range(extra.amount or 1):
                log.warning("notification delivered again (injected fault)", poller=self.name, key=extra.key)
                self.asynchronous.submit(self.notification.function, event, source=source)

    def stop(self) -> None:
        self._stop.set()
