"""Which IAM action on which resource each call needs (Service Authorization Reference: list_amazondynamodb,
list_amazons3, list_amazonsqs; DynamoDB Developer Guide, transaction-apis-iam; S3 User Guide,
using-with-s3-policy-actions)."""

from __future__ import annotations

from typing import Any

import pytest

from seglog_emulator.iam.operations import Check, Target, UnknownResourceError, checks, queue_arn

TARGET = Target(region="us-east-1", account="000000000000")
TABLE = "arn:aws:dynamodb:us-east-1:000000000000:table/Entries"
OTHER = "arn:aws:dynamodb:us-east-1:000000000000:table/Segments"
QUEUE_URL = "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/jobs"
QUEUE = "arn:aws:sqs:us-east-1:000000000000:jobs"
STREAM = "arn:aws:dynamodb:us-east-1:000000000000:table/Entries/stream/2026-11-01T00:00:00.000"
BUS = "arn:aws:events:us-east-1:000000000000:event-bus"
TX = {"dynamodb:enclosingoperation": ("TransactWriteItems",)}

ROWS: list[tuple[str, str, dict[str, Any], list[Check]]] = [
    ("dynamodb", "GetItem", {"TableName": "Entries"}, [Check("dynamodb:GetItem", TABLE)]),
    ("dynamodb", "PutItem", {"TableName": "Entries"}, [Check("dynamodb:PutItem", TABLE)]),
    ("dynamodb", "UpdateItem", {"TableName": "Entries"}, [Check("dynamodb:UpdateItem", TABLE)]),
    ("dynamodb", "DeleteItem", {"TableName": "Entries"}, [Check("dynamodb:DeleteItem", TABLE)]),
    ("dynamodb", "Query", {"TableName": "Entries"}, [Check("dynamodb:Query", TABLE)]),
    ("dynamodb", "Query", {"TableName": "Entries", "IndexName": "byType"},
     [Check("dynamodb:Query", f"{TABLE}/index/byType")]),
    ("dynamodb", "Scan", {"TableName": "Entries"}, [Check("dynamodb:Scan", TABLE)]),
    ("dynamodb", "GetItem", {"TableName": TABLE}, [Check("dynamodb:GetItem", TABLE)]),  # a table ARN as TableName
    ("dynamodb", "BatchWriteItem", {"RequestItems": {"Entries": [{"DeleteRequest": {}}, {"PutRequest": {}}],
                                                      "Segments": [{"PutRequest": {}}]}},
     [Check("dynamodb:BatchWriteItem", TABLE), Check("dynamodb:BatchWriteItem", OTHER)]),
    ("dynamodb", "BatchGetItem", {"RequestItems": {"Entries": {"Keys": []}}}, [Check("dynamodb:BatchGetItem", TABLE)]),
    ("dynamodb", "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": "Entries"}}, {"Update": {"TableName": "Segments"}},
        {"Delete": {"TableName": "Entries"}}, {"ConditionCheck": {"TableName": "Segments"}}]},
     [Check("dynamodb:PutItem", TABLE, TX), Check("dynamodb:UpdateItem", OTHER, TX),
      Check("dynamodb:DeleteItem", TABLE, TX), Check("dynamodb:ConditionCheckItem", OTHER, TX)]),
    ("dynamodb", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": "Entries"}}]},
     [Check("dynamodb:GetItem", TABLE, {"dynamodb:enclosingoperation": ("TransactGetItems",)})]),
    ("dynamodbstreams", "DescribeStream", {"StreamArn": STREAM}, [Check("dynamodb:DescribeStream", STREAM)]),
    ("dynamodbstreams", "GetShardIterator", {"StreamArn": STREAM.replace("us-east-1", "ddblocal")},
     [Check("dynamodb:GetShardIterator", STREAM)]),  # DynamoDB Local's region placeholder read as the local region
    ("dynamodbstreams", "GetRecords", {"ShardIterator": f"{STREAM}|1|AAAA"}, [Check("dynamodb:GetRecords", STREAM)]),
    ("dynamodbstreams", "ListStreams", {}, [Check("dynamodb:ListStreams", "*")]),
    ("s3", "GetObject", {"Bucket": "b", "Key": "entries/x"}, [Check("s3:GetObject", "arn:aws:s3:::b/entries/x")]),
    ("s3", "GetObject", {"Bucket": "b", "Key": "k", "VersionId": "v1"},
     [Check("s3:GetObjectVersion", "arn:aws:s3:::b/k")]),
    ("s3", "HeadObject", {"Bucket": "b", "Key": "k"}, [Check("s3:GetObject", "arn:aws:s3:::b/k")]),
    ("s3", "PutObject", {"Bucket": "b", "Key": "k"}, [Check("s3:PutObject", "arn:aws:s3:::b/k")]),
    ("s3", "PutObject", {"Bucket": "b", "Key": "k", "Tagging": "discardable=true"},
     [Check("s3:PutObject", "arn:aws:s3:::b/k"), Check("s3:PutObjectTagging", "arn:aws:s3:::b/k")]),
    ("s3", "GetObjectTagging", {"Bucket": "b", "Key": "k"}, [Check("s3:GetObjectTagging", "arn:aws:s3:::b/k")]),
    ("s3", "PutObjectTagging", {"Bucket": "b", "Key": "k"}, [Check("s3:PutObjectTagging", "arn:aws:s3:::b/k")]),
    ("s3", "DeleteObjectTagging", {"Bucket": "b", "Key": "k"}, [Check("s3:DeleteObjectTagging", "arn:aws:s3:::b/k")]),
    ("s3", "DeleteObject", {"Bucket": "b", "Key": "k"}, [Check("s3:DeleteObject", "arn:aws:s3:::b/k")]),
    ("s3", "DeleteObjects", {"Bucket": "b", "Delete": {"Objects": [{"Key": "a"}, {"Key": "c"}]}},
     [Check("s3:DeleteObject", "arn:aws:s3:::b/a"), Check("s3:DeleteObject", "arn:aws:s3:::b/c")]),
    ("s3", "ListObjectsV2", {"Bucket": "b", "Prefix": "snapshots/"},
     [Check("s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": ("snapshots/",)})]),
    ("s3", "ListObjects", {"Bucket": "b"}, [Check("s3:ListBucket", "arn:aws:s3:::b")]),
    ("s3", "CopyObject", {"Bucket": "b", "Key": "to", "CopySource": "src/from%20here"},
     [Check("s3:GetObject", "arn:aws:s3:::src/from here"), Check("s3:PutObject", "arn:aws:s3:::b/to")]),
    ("s3", "CreateMultipartUpload", {"Bucket": "b", "Key": "k"}, [Check("s3:PutObject", "arn:aws:s3:::b/k")]),
    ("s3", "UploadPart", {"Bucket": "b", "Key": "k"}, [Check("s3:PutObject", "arn:aws:s3:::b/k")]),
    ("s3", "CompleteMultipartUpload", {"Bucket": "b", "Key": "k"}, [Check("s3:PutObject", "arn:aws:s3:::b/k")]),
    ("s3", "AbortMultipartUpload", {"Bucket": "b", "Key": "k"}, [Check("s3:AbortMultipartUpload", "arn:aws:s3:::b/k")]),
    ("s3", "ListParts", {"Bucket": "b", "Key": "k"}, [Check("s3:ListMultipartUploadParts", "arn:aws:s3:::b/k")]),
    ("s3", "ListMultipartUploads", {"Bucket": "b"}, [Check("s3:ListBucketMultipartUploads", "arn:aws:s3:::b")]),
    ("sqs", "SendMessage", {"QueueUrl": QUEUE_URL}, [Check("sqs:SendMessage", QUEUE)]),
    ("sqs", "SendMessageBatch", {"QueueUrl": QUEUE_URL}, [Check("sqs:SendMessage", QUEUE)]),
    ("sqs", "ReceiveMessage", {"QueueUrl": QUEUE_URL}, [Check("sqs:ReceiveMessage", QUEUE)]),
    ("sqs", "DeleteMessage", {"QueueUrl": QUEUE_URL}, [Check("sqs:DeleteMessage", QUEUE)]),
    ("sqs", "DeleteMessageBatch", {"QueueUrl": QUEUE_URL}, [Check("sqs:DeleteMessage", QUEUE)]),
    ("sqs", "ChangeMessageVisibility", {"QueueUrl": QUEUE_URL}, [Check("sqs:ChangeMessageVisibility", QUEUE)]),
    ("sqs", "ChangeMessageVisibilityBatch", {"QueueUrl": QUEUE_URL}, [Check("sqs:ChangeMessageVisibility", QUEUE)]),
    ("sqs", "GetQueueAttributes", {"QueueUrl": QUEUE_URL}, [Check("sqs:GetQueueAttributes", QUEUE)]),
    ("sqs", "GetQueueUrl", {"QueueName": "jobs"}, [Check("sqs:GetQueueUrl", QUEUE)]),
    # list_amazoneventbridge: PutEvents on each entry's bus (the default bus when an entry names none), once per bus.
    ("events", "PutEvents", {"Entries": [{"Source": "a"}, {"Source": "b", "EventBusName": "orders"},
                                         {"EventBusName": "default"}]},
     [Check("events:PutEvents", f"{BUS}/default"), Check("events:PutEvents", f"{BUS}/orders")]),
    ("events", "PutEvents", {"Entries": [{"EventBusName": f"{BUS}/orders"}]},
     [Check("events:PutEvents", f"{BUS}/orders")]),
]


