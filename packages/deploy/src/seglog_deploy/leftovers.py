"""What a stack leaves behind on purpose, and the command that removes each piece.

DeletionPolicy Retain keeps a resource when its stack is deleted, and also when the stack's first create fails
and rolls back: only RetainExceptOnCreate deletes a resource the failed operation created (AWS CloudFormation
Template Reference, "DeletionPolicy attribute"; AWS CloudFormation API Reference, RollbackStack,
"RetainExceptOnCreate"). Such a resource stays in the stack's resource list with its physical id, as
DELETE_SKIPPED on AWS (AWS CloudFormation User Guide, "Stack and resource status codes"); LocalStack 2026.3 does
not roll a failed create back at all and shows it CREATE_COMPLETE. Either way it exists and belongs to no stack
once the stack is gone: a new create makes new ones beside it, so it must be listed for a person to delete or
import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

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
    processed: Any = cfn.get_template(StackName=stack_id, TemplateStage="Processed")["TemplateBody"]
    if isinstance(processed, str):
        processed = json.loads(processed)
    physical = {r["LogicalResourceId"]: r for r in cfn.describe_stack_resources(StackName=stack_id)["StackResources"]}
    left: list[Leftover] = []
    for lid, resource in processed.get("Resources", {}).items():
        live = physical.get(lid)
        if live is None or not live.get("PhysicalResourceId") or live.get("ResourceStatus") in GONE:
            continue
        kind, name = resource.get("Type", ""), live["PhysicalResourceId"]
        if resource.get("DeletionPolicy") == "Retain":
            left.append(Leftover(logical_id=lid, resource_type=kind, physical_id=name,
                                 removal=removal(kind, name, target.region)))
        elif kind == "AWS::Lambda::Function" and _log_group_exists(target, f"/aws/lambda/{name}"):
            group = f"/aws/lambda/{name}"  # made by Lambda on the first invocation, not by the stack
            left.append(Leftover(logical_id=f"{lid} logs", resource_type="AWS::Logs::LogGroup", physical_id=group,
                                 removal=removal("AWS::Logs::LogGroup", group, target.region)))
    return left


def _log_group_exists(target: Target, name: str) -> bool:
    groups = target.client("logs").describe_log_groups(logGroupNamePrefix=name).get("logGroups", [])
    return any(g.get("logGroupName") == name for g in groups)


def removal(kind: str, name: str, region: str) -> str:
    """The AWS CLI command that removes a retained resource (once you have kept what you need)."""
    if kind == "AWS::DynamoDB::Table":
        return f"aws dynamodb delete-table --table-name {name} --region {region}"
    if kind == "AWS::S3::Bucket":
        # rb --force deletes current objects only: a versioned bucket must be emptied of every version first.
        return (f"aws s3 rb s3://{name} --force --region {region}  (versioned: first delete every object version, "
                "e.g. with the S3 console's Empty)")
    if kind == "AWS::SQS::Queue":
        return f"aws sqs delete-queue --queue-url {name} --region {region}"
    if kind == "AWS::Logs::LogGroup":
        return f"aws logs delete-log-group --log-group-name {name} --region {region}"
    return f"delete {kind} {name} in {region} (console or AWS CLI)"
