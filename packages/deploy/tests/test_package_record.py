"""The deployed template's CodeUri, the stack record and the environment it exports, the build a deploy accepts
(no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_awsmodel.template import load_template
from seglog_deploy.artifacts import S3Location, bucket_name
from seglog_deploy.deploy import artifacts_of
from seglog_deploy.errors import DeployError, TargetError
from seglog_deploy.manifest import Manifest
from seglog_deploy.package import INLINE_TEMPLATE_LIMIT, package_template, template_json
from seglog_deploy.record import StackRecord
from seglog_deploy.target import Target


def test_every_function_runs_its_own_artifact_version_and_the_local_folder_is_gone() -> None:
    body = load_template(None).body
    code = {lid: S3Location(bucket="b", key=f"functions/{lid}.zip", version=f"v-{lid}")
            for lid, r in body["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    packaged = package_template(body, code)
    for lid in code:
        assert {"Bucket": "b", "Key": f"functions/{lid}.zip", "Version": f"v-{lid}"} == \
            packaged["Resources"][lid]["Properties"]["CodeUri"]
    assert "CodeUri" not in packaged["Globals"]["Function"]
    assert "services/src" == body["Globals"]["Function"]["CodeUri"]  # the template itself is left as it was
    assert len(template_json(packaged).encode()) < INLINE_TEMPLATE_LIMIT  # today's template goes inline


def test_a_function_without_an_artifact_is_refused() -> None:
    body = load_template(None).body
    with pytest.raises(DeployError, match="no built artifact for ApiFunction"):
        package_template(body, {"StreamRouterFunction": S3Location(bucket="b", key="k")})


def test_the_record_of_any_template_exports_the_sdk_and_api_variables_only(tmp_path: Path) -> None:
    """The record knows outputs by name, not any application's resources (seglog's: seglog_plugin.resources)."""
    record = StackRecord(stack_name="other", stack_id="x", region="eu-west-1", outputs={"ApiUrl": "https://x",
                         "OrdersTable": "other-Orders"}, endpoint_url="http://127.0.0.1:4566")
    assert {"SEGLOG_API_URL": "https://x", "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"} == record.env()
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:4566" in record.shell_lines()


def test_a_twin_built_for_another_architecture_is_not_deployed() -> None:
    twin = Manifest(template="template.yaml", arch="x86_64", artifacts={}, functions={})
    with pytest.raises(DeployError, match="--arch x86_64"):
        artifacts_of(twin)


def test_no_region_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with pytest.raises(TargetError, match="--region"):
        Target.resolve(env={})


def test_the_artifacts_bucket_name_is_a_valid_s3_name_per_account_and_region() -> None:
    name = bucket_name("123456789012", "ap-southeast-2")
    assert "seglog-artifacts-123456789012-ap-southeast-2" == name
    assert len(bucket_name("123456789012", "x" * 60)) == 63


def test_a_deploy_to_aws_ignores_the_local_stacks_service_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """After `eval "$(seglog env)"` for the local stack, AWS_ENDPOINT_URL_S3 points at LocalStack: a deploy to AWS
    must not upload its artifacts there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:4566")
    aws = Target.resolve(region="eu-west-1", env={})
    assert "https://s3.eu-west-1.amazonaws.com" == aws.client("s3").meta.endpoint_url
    local = Target.resolve(region="eu-west-1", endpoint_url="http://127.0.0.1:4566", env={})
    assert "http://127.0.0.1:4566" == local.client("s3").meta.endpoint_url
