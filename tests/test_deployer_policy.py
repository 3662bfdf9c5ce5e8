"""`seglog deploy --print-policy` against the emulator's IAM evaluator (AWS's evaluation logic): every call a deploy
of template.yaml makes, or makes CloudFormation make as the deployer, is allowed on the names CloudFormation gives
this stack's resources; the same calls elsewhere (another stack, another bucket, another service's role, an
administrator policy) are denied. The actions themselves are checked against the handlers' permissions in the
CloudFormation registry's resource schemas (as cfn-lint bundles them), so the table names no action CloudFormation
does not call, and misses none its read and delete handlers do.

The deploy's own calls on LocalStack are checked the same way in tests/deploy/test_deploy_localstack.py."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources as package_data
from typing import Any

import pytest

from deploy.arns import arn_of
from seglog_awsmodel.template import load_template
from seglog_deploy.artifacts import bucket_name
from seglog_deploy.deployer_policy import (
    ARTIFACTS_BUCKET_ACTIONS,
    ARTIFACTS_OBJECT_ACTIONS,
    RESOURCE_TYPES,
    SAFE_STACK_NAME_LENGTH,
    STACK_ACTIONS,
    deployer_policy,
    processed_template,
)
from seglog_deploy.errors import DeployError
from seglog_emulator.iam.evaluation import evaluate
from seglog_emulator.iam.patterns import action_pattern
from seglog_emulator.iam.policy import Policy

#: Capitals on purpose: S3 names are lower case, every other name keeps the stack's case.
REGION, ACCOUNT, STACK = "eu-west-1", "123456789012", "SegLog"
BUCKET = bucket_name(ACCOUNT, REGION)
#: What CloudFormation appends to a name it generates (13 characters on AWS).
SUFFIX = "1A2B3C4D5E6F7"
STACK_ARN = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK}/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


@pytest.fixture(scope="module")
def policy() -> Policy:
    made = deployer_policy(load_template(), stack_name=STACK, region=REGION, account=ACCOUNT, artifacts_bucket=BUCKET)
    return Policy.parse(made, source="deployer")


def allowed(policy: Policy, action: str, resource: str, **context: str) -> bool:
    return evaluate(action, resource, {k.lower(): (v,) for k, v in context.items()}, identity=[policy]).allowed


def generated(logical_id: str, stack: str = STACK) -> str:
    """The name CloudFormation gives a resource the template does not name."""
    return f"{stack}-{logical_id}-{SUFFIX}"


def resource_arn(kind: str, logical_id: str, resources: Mapping[str, Any], stack: str = STACK) -> str:
    """The ARN AWS gives the resource ``logical_id`` of ``kind`` in ``stack``; a permission or mapping is authorised
    on its function, a bucket policy on its bucket."""
    props = resources.get(logical_id, {}).get("Properties", {})
    name = generated(logical_id, stack)
    match kind:
        case "AWS::S3::Bucket":
            name = name.lower()
        case "AWS::S3::BucketPolicy":
            return resource_arn("AWS::S3::Bucket", props["Bucket"]["Ref"], resources, stack)
        case "AWS::Lambda::Permission":
            return resource_arn("AWS::Lambda::Function", props["FunctionName"]["Ref"], resources, stack)
        case "AWS::Lambda::EventSourceMapping":
            name = "0a1b2c3d-0000-4000-8000-000000000001"  # a UUID Lambda draws
        case "AWS::ApiGatewayV2::Api":
            name = "a1b2c3d4e5"
        case "AWS::ApiGatewayV2::Stage":
            return f"{arn_of('AWS::ApiGatewayV2::Api', 'a1b2c3d4e5', region=REGION, account=ACCOUNT)}/stages/$default"
    return arn_of(kind, name, region=REGION, account=ACCOUNT)


def calls_for(kind: str, logical_id: str, resources: Mapping[str, Any],
              stack: str = STACK) -> list[tuple[str, str, dict[str, str]]]:
    """The (action, resource, context) of each call CloudFormation makes for one resource, as the table says,
    on that resource's own ARN (or "*" where the action names none), with the context keys AWS sends."""
    props = resources.get(logical_id, {}).get("Properties", {})
    calls: list[tuple[str, str, dict[str, str]]] = []
    for grant in RESOURCE_TYPES[kind]:
        for action in grant.actions:
            context: dict[str, str] = {}
            resource = "*" if grant.resources == ("*",) else resource_arn(kind, logical_id, resources, stack)
            if grant.resources == ("arn:{p}:s3:::{bucket}/*",):
                resource = f"arn:aws:s3:::{BUCKET}/functions/{'ab' * 32}.zip"
            if action == "iam:PassRole":
                context["iam:PassedToService"] = "lambda.amazonaws.com"
                resource = resource_arn("AWS::IAM::Role", props["Role"]["Fn::GetAtt"][0], resources, stack)
            if action == "iam:AttachRolePolicy":
                for arn in props.get("ManagedPolicyArns", []):
                    calls.append((action, resource, {"iam:PolicyARN": arn}))
                continue
            if kind == "AWS::Lambda::EventSourceMapping":
                context["lambda:FunctionArn"] = resource_arn("AWS::Lambda::Function", props["FunctionName"]["Ref"],
                                                             resources, stack)
            if "*" in action:  # a wildcard of reads: one action it stands for
                action = action.replace("*", "Lifecycle", 1).replace("*", "")
            calls.append((action, resource, context))
    return calls