@pytest.mark.parametrize(("service", "operation", "params", "expected"), ROWS,
                         ids=[f"{r[0]}:{r[1]}:{n}" for n, r in enumerate(ROWS)])
def test_operation_needs_the_documented_action_on_the_documented_resource(
        service: str, operation: str, params: dict[str, Any], expected: list[Check]) -> None:
    assert expected == checks(service, operation, params, TARGET)


def test_an_operation_without_a_known_action_is_reported_unknown() -> None:
    """The guard fails closed on it (denies, with a log line naming the operation)."""
    assert (None, None) == (checks("sqs", "TagQueue", {"QueueUrl": QUEUE_URL}, TARGET),
                            checks("kinesis", "PutRecord", {}, TARGET))


def test_get_records_finds_its_stream_through_the_iterator_the_client_obtained() -> None:
    """DynamoDB Local's iterators do not start with the stream's ARN: the guard remembers which stream each
    iterator it saw came from; an iterator of unknown origin cannot be authorized."""
    remembered = Target(region="us-east-1", account="000000000000",
                        stream_of_iterator={"opaque-1": STREAM}.get)
    assert [Check("dynamodb:GetRecords", STREAM)] == checks("dynamodbstreams", "GetRecords",
                                                            {"ShardIterator": "opaque-1"}, remembered)
    with pytest.raises(UnknownResourceError):
        checks("dynamodbstreams", "GetRecords", {"ShardIterator": "opaque-2"}, remembered)


def test_a_queue_arn_comes_from_the_account_and_name_in_its_url() -> None:
    assert ("arn:aws:sqs:eu-west-1:123456789012:q1", "arn:aws:sqs:us-east-1:000000000000:jobs") == (
        queue_arn("https://sqs.eu-west-1.amazonaws.com/123456789012/q1", "eu-west-1"),
        queue_arn(QUEUE_URL, "us-east-1"))
