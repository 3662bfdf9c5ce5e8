"""A bare `sam deploy` works (issue 22, point 4: it stopped on a missing --stack-name although the README says
`sam build && sam deploy`): run from the repository root against the local deploy target, SAM CLI takes the stack
name, the capabilities and its managed artifacts bucket from samconfig.toml and creates the change set. Only the
region comes from the environment, as samconfig.toml says; the change set is not executed (LocalStack's deploy
of the stack itself is tests/deploy/test_deploy_localstack.py's)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from seglog_deploy.sam_cli import SamCli
from seglog_deploy.target import Target
from seglog_deploy.toolchain import Toolchain

pytestmark = [pytest.mark.stack, pytest.mark.deploy]

WORKSPACE = Path(__file__).resolve().parents[2]


def test_a_bare_sam_deploy_creates_the_change_set_of_the_stack_samconfig_names(deploy_target: Target) -> None:
    sam = SamCli(Toolchain.find(WORKSPACE, "3.13"))
    env = {"AWS_ENDPOINT_URL": deploy_target.endpoint_url or "", "AWS_REGION": deploy_target.region,
           "AWS_DEFAULT_REGION": deploy_target.region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    cfn = deploy_target.client("cloudformation")
    try:
        output = sam.run(["deploy", "--no-execute-changeset"], cwd=WORKSPACE, env=env, timeout=600)
        assert "Changeset created successfully" in output, output[-3000:]
        (summary,) = cfn.list_change_sets(StackName="seglog")["Summaries"]
        change_set = cfn.describe_change_set(StackName="seglog", ChangeSetName=summary["ChangeSetId"])
        assert "CREATE_COMPLETE" == change_set["Status"], change_set.get("StatusReason")
        assert {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"} == set(change_set["Capabilities"])
        # resolve_s3: the code went to the bucket of SAM CLI's own managed stack, made on first use.
        managed = cfn.describe_stacks(StackName="aws-sam-cli-managed-default")["Stacks"][0]
        assert "CREATE_COMPLETE" == managed["StackStatus"]
        assert "ApiFunction" in {c["ResourceChange"]["LogicalResourceId"] for c in change_set["Changes"]}
    finally:
        with contextlib.suppress(ClientError):
            cfn.delete_stack(StackName="seglog")  # REVIEW_IN_PROGRESS: nothing was created
