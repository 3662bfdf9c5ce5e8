"""template.yaml's production hardening (issue 10, point 8), read from the template and from what AWS's SAM
transform makes of it (seglog_stack.sam_transform, the input of checkov in `./dev lint`).

Pages cited: AWS CloudFormation User Guide (aws-attribute-deletionpolicy, aws-attribute-updatereplacepolicy,
aws-resource-dynamodb-table, aws-resource-sqs-queue), Amazon S3 User Guide (security-best-practices,
aws:SecureTransport), AWS Lambda Developer Guide (configuration-concurrency), API Gateway Developer Guide
(http-api-logging-variables).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.template import Template, TemplateError, load_template
from seglog_stack.sam_transform import PACKAGED_CODE_URI, as_packaged, transform_template

REPO = Path(__file__).resolve().parent.parent
TABLES = ("SegmentsTable", "EntriesTable", "PendingSnapshotsTable")
QUEUES = ("SnapshotQueue", "SnapshotDeadLetterQueue", "StreamFailureQueue")
FUNCTIONS = ("ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction", "RetentionFunction",
             "SnapshotSweepFunction")


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(REPO / "template.yaml")


@pytest.fixture(scope="module")
def transformed(template: Template) -> dict[str, Any]:
    return transform_template(template)


def skips(resource: dict[str, Any]) -> dict[str, str]:
    """A resource's checkov skips: check id -> the reason written with it."""
    entries = ((resource.get("Metadata") or {}).get("checkov") or {}).get("skip") or []
    return {entry.get("id"): entry.get("comment", "") for entry in entries}


def test_tables_and_bucket_outlive_a_stack_delete_and_a_replacing_update(template: Template) -> None:
    """DeletionPolicy Retain keeps the data when the stack is deleted; UpdateReplacePolicy Retain keeps the old
    table or bucket when an update has to replace it (a changed key schema, a new name)."""
    expected = {name: ("Retain", "Retain") for name in (*TABLES, "SnapshotBucket")}
    actual = {name: (res.get("DeletionPolicy"), res.get("UpdateReplacePolicy"))
              for name, res in template.resources.items()
              if res["Type"] in ("AWS::DynamoDB::Table", "AWS::S3::Bucket")}
    assert expected == actual


def test_point_in_time_recovery_covers_the_log_and_leaves_out_the_pending_work(template: Template) -> None:
    """Entries and Segments are the history: restorable to any second of the last 35 days. Pending snapshots are
    derived from the log again after a restore, so that table goes without, and says why where checkov sees it."""
    expected = {"SegmentsTable": True, "EntriesTable": True, "PendingSnapshotsTable": None}
    actual = {name: (template.resources[name]["Properties"].get("PointInTimeRecoverySpecification") or {})
              .get("PointInTimeRecoveryEnabled") for name in TABLES}
    assert expected == actual
    assert "CKV_AWS_28" in skips(template.resources["PendingSnapshotsTable"])


def test_every_queue_is_encrypted_at_rest_with_sqs_managed_keys(template: Template) -> None:
    expected = {name: True for name in QUEUES}
    actual = {name: res["Properties"].get("SqsManagedSseEnabled")
              for name, res in template.resources.items() if res["Type"] == "AWS::SQS::Queue"}
    assert expected == actual


def test_the_bucket_refuses_every_request_not_made_over_tls(template: Template) -> None:
    """One Deny for any principal and any S3 action, on the bucket and on its objects, when aws:SecureTransport is
    false: a Deny wins over every Allow, so no role or owner can use plain HTTP."""
    policies = template.of_type("AWS::S3::BucketPolicy")
    assert ["SnapshotBucketPolicy"] == list(policies)
    props = policies["SnapshotBucketPolicy"]["Properties"]
    assert {"Ref": "SnapshotBucket"} == props["Bucket"]
    expected = [{
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [{"Fn::GetAtt": ["SnapshotBucket", "Arn"]}, {"Fn::Sub": "${SnapshotBucket.Arn}/*"}],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }]
    assert expected == props["PolicyDocument"]["Statement"]


