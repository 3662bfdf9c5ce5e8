"""Create the template's tables, bucket and queues on the local stack, reading them from template.yaml.

No table definition lives in code: each resource's Properties are translated field by field into the
matching API call (CloudFormation and the service APIs share names for almost everything). Idempotent:
what exists already is kept.

Applied locally: keys, billing mode and stream of tables; the bucket's versioning, its lifecycle rules and its
bucket policy (stored; LocalStack's free tier does not enforce bucket policies, nor run lifecycle rules); queue
attributes, SSE-SQS included. Not applied: point-in-time recovery (local data is scratch), the public access
block, and DeletionPolicy/UpdateReplacePolicy (a local stack is deleted whole, see :meth:`Provisioner.delete`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from botocore.exceptions import ClientError

from seglog_awsmodel.arns import topic_arn
from seglog_awsmodel.errors import ParameterValueError
from seglog_awsmodel.parameters import missing_parameters, unknown_parameters
from seglog_awsmodel.template import Template, TemplateError

log = structlog.get_logger("seglog.provision")

#: Resource types created here, on the local stack.
PROVISIONED_TYPES: frozenset[str] = frozenset(
    {"AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable", "AWS::S3::Bucket", "AWS::SQS::Queue",
     "AWS::S3::BucketPolicy", "AWS::SNS::Topic"})
#: Types the emulator reads from the template itself: functions and their events, the HTTP API, alarms, event buses
#: (made when it starts, with the rules of the functions' EventBridgeRule events), and the IAM it enforces (an
#: AWS::Lambda::Function is read, and refused by the emulator as one it does not run).
EMULATED_TYPES: frozenset[str] = frozenset(
    {"AWS::Serverless::Function", "AWS::Lambda::Function", "AWS::Serverless::HttpApi", "AWS::Serverless::Api",
     "AWS::CloudWatch::Alarm", "AWS::Events::EventBus",
     "AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::SQS::QueuePolicy"})
#: Types with nothing to do locally: logs go to the terminal; a dashboard draws CloudWatch's figures; `sam init`'s
#: Application Insights pair (a resource group and its monitoring, added when that option is chosen) only
#: watches; a function's resource policy (AWS::Lambda::Permission) guards callers the emulator does not check.
UNNEEDED_TYPES: frozenset[str] = frozenset({
    "AWS::Logs::LogGroup", "AWS::CloudWatch::Dashboard", "AWS::ResourceGroups::Group",
    "AWS::ApplicationInsights::Application", "AWS::Lambda::Permission"})


def unsupported_resources(resources: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The resources (logical id -> type) the local stack can neither provide nor emulate."""
    known = PROVISIONED_TYPES | EMULATED_TYPES | UNNEEDED_TYPES
    return {logical: str(res.get("Type")) for logical, res in resources.items() if res.get("Type") not in known}


@dataclass(frozen=True, kw_only=True)
class Provisioned:
    """What provisioning made, by logical id: ``names`` (a table's or bucket's name, a queue's URL) and
    ``attributes`` (``"Logical.Arn"``, ``"Logical.StreamArn"``: what ``!GetAtt`` reads)."""

    names: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)


def physical_name(stack: str, logical_id: str, type_: str) -> str:
    """A stable local name for a resource the template does not name, like CloudFormation's
    ``{stack}-{LogicalId}`` (S3: lowercase)."""
    name = f"{stack}-{logical_id}"
    return name.lower() if type_ == "AWS::S3::Bucket" else name


#: The property that names a resource of each type explicitly. "If you specify a name, you cannot perform updates
#: that require replacement"; without one "AWS CloudFormation generates a unique physical ID" (AWS CloudFormation
#: User Guide, aws-properties-name). Handlers often hard-code the name they gave.
#: The account of the local stack (LocalStack's and DynamoDB Local's default).
LOCAL_ACCOUNT = "000000000000"
NAME_PROPERTIES: dict[str, str] = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Serverless::SimpleTable": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::IAM::Role": "RoleName",
    "AWS::Events::EventBus": "Name",
    "AWS::Serverless::Function": "FunctionName",
    "AWS::Lambda::Function": "FunctionName",
}


