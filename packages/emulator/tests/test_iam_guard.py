"""A denied call fails the way AWS fails it, before it is sent; an allowed one goes through (no stack needed).

Clients point at an unreachable endpoint; a ``before-call`` handler registered last plays the service, recording
the calls that reached it. Error shapes: DynamoDB Developer Guide (Programming.Errors: AccessDeniedException, 400),
IAM User Guide (troubleshoot_access-denied: the message), S3 User Guide (troubleshoot-403-errors) and S3 API
Reference (GetObject / HeadObject "Permissions": 403 for a missing key without s3:ListBucket), SQS API Reference
(CommonErrors: AccessDenied).
"""

from __future__ import annotations

import os
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.exceptions import ClientError
from structlog.testing import capture_logs

from seglog_emulator.faults import BotocoreFaultInjector, FaultPlan, FaultSchedule
from seglog_emulator.iam import ENV_VAR
from seglog_emulator.iam.evaluation import FunctionPermissions
from seglog_emulator.iam.guard import EVENT_SOURCE_OPERATIONS, IamGuard, install_from_env
from seglog_emulator.iam.policy import Policy

PRINCIPAL = "arn:aws:sts::000000000000:assumed-role/stack-FnRole/Fn"
QUEUE_URL = "http://localhost:4566/000000000000/jobs"