def test_every_call_for_every_resource_of_the_template_is_allowed_on_the_names_cloudformation_gives_them(
        policy: Policy) -> None:
    resources = processed_template(load_template(), stack_name=STACK, region=REGION, account=ACCOUNT)["Resources"]
    denied = [(lid, action, resource) for lid, r in resources.items()
              for action, resource, context in calls_for(r["Type"], lid, resources)
              if not allowed(policy, action, resource, **context)]
    assert [] == denied
    assert {r["Type"] for r in resources.values()} <= set(RESOURCE_TYPES)


def test_the_deploys_own_calls_on_the_stack_and_the_artifacts_bucket_are_allowed(policy: Policy) -> None:
    calls = [(a, STACK_ARN) for a in STACK_ACTIONS]
    transform = f"arn:aws:cloudformation:{REGION}:aws:transform/Serverless-2016-10-31"
    calls += [("cloudformation:CreateChangeSet", transform)]
    calls += [(a, f"arn:aws:s3:::{BUCKET}") for a in ARTIFACTS_BUCKET_ACTIONS]
    calls += [(a, f"arn:aws:s3:::{BUCKET}/{key}") for a in ARTIFACTS_OBJECT_ACTIONS
              for key in (f"functions/{'ab' * 32}.zip", f"templates/{'cd' * 32}.json")]
    assert [] == [(action, resource) for action, resource in calls if not allowed(policy, action, resource)]


