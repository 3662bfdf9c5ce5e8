"""seglog's resources read out of a deployed stack's record (seglog_plugin.resources)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_aws.resources import ENV as RESOURCE_ENV
from seglog_awsmodel.template import load_template
from seglog_deploy.errors import DeployError, StackNotFoundError
from seglog_deploy.record import StackRecord
from seglog_plugin.resources import OUTPUT_FIELDS, record_env

OUTPUTS = {"SegmentsTableName": "s-Seg", "EntriesTableName": "s-Ent", "PendingSnapshotsTableName": "s-Pen",
           "SnapshotBucketName": "s-bucket", "SnapshotQueueUrl": "https://sqs/q", "SnapshotDeadLetterQueueUrl":
           "https://sqs/dlq", "EntriesStreamArn": "arn:stream", "ApiUrl": "https://abc.execute-api.eu-west-1.amazonaws.com"}


def test_every_resource_variable_of_the_code_has_a_stack_output() -> None:
    assert set(RESOURCE_ENV) == set(OUTPUT_FIELDS.values())
    template_outputs = set(load_template(None).body["Outputs"])
    assert set(OUTPUT_FIELDS) <= template_outputs


def test_the_record_exports_the_variables_the_cli_and_the_client_read(tmp_path: Path) -> None:
    record = StackRecord(stack_name="s", stack_id="arn:stack/s", region="eu-west-1", outputs=OUTPUTS)
    record.save(tmp_path)
    loaded = StackRecord.load("s", tmp_path)
    env = record_env(loaded)
    assert OUTPUTS["ApiUrl"] == env["SEGLOG_API_URL"]
    assert "s-Ent" == env["SEGLOG_ENTRIES_TABLE"] and "https://sqs/dlq" == env["SEGLOG_DLQ_URL"]
    assert ("eu-west-1", "eu-west-1") == (env["AWS_REGION"], env["AWS_DEFAULT_REGION"])
    assert "AWS_ENDPOINT_URL" not in env
    lines = loaded.shell_lines(env)
    # On AWS every endpoint variable a local `seglog env` may have exported is unset, first.
    assert lines[0].startswith("unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB")
    assert "export SEGLOG_SEGMENTS_TABLE=s-Seg" in lines
    StackRecord.forget("s", tmp_path)
    with pytest.raises(StackNotFoundError):
        StackRecord.load("s", tmp_path)


def test_a_stack_without_seglogs_outputs_is_refused_with_the_names_it_lacks() -> None:
    record = StackRecord(stack_name="other", stack_id="x", region="eu-west-1", outputs={"ApiUrl": "https://x"})
    with pytest.raises(DeployError, match="no output SegmentsTableName, EntriesTableName"):
        record_env(record)
