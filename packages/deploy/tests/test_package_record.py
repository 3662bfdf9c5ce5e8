"""The deployed template's CodeUri, the stack record and the environment it exports, the build a deploy accepts
(no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_aws.resources import ENV as RESOURCE_ENV
from seglog_awsmodel.template import load_template
from seglog_deploy.artifacts import S3Location, bucket_name
from seglog_deploy.deploy import artifacts_of
from seglog_deploy.errors import DeployError, StackNotFoundError, TargetError
from seglog_deploy.manifest import Manifest
from seglog_deploy.package import INLINE_TEMPLATE_LIMIT, package_template, template_json
from seglog_deploy.record import OUTPUT_FIELDS, StackRecord
from seglog_deploy.target import Target

OUTPUTS = {"SegmentsTableName": "s-Seg", "EntriesTableName": "s-Ent", "PendingSnapshotsTableName": "s-Pen",
           "SnapshotBucketName": "s-bucket", "SnapshotQueueUrl": "https://sqs/q", "SnapshotDeadLetterQueueUrl":
           "https://sqs/dlq", "EntriesStreamArn": "arn:stream", "ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com"}


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


def test_every_resource_variable_of_the_code_has_a_stack_output() -> None:
    assert set(RESOURCE_ENV) == set(OUTPUT_FIELDS.values())
    template_outputs = set(load_template(None).body["Outputs"])
    assert set(OUTPUT_FIELDS) <= template_outputs


def test_the_record_exports_the_variables_the_cli_and_the_client_read(tmp_path: Path) -> None:
    record = StackRecord(stack_name="s", stack_id="arn:stack/s", region="eu-west-1", outputs=OUTPUTS)
    record.save(tmp_path)
    loaded = StackRecord.load("s", tmp_path)
    env = loaded.env()
    assert OUTPUTS["ApiUrl"] == env["SEGLOG_API_URL"]
    assert "s-Ent" == env["SEGLOG_ENTRIES_TABLE"] and "https://sqs/dlq" == env["SEGLOG_DLQ_URL"]
    assert ("eu-west-1", "eu-west-1") == (env["AWS_REGION"], env["AWS_DEFAULT_REGION"])
    assert "AWS_ENDPOINT_URL" not in env
    lines = loaded.shell_lines()
    # On AWS every endpoint variable a local `seglog env` may have exported is unset, first.
    assert lines[0].startswith("unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB")
    assert "export SEGLOG_SEGMENTS_TABLE=s-Seg" in lines
    StackRecord.forget("s", tmp_path)
    with pytest.raises(StackNotFoundError):
        StackRecord.load("s", tmp_path)


def test_a_stack_without_seglogs_outputs_is_refused_with_the_names_it_lacks() -> None:
    record = StackRecord(stack_name="other", stack_id="x", region="eu-west-1", outputs={"ApiUrl": "https://x"})
    with pytest.raises(DeployError, match="no output SegmentsTableName, EntriesTableName"):
        record.env()


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