def parameter_values(defaults: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Each parameter's value: its override, else its Default (``defaults``: :attr:`Template.parameters`); a
    parameter with neither has none."""
    return {name: str(value) for name, value in {**defaults, **(overrides or {})}.items() if value is not None}


def resource_name(resources: Mapping[str, Mapping[str, Any]], stack: str, logical_id: str,
                  parameters: Mapping[str, str] | None = None) -> str:
    """The physical name of ``logical_id`` in a template's ``resources``: its explicit name (``TableName``,
    ``QueueName``, ...) when the template gives one, else :func:`physical_name`. The one rule the provisioner and
    every emulator process name resources by, so what one creates the others find.

    An explicit name may also be ``!Ref`` of a parameter, or ``!Sub`` of a text naming only parameters,
    ``${AWS::StackName}`` and ``${AWS::AccountId}`` (the usual ways to name a bucket after its stack or a value given
    at deploy time without a circular reference: its notification names a function whose policy names the bucket);
    ``parameters`` are the values (:func:`parameter_values`).

    Raises:
        TemplateError: the explicit name is neither a literal string nor such a ``!Sub``.
    """
    resource = resources.get(logical_id) or {}
    type_ = str(resource.get("Type", ""))
    prop = NAME_PROPERTIES.get(type_)
    explicit = (resource.get("Properties") or {}).get(prop) if prop else None
    if explicit is None:
        return physical_name(stack, logical_id, type_)
    if isinstance(explicit, str) and explicit:
        return explicit
    values = {**(parameters or {}), "AWS::StackName": stack, "AWS::AccountId": LOCAL_ACCOUNT}
    ref = explicit.get("Ref") if isinstance(explicit, Mapping) and len(explicit) == 1 else None
    if isinstance(ref, str) and ref in values:
        return values[ref]
    text = explicit.get("Fn::Sub") if isinstance(explicit, Mapping) and len(explicit) == 1 else None
    if isinstance(text, str):
        named = re.sub(r"\$\{([^}!]+)\}", lambda m: values.get(m.group(1), m.group(0)), text)
        if "${" not in named:
            return named
    raise TemplateError(f"{logical_id}: {prop} is {explicit!r}: the local stack takes an explicit name as a literal "
                        "string, a !Ref of a parameter with a value, or a !Sub naming only parameters, "
                        "${AWS::StackName} and ${AWS::AccountId}; write it so, or leave "
                        f"{prop} out (the resource is then named {physical_name(stack, logical_id, type_)!r})")


def function_name(resources: Mapping[str, Mapping[str, Any]], stack: str, logical_id: str,
                  parameters: Mapping[str, str] | None = None) -> str:
    """The name a function runs under locally (:attr:`seglog_awsmodel.config.FunctionSpec.name`): its
    ``FunctionName``, read as :func:`resource_name` reads an explicit name, when the template gives one; else its
    logical id (what ``!Ref`` gives locally, where CloudFormation would generate ``<stack>-<LogicalId>-<suffix>``)."""
    explicit = ((resources.get(logical_id) or {}).get("Properties") or {}).get("FunctionName")
    return logical_id if explicit is None else resource_name(resources, stack, logical_id, parameters)


class Provisioner:
    """Resolves and creates a template's resources with the given boto3 clients."""

    def __init__(self, template: Template, *, stack: str, dynamodb: Any, s3: Any, sqs: Any, sns: Any = None,
                 region: str = "us-east-1", account: str = "000000000000",
                 parameters: dict[str, Any] | None = None) -> None:
        self.template = template
        unknown = unknown_parameters(template.parameters, parameters or {})
        if unknown:
            raise ParameterValueError(unknown)
        #: Declared parameters with no Default and no value: provisioning refuses them (deleting needs none).
        self.missing = missing_parameters(template.parameters, parameters or {})
        self.parameters = {**template.parameters, **(parameters or {})}
        #: Parameter values as text, for explicit names that name a parameter.
        self.values = parameter_values(template.parameters, parameters)
        self.stack = stack
        self.ddb, self.s3, self.sqs, self.sns = dynamodb, s3, sqs, sns
        self.region, self.account = region, account
        self._arns: dict[str, str] = {}
        #: Logical id -> what ``!Ref`` gives of it once created (a queue: its URL, as CloudFormation's Ref).
        self._made: dict[str, str] = {}

    def resolve(self, value: Any) -> Any:
        """Resolve Ref / Fn::GetAtt / Fn::Sub against parameters and the physical names made so far."""
        if isinstance(value, dict) and len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                params = self.parameters
                if arg in params:
                    return params[arg]
                res = self.template.resources.get(arg)
                if res is None:
                    raise TemplateError(f"!Ref {arg}: no such parameter or resource")
                return self._made.get(arg) or resource_name(self.template.resources, self.stack, arg, self.values)
            if key == "Fn::GetAtt":
                logical, attr = arg
                if attr == "Arn" and logical in self._arns:
                    return self._arns[logical]
                raise TemplateError(f"!GetAtt {logical}.{attr} is not known before {logical} is created")
            if key == "Fn::Sub" and isinstance(arg, str):
                for logical, arn in self._arns.items():  # ${Logical.Arn} of what was created so far
                    arg = arg.replace(f"${{{logical}.Arn}}", arn)
                return arg.replace("${AWS::StackName}", self.stack).replace("${AWS::Region}", self.region)
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def provision(self) -> Provisioned:
        """Create every table, bucket and queue of the template (queues without redrive first, bucket policies
        after their buckets).

        Raises:
            ParameterValueError: a parameter without a Default was given no value.
            TemplateError: the template declares resources the local stack cannot provide (all named, before
                anything is created).
        """
        if self.missing:
            raise ParameterValueError(self.missing)
        unsupported = unsupported_resources(self.template.resources)
        if unsupported:
            listed = ", ".join(f"{logical} ({type_})" for logical, type_ in sorted(unsupported.items()))
            raise TemplateError(
                f"{self.template.path}: the local stack cannot provide {listed}. It creates "
                f"{', '.join(sorted(PROVISIONED_TYPES))}, and the emulator runs AWS::Serverless::Function behind "
                "AWS::Serverless::HttpApi and AWS::Serverless::Api, with DynamoDB, SQS, S3, SNS, EventBridgeRule, "
                "Schedule and ScheduleV2 events and lambda.invoke (README: Run your own SAM app): run a template "
                "without them locally, or deploy this one to AWS with `seglog deploy`")
        made = self._made
        creators: dict[str, Callable[[str, str, dict[str, Any]], str]] = {
            "AWS::DynamoDB::Table": self._table, "AWS::Serverless::SimpleTable": self._simple_table,
            "AWS::S3::Bucket": self._bucket, "AWS::SQS::Queue": self._queue,
            "AWS::S3::BucketPolicy": self._bucket_policy, "AWS::SNS::Topic": self._topic,
        }
        ordered = sorted(self.template.resources.items(),
                         key=lambda kv: (kv[1].get("Type") == "AWS::S3::BucketPolicy",
                                         "RedrivePolicy" in kv[1].get("Properties", {})))
        for logical, res in ordered:
            create = creators.get(res.get("Type", ""))
            if create is None:
                continue  # functions and mappings are not provisioned here (the emulator runs them)
            props = self.resolve(res.get("Properties", {}))
            made[logical] = create(logical, resource_name(self.template.resources, self.stack, logical, self.values),
                                   props)
            if res["Type"] == "AWS::S3::Bucket":  # its lowercased name no longer holds the logical id
                self._arns[logical] = f"arn:aws:s3:::{made[logical]}"
            log.info("provisioned", resource=logical, type=res["Type"], name=made[logical])
        return Provisioned(names=dict(made),
                           attributes={key if "." in key else f"{key}.Arn": value for key, value in self._arns.items()})

    def delete(self) -> None:
        """Delete every table, bucket (emptied first) and queue of the template under this stack name, as a
        stack delete would if nothing were Retain: a local stack is scratch, so DeletionPolicy is not honoured.
        What is already gone is skipped."""
        for logical, res in self.template.resources.items():
            type_ = res.get("Type", "")
            name = resource_name(self.template.resources, self.stack, logical, self.values)
            try:
                if type_ in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"):
                    self.ddb.delete_table(TableName=name)
                elif type_ == "AWS::S3::Bucket":
                    self._empty(name)
                    self.s3.delete_bucket(Bucket=name)
                elif type_ == "AWS::SQS::Queue":
                    self.sqs.delete_queue(QueueUrl=self.sqs.get_queue_url(QueueName=name)["QueueUrl"])
                elif type_ == "AWS::SNS::Topic" and self.sns is not None:
                    self.sns.delete_topic(TopicArn=topic_arn(self.region, self.account, name))
                else:
                    continue
            except ClientError as exc:
                log.info("already gone", resource=logical, code=exc.response["Error"]["Code"])
                continue
            log.info("deleted", resource=logical, name=name)

    def _empty(self, bucket: str) -> None:
        """Delete every object version and delete marker: in a versioned bucket a plain delete only adds a marker,
        and "all objects (including all object versions and delete markers) in the bucket must be deleted before
        the bucket itself can be deleted" (Amazon S3 API Reference, DeleteBucket). An unversioned bucket lists its
        objects with version id null."""
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            versions = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                        for v in (*page.get("Versions", []), *page.get("DeleteMarkers", []))]
            if versions:
                self.s3.delete_objects(Bucket=bucket, Delete={"Objects": versions, "Quiet": True})

    # ------------------------------------------------------------------------------------------ creators

    def _table(self, logical: str, name: str, props: dict[str, Any]) -> str:
        params: dict[str, Any] = {
            "TableName": name,
            "KeySchema": props["KeySchema"],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):  # on-demand: no ProvisionedThroughput (CreateTable API Reference)
            params["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        stream = props.get("StreamSpecification")
        if stream:
            params["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
        try:
            self.ddb.create_table(**params)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceInUseException":
                raise
        desc = self._wait_active(name)
        self._arns[logical] = desc["TableArn"]
        if desc.get("LatestStreamArn"):
            self._arns[f"{logical}.StreamArn"] = desc["LatestStreamArn"]
        return name

    def _simple_table(self, logical: str, name: str, props: dict[str, Any]) -> str:
        """SAM's SimpleTable as the transform makes it (sam-resource-simpletable): a table keyed by ``PrimaryKey``
        (default ``id``, a String), on demand unless ``ProvisionedThroughput`` is given (locally on demand too)."""
        key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        kind = {"String": "S", "Number": "N", "Binary": "B"}.get(str(key.get("Type", "String")))
        if not isinstance(key.get("Name"), str) or kind is None:
            raise TemplateError(f"{logical}.PrimaryKey: {key!r}; SAM takes a Name and a Type of String, Number or "
                                "Binary")
        return self._table(logical, name, {
            "KeySchema": [{"AttributeName": key["Name"], "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": key["Name"], "AttributeType": kind}]})

    def _wait_active(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            desc: dict[str, Any] = self.ddb.describe_table(TableName=name)["Table"]
            if desc["TableStatus"] == "ACTIVE":
                return desc
            if time.monotonic() > deadline:
                raise TemplateError(f"table {name} is still {desc['TableStatus']} after {timeout:.0f}s")
            time.sleep(0.2)

    def _bucket(self, logical: str, name: str, props: dict[str, Any]) -> str:
        try:
            self.s3.create_bucket(Bucket=name)
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
        versioning = props.get("VersioningConfiguration")
        if versioning:  # before the lifecycle, whose noncurrent-version rules are about versions
            self.s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": versioning["Status"]})
        rules = props.get("LifecycleConfiguration", {}).get("Rules", [])
        if rules:
            self.s3.put_bucket_lifecycle_configuration(
                Bucket=name, LifecycleConfiguration={"Rules": [_lifecycle_rule(r) for r in rules]})
        return name

    def _bucket_policy(self, logical: str, name: str, props: dict[str, Any]) -> str:
        bucket: str = props["Bucket"]
        self.s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(props["PolicyDocument"]))
        return bucket

    def _topic(self, logical: str, name: str, props: dict[str, Any]) -> str:
        """A topic (its ``Ref`` is its ARN, as CloudFormation's); subscriptions come from the functions' SNS events
        (the emulator makes them) or are refused as a resource type."""
        if self.sns is None:
            raise TemplateError(f"{logical}: an SNS topic needs the stack's SNS endpoint; run `seglog up` again")
        attributes = {key: str(props[key]) for key in ("DisplayName", "FifoTopic") if key in props}
        arn = str(self.sns.create_topic(Name=name, Attributes=attributes)["TopicArn"])
        self._arns[logical] = arn
        return arn

    def _queue(self, logical: str, name: str, props: dict[str, Any]) -> str:
        attributes = {k: _attribute(v) for k, v in props.items() if k in _QUEUE_ATTRIBUTES}
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        try:
            url: str = self.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        except ClientError as exc:
            if "QueueAlreadyExists" not in str(exc.response.get("Error", {}).get("Code", "")):
                raise
            # Same name, other attributes (a changed parameter): update it, as a stack update would.
            url = self.sqs.get_queue_url(QueueName=name)["QueueUrl"]
            self.sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self._arns[logical] = arn
        return url


_QUEUE_ATTRIBUTES = ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds",
                     "MaximumMessageSize", "SqsManagedSseEnabled")


def _attribute(value: Any) -> str:
    """A queue attribute as the SQS API spells it: booleans are "true"/"false" (SetQueueAttributes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: The CloudFormation rule properties _lifecycle_rule translates (AWS CloudFormation Template Reference,
#: aws-properties-s3-bucket-rule); a rule with any other is refused rather than half applied.
_RULE_PROPERTIES = frozenset({"Id", "Status", "Prefix", "TagFilters", "ExpirationInDays", "ExpiredObjectDeleteMarker",
                              "NoncurrentVersionExpiration", "NoncurrentVersionExpirationInDays",
                              "AbortIncompleteMultipartUpload"})


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A CloudFormation lifecycle rule in the S3 API's shape (PutBucketLifecycleConfiguration: the filter in
    ``Filter``, ``ExpiredObjectDeleteMarker`` inside ``Expiration``).

    Raises:
        TemplateError: the rule has a property not translated here.
    """
    unknown = sorted(set(rule) - _RULE_PROPERTIES)
    if unknown:
        raise TemplateError(f"lifecycle rule {rule.get('Id', '?')}: {', '.join(unknown)} not applied by the local "
                            "provisioner: translate it in seglog_stack.provision._lifecycle_rule")
    out: dict[str, Any] = {"ID": rule.get("Id", "rule"), "Status": rule.get("Status", "Enabled")}
    tags, prefix = rule.get("TagFilters", []), rule.get("Prefix")
    if tags and (prefix is not None or len(tags) > 1):
        out["Filter"] = {"And": {**({"Prefix": prefix} if prefix is not None else {}), "Tags": tags}}
    elif tags:
        out["Filter"] = {"Tag": tags[0]}
    else:
        out["Filter"] = {"Prefix": prefix or ""}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "ExpiredObjectDeleteMarker" in rule:  # S3 refuses it beside Days, as CloudFormation does: passed on as is
        out.setdefault("Expiration", {})["ExpiredObjectDeleteMarker"] = bool(rule["ExpiredObjectDeleteMarker"])
    noncurrent = rule.get("NoncurrentVersionExpiration")
    if noncurrent is not None:
        out["NoncurrentVersionExpiration"] = {key: int(value) for key, value in noncurrent.items()}
    elif "NoncurrentVersionExpirationInDays" in rule:
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(rule["NoncurrentVersionExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(days)}
    return out
