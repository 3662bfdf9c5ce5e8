"""The events services hand functions (issue 36, point 3): SNS's envelope, as SNS delivers it to a queue, made into
Lambda's SNS event with the fields of the sample in the Lambda Developer Guide (with-sns); S3's event passed as S3
writes it, and S3's test event dropped."""

from __future__ import annotations

import json

from seglog_awsmodel.config import S3Notification
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.notifications import NotificationPoller, s3_event, sns_event

ENVELOPE = {"Type": "Notification", "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
            "TopicArn": "arn:aws:sns:us-east-1:000000000000:orders", "Subject": "order", "Message": '{"id": "o-1"}',
            "Timestamp": "2026-11-29T03:40:00.000Z", "SignatureVersion": "1", "Signature": "EXAMPLE",
            "SigningCertURL": "https://sns.us-east-1.amazonaws.com/cert.pem",
            "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
            "MessageAttributes": {"size": {"Type": "String", "Value": "large"}}}


def test_an_sns_notification_becomes_lambdas_sns_record() -> None:
    event = sns_event(ENVELOPE, subscription_arn="arn:aws:sns:us-east-1:000000000000:orders:sub-1")
    assert event is not None
    [record] = event["Records"]
    assert ["EventSource", "EventVersion", "EventSubscriptionArn", "Sns"] == list(record)
    assert ("aws:sns", "1.0") == (record["EventSource"], record["EventVersion"])
    assert ["Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "SignatureVersion", "Signature",
            "SigningCertUrl", "UnsubscribeUrl", "MessageAttributes"] == list(record["Sns"])
    assert ("order", '{"id": "o-1"}', {"size": {"Type": "String", "Value": "large"}}) == (
        record["Sns"]["Subject"], record["Sns"]["Message"], record["Sns"]["MessageAttributes"])
    assert ENVELOPE["SigningCertURL"] == record["Sns"]["SigningCertUrl"]
    assert sns_event({**ENVELOPE, "Subject": None})["Records"][0]["Sns"]["Subject"] is None  # type: ignore[index]
    assert sns_event({"Type": "SubscriptionConfirmation"}) is None


def test_an_s3_event_is_passed_as_written_and_the_test_event_dropped() -> None:
    written = {"Records": [{"eventSource": "aws:s3", "eventName": "ObjectCreated:Put"}]}
    assert written == s3_event(written)
    assert s3_event({"Service": "Amazon S3", "Event": "s3:TestEvent"}) is None


class Queue:
    """A notification queue holding ``bodies``, handed out on the first receive."""

    def __init__(self, bodies: list[str]) -> None:
        self.bodies, self.deleted = bodies, 0

    def receive_message(self, **_: object) -> dict[str, object]:
        found, self.bodies = self.bodies, []
        return {"Messages": [{"Body": b, "ReceiptHandle": f"h{n}"} for n, b in enumerate(found)]}

    def delete_message(self, **_: object) -> None:
        self.deleted += 1


class Asynchronous:
    def __init__(self) -> None:
        self.submitted: list[tuple[str, object, float]] = []

    def submit(self, function: str, event: object, *, source: str, delay: float = 0.0) -> None:
        self.submitted.append((function, event, delay))


def poll(faults: FaultSchedule | None, bodies: list[str]) -> tuple[Asynchronous, Queue]:
    queue, asynchronous = Queue(bodies), Asynchronous()
    rule = S3Notification(function="Thumbs", event="Uploaded", bucket="Photos", events=("s3:ObjectCreated:*",))
    poller = NotificationPoller(rule, queue_url="q", sqs=queue, asynchronous=asynchronous,  # type: ignore[arg-type]
                                convert=s3_event, faults=faults)
    poller.poll_once()
    return asynchronous, queue


def test_without_faults_each_notification_is_handed_over_once_at_once() -> None:
    asynchronous, queue = poll(None, [json.dumps({"Records": [{"n": n}]}) for n in range(3)])
    assert [delay for _, _, delay in asynchronous.submitted] == [0.0, 0.0, 0.0] and queue.deleted == 3


def test_a_notification_is_delivered_twice_or_late_as_the_seed_decides() -> None:
    plan = FaultPlan.from_mapping({"seed": 9, "faults": {"duplicate_delivery": 1.0,
                                                         "reorder": {"rate": 1.0, "delay_ms": [300, 300]}}})
    schedule = FaultSchedule(plan)
    asynchronous, queue = poll(schedule, [json.dumps({"Records": [{"n": 1}]})])
    assert [(event, delay) for _, event, delay in asynchronous.submitted] == [
        ({"Records": [{"n": 1}]}, 0.3), ({"Records": [{"n": 1}]}, 0.0)]  # the first late, its copy at once
    assert sorted(f.kind for f in schedule.injected()) == ["duplicate_delivery", "reorder"] and queue.deleted == 1