def test_the_stream_router_reserves_concurrency_only_when_asked(template: Template,
                                                                 transformed: dict[str, Any]) -> None:
    """A reservation must leave the account 100 unreserved executions (configuration-concurrency), which an
    account with a limit of 10 cannot: 0, the default, sets no ReservedConcurrentExecutions at all."""
    parameter = template.body["Parameters"]["StreamRouterReservedConcurrency"]
    assert (0, 0) == (parameter["Default"], parameter["MinValue"])
    expected_condition = {"Fn::Not": [{"Fn::Equals": [{"Ref": "StreamRouterReservedConcurrency"}, "0"]}]}
    assert expected_condition == template.body["Conditions"]["ReserveStreamRouterConcurrency"]
    expected = {"Fn::If": ["ReserveStreamRouterConcurrency", {"Ref": "StreamRouterReservedConcurrency"},
                           {"Ref": "AWS::NoValue"}]}
    assert expected == transformed["Resources"]["StreamRouterFunction"]["Properties"]["ReservedConcurrentExecutions"]
    others = {name for name in FUNCTIONS
              if "ReservedConcurrentExecutions" in transformed["Resources"][name]["Properties"]}
    assert {"StreamRouterFunction"} == others


def test_the_http_api_writes_a_json_access_log_line_per_request(template: Template,
                                                                transformed: dict[str, Any]) -> None:
    """The HttpApi resource's AccessLogSettings reach the stage SAM makes for it; the format is one JSON object
    whose values are API Gateway's $context variables (http-api-logging-variables)."""
    stages = {name: res for name, res in transformed["Resources"].items() if res["Type"] == "AWS::ApiGatewayV2::Stage"}
    assert stages, "the transform made no HTTP API stage"
    for stage in stages.values():
        settings = stage["Properties"]["AccessLogSettings"]
        assert {"Fn::GetAtt": ["ApiAccessLogs", "Arn"]} == settings["DestinationArn"]
        fields = json.loads(settings["Format"])
        assert {"requestId", "caller", "route", "status", "error"} <= set(fields)
        assert all(re.fullmatch(r"\$context\.[A-Za-z.]+", value) for value in fields.values()), fields
    assert template.resources["ApiAccessLogs"]["Properties"]["RetentionInDays"] > 0


def test_every_checkov_skip_names_a_check_and_says_why(template: Template) -> None:
    """`./dev lint` fails on any finding not skipped; a skip is a decision, so it must carry its reason."""
    unjustified = {(name, check) for name, res in template.resources.items()
                   for check, reason in skips(res).items()
                   if not re.fullmatch(r"CKV2?_AWS_\d+", str(check)) or len(reason.split()) < 5}
    assert set() == unjustified


def test_skips_on_a_sam_function_reach_every_resource_generated_from_it(template: Template,
                                                                        transformed: dict[str, Any]) -> None:
    """SAM keeps a function's Metadata on its AWS::Lambda::Function only; passed through, it also reaches the
    function's role, permissions and event source mappings, so a skip for a check on one of those is written on
    the function, not in a generated file."""
    for name in FUNCTIONS:
        generated = {logical: res for logical, res in transformed["Resources"].items()  # not the template's own
                     if logical.startswith(name) and (logical == name or logical not in template.resources)}
        assert "AWS::Lambda::Function" == generated[name]["Type"]
        assert f"{name}Role" in generated
        expected = {logical: skips(template.resources[name]) for logical in generated}
        assert expected == {logical: skips(res) for logical, res in generated.items()}


def test_local_code_paths_become_s3_locations_as_after_sam_package(template: Template) -> None:
    packaged = as_packaged(template.body)
    assert PACKAGED_CODE_URI == packaged["Globals"]["Function"]["CodeUri"]
    assert "services/src" == template.body["Globals"]["Function"]["CodeUri"], "the template itself is unchanged"


def test_a_template_the_transform_refuses_is_reported_with_its_reason(template: Template, tmp_path: Path) -> None:
    body = copy.deepcopy(template.body)
    body["Resources"]["ApiFunction"]["Properties"]["Events"]["HttpPost"]["Type"] = "NoSuchEvent"
    broken = Template(path=tmp_path / "broken.yaml", body=body)
    with pytest.raises(TemplateError, match=r"ApiFunction.*NoSuchEvent|NoSuchEvent.*ApiFunction"):
        transform_template(broken)