def test_calls_outside_the_stack_are_denied(policy: Policy) -> None:
    resources = processed_template(load_template(), stack_name="other", region=REGION, account=ACCOUNT)["Resources"]
    other_stack = [(action, resource) for lid, r in resources.items()
                   for action, resource, context in calls_for(r["Type"], lid, resources, stack="other")
                   if resource != "*" and "apigateway" not in resource and "event-source-mapping" not in resource
                   and f"{BUCKET}/" not in resource and allowed(policy, action, resource, **context)]
    assert [] == other_stack
    role = f"arn:aws:iam::{ACCOUNT}:role/{generated('ApiFunctionRole')}"
    function = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{generated('ApiFunction')}"
    outside = {
        "another stack's change set": ("cloudformation:ExecuteChangeSet",
                                       f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/other/1", {}),
        "deleting another stack": ("cloudformation:DeleteStack", f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/x/1",
                                   {}),
        "a user": ("iam:CreateUser", f"arn:aws:iam::{ACCOUNT}:user/mallory", {}),
        "a role of another stack": ("iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/other-ApiFunctionRole-1", {}),
        "the stack's role to EC2": ("iam:PassRole", role, {"iam:PassedToService": "ec2.amazonaws.com"}),
        "an administrator policy on the stack's role": (
            "iam:AttachRolePolicy", role, {"iam:PolicyARN": "arn:aws:iam::aws:policy/AdministratorAccess"}),
        "a mapping onto another function": (
            "lambda:CreateEventSourceMapping", "*",
            {"lambda:FunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:other-ApiFunction-1"}),
        "reading a snapshot (bucket-level reads only)": (
            "s3:GetObject", f"arn:aws:s3:::{generated('SnapshotBucket').lower()}/snapshots/x", {}),
        "uploading elsewhere": ("s3:PutObject", "arn:aws:s3:::someone-elses-bucket/functions/x.zip", {}),
        "the stack's function invoked": ("lambda:InvokeFunction", function, {}),
        "another region": ("dynamodb:DeleteTable",
                           f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{generated('EntriesTable')}", {}),
    }
    assert [] == [what for what, (action, resource, context) in outside.items()
                  if allowed(policy, action, resource, **context)]


def _registry_permissions() -> dict[str, dict[str, set[str]]]:
    """Each resource type's handler permissions (create, read, update, delete, list) from the CloudFormation
    registry schemas cfn-lint bundles (the same schemas `cfn-lint` checks template.yaml with)."""
    schemas = package_data.files("cfnlint") / "data" / "schemas"
    index: dict[str, str] = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    found: dict[str, dict[str, set[str]]] = {}
    for kind in RESOURCE_TYPES:
        schema = json.loads((schemas / "resources" / f"{index[kind]}.json").read_text())
        found[kind] = {h: set(spec.get("permissions", [])) for h, spec in schema.get("handlers", {}).items()}
    return found


#: Each type's service prefix: its read and delete handlers' actions of that service must all be granted.
SERVICE = {"AWS::DynamoDB::Table": "dynamodb", "AWS::SQS::Queue": "sqs", "AWS::S3::Bucket": "s3",
           "AWS::S3::BucketPolicy": "s3", "AWS::Logs::LogGroup": "logs", "AWS::IAM::Role": "iam",
           "AWS::Lambda::Function": "lambda", "AWS::Lambda::Permission": "lambda",
           "AWS::Lambda::EventSourceMapping": "lambda", "AWS::Events::Rule": "events",
           "AWS::ApiGatewayV2::Api": "apigateway", "AWS::ApiGatewayV2::Stage": "apigateway",
           "AWS::CloudWatch::Alarm": "cloudwatch", "AWS::CloudWatch::Dashboard": "cloudwatch"}


def test_the_table_names_only_actions_cloudformations_handlers_call_and_every_read_and_delete_action() -> None:
    registry = _registry_permissions()
    invented, missed = [], []
    for kind, grants in RESOURCE_TYPES.items():
        handlers = registry[kind]
        called = set().union(*handlers.values())
        granted = [a for g in grants for a in g.actions]
        invented += [(kind, a) for g in grants if not g.beyond_registry for a in g.actions
                     if not any(action_pattern(a).fullmatch(c) for c in called)]
        needed = {a for h in ("read", "delete") for a in handlers.get(h, set())
                  if a.split(":")[0] == SERVICE[kind]}
        missed += [(kind, a) for a in sorted(needed) if not any(action_pattern(g).fullmatch(a) for g in granted)]
    assert ([], []) == (invented, missed)


def test_the_policy_fits_a_managed_policy_for_the_longest_safe_stack_name_and_region() -> None:
    """IAM counts a managed policy's characters without whitespace, at most 6,144 (IAM User Guide,
    reference_iam-quotas)."""
    made = deployer_policy(load_template(), stack_name="s" * SAFE_STACK_NAME_LENGTH, region="ap-southeast-2",
                           account=ACCOUNT, artifacts_bucket=bucket_name(ACCOUNT, "ap-southeast-2"))
    assert len(json.dumps(made, separators=(",", ":"))) <= 6144


@pytest.mark.parametrize("name", ["*", "seglog/*", "1stack", "a" * 129])
def test_a_name_that_is_no_stack_name_is_refused_before_it_can_widen_an_arn(name: str) -> None:
    with pytest.raises(DeployError, match="not a CloudFormation stack name"):
        deployer_policy(load_template(), stack_name=name, region=REGION, account=ACCOUNT, artifacts_bucket=BUCKET)
