"""LocalResolver: maps the template's resource intrinsics to a local deployment's physical values.

``!Ref Table`` is the table's name, ``!Ref Queue`` the queue's URL, ``!Ref Bucket`` the bucket's name (AWS::*
resource return values, CloudFormation User Guide), ``!Ref Function`` its FunctionName or else its logical id (the
name the emulator runs it under; :mod:`seglog_emulator.iam.intrinsics` resolves it the same way); ``!GetAtt Queue.Arn``,
``!GetAtt Table.StreamArn`` and ``!GetAtt Table.Arn`` are asked of the local services; pseudo parameters get local
values.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from seglog_awsmodel.arns import event_bus_arn, topic_arn
from seglog_awsmodel.template import FUNCTION_TYPES, Template, TemplateError
from seglog_emulator.iam.arns import function_arn
from seglog_emulator.invoker import LOCAL_ACCOUNT_ID
from seglog_stack.provision import function_name, parameter_values, resource_name

_PSEUDO = {"AWS::AccountId": LOCAL_ACCOUNT_ID, "AWS::URLSuffix": "amazonaws.com", "AWS::Partition": "aws",
           "AWS::NoValue": None}


class LocalResolver:
    """Resolves intrinsics of ``template`` for the stack named ``stack`` with boto3 clients of the local stack."""

    def __init__(self, template: Template, *, stack: str, region: str, dynamodb: Any, sqs: Any,
                 parameters: Mapping[str, Any] | None = None) -> None:
        self.template = template
        #: Parameter values (defaults and overrides), which explicit names may name.
        self.parameters = parameter_values(template.parameters, parameters)
        self.stack = stack
        self.region = region
        self.ddb = dynamodb
        self.sqs = sqs

    def __call__(self, value: Any) -> Any:
        (key, arg), = value.items()
        if key == "Ref":
            if arg == "AWS::Region":
                return self.region
            if arg == "AWS::StackName":
                return self.stack
            if arg in _PSEUDO:
                return _PSEUDO[arg]
            type_ = self._type(arg)
            if type_ in FUNCTION_TYPES:  # its FunctionName, else its logical id (as IAM's Ref does)
                return function_name(self.template.resources, self.stack, arg, self.parameters)
            name = resource_name(self.template.resources, self.stack, arg, self.parameters)
            if type_ == "AWS::SNS::Topic":  # a topic's Ref is its ARN
                return topic_arn(self.region, LOCAL_ACCOUNT_ID, name)
            return self._queue_url(name) if type_ == "AWS::SQS::Queue" else name
        if key == "Fn::GetAtt":
            logical, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
            return self._attribute(logical, attribute)
        raise TemplateError(f"the emulator cannot resolve {key} {arg!r}")

    def _type(self, logical: str) -> str:
        resource = self.template.resources.get(logical)
        if resource is None:
            raise TemplateError(f"!Ref {logical}: no such resource or parameter in the template")
        return str(resource["Type"])

    def _attribute(self, logical: str, attribute: str) -> str:
        type_ = self._type(logical)
        name = resource_name(self.template.resources, self.stack, logical, self.parameters)
        if type_ == "AWS::SQS::Queue" and attribute == "Arn":
            return self._queue_arn(name)
        if type_ in ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable") and attribute in ("Arn", "StreamArn"):
            table = self._table(name)
            return str(table["LatestStreamArn"] if attribute == "StreamArn" else table["TableArn"])
        if type_ == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{name}"
        if type_ == "AWS::SNS::Topic" and attribute == "TopicName":
            return name
        if type_ == "AWS::SNS::Topic" and attribute == "TopicArn":
            return topic_arn(self.region, LOCAL_ACCOUNT_ID, name)
        if type_ == "AWS::Events::EventBus" and attribute == "Name":  # its Ref is its name too
            return name
        if type_ == "AWS::Events::EventBus" and attribute == "Arn":
            return event_bus_arn(self.region, LOCAL_ACCOUNT_ID, name)
        if type_ in FUNCTION_TYPES and attribute == "Arn":
            name = function_name(self.template.resources, self.stack, logical, self.parameters)
            return function_arn(self.region, LOCAL_ACCOUNT_ID, name)
        raise TemplateError(f"the emulator cannot resolve !GetAtt {logical}.{attribute}")

    @functools.cache  # noqa: B019 - one resolver per process, a handful of names
    def _queue_url(self, name: str) -> str:
        return str(self.sqs.get_queue_url(QueueName=name)["QueueUrl"])

    @functools.cache  # noqa: B019
    def _queue_arn(self, name: str) -> str:
        attributes = self.sqs.get_queue_attributes(QueueUrl=self._queue_url(name), AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    @functools.cache  # noqa: B019
    def _table(self, name: str) -> dict[str, Any]:
        return dict(self.ddb.describe_table(TableName=name)["Table"])
