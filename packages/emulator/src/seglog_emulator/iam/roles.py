"""Each function's permissions, from template.yaml the way AWS would create them.

The SAM template goes through AWS's own SAM transform (``aws-sam-translator``, the library CloudFormation's
``AWS::Serverless-2016-10-31`` transform runs), so the roles are exactly the ones a deploy makes: the function's
inline ``Policies`` statements, SAM policy templates expanded, the managed policies SAM attaches for the event
sources (AWSLambdaBasicExecutionRole, AWSLambdaDynamoDBExecutionRole, AWSLambdaSQSQueueExecutionRole, ...) and
the policy SAM adds for a DynamoDB event's ``DestinationConfig.OnFailure`` (sqs:SendMessage on the destination).
Managed policies are evaluated from the documents bundled in ``managed_policies.json`` (AWS Managed Policy
Reference Guide); an ARN not bundled is a clear error, as is a role the template does not define.

Resource-based policies: every ``AWS::S3::BucketPolicy`` and ``AWS::SQS::QueuePolicy`` of the template, keyed by
the ARN of the bucket or queue it protects.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources as package_data
from typing import Any

import structlog

from seglog_awsmodel.template import Template, TemplateError
from seglog_emulator.errors import IamPolicyError, IamTemplateError
from seglog_emulator.iam.evaluation import LOCAL_ACCOUNT, FunctionPermissions
from seglog_emulator.iam.intrinsics import Fallback, PolicyIntrinsics
from seglog_emulator.iam.policy import Policy
from seglog_stack.provision import function_name, parameter_values, resource_name
from seglog_stack.sam_transform import transform_template

log = structlog.get_logger("seglog.emulator.iam")

@functools.cache
def managed_policies() -> dict[str, Any]:
    """The bundled AWS managed policy documents by ARN."""
    text = package_data.files("seglog_emulator.iam").joinpath("managed_policies.json").read_text()
    documents: dict[str, Any] = json.loads(text)
    documents.pop("_comment", None)
    return documents


def transform(template: Template, *, stack: str, region: str, parameters: Mapping[str, Any] | None = None,
              account: str = LOCAL_ACCOUNT) -> dict[str, Any]:
    """The template after the SAM transform (plain CloudFormation), as CloudFormation would make it for ``stack``.

    Raises:
        IamTemplateError: the transform refused the template (its reasons in the message).
    """
    values = {**template.parameters, **(parameters or {}), "AWS::AccountId": account, "AWS::StackName": stack,
              "AWS::Region": region, "AWS::Partition": "aws"}
    try:
        return transform_template(template, region=region, parameter_values=values)
    except TemplateError as exc:
        raise IamTemplateError([str(exc)]) from exc


def function_permissions(template: Template, *, stack: str, region: str, parameters: Mapping[str, Any] | None = None,
                         fallback: Fallback | None = None,
                         account: str = LOCAL_ACCOUNT) -> dict[str, FunctionPermissions]:
    """Every ``AWS::Serverless::Function``'s permissions, by logical id.

    Args:
        template: template.yaml as loaded.
        stack, region: the local deployment (physical names derive from the stack name).
        parameters: template parameter overrides.
        fallback: resolves what needs the live stack (a table's StreamArn, a queue's URL).

    Raises:
        IamTemplateError: every problem found (an external role, an unknown managed policy, ...).
        IamPolicyError: a policy the evaluator cannot evaluate exactly.
    """
    cfn = transform(template, stack=stack, region=region, parameters=parameters, account=account)
    resources: dict[str, Any] = cfn.get("Resources") or {}
    resolve = PolicyIntrinsics(resources, {**template.parameters, **(parameters or {})}, stack=stack, region=region,
                               account=account, fallback=fallback)
    problems: list[str] = []
    values = parameter_values(template.parameters, parameters)
    resource_policies = _resource_policies(resources, resolve)
    permissions = {}
    for logical, resource in template.resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        try:
            role = _role_of(logical, resources)
            identity = _identity_policies(role, resources, resolve)
        except IamTemplateError as exc:
            problems.extend(exc.problems)
            continue
        permissions[logical] = FunctionPermissions(
            function=function_name(resources, stack, logical, values), role_name=resource_name(resources, stack, role),
            region=region, account=account, identity=identity, resource_policies=resource_policies)
    if problems:
        raise IamTemplateError(problems)
    return permissions


def _role_of(function: str, resources: Mapping[str, Any]) -> str:
    role = ((resources.get(function) or {}).get("Properties") or {}).get("Role")
    if isinstance(role, Mapping) and "Fn::GetAtt" in role:
        target = role["Fn::GetAtt"]
        logical = target[0] if isinstance(target, list) else str(target).split(".", 1)[0]
        if (resources.get(logical) or {}).get("Type") == "AWS::IAM::Role":
            return str(logical)
    raise IamTemplateError([f"{function}: its Role {role!r} is not an AWS::IAM::Role of the template, so the "
                            "emulator cannot know its policies (let SAM create the role from Policies)"])


def _identity_policies(role: str, resources: Mapping[str, Any], resolve: PolicyIntrinsics) -> tuple[Policy, ...]:
    props = (resources[role].get("Properties") or {})
    if props.get("PermissionsBoundary"):
        raise IamTemplateError([f"{role}: PermissionsBoundary is not evaluated by the emulator"])
    policies = []
    for inline in props.get("Policies") or []:
        name = f"{role}/{inline.get('PolicyName')}"
        policies.append(_parse(resolve(inline.get("PolicyDocument")), name))
    bundled = managed_policies()
    for arn in resolve(props.get("ManagedPolicyArns") or []):
        if arn in bundled:
            policies.append(_parse(bundled[arn], arn))
            continue
        own = _template_managed_policy(str(arn), resources, resolve)
        if own is None:
            raise IamTemplateError([f"{role}: managed policy {arn} is not bundled with the emulator "
                                    "(seglog_emulator/iam/managed_policies.json): add its document from the AWS "
                                    "Managed Policy Reference Guide"])
        policies.append(own)
    for logical, resource in resources.items():  # AWS::IAM::Policy resources attached to the role
        attached = (resource.get("Properties") or {})
        if resource.get("Type") == "AWS::IAM::Policy" and {"Ref": role} in (attached.get("Roles") or []):
            policies.append(_parse(resolve(attached.get("PolicyDocument")), f"{role}/{logical}"))
    return tuple(policies)


def _template_managed_policy(arn: str, resources: Mapping[str, Any], resolve: PolicyIntrinsics) -> Policy | None:
    for logical, resource in resources.items():
        if resource.get("Type") == "AWS::IAM::ManagedPolicy" and resolve({"Ref": logical}) == arn:
            return _parse(resolve((resource.get("Properties") or {}).get("PolicyDocument")), logical)
    return None


def _resource_policies(resources: Mapping[str, Any], resolve: PolicyIntrinsics) -> dict[str, tuple[Policy, ...]]:
    found: dict[str, list[Policy]] = {}
    for logical, resource in resources.items():
        props = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::S3::BucketPolicy":
            targets = [f"arn:aws:s3:::{resolve(props.get('Bucket'))}"]
        elif resource.get("Type") == "AWS::SQS::QueuePolicy":
            targets = [_queue_arn(str(url), resolve) for url in resolve(props.get("Queues") or [])]
        else:
            continue
        policy = _parse(resolve(props.get("PolicyDocument")), logical, resource_based=True)
        for target in targets:
            found.setdefault(target, []).append(policy)
    return {arn: tuple(policies) for arn, policies in found.items()}


def _queue_arn(url: str, resolve: PolicyIntrinsics) -> str:
    """A queue's ARN from its URL (``.../ACCOUNT/NAME``)."""
    account, name = url.rstrip("/").split("/")[-2:]
    return f"arn:aws:sqs:{resolve.region}:{account}:{name}"


def _parse(document: Any, source: str, *, resource_based: bool = False) -> Policy:
    try:
        return Policy.parse(document, source=source, resource_based=resource_based)
    except IamPolicyError:
        log.error("policy the emulator cannot evaluate", source=source)
        raise
