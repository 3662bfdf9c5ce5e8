"""The events services hand functions (issue 36, point 3): SNS's envelope, as SNS delivers it to a queue, made into
Lambda's SNS event with the fields of the sample in the Lambda Developer Guide (with-sns); S3's event passed as S3
writes it, and S3's test event dropped."""

from __future__ import annotations

from seglog_emulator.notifications import s3_event, sns_event

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
