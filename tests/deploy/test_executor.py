"""Our LocalStack Lambda runtime executor (seglog_stack/localstack-plugin) beyond creating functions: an invocation
runs the handler from the unpacked code in a host Python with only the standard library and the code on its path,
answers what it returns, and answers an import failure or an exception the way Lambda's Python runtime does
(AWS Lambda Developer Guide, "Lambda function errors in Python")."""

from __future__ import annotations

import json
import textwrap
import uuid
from typing import Any

import pytest

from seglog_deploy.changeset import ChangeSetDeployer
from seglog_deploy.target import Target

pytestmark = [pytest.mark.stack, pytest.mark.deploy]

CODE = textwrap.dedent("""
    import os

    def handler(event, context):
        if event.get("fail"):
            raise ValueError("asked to fail")
        return {"echo": event, "function": os.environ["AWS_LAMBDA_FUNCTION_NAME"], "mine": os.environ["MINE"],
                "request": context.aws_request_id}
""")


#: A module whose import fails as a function's does when its artifact lacks a dependency.
MISSING_DEPENDENCY = "import no_such_dependency\n\ndef handler(event, context):\n    return {}\n"


def function(handler: str, code: str = CODE) -> dict[str, Any]:
    return {"Type": "AWS::Lambda::Function", "Properties": {
        "Runtime": "python3.13", "Handler": handler, "Role": "arn:aws:iam::000000000000:role/any",
        "Code": {"ZipFile": code}, "Environment": {"Variables": {"MINE": "value"}}, "Timeout": 10}}


def invoke(target: Target, name: str, event: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    answer = target.client("lambda").invoke(FunctionName=name, Payload=json.dumps(event).encode())
    return answer.get("FunctionError"), json.loads(answer["Payload"].read())


def test_functions_are_invoked_as_host_processes_with_their_environment_and_lambdas_errors(
    deploy_target: Target,
) -> None:
    stack = f"ex-{uuid.uuid4().hex[:8]}"
    deployer = ChangeSetDeployer(deploy_target)
    body = {"Resources": {"Echo": function("index.handler"), "NoFunction": function("index.absent"),
                          "NoDependency": function("index.handler", MISSING_DEPENDENCY)}}
    deployer.deploy(stack, template={"TemplateBody": json.dumps(body)}, declared={}, parameters={})
    try:
        physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in deploy_target.client(
            "cloudformation").describe_stack_resources(StackName=stack)["StackResources"]}
        error, answer = invoke(deploy_target, physical["Echo"], {"n": 1})
        assert None is error
        assert {"n": 1} == answer["echo"]
        assert (physical["Echo"], "value") == (answer["function"], answer["mine"])
        assert answer["request"]
        error, answer = invoke(deploy_target, physical["Echo"], {"fail": True})
        assert ("Unhandled", "ValueError", "asked to fail") == (error, answer["errorType"], answer["errorMessage"])
        error, answer = invoke(deploy_target, physical["NoDependency"], {})
        assert ("Unhandled", "Runtime.ImportModuleError") == (error, answer.get("errorType")), answer
        assert "Unable to import module 'index': No module named 'no_such_dependency'" == answer["errorMessage"]
        error, answer = invoke(deploy_target, physical["NoFunction"], {})
        assert ("Unhandled", "Runtime.HandlerNotFound") == (error, answer.get("errorType")), answer
    finally:
        deployer.delete(stack)
