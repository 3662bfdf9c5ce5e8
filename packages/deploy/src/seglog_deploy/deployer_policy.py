"""The IAM policy that lets a person or a CI role run ``seglog deploy`` of one template to one stack, and no more.

seglog passes CloudFormation no service role, so CloudFormation creates, updates and deletes every resource with
the deployer's own credentials (AWS CloudFormation User Guide, "CloudFormation service role"). The policy
therefore has four parts:

1. CloudFormation on this stack's ARN only: the change-set calls the deploy makes, the reads that follow the
   stack's progress, and DeleteStack (``--replace-failed-stack``, ``seglog destroy``); and CreateChangeSet on
   the SAM transform, which a template with ``Transform: AWS::Serverless-2016-10-31`` needs (AWS CloudFormation
   User Guide, "Control CloudFormation access with IAM", using-iam-template: "the
   arn:aws:cloudformation:<region>:aws:transform/Serverless-2016-10-31 resource-level permission").
2. The artifacts bucket (:mod:`seglog_deploy.artifacts`): create, harden and read it back, and upload to it;
   CloudFormation reads a large template from it and Lambda reads the code from it, both as the deployer.
3. For each resource type of the processed template (after the SAM transform, which is what CloudFormation
   creates), the actions CloudFormation's resource handler calls to create, read, update and delete it:
   :data:`RESOURCE_TYPES`, one table. Its actions come from the handlers' ``permissions`` in the CloudFormation
   registry's resource schemas (a test checks each against the schemas cfn-lint bundles), limited to the
   features the template uses (no KMS keys, VPCs, replicas or Kinesis destinations). Resources are the names
   CloudFormation generates for a resource without an explicit name, ``<stack>-<LogicalId>-<suffix>`` (S3:
   lower case), so ``<stack>-*`` holds this stack's resources and not those of other stacks, unless another
   stack's name begins with this one's and a hyphen (``seglog-test`` for ``seglog``): give stacks names that are
   not prefixes of each other. A long stack name is cut to fit each service's name limit, which breaks the
   prefix: keep stack names to :data:`SAFE_STACK_NAME_LENGTH` characters. (One pattern per logical id would be
   tighter, and would not fit IAM's 6,144 characters for a managed policy.)
4. Roles: the stack's roles (``<stack>-*``) may be created, changed and passed to Lambda only, and only the AWS
   managed policies the template names may be attached to them. Inline role policies cannot be limited by IAM:
   whoever can deploy can give the stack's functions any permission (review the template as you would code).

API Gateway and the log delivery that the HTTP API's access log needs do not support names of our choosing, so
those statements are per region rather than per stack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from seglog_awsmodel.template import Template
from seglog_deploy.errors import DeployError
from seglog_stack.sam_transform import transform_template

#: Stack names up to this long stay whole in the names CloudFormation generates: function, role and rule names
#: allow 64 characters, of which the suffix takes 13 and this template's longest logical ids 26.
SAFE_STACK_NAME_LENGTH: Final = 20
#: CloudFormation stack names (AWS CloudFormation API Reference, CreateStack, StackName): no wildcard can hide in
#: one, so it can go into an ARN pattern as it is.
STACK_NAME = re.compile(r"[A-Za-z][-A-Za-z0-9]{0,127}")


def check_stack_name(stack_name: str) -> None:
    """Refuse a name CloudFormation would refuse (LocalStack creates half a stack under one: found by
    tests/deploy/test_readme_commands.py with ``s_``).

    Raises:
        DeployError: what the name breaks and what to pass.
    """
    if not STACK_NAME.fullmatch(stack_name):
        raise DeployError(f"{stack_name!r} is not a CloudFormation stack name (a letter, then letters, digits and "
                          "hyphens, at most 128): pass --stack-name with one, such as seglog")

#: The actions of the deploy's own CloudFormation calls, on the stack (seglog_deploy.changeset, leftovers).
STACK_ACTIONS: Final = ("cloudformation:CreateChangeSet", "cloudformation:DescribeChangeSet",
                        "cloudformation:ExecuteChangeSet", "cloudformation:DeleteChangeSet",
                        "cloudformation:DescribeStacks", "cloudformation:DescribeStackEvents",
                        "cloudformation:DescribeStackResources", "cloudformation:GetTemplate",
                        "cloudformation:DeleteStack")
#: The artifacts bucket's own calls (seglog_deploy.artifacts): HeadBucket is s3:ListBucket, which also makes a
#: missing key answer 404 rather than 403 (Amazon S3 API Reference, HeadObject, "Permissions").
ARTIFACTS_BUCKET_ACTIONS: Final = ("s3:CreateBucket", "s3:ListBucket", "s3:GetBucketPublicAccessBlock",
                                   "s3:PutBucketPublicAccessBlock", "s3:GetBucketVersioning",
                                   "s3:PutBucketVersioning", "s3:GetEncryptionConfiguration",
                                   "s3:PutEncryptionConfiguration", "s3:GetBucketPolicy", "s3:PutBucketPolicy")
ARTIFACTS_OBJECT_ACTIONS: Final = ("s3:GetObject", "s3:GetObjectVersion", "s3:PutObject")


@dataclass(frozen=True, kw_only=True)
class Scope:
    """What the ARN patterns are filled with: where the stack goes, and what its template names."""

    partition: str
    region: str
    account: str
    stack: str
    artifacts_bucket: str
    managed_policies: tuple[str, ...] = ()

    def arn(self, pattern: str) -> str:
        """``pattern`` with {p} partition, {r} region, {a} account, {stack}, {stack_lower} (S3 names) and
        {bucket} (the artifacts bucket) filled in."""
        return pattern.format(p=self.partition, r=self.region, a=self.account, stack=self.stack,
                              stack_lower=self.stack.lower(), bucket=self.artifacts_bucket)


@dataclass(frozen=True)
class Grant:
    """Actions on ARN patterns (see :meth:`Scope.arn`), with a condition block when one narrows them.

    ``beyond_registry`` names the documentation that asks for actions the type's registry schema does not list;
    ``when`` leaves the grant out of a policy whose scope has nothing for it.
    """

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition: Callable[[Scope], dict[str, Any]] | None = None
    beyond_registry: str = ""
    when: Callable[[Scope], bool] | None = None

    def statement(self, scope: Scope) -> dict[str, Any]:
        """The grant as one IAM statement (without a Sid: the ~400 characters Sids took are what lets the policy
        fit one managed policy; the actions and ARNs say what each statement is for)."""
        statement: dict[str, Any] = {"Effect": "Allow", "Action": sorted(self.actions),
                                     "Resource": [scope.arn(r) for r in self.resources]}
        if self.condition is not None:
            statement["Condition"] = self.condition(scope)
        return statement


_FUNCTIONS = "arn:{p}:lambda:{r}:{a}:function:{stack}-*"
_ROLES = "arn:{p}:iam::{a}:role/{stack}-*"
_MAPPINGS = "arn:{p}:lambda:{r}:{a}:event-source-mapping:*"
_BUCKETS = "arn:{p}:s3:::{stack_lower}-*"
_LOG_GROUPS = "arn:{p}:logs:{r}:{a}:log-group:{stack}-*"
_CLOUDWATCH = ("arn:{p}:cloudwatch:{r}:{a}:alarm:{stack}-*", "arn:{p}:cloudwatch::{a}:dashboard/{stack}-*")
_APIS = ("arn:{p}:apigateway:{r}::/apis", "arn:{p}:apigateway:{r}::/apis/*", "arn:{p}:apigateway:{r}::/tags/*")
#: Tagging and untagging: ``*TagResource`` matches both (IAM matches actions case-insensitively, IAM User Guide,
#: reference_policies_elements_action), and nothing else of these services.
def _tags(service: str) -> str:
    return f"{service}:*TagResource"


#: What the S3 bucket handler reads (GetBucketCORS, GetLifecycleConfiguration, ... 19 actions): two wildcards say it
#: in a quarter of the characters, and match only bucket-level reads, never an object's data (GetObject).
_S3_BUCKET_READS = ("s3:ListBucket", "s3:GetBucket*", "s3:Get*Configuration", "s3:ListTagsForResource")

#: By resource type: what CloudFormation calls to create, read, update and delete it, on this stack's names.
RESOURCE_TYPES: Final[Mapping[str, tuple[Grant, ...]]] = {
    "AWS::DynamoDB::Table": (Grant((
        "dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:UpdateTable", "dynamodb:DeleteTable",
        "dynamodb:DescribeTimeToLive", "dynamodb:UpdateTimeToLive", "dynamodb:DescribeContinuousBackups",
        "dynamodb:UpdateContinuousBackups", "dynamodb:DescribeContributorInsights",
        "dynamodb:DescribeKinesisStreamingDestination", "dynamodb:GetResourcePolicy", "dynamodb:ListTagsOfResource",
        _tags("dynamodb")), ("arn:{p}:dynamodb:{r}:{a}:table/{stack}-*",)),),
    "AWS::SQS::Queue": (Grant((
        "sqs:CreateQueue", "sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:DeleteQueue",
        "sqs:ListQueueTags", "sqs:*TagQueue"), ("arn:{p}:sqs:{r}:{a}:{stack}-*",)),),
    "AWS::S3::Bucket": (Grant((
        "s3:CreateBucket", "s3:DeleteBucket", "s3:PutBucketPublicAccessBlock", "s3:PutLifecycleConfiguration",
        "s3:DeleteBucketLifecycle", "s3:PutEncryptionConfiguration", "s3:PutBucketVersioning",
        "s3:PutBucketOwnershipControls", "s3:PutBucketTagging", *_S3_BUCKET_READS), (_BUCKETS,)),),
    "AWS::S3::BucketPolicy": (Grant(("s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy"),
                                    (_BUCKETS,)),),
    "AWS::Logs::LogGroup": (
        Grant(("logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
               _tags("logs"), "logs:ListTagsForResource", "logs:GetDataProtectionPolicy",
               "logs:DeleteDataProtectionPolicy", "logs:DescribeIndexPolicies"), (_LOG_GROUPS,)),
        # Listing calls: they name no log group.
        Grant(("logs:DescribeLogGroups", "logs:DescribeResourcePolicies"), ("*",)),
    ),
    "AWS::IAM::Role": (
        Grant(("iam:CreateRole", "iam:GetRole", "iam:DeleteRole", "iam:UpdateRole", "iam:UpdateRoleDescription",
               "iam:UpdateAssumeRolePolicy", "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy",
               "iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:DetachRolePolicy", "iam:*TagRole"),
              (_ROLES,)),
        # Only the managed policies the template names: attaching AdministratorAccess to a role one can pass to a
        # function would hand out more than the template does (iam:PolicyARN, IAM User Guide,
        # reference_policies_iam-condition-keys).
        Grant(("iam:AttachRolePolicy",), (_ROLES,),
              condition=lambda scope: {"ArnEquals": {"iam:PolicyARN": list(scope.managed_policies)}},
              when=lambda scope: bool(scope.managed_policies)),
    ),
    "AWS::Lambda::Function": (
        Grant(("lambda:CreateFunction", "lambda:GetFunction", "lambda:DeleteFunction", "lambda:UpdateFunctionCode",
               "lambda:UpdateFunctionConfiguration", "lambda:PutFunctionConcurrency",
               "lambda:DeleteFunctionConcurrency", _tags("lambda"),
               "lambda:GetFunctionCodeSigningConfig", "lambda:GetFunctionRecursionConfig",
               "lambda:GetRuntimeManagementConfig", "lambda:GetFunctionScalingConfig"), (_FUNCTIONS,)),
        # The stack's roles, to Lambda only (iam:PassedToService, IAM User Guide, id_roles_use_passrole).
        Grant(("iam:PassRole",), (_ROLES,),
              condition=lambda scope: {"StringEquals": {"iam:PassedToService": "lambda.amazonaws.com"}}),
        # Lambda reads the code from the artifacts bucket with the deployer's credentials.
        Grant(("s3:GetObject", "s3:GetObjectVersion"), ("arn:{p}:s3:::{bucket}/*",)),
    ),
    "AWS::Lambda::Permission": (Grant(("lambda:AddPermission", "lambda:RemovePermission", "lambda:GetPolicy"),
                                      (_FUNCTIONS,)),),
    "AWS::Lambda::EventSourceMapping": (
        # Mappings are named by a UUID Lambda draws: what ties one to this stack is its function
        # (lambda:FunctionArn, AWS Lambda Developer Guide, lambda-api-permissions-ref).
        Grant(("lambda:CreateEventSourceMapping", "lambda:UpdateEventSourceMapping",
               "lambda:DeleteEventSourceMapping"), ("*",),
              condition=lambda scope: {"ArnLike": {"lambda:FunctionArn": scope.arn(_FUNCTIONS)}}),
        Grant(("lambda:GetEventSourceMapping", "lambda:ListTags", _tags("lambda")),
              (_MAPPINGS,)),
    ),
    "AWS::Events::Rule": (Grant((
        "events:PutRule", "events:DescribeRule", "events:DeleteRule", "events:PutTargets", "events:RemoveTargets",
        "events:ListTargetsByRule", _tags("events"), "events:ListTagsForResource"),
        ("arn:{p}:events:{r}:{a}:rule/{stack}-*",)),),
    # Alarms are named <stack>-<logical id>-<suffix> by CloudFormation; the dashboard <stack>-operations by the
    # template. A dashboard's ARN has no region (CloudWatch: dashboards are global to the account).
    # One resource list for both, so the two become one statement (the policy's size).
    "AWS::CloudWatch::Alarm": (Grant((
        "cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms", _tags("cloudwatch"),
        "cloudwatch:ListTagsForResource"), _CLOUDWATCH),),
    "AWS::CloudWatch::Dashboard": (Grant((
        "cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards", _tags("cloudwatch"),
        "cloudwatch:ListTagsForResource"), _CLOUDWATCH),),
    "AWS::ApiGatewayV2::Api": (Grant(("apigateway:POST", "apigateway:GET", "apigateway:PUT", "apigateway:PATCH",
                                      "apigateway:DELETE"), _APIS),),
    "AWS::ApiGatewayV2::Stage": (
        Grant(("apigateway:POST", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE", _tags("apigateway")),
              _APIS),
        # An access log on a stage: API Gateway sets up the delivery as the caller (API Gateway Developer Guide,
        # http-api-logging, "Permissions to activate logging"); these actions name no resource.
        Grant(("logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
               "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies",
               "logs:DescribeLogGroups"), ("*",),
              beyond_registry="API Gateway Developer Guide, http-api-logging"),
    ),
}


def deployer_policy(template: Template, *, stack_name: str, region: str, account: str, artifacts_bucket: str,
                    partition: str = "aws") -> dict[str, Any]:
    """The deployer policy document for ``template`` deployed as ``stack_name`` in ``account`` and ``region``.

    Raises:
        DeployError: the stack name is not one CloudFormation accepts, or the template has a resource type
            :data:`RESOURCE_TYPES` has no row for, or names a managed policy by something else than an ARN.
    """
    check_stack_name(stack_name)
    processed = processed_template(template, stack_name=stack_name, region=region, account=account)
    resources: Mapping[str, Any] = processed.get("Resources", {})
    types = sorted({str(r.get("Type", "")) for r in resources.values()})
    unknown = [t for t in types if t not in RESOURCE_TYPES]
    if unknown:
        raise DeployError(f"the deployer policy does not know what CloudFormation needs for {', '.join(unknown)}: "
                          "add a row to RESOURCE_TYPES in seglog_deploy/deployer_policy.py")
    scope = Scope(partition=partition, region=region, account=account, stack=stack_name,
                  artifacts_bucket=artifacts_bucket, managed_policies=managed_policies(resources, partition))
    statements: list[dict[str, Any]] = [
        Grant(STACK_ACTIONS, ("arn:{p}:cloudformation:{r}:{a}:stack/{stack}/*",)).statement(scope)]
    transforms = template.body.get("Transform", [])
    for transform in [transforms] if isinstance(transforms, str) else transforms:
        if isinstance(transform, str) and transform.startswith("AWS::"):
            name = transform.removeprefix("AWS::")
            statements.append(Grant(("cloudformation:CreateChangeSet",),
                                    (f"arn:{{p}}:cloudformation:{{r}}:aws:transform/{name}",))
                              .statement(scope))
    statements.append(Grant(ARTIFACTS_BUCKET_ACTIONS, ("arn:{p}:s3:::{bucket}",)).statement(scope))
    statements.append(Grant(ARTIFACTS_OBJECT_ACTIONS, ("arn:{p}:s3:::{bucket}/*",))
                      .statement(scope))
    for kind in types:
        statements += [grant.statement(scope) for grant in RESOURCE_TYPES[kind]
                       if grant.when is None or grant.when(scope)]
    return {"Version": "2012-10-17", "Statement": _merged(statements)}


def _merged(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Statements on the same resources under the same condition, made one (in the first one's place): the
    document must fit IAM's 6,144 characters for a managed policy (IAM User Guide, reference_iam-quotas)."""
    merged: dict[str, dict[str, Any]] = {}
    for statement in statements:
        key = json.dumps([statement["Resource"], statement.get("Condition")], sort_keys=True)
        if key in merged:
            first = merged[key]
            first["Action"] = sorted({*first["Action"], *statement["Action"]})
        else:
            merged[key] = dict(statement)
    return list(merged.values())


