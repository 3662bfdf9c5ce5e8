"""What a deployed stack's processed template means in real values: its intrinsic functions resolved against the
stack's physical resources, parameters and pseudo parameters, so a test compares what AWS APIs report with what
the template asked for.

Only what this template uses is supported (Ref, Fn::GetAtt of Arn and StreamArn, Fn::Sub, Fn::If with conditions
of Fn::Not and Fn::Equals, AWS::NoValue); anything else raises,
so a template that grows a new construct makes the deploy test say what to add here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: How each resource type's Arn is formed from its physical id (IAM User Guide, "IAM identifiers"; the
#: services' "Resource types defined by ..." pages in the Service Authorization Reference).
ARN_FORMATS = {
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{region}:{account}:table/{id}",
    "AWS::S3::Bucket": "arn:aws:s3:::{id}",
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{id}",
    "AWS::Lambda::Function": "arn:aws:lambda:{region}:{account}:function:{id}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{id}",
    "AWS::CloudWatch::Alarm": "arn:aws:cloudwatch:{region}:{account}:alarm:{id}",
}

#: What ``Ref: AWS::NoValue`` resolves to: the property that holds it is dropped.
NO_VALUE: Any = object()


@dataclass
class Resolver:
    """Resolves a processed template's values for one deployed stack."""

    template: dict[str, Any]
    physical: dict[str, str]
    parameters: dict[str, str]
    region: str
    account: str
    stack_name: str
    stream_arns: dict[str, str]

    def type_of(self, logical_id: str) -> str:
        return str(self.template["Resources"][logical_id]["Type"])

    def condition(self, value: Any) -> bool:
        """A condition's truth (CloudFormation User Guide, intrinsic-function-reference-conditions)."""
        if set(value) == {"Fn::Not"}:
            return not self.condition(value["Fn::Not"][0])
        if set(value) == {"Fn::Equals"}:
            left, right = (str(self.resolve(v)) for v in value["Fn::Equals"])
            return left == right
        if set(value) == {"Condition"}:
            return self.condition(self.template["Conditions"][value["Condition"]])
        raise NotImplementedError(f"condition {value}: add it to tests/deploy/resolve.py")

    def ref(self, name: str) -> str:
        pseudo = {"AWS::Region": self.region, "AWS::AccountId": self.account, "AWS::Partition": "aws",
                  "AWS::StackName": self.stack_name, "AWS::URLSuffix": "amazonaws.com"}
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        return self.physical[name]

    def get_att(self, logical_id: str, attribute: str) -> str:
        kind, physical = self.type_of(logical_id), self.physical[logical_id]
        if attribute == "StreamArn":
            return self.stream_arns[logical_id]
        if attribute == "Arn" and kind == "AWS::SQS::Queue":  # the physical id of a queue is its URL
            return f"arn:aws:sqs:{self.region}:{self.account}:{physical.rsplit('/', 1)[1]}"
        if attribute == "QueueName" and kind == "AWS::SQS::Queue":
            return physical.rsplit("/", 1)[1]
        if attribute == "Arn" and kind in ARN_FORMATS:
            return ARN_FORMATS[kind].format(region=self.region, account=self.account, id=physical)
        raise NotImplementedError(f"Fn::GetAtt {logical_id}.{attribute} ({kind}): add it to tests/deploy/resolve.py")

    def sub(self, text: str, variables: dict[str, Any] | None = None) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if variables and name in variables:
                return str(self.resolve(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by what it means in this deployment."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"}:
            return NO_VALUE if value["Ref"] == "AWS::NoValue" else self.ref(value["Ref"])
        if set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
            return self.get_att(logical_id, attribute)
        if set(value) == {"Fn::Sub"}:
            body = value["Fn::Sub"]
            return self.sub(body) if isinstance(body, str) else self.sub(body[0], body[1])
        if set(value) == {"Fn::If"}:
            name, yes, no = value["Fn::If"]
            return self.resolve(yes if self.condition(self.template["Conditions"][name]) else no)
        unknown = [k for k in value if k.startswith("Fn::")]
        if unknown:
            raise NotImplementedError(f"{unknown[0]}: add it to tests/deploy/resolve.py")
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}  # AWS::NoValue removes the property
