"""ARNs as AWS forms them from a resource's name (AWS General Reference, reference-arns, and each service's "Resource
types" in the Service Authorization Reference). Written out here, apart from seglog_deploy.deployer_policy, so a
test of that policy's patterns does not check them against themselves."""

from __future__ import annotations

from typing import Final

ARN_FORMATS: Final = {
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{region}:{account}:table/{name}",
    "AWS::SQS::Queue": "arn:aws:sqs:{region}:{account}:{name}",
    "AWS::S3::Bucket": "arn:aws:s3:::{name}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{region}:{account}:log-group:{name}",
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{name}",
    "AWS::Lambda::Function": "arn:aws:lambda:{region}:{account}:function:{name}",
    "AWS::Lambda::EventSourceMapping": "arn:aws:lambda:{region}:{account}:event-source-mapping:{name}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{name}",
    "AWS::CloudWatch::Alarm": "arn:aws:cloudwatch:{region}:{account}:alarm:{name}",
    "AWS::CloudWatch::Dashboard": "arn:aws:cloudwatch::{account}:dashboard/{name}",
    "AWS::ApiGatewayV2::Api": "arn:aws:apigateway:{region}::/apis/{name}",
}


def arn_of(kind: str, name: str, *, region: str, account: str) -> str:
    """The ARN of the resource of type ``kind`` named ``name`` (a queue by its name, not its URL)."""
    return ARN_FORMATS[kind].format(region=region, account=account, name=name)