class FakeService:
    """Answers what gets past the guard; GetObject/HeadObject of key "missing" answer S3's 404."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        self.calls.append(model.name)
        return AWSResponse("", 200, HTTPHeaders(), None), {"ResponseMetadata": {"HTTPStatusCode": 200}}


class MissingKeys(FakeService):
    def __call__(self, model: Any, **kwargs: Any) -> tuple[AWSResponse, dict[str, Any]]:
        self.calls.append(model.name)
        code, message = ("404", "Not Found") if model.name == "HeadObject" else ("NoSuchKey", "The specified key does "
                                                                                 "not exist.")
        return AWSResponse("", 404, HTTPHeaders(), None), {"Error": {"Code": code, "Message": message},
                                                           "ResponseMetadata": {"HTTPStatusCode": 404}}


def permissions(*statements: dict[str, Any]) -> FunctionPermissions:
    policy = Policy.parse({"Version": "2012-10-17", "Statement": list(statements)}, source="stack-FnRole/Policy0")
    return FunctionPermissions(function="Fn", role_name="stack-FnRole", region="us-east-1", account="000000000000",
                               identity=(policy,))


def guarded(service: str, perms: FunctionPermissions, fake: FakeService | None = None,
            only: Any = None) -> tuple[Any, FakeService]:
    made = boto3.client(service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                        aws_access_key_id="x", aws_secret_access_key="x",
                        config=Config(retries={"max_attempts": 1}, connect_timeout=0.1))
    IamGuard(perms, only=only).attach(made)
    fake = fake or FakeService()
    made.meta.events.register_last("before-call.*.*", fake)
    return made, fake


def denied(call: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as caught:
        call()
    response: dict[str, Any] = caught.value.response
    return response


TABLE_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/Entries"


def test_a_denied_dynamodb_call_raises_access_denied_exception_and_is_never_sent() -> None:
    ddb, fake = guarded("dynamodb", permissions({"Effect": "Allow", "Action": "dynamodb:GetItem",
                                                  "Resource": TABLE_ARN}))
    response = denied(lambda: ddb.put_item(TableName="Entries", Item={"G": {"S": "x"}}))
    ddb.get_item(TableName="Entries", Key={"G": {"S": "x"}})

    assert ("AccessDeniedException", 400) == (response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"])
    assert (f"User: {PRINCIPAL} is not authorized to perform: dynamodb:PutItem on resource: {TABLE_ARN} because no "
            "identity-based policy allows the dynamodb:PutItem action") == response["Error"]["Message"]
    assert ["GetItem"] == fake.calls


def test_an_explicit_deny_says_so() -> None:
    ddb, _ = guarded("dynamodb", permissions({"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
                                             {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"}))
    response = denied(lambda: ddb.delete_item(TableName="Entries", Key={"G": {"S": "x"}}))
    assert response["Error"]["Message"].endswith("with an explicit deny in an identity-based policy")


def test_a_transaction_is_denied_when_one_item_is() -> None:
    """Each item is authorized as its own action (transaction-apis-iam); one denied item fails the call."""
    ddb, fake = guarded("dynamodb", permissions({"Effect": "Allow", "Action": ["dynamodb:PutItem"], "Resource": "*"}))
    item = {"G": {"S": "x"}}
    response = denied(lambda: ddb.transact_write_items(TransactItems=[
        {"Put": {"TableName": "Entries", "Item": item}}, {"Update": {"TableName": "Segments", "Key": item,
                                                                     "UpdateExpression": "SET A = :a",
                                                                     "ExpressionAttributeValues": {":a": item["G"]}}}]))
    assert "dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:000000000000:table/Segments" in \
        response["Error"]["Message"]
    assert [] == fake.calls


def test_s3_denials_are_403_access_denied_and_a_head_is_a_bare_403() -> None:
    s3, fake = guarded("s3", permissions({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/*"}))
    get = denied(lambda: s3.get_object(Bucket="b", Key="entries/k"))
    head = denied(lambda: s3.head_object(Bucket="b", Key="entries/k"))
    s3.put_object(Bucket="b", Key="entries/k", Body=b"x")

    assert ("AccessDenied", 403) == (get["Error"]["Code"], get["ResponseMetadata"]["HTTPStatusCode"])
    assert (f'User: {PRINCIPAL} is not authorized to perform: s3:GetObject on resource: "arn:aws:s3:::b/entries/k" '
            "because no identity-based policy allows the s3:GetObject action") == get["Error"]["Message"]
    assert ("403", "Forbidden", 403) == (head["Error"]["Code"], head["Error"]["Message"],
                                         head["ResponseMetadata"]["HTTPStatusCode"])
    assert ["PutObject"] == fake.calls


def test_put_object_with_tags_needs_put_object_tagging_too() -> None:
    s3, fake = guarded("s3", permissions({"Effect": "Allow", "Action": "s3:PutObject", "Resource": "*"}))
    response = denied(lambda: s3.put_object(Bucket="b", Key="k", Body=b"x", Tagging="discardable=true"))
    assert "s3:PutObjectTagging" in response["Error"]["Message"]
    assert [] == fake.calls


@pytest.mark.parametrize("operation", ["get_object", "head_object", "get_object_tagging"])
def test_a_missing_key_without_list_bucket_answers_403_not_404(operation: str) -> None:
    """S3 API Reference, GetObject "Permissions": without s3:ListBucket a missing key is 403 Access Denied."""
    s3, fake = guarded("s3", permissions({"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectTagging"],
                                          "Resource": "arn:aws:s3:::b/*"}), MissingKeys())
    response = denied(lambda: getattr(s3, operation)(Bucket="b", Key="missing"))
    expected = ("403", "Forbidden") if operation == "head_object" else (
        "AccessDenied", f'User: {PRINCIPAL} is not authorized to perform: s3:ListBucket on resource: "arn:aws:s3:::b" '
                        "because no identity-based policy allows the s3:ListBucket action")
    assert expected == (response["Error"]["Code"], response["Error"]["Message"])
    assert 403 == response["ResponseMetadata"]["HTTPStatusCode"]
    assert 1 == len(fake.calls)  # S3 was asked: the answer is rewritten, as S3 decides after looking


@pytest.mark.parametrize("operation", ["get_object", "head_object", "get_object_tagging"])
def test_a_missing_key_with_list_bucket_answers_404(operation: str) -> None:
    s3, _ = guarded("s3", permissions({"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectTagging"],
                                       "Resource": "arn:aws:s3:::b/*"},
                                      {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b"}),
                    MissingKeys())
    response = denied(lambda: getattr(s3, operation)(Bucket="b", Key="missing"))
    assert ("404" if operation == "head_object" else "NoSuchKey", 404) == (
        response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"])


def test_sqs_denials_are_access_denied_with_the_action_in_lowercase() -> None:
    """SQS names the action in lowercase (aws/serverless-application-model#3633 shows a real one)."""
    sqs, fake = guarded("sqs", permissions({"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "*"}))
    response = denied(lambda: sqs.send_message_batch(QueueUrl=QUEUE_URL, Entries=[{"Id": "1", "MessageBody": "x"}]))
    sqs.receive_message(QueueUrl=QUEUE_URL)

    assert ("AccessDenied", 403) == (response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"])
    assert (f"User: {PRINCIPAL} is not authorized to perform: sqs:sendmessage on resource: "
            "arn:aws:sqs:us-east-1:000000000000:jobs because no identity-based policy allows the sqs:sendmessage "
            "action") == response["Error"]["Message"]
    assert ["ReceiveMessage"] == fake.calls


def test_an_operation_the_emulator_cannot_map_is_denied_with_a_log_line() -> None:
    """Fail closed: an unknown operation is never let through unevaluated."""
    sqs, fake = guarded("sqs", permissions({"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}))
    with capture_logs() as logs:
        response = denied(lambda: sqs.tag_queue(QueueUrl=QUEUE_URL, Tags={"a": "b"}))
    assert "does not know which IAM action" in response["Error"]["Message"]
    assert [("TagQueue", "error")] == [(e["operation"], e["log_level"]) for e in logs if "operation" in e]
    assert [] == fake.calls


def test_an_event_source_mapping_client_evaluates_only_what_lambda_itself_calls() -> None:
    """The poller's own machinery (putting a message back, fault injection) is not the function's request."""
    sqs, fake = guarded("sqs", permissions({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}),
                        only=EVENT_SOURCE_OPERATIONS)
    response = denied(lambda: sqs.receive_message(QueueUrl=QUEUE_URL))
    sqs.change_message_visibility(QueueUrl=QUEUE_URL, ReceiptHandle="r", VisibilityTimeout=0)
    assert ("AccessDenied", ["ChangeMessageVisibility"]) == (response["Error"]["Code"], fake.calls)


def test_a_denied_call_is_not_faulted_the_guard_runs_first() -> None:
    """Installed before the fault injector, the guard answers first: a denial is never turned into a throttle."""
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
                       aws_access_key_id="x", aws_secret_access_key="x", config=Config(retries={"max_attempts": 1}))
    IamGuard(permissions({"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "*"})).attach(ddb)
    schedule = FaultSchedule(FaultPlan.from_flags("ddb_throttle", rate=1.0, seed=1))
    BotocoreFaultInjector(schedule).attach(ddb)
    ddb.meta.events.register_last("before-call.*.*", FakeService())

    response = denied(lambda: ddb.put_item(TableName="T", Item={"G": {"S": "x"}}))
    allowed_but_throttled = denied(lambda: ddb.get_item(TableName="T", Key={"G": {"S": "x"}}))

    assert "AccessDeniedException" == response["Error"]["Code"]
    assert allowed_but_throttled["Error"]["Code"] in ("ProvisionedThroughputExceededException", "ThrottlingException")


def test_the_worker_takes_the_permissions_out_of_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The function never sees the emulator's variable (it is removed before the handler is imported), and every
    client it builds is guarded, even one made with boto3 directly rather than seglog_aws.clients.client."""
    from botocore.session import Session

    monkeypatch.setattr(Session, "create_client", Session.create_client)  # restored after the test
    perms = permissions({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"})
    monkeypatch.setenv(ENV_VAR, perms.to_json())

    installed = install_from_env()
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id="x",
                      aws_secret_access_key="x")
    response = denied(lambda: s3.put_object(Bucket="b", Key="k", Body=b"x"))

    assert ENV_VAR not in os.environ
    assert installed is not None and "Fn" == installed.function
    assert "AccessDenied" == response["Error"]["Code"]