def processed_template(template: Template, *, stack_name: str, region: str, account: str) -> dict[str, Any]:
    """The template as CloudFormation creates it: after the SAM transform when it declares one."""
    if not template.body.get("Transform"):
        return dict(template.body)
    values = {**template.parameters, "AWS::AccountId": account, "AWS::StackName": stack_name,
              "AWS::Region": region, "AWS::Partition": "aws"}
    return transform_template(template, region=region, parameter_values=values)


def managed_policies(resources: Mapping[str, Any], partition: str) -> tuple[str, ...]:
    """The ARNs of the managed policies the template's roles attach.

    Raises:
        DeployError: one is given by an expression other than an ARN (or ``Fn::Sub`` of ``${AWS::Partition}``).
    """
    found: set[str] = set()
    for lid, resource in resources.items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        for value in resource.get("Properties", {}).get("ManagedPolicyArns", []):
            arn = value.get("Fn::Sub") if isinstance(value, Mapping) and len(value) == 1 else value
            if not isinstance(arn, str) or not arn.replace("${AWS::Partition}", partition).startswith("arn:"):
                raise DeployError(f"role {lid} attaches a managed policy given as {value!r}: write its ARN, so the "
                                  "deployer policy can allow attaching exactly that one")
            found.add(arn.replace("${AWS::Partition}", partition))
    return tuple(sorted(found))

