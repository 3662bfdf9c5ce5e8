"""What the local provisioner applies of template.yaml's hardening (issue 10, point 8), on the real local stack.

Applied: SSE-SQS on every queue (a queue attribute, SetQueueAttributes "SqsManagedSseEnabled"), the bucket's
TLS-only policy (PutBucketPolicy; LocalStack's free tier stores bucket policies without enforcing them, so this
checks what is there, not that plain HTTP is refused), its versioning (PutBucketVersioning, which LocalStack
applies) and its lifecycle rules (PutBucketLifecycleConfiguration: stored, not run). Not applied, and so not
checked here: point-in-time recovery and the Retain policies (a local stack is scratch and deleted whole).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from seglog_aws.clients import client, local_session
from seglog_awsmodel.template import load_template
from seglog_plugin.resources import resources_of
from seglog_stack import local
from seglog_stack.provision import physical_name

pytestmark = pytest.mark.stack
REPO = Path(__file__).resolve().parent.parent
QUEUES = ("SnapshotQueue", "SnapshotDeadLetterQueue", "StreamFailureQueue")


def clients(deployment: local.LocalDeployment) -> tuple[Any, Any]:
    session = local_session(deployment.region)
    return (client("sqs", session=session, endpoint_url=deployment.endpoints["sqs"]),
            client("s3", session=session, endpoint_url=deployment.endpoints["s3"]))


def stack_of(deployment: local.LocalDeployment) -> str:
    return resources_of(deployment).entries_table.rsplit("-", 1)[0]


def sse_by_queue(deployment: local.LocalDeployment, template: Path | None = None) -> dict[str, str | None]:
    sqs, _ = clients(deployment)
    stack = stack_of(deployment)
    actual = {}
    for logical in load_template(template).of_type("AWS::SQS::Queue"):
        url = sqs.get_queue_url(QueueName=physical_name(stack, logical, "AWS::SQS::Queue"))["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["SqsManagedSseEnabled"])["Attributes"]
        actual[logical] = attributes.get("SqsManagedSseEnabled")
    return actual


def test_every_queue_is_created_with_the_templates_sse_setting(deployment: local.LocalDeployment,
                                                               tmp_path: Path) -> None:
    """SqsManagedSseEnabled is passed as the queue attribute: "true" as the template says, and "false" where a
    template says false (LocalStack, like SQS since 2022, encrypts a new queue when nothing is said, so only
    the second case shows that the provisioner passes the attribute on)."""
    assert {name: "true" for name in QUEUES} == sse_by_queue(deployment)
    plain = tmp_path / "template.yaml"
    text = (REPO / "template.yaml").read_text()
    plain.write_text(text.replace("SqsManagedSseEnabled: true", "SqsManagedSseEnabled: false"))
    stack = f"sse-{uuid.uuid4().hex[:6]}"
    other = local.provision(deployment.endpoints, profile=deployment.profile, region=deployment.region,
                            template=plain, stack_name=stack)
    try:
        assert {name: "false" for name in QUEUES} == sse_by_queue(other, plain)
    finally:
        local.deprovision(deployment.endpoints, region=deployment.region, stack_name=stack, template=plain)


def test_the_bucket_carries_the_tls_only_policy_with_its_arns_resolved(deployment: local.LocalDeployment) -> None:
    """!GetAtt SnapshotBucket.Arn and !Sub "${SnapshotBucket.Arn}/*" become the local bucket's ARNs (S3 ARNs
    name no region or account: arn:aws:s3:::bucket)."""
    _, s3 = clients(deployment)
    bucket = resources_of(deployment).bucket
    policy = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    expected = [{
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }]
    assert expected == policy["Statement"]


def test_the_bucket_is_versioned_with_the_templates_lifecycle_rules(deployment: local.LocalDeployment) -> None:
    """The template's rules in the S3 API's shape (a CloudFormation Prefix becomes a Filter, ExpiredObjectDeleteMarker
    moves into Expiration, a Ref takes the parameter's value), so the local bucket keeps versions as AWS's does."""
    _, s3 = clients(deployment)
    bucket = resources_of(deployment).bucket
    assert "Enabled" == s3.get_bucket_versioning(Bucket=bucket).get("Status")
    rules = {r["ID"]: r for r in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]}
    template_rules = load_template(None).resources["SnapshotBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert [r["Id"] for r in template_rules] == list(rules)
    assert {"ID": "KeepArchiveVersions", "Status": "Enabled", "Filter": {"Prefix": "archive/"},
            "Expiration": {"ExpiredObjectDeleteMarker": True},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 90}} == rules["KeepArchiveVersions"]
    assert {"ID": "ExpireDiscardable", "Status": "Enabled", "Filter": {"Tag": {"Key": "discardable", "Value": "true"}},
            "Expiration": {"Days": 7}} == rules["ExpireDiscardable"]


def test_deprovisioning_deletes_a_versioned_bucket_with_its_versions_and_delete_markers(
        deployment: local.LocalDeployment) -> None:
    """DeleteBucket refuses a bucket that still holds a version or a delete marker, which a plain delete of each
    object leaves in a versioned bucket: deprovision deletes them by version id, so the bucket really goes."""
    stack = f"ver-{uuid.uuid4().hex[:6]}"
    other = local.provision(deployment.endpoints, profile=deployment.profile, region=deployment.region,
                            stack_name=stack)
    _, s3 = clients(other)
    bucket = resources_of(other).bucket
    s3.put_object(Bucket=bucket, Key="archive/a/0", Body=b"first")
    s3.put_object(Bucket=bucket, Key="archive/a/0", Body=b"second")
    s3.delete_object(Bucket=bucket, Key="archive/a/0")
    listed = s3.list_object_versions(Bucket=bucket)
    assert (2, 1) == (len(listed.get("Versions", [])), len(listed.get("DeleteMarkers", [])))

    local.deprovision(deployment.endpoints, region=deployment.region, stack_name=stack)

    with pytest.raises(ClientError, match=r"404|Not Found|NoSuchBucket"):
        s3.head_bucket(Bucket=bucket)


def test_provisioning_again_keeps_the_hardening(deployment: local.LocalDeployment) -> None:
    """`seglog up` provisions an existing stack again (idempotent): the policy is put again, the queues kept."""
    again = local.provision(deployment.endpoints, profile=deployment.profile, region=deployment.region,
                            stack_name=stack_of(deployment))
    assert resources_of(deployment) == resources_of(again)
    sqs, s3 = clients(deployment)
    attributes = sqs.get_queue_attributes(QueueUrl=resources_of(again).queue_url,
                                          AttributeNames=["SqsManagedSseEnabled"])["Attributes"]
    assert "true" == attributes.get("SqsManagedSseEnabled")
    statement = json.loads(s3.get_bucket_policy(Bucket=resources_of(again).bucket)["Policy"])["Statement"]
    assert ["DenyInsecureTransport"] == [s.get("Sid") for s in statement]
