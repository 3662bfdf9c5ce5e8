"""`seglog up` provisions any template, not only seglog's (issue 36, point 1): what it declares is made under the
template's own explicit names, a parameter without a Default must be given, and a resource type the local stack
cannot provide is named in one error before anything is made."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.errors import ParameterValueError
from seglog_awsmodel.template import TemplateError, load_template
from seglog_plugin.resources import resources_of, seglog_resources
from seglog_stack import local
from seglog_stack.clients import local_client
from seglog_stack.errors import StackError
from seglog_stack.provision import Provisioner, parameter_values, resource_name

ORDERS = """\
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
  QueueSuffix:
    Type: String
    Default: work
Resources:
  OrdersTable:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: orders-{run}
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{{AttributeName: id, AttributeType: S}}]
      KeySchema: [{{AttributeName: id, KeyType: HASH}}]
      StreamSpecification: {{StreamViewType: NEW_IMAGE}}
  WorkQueue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: work-{run}
  Uploads:
    Type: AWS::S3::Bucket
  Weather:
    Type: AWS::Serverless::SimpleTable
    Properties:
      PrimaryKey: {{Name: city, Type: String}}
  Logs:
    Type: AWS::Logs::LogGroup
"""


def template(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(text)
    return path


def offline(path: Path, **parameters: Any) -> Provisioner:
    """A provisioner with no clients: whatever it refuses, it refuses before any call."""
    return Provisioner(load_template(path), stack="app", dynamodb=None, s3=None, sqs=None, parameters=parameters)


def test_resources_the_local_stack_cannot_provide_are_all_named_before_anything_is_made(tmp_path: Path) -> None:
    path = template(tmp_path, ORDERS.format(run="x") + """\
  Machine:
    Type: AWS::StepFunctions::StateMachine
  ApplicationResourceGroup:
    Type: AWS::ResourceGroups::Group
    Properties: {Name: app-group}
  ApplicationInsightsMonitoring:
    Type: AWS::ApplicationInsights::Application
    Properties: {ResourceGroupName: !Ref ApplicationResourceGroup, AutoConfigurationEnabled: true}
  Rule:
    Type: AWS::Events::Rule
    Properties: {EventPattern: {source: [app]}}
""")
    with pytest.raises(TemplateError) as refused:
        offline(path, Stage="dev").provision()
    message = str(refused.value)
    assert "Machine (AWS::StepFunctions::StateMachine), Rule (AWS::Events::Rule)" in message
    assert "Application" not in message  # sam init's monitoring pair only watches: nothing to make locally
    assert "seglog deploy" in message


def test_a_parameter_without_a_default_must_be_given(tmp_path: Path) -> None:
    path = template(tmp_path, ORDERS.format(run="x"))
    with pytest.raises(ParameterValueError) as refused:
        offline(path).provision()
    assert ["Stage"] == [v.parameter for v in refused.value.violations]
    assert "--parameter Stage=VALUE" in str(refused.value)
    assert [] == offline(path, Stage="dev").missing  # given: accepted


def test_an_explicit_name_is_the_resources_name_when_literal_or_named_after_the_stack(tmp_path: Path) -> None:
    resources = load_template(template(tmp_path, ORDERS.format(run="x"))).resources
    assert ("orders-x", "work-x", "app-uploads") == tuple(
        resource_name(resources, "app", logical) for logical in ("OrdersTable", "WorkQueue", "Uploads"))
    resources["OrdersTable"]["Properties"]["TableName"] = {"Fn::Sub": "${AWS::StackName}-orders-${AWS::AccountId}"}
    assert "app-orders-000000000000" == resource_name(resources, "app", "OrdersTable")
    # A parameter's value may name it too (aws-samples' lambda-s3-async-lambda: BucketName: !Ref PayloadBucketName).
    resources["OrdersTable"]["Properties"]["TableName"] = {"Fn::Sub": "${Stage}-orders"}
    assert "dev-orders" == resource_name(resources, "app", "OrdersTable", {"Stage": "dev"})
    resources["Uploads"].setdefault("Properties", {})["BucketName"] = {"Ref": "Stage"}
    assert "dev" == resource_name(resources, "app", "Uploads", parameter_values({"Stage": None}, {"Stage": "dev"}))
    with pytest.raises(TemplateError, match=r"a !Ref of a parameter with a value, or a !Sub naming only parameters, "
                                            r".*\(the resource is then named 'app-OrdersTable'\)"):
        resource_name(resources, "app", "OrdersTable")  # Stage has no value


@pytest.mark.stack
def test_an_ordinary_template_is_provisioned_under_its_own_names(deployment: local.LocalDeployment,
                                                                 tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    path = template(tmp_path, ORDERS.format(run=run))
    stack = f"app{run}"
    made = local.provision(dict(deployment.endpoints), profile=deployment.profile, region=deployment.region,
                           template=path, stack_name=stack, parameters={"Stage": "dev"})
    try:
        ddb = local_client("dynamodb", endpoint_url=made.endpoints["dynamodb"], region=made.region)
        sqs = local_client("sqs", endpoint_url=made.endpoints["sqs"], region=made.region)
        table = ddb.describe_table(TableName=f"orders-{run}")["Table"]
        assert {"OrdersTable", "WorkQueue", "Uploads", "Weather"} == set(made.names)
        # SAM's SimpleTable, as its transform makes it (aws-samples' apigw-lambda-dynamodb declares one).
        assert [{"AttributeName": "city", "KeyType": "HASH"}] == ddb.describe_table(
            TableName=f"{stack}-Weather")["Table"]["KeySchema"]
        assert (f"orders-{run}", sqs.get_queue_url(QueueName=f"work-{run}")["QueueUrl"], f"{stack}-uploads") == (
            made.names["OrdersTable"], made.names["WorkQueue"], made.names["Uploads"])
        assert (table["TableArn"], table["LatestStreamArn"]) == (made.attributes["OrdersTable.Arn"],
                                                                 made.attributes["OrdersTable.StreamArn"])
        assert seglog_resources(made) is None
        with pytest.raises(StackError, match="not seglog's"):
            resources_of(made)
        assert made == local.LocalDeployment.from_dict(made.to_dict())
    finally:
        local.deprovision(dict(deployment.endpoints), region=deployment.region, stack_name=stack, template=path)
    assert f"orders-{run}" not in ddb.list_tables()["TableNames"]
