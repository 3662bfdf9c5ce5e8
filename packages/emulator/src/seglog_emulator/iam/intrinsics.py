"""Resolving the intrinsic functions of policy documents to the local resources' real names and ARNs.

After the SAM transform a role's policies hold ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::Join`` and
``Fn::Select`` (SAM policy templates expand to ``Fn::Sub`` with variables). Each resolves as CloudFormation
would resolve it (CloudFormation User Guide, intrinsic-function-reference), against the local deployment:

* ``Ref`` of a parameter: its value; of a pseudo parameter: the local region, account 000000000000, ...;
* ARNs are built the way AWS builds them (``arn:aws:dynamodb:REGION:ACCOUNT:table/NAME``,
  ``arn:aws:s3:::BUCKET``, ``arn:aws:sqs:REGION:ACCOUNT:NAME``), from the physical names the local stack uses;
* what needs the live stack (a queue's URL, a table's ``StreamArn``, whose label only DynamoDB knows) goes to
  the ``fallback`` resolver (:class:`seglog_emulator.resolve.LocalResolver` fits).

DynamoDB Local names its region ``ddblocal`` in the ARNs it returns; :func:`local_arn` reads such an ARN as the
deployment's region, on both sides of a comparison, so a policy naming the stream matches the stream's requests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from seglog_awsmodel.arns import event_bus_arn, topic_arn
from seglog_awsmodel.template import FUNCTION_TYPES
from seglog_emulator.errors import IamTemplateError
from seglog_emulator.iam.arns import function_arn, local_arn
from seglog_stack.provision import function_name, parameter_values, resource_name

Fallback = Callable[[Any], Any]

_SUB: Final = re.compile(r"\$\{([^}]*)\}")


class PolicyIntrinsics:
    """Resolves intrinsics of one transformed template for a stack on the local deployment.

    Args:
        resources: the transformed template's Resources (logical id -> {"Type", "Properties"}).
        parameters: parameter values (defaults with overrides applied).
        stack, region, account: the local deployment.
        fallback: resolves ``{"Ref": ...}`` / ``{"Fn::GetAtt": [...]}`` this class does not build itself.
    """

    def __init__(self, resources: Mapping[str, Mapping[str, Any]], parameters: Mapping[str, Any], *, stack: str,
                 region: str, account: str, fallback: Fallback | None = None) -> None:
        self.resources = resources
        self.stack, self.region, self.account = stack, region, account
        self.values: dict[str, Any] = {
            **parameters, "AWS::Region": region, "AWS::AccountId": account, "AWS::StackName": stack,
            "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
        self.fallback = fallback
        #: Parameter values as text, which a resource's explicit name may name (seglog_stack.provision.resource_name).
        self._names = parameter_values(parameters)

    def __call__(self, value: Any) -> Any:
        """``value`` with every intrinsic resolved (strings, lists and objects are walked).

        Raises:
            IamTemplateError: an intrinsic that cannot be resolved locally.
        """
        if isinstance(value, list):
            return [self(item) for item in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                return self.ref(str(arg))
            if key == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
                return self.get_att(str(logical), str(attribute))
            if key == "Fn::Sub":
                return self.sub(arg)
            if key == "Fn::Join":
                delimiter, items = arg
                return str(delimiter).join(str(item) for item in self(items))
            if key == "Fn::Select":
                index, items = arg
                return self(items)[int(self(index))]
            if key.startswith("Fn::") or key == "Condition":
                raise IamTemplateError([f"{key} in a policy is not resolved by the emulator ({value!r})"])
        return {k: self(v) for k, v in value.items()}

    def ref(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        type_ = self._type(name)
        if type_ == "AWS::SNS::Topic":  # a topic's Ref is its ARN (CloudFormation, aws-resource-sns-topic)
            return topic_arn(self.region, self.account, resource_name(self.resources, self.stack, name, self._names))
        if type_ in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::IAM::Role", "AWS::Events::EventBus"):
            return resource_name(self.resources, self.stack, name, self._names)
        if type_ in FUNCTION_TYPES:
            return function_name(self.resources, self.stack, name, self._names)  # its FunctionName, else its logical id
        return self._fall_back({"Ref": name})

    def get_att(self, logical: str, attribute: str) -> Any:
        type_ = self._type(logical)
        name = resource_name(self.resources, self.stack, logical, self._names)
        built = {
            ("AWS::DynamoDB::Table", "Arn"): f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}",
            ("AWS::S3::Bucket", "Arn"): f"arn:aws:s3:::{name}",
            ("AWS::SQS::Queue", "Arn"): f"arn:aws:sqs:{self.region}:{self.account}:{name}",
            ("AWS::SQS::Queue", "QueueName"): name,
            ("AWS::IAM::Role", "Arn"): f"arn:aws:iam::{self.account}:role/{name}",
            ("AWS::Lambda::Function", "Arn"): function_arn(
                self.region, self.account, function_name(self.resources, self.stack, logical, self._names)),
            ("AWS::SNS::Topic", "TopicArn"): topic_arn(self.region, self.account, name),
            ("AWS::SNS::Topic", "TopicName"): name,
            ("AWS::Events::EventBus", "Arn"): event_bus_arn(self.region, self.account, name),
            ("AWS::Events::EventBus", "Name"): name,
        }.get((type_, attribute))
        if built is not None:
            return built
        resolved = self._fall_back({"Fn::GetAtt": [logical, attribute]})
        return local_arn(resolved, self.region) if isinstance(resolved, str) else resolved

    def sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        own = {name: self(v) for name, v in (variables or {}).items()}

        def replace(found: re.Match[str]) -> str:
            name = found.group(1)
            if name.startswith("!"):  # ${!Literal} is the literal ${Literal}
                return "${" + name[1:] + "}"
            if name in own:
                return str(own[name])
            if name in self.values or "." not in name:
                return str(self.ref(name))
            logical, attribute = name.split(".", 1)
            return str(self.get_att(logical, attribute))

        return _SUB.sub(replace, str(text))

    def _type(self, logical: str) -> str:
        resource = self.resources.get(logical)
        if resource is None:
            raise IamTemplateError([f"a policy refers to {logical!r}: no such resource or parameter"])
        return str(resource.get("Type"))

    def _fall_back(self, value: Any) -> Any:
        if self.fallback is None:
            raise IamTemplateError([f"{value!r} in a policy needs the local stack to resolve"])
        return self.fallback(value)
