"""What a stack leaves behind on purpose, and the command that removes each piece.

DeletionPolicy Retain keeps a resource when its stack is deleted, and also when the stack's first create fails
and rolls back: only RetainExceptOnCreate deletes a resource the failed operation created (AWS CloudFormation
Template Reference, "DeletionPolicy attribute"; AWS CloudFormation API Reference, RollbackStack,
"RetainExceptOnCreate"). Such a resource stays in the stack's resource list with its physical id, as
DELETE_SKIPPED on AWS (AWS CloudFormation User Guide, "Stack and resource status codes"); LocalStack 2026.3 does
not roll a failed create back at all and shows it CREATE_COMPLETE. Either way it exists and belongs to no stack
once the stack is gone: a new create makes new ones beside it, so it must be listed for a person to delete or
import.

Each removal is an AWS CLI line for the same target the stack was found on (:meth:`Target.aws_command`: region,
endpoint, profile), so pasted it removes the resource it names, not one of that name in another account. A bucket
is described as it is: its versioning is read, not assumed (the template's SnapshotBucket and the artifacts bucket
`seglog deploy` makes are versioned, but a bucket of an older stack, or one changed by hand, may not be), because
`aws s3 rb --force` deletes current objects only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from seglog_deploy.artifacts import MISSING, bucket_name
from seglog_deploy.errors import DeployError, TargetError
from seglog_deploy.target import Target

#: A resource in one of these states does not exist (deleted, or never made).
GONE = frozenset({"DELETE_COMPLETE", "CREATE_FAILED"})


@dataclass(frozen=True, kw_only=True)
class Leftover:
    """Something a deleted (or failed) stack leaves behind on purpose, and how to remove it."""

    logical_id: str
    resource_type: str
    physical_id: str
    removal: str


def leftovers(target: Target, stack_id: str) -> list[Leftover]:
    """Resources of the stack with DeletionPolicy Retain in its processed (post-transform) template that exist,
    and the log groups Lambda creates for the stack's functions outside the stack."""
    cfn = target.client("cloudformation")
    try:
        processed: Any = cfn.get_template(StackName=stack_id, TemplateStage="Processed")["TemplateBody"]
        resources = cfn.describe_stack_resources(StackName=stack_id)["StackResources"]
    except ClientError as exc:  # a stack CloudFormation lists but cannot describe (seen on LocalStack)
        raise DeployError(f"cannot read what stack {stack_id} holds: {exc.response['Error'].get('Message', exc)}; "
                          "delete it with `aws cloudformation delete-stack --stack-name` and its id, then look for "
                          "its tables and buckets by name before deploying again") from exc
    if isinstance(processed, str):
        processed = json.loads(processed)
    physical = {r["LogicalResourceId"]: r for r in resources}
    left: list[Leftover] = []
    for lid, resource in processed.get("Resources", {}).items():
        live = physical.get(lid)
        if live is None or not live.get("PhysicalResourceId") or live.get("ResourceStatus") in GONE:
            continue
        kind, name = resource.get("Type", ""), live["PhysicalResourceId"]
        if resource.get("DeletionPolicy") == "Retain":
            left.append(Leftover(logical_id=lid, resource_type=kind, physical_id=name,
                                 removal=removal(target, kind, name)))
        elif kind == "AWS::Lambda::Function" and _log_group_exists(target, f"/aws/lambda/{name}"):
            group = f"/aws/lambda/{name}"  # made by Lambda on the first invocation, not by the stack
            left.append(Leftover(logical_id=f"{lid} logs", resource_type="AWS::Logs::LogGroup", physical_id=group,
                                 removal=removal(target, "AWS::Logs::LogGroup", group)))
    return left


def _log_group_exists(target: Target, name: str) -> bool:
    groups = target.client("logs").describe_log_groups(logGroupNamePrefix=name).get("logGroups", [])
    return any(g.get("logGroupName") == name for g in groups)


def removal(target: Target, kind: str, name: str) -> str:
    """The AWS CLI command that removes a retained resource (once you have kept what you need), on ``target``."""
    aws = target.aws_command
    if kind == "AWS::DynamoDB::Table":
        return aws("dynamodb", "delete-table", "--table-name", name)
    if kind == "AWS::S3::Bucket":
        return bucket_removal(target, name)
    if kind == "AWS::SQS::Queue":
        return aws("sqs", "delete-queue", "--queue-url", name)
    if kind == "AWS::Logs::LogGroup":
        return aws("logs", "delete-log-group", "--log-group-name", name)
    where = f"{target.endpoint_url} ({target.region})" if target.endpoint_url else target.region
    return f"delete {kind} {name} in {where} (console or AWS CLI)"


def bucket_versioning(target: Target, name: str) -> str | None:
    """The bucket's versioning as S3 answers it: "Enabled", "Suspended", or None (never versioned)."""
    status = target.client("s3").get_bucket_versioning(Bucket=name).get("Status")
    return str(status) if status else None


def bucket_removal(target: Target, name: str) -> str:
    """What removes bucket ``name`` and everything in it, said as it is: an unversioned bucket goes with
    ``aws s3 rb --force``; a versioned one (versioning Enabled, or Suspended after it was) keeps every object version
    and delete marker, which rb does not delete, so they are deleted one by one first."""
    aws = target.aws_command
    versioning = bucket_versioning(target, name)
    if versioning is None:
        return f"{aws('s3', 'rb', f's3://{name}', '--force')}  # not versioned: --force deletes every object first"
    listing = aws("s3api", "list-object-versions", "--bucket", name, "--output", "text", "--query",
                  "[Versions, DeleteMarkers][][].[Key, VersionId]")
    delete = aws("s3api", "delete-object", "--bucket", name) + ' --key "$key" --version-id "$version"'
    state = "versioned" if versioning == "Enabled" else "versioning suspended, earlier versions kept"
    return (f"{listing} | while IFS=$'\\t' read -r key version; do {delete} >/dev/null; done; "
            f"{aws('s3', 'rb', f's3://{name}')}  # {state}: every object version and delete marker goes first")


def artifacts_bucket(target: Target, name: str | None = None) -> Leftover | None:
    """The artifacts bucket `seglog deploy` uploads to on this target (``name``, or the account's and region's
    default), if it exists: no stack owns it, so destroy leaves it for the other stacks and says how to remove it."""
    try:
        name = name or bucket_name(target.account_id(), target.region)
        target.client("s3").head_bucket(Bucket=name)
        return Leftover(logical_id="artifacts bucket", resource_type="AWS::S3::Bucket", physical_id=name,
                        removal=bucket_removal(target, name))
    except ClientError as exc:
        if str(exc.response.get("Error", {}).get("Code", "")) in MISSING:
            return None
        raise
    except (BotoCoreError, TargetError):
        return None
