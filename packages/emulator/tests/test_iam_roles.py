"""Each function's permissions from template.yaml, through AWS's SAM transform (no stack needed).

The roles are the ones a deploy creates (AWS SAM Developer Guide, sam-resource-function "Policies"; the managed
policies SAM attaches per event source, lambda-intro-execution-role; the OnFailure destination's policy,
sam-property-function-dynamodb); managed policy documents are AWS's (AWS Managed Policy Reference Guide).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from seglog_awsmodel.template import Template, load_template
from seglog_emulator.errors import IamTemplateError
from seglog_emulator.iam.evaluation import FunctionPermissions, Outcome
from seglog_emulator.iam.roles import function_permissions, managed_policies

STACK, REGION = "st", "us-east-1"
ARN = "arn:aws:{service}:us-east-1:000000000000:{resource}"
SEGMENTS = ARN.format(service="dynamodb", resource="table/st-SegmentsTable")
ENTRIES = ARN.format(service="dynamodb", resource="table/st-EntriesTable")
PENDING = ARN.format(service="dynamodb", resource="table/st-PendingSnapshotsTable")
BUCKET = "arn:aws:s3:::st-snapshotbucket"
QUEUE = ARN.format(service="sqs", resource="st-SnapshotQueue")
FAILURES = ARN.format(service="sqs", resource="st-StreamFailureQueue")
STREAM = ARN.format(service="dynamodb", resource="table/st-EntriesTable/stream/2026-11-01T00:00:00.000")

#: Operation names that are not IAM actions: a policy naming one grants nothing (Service Authorization Reference;
#: parliament flags dynamodb:TransactWriteItems in this very template, shared/notes/deploy-findings.md).
NOT_ACTIONS = frozenset({
    "dynamodb:TransactWriteItems", "dynamodb:TransactGetItems", "sqs:SendMessageBatch", "sqs:DeleteMessageBatch",
    "sqs:ChangeMessageVisibilityBatch", "s3:HeadObject", "s3:ListObjects", "s3:ListObjectsV2", "s3:CopyObject",
    "s3:DeleteObjects", "s3:UploadPart", "s3:CreateMultipartUpload", "s3:CompleteMultipartUpload"})


def fallback(value: dict[str, Any]) -> Any:
    """What the live stack would answer: a table's stream ARN (DynamoDB Local's region placeholder included)."""
    if "Fn::GetAtt" in value and value["Fn::GetAtt"][1] == "StreamArn":
        return STREAM.replace(":us-east-1:", ":ddblocal:")
    raise AssertionError(f"unexpected lookup {value}")


def permissions(template: Template | None = None) -> dict[str, FunctionPermissions]:
    return function_permissions(template or load_template(), stack=STACK, region=REGION, fallback=fallback)


def edited(change: Any) -> Template:
    template = load_template()
    body = copy.deepcopy(template.body)
    change(body)
    return Template(path=template.path, body=body)


def outcome(perms: FunctionPermissions, action: str, resource: str, **context: str) -> Outcome:
    return perms.decide(action, resource, {k.replace("_", ":"): (v,) for k, v in context.items()}).outcome


@pytest.fixture(scope="module")
def roles() -> dict[str, FunctionPermissions]:
    return permissions()


def test_every_function_gets_its_role_with_lambdas_session_name(roles: dict[str, FunctionPermissions]) -> None:
    assert {"ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction", "RetentionFunction",
            "SnapshotSweepFunction"} == set(roles)
    session = roles["ApiFunction"].caller.session
    assert "arn:aws:sts::000000000000:assumed-role/st-ApiFunctionRole/ApiFunction" == session


def test_the_api_may_do_what_its_statements_say_and_nothing_else(roles: dict[str, FunctionPermissions]) -> None:
    api = roles["ApiFunction"]
    assert [Outcome.ALLOWED] * 5 == [
        outcome(api, "dynamodb:PutItem", ENTRIES), outcome(api, "dynamodb:Query", SEGMENTS),
        outcome(api, "s3:GetObjectTagging", f"{BUCKET}/entries/a/b"), outcome(api, "s3:ListBucket", BUCKET),
        outcome(api, "logs:PutLogEvents", "*")]  # AWSLambdaBasicExecutionRole, attached by SAM
    assert [Outcome.IMPLICIT_DENY] * 3 == [
        outcome(api, "dynamodb:PutItem", PENDING), outcome(api, "dynamodb:DeleteItem", ENTRIES),
        outcome(api, "sqs:SendMessage", QUEUE)]


def test_the_sweep_may_read_the_pending_items_and_send_jobs_and_nothing_else(
        roles: dict[str, FunctionPermissions]) -> None:
    sweep = roles["SnapshotSweepFunction"]
    assert [Outcome.ALLOWED] * 2 == [outcome(sweep, "dynamodb:Scan", PENDING), outcome(sweep, "sqs:SendMessage", QUEUE)]
    assert Outcome.ALLOWED not in [
        outcome(sweep, "dynamodb:Scan", ENTRIES), outcome(sweep, "dynamodb:PutItem", PENDING),
        outcome(sweep, "dynamodb:DeleteItem", PENDING), outcome(sweep, "sqs:DeleteMessage", QUEUE),
        outcome(sweep, "sqs:ReceiveMessage", QUEUE), outcome(sweep, "s3:GetObject", f"{BUCKET}/snapshots/a")]


def test_event_source_mappings_add_the_managed_execution_roles(roles: dict[str, FunctionPermissions]) -> None:
    """DynamoDB events attach AWSLambdaDynamoDBExecutionRole, SQS events AWSLambdaSQSQueueExecutionRole."""
    router, worker = roles["StreamRouterFunction"], roles["SnapshotWorkerFunction"]
    assert [Outcome.ALLOWED] * 4 == [
        outcome(router, "dynamodb:GetRecords", STREAM), outcome(router, "dynamodb:GetShardIterator", STREAM),
        outcome(worker, "sqs:ReceiveMessage", QUEUE), outcome(worker, "sqs:GetQueueAttributes", QUEUE)]
    assert Outcome.IMPLICIT_DENY == outcome(roles["ApiFunction"], "dynamodb:GetRecords", STREAM)


def test_sam_adds_send_message_to_the_on_failure_destination() -> None:
    """Removing the router's own statement for the failure queue leaves SAM's OnFailure policy."""
    def drop(body: dict[str, Any]) -> None:
        statement = body["Resources"]["StreamRouterFunction"]["Properties"]["Policies"][0]["Statement"][0]
        statement["Resource"] = [statement["Resource"][0]]

    router = permissions(edited(drop))["StreamRouterFunction"]
    assert (Outcome.ALLOWED, Outcome.ALLOWED) == (outcome(router, "sqs:SendMessage", FAILURES),
                                                  outcome(router, "sqs:SendMessage", QUEUE))


def test_sam_policy_templates_are_expanded_by_the_transform() -> None:
    def templated(body: dict[str, Any]) -> None:
        body["Resources"]["ApiFunction"]["Properties"]["Policies"] = [
            {"DynamoDBReadPolicy": {"TableName": {"Ref": "PendingSnapshotsTable"}}},
            {"SQSSendMessagePolicy": {"QueueName": {"Fn::GetAtt": ["SnapshotQueue", "QueueName"]}}}]

    api = permissions(edited(templated))["ApiFunction"]
    assert [Outcome.ALLOWED, Outcome.ALLOWED, Outcome.ALLOWED, Outcome.IMPLICIT_DENY] == [
        outcome(api, "dynamodb:Query", f"{PENDING}/index/byDate"), outcome(api, "dynamodb:GetItem", PENDING),
        outcome(api, "sqs:SendMessage", QUEUE), outcome(api, "dynamodb:PutItem", PENDING)]


def test_a_tls_only_bucket_policy_applies_as_a_resource_based_deny() -> None:
    """The emulator stands in for TLS: its requests carry aws:SecureTransport true, so the Deny does not apply."""
    def tls_only(body: dict[str, Any]) -> None:
        body["Resources"]["TlsOnly"] = {"Type": "AWS::S3::BucketPolicy", "Properties": {
            "Bucket": {"Ref": "SnapshotBucket"}, "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": [{"Fn::GetAtt": ["SnapshotBucket", "Arn"]}, {"Fn::Sub": "${SnapshotBucket.Arn}/*"}],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}}}

    api = permissions(edited(tls_only))["ApiFunction"]
    assert (Outcome.ALLOWED, Outcome.EXPLICIT_DENY) == (
        outcome(api, "s3:GetObject", f"{BUCKET}/entries/x"),
        outcome(api, "s3:GetObject", f"{BUCKET}/entries/x", aws_securetransport="false"))


def test_an_unknown_managed_policy_is_a_clear_error() -> None:
    def attach(body: dict[str, Any]) -> None:
        body["Resources"]["ApiFunction"]["Properties"]["Policies"].append("AmazonS3ReadOnlyAccess")

    with pytest.raises(IamTemplateError, match="managed policy arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess is not "
                                               "bundled"):
        permissions(edited(attach))


def test_a_role_defined_outside_the_template_is_a_clear_error() -> None:
    def external(body: dict[str, Any]) -> None:
        body["Resources"]["ApiFunction"]["Properties"]["Role"] = "arn:aws:iam::123456789012:role/Elsewhere"

    with pytest.raises(IamTemplateError, match=r"ApiFunction: its Role .* is not an AWS::IAM::Role of the template"):
        permissions(edited(external))


def test_the_templates_policies_name_only_iam_actions() -> None:
    """An operation name that is not an action (dynamodb:TransactWriteItems) grants nothing: it hides a gap."""
    named = {action for perms in permissions().values() for policy in perms.identity
             for statement in policy.document["Statement"]
             for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])}
    assert set() == named & NOT_ACTIONS


def test_the_bundled_managed_policies_cover_the_ones_sam_attaches_to_our_event_types() -> None:
    assert {f"arn:aws:iam::aws:policy/service-role/AWSLambda{name}ExecutionRole"
            for name in ("Basic", "DynamoDB", "SQSQueue", "Kinesis")} == set(managed_policies())
