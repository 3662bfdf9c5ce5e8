"""template.yaml deployed with `seglog deploy` to the local deploy target (LocalStack in host mode: CloudFormation
runs the SAM transform, our runtime executor creates the functions without Docker), then every resource's real
settings read back through the AWS APIs and compared with what the processed template asks for, plus the
design's own fixed choices (DESIGN §2, §4, §9); a parameter update reaches the functions; destroy removes the
stack (issue 10, point 4).

What LocalStack's free tier cannot show is checked in the processed template instead, and said where:
the HTTP API (apigatewayv2 is not in the free tier: CloudFormation deploys it "as a fallback" with no API
behind it, and ApiUrl names a placeholder) and the bucket's lifecycle rule (accepted, not applied).

The tests of this module run in order against one deployment: the update and the destroy come last.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner, Result

from deploy.arns import arn_of
from deploy.resolve import Resolver
from deploy.terminal import fresh_shell_env
from deploy.unpacked import fetch_deployed_code
from seglog_aws.backend import Backend
from seglog_aws.clients import local_session
from seglog_awsmodel.events.sqs import sqs_event
from seglog_cli.main import cli
from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS
from seglog_core.schema import EntryType, SetCell
from seglog_deploy import deploy as deploying
from seglog_deploy.deployer_policy import RESOURCE_TYPES
from seglog_deploy.manifest import Manifest
from seglog_deploy.record import StackRecord
from seglog_deploy.target import Target
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.runtime import ENV_DIR, ENV_PLAN, FaultRuntime
from seglog_emulator.iam.evaluation import evaluate
from seglog_emulator.iam.policy import Policy
from seglog_plugin.resources import record_resources

pytestmark = [pytest.mark.stack, pytest.mark.deploy]

REGION = "us-east-1"


@dataclass
class Deployed:
    target: Target
    stack_name: str
    result: Result
    workdir: Path
    manifest: Manifest

    def cli(self, *args: str) -> Result:
        return run_cli(self.target, self.workdir, *args)

    def stack(self) -> dict[str, Any]:
        stacks: list[dict[str, Any]] = self.target.client("cloudformation").describe_stacks(
            StackName=self.stack_name)["Stacks"]
        return stacks[0]

    def resolver(self) -> Resolver:
        cfn = self.target.client("cloudformation")
        processed = cfn.get_template(StackName=self.stack_name, TemplateStage="Processed")["TemplateBody"]
        physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                    for r in cfn.describe_stack_resources(StackName=self.stack_name)["StackResources"]}
        ddb = self.target.client("dynamodb")
        streams = {lid: ddb.describe_table(TableName=physical[lid])["Table"].get("LatestStreamArn", "")
                   for lid, r in processed["Resources"].items() if r["Type"] == "AWS::DynamoDB::Table"}
        parameters = {p["ParameterKey"]: p["ParameterValue"] for p in self.stack()["Parameters"]}
        return Resolver(template=json.loads(json.dumps(processed)), physical=physical, parameters=parameters,
                        region=REGION, account=self.target.account_id(), stack_name=self.stack_name,
                        stream_arns=streams)


#: No region anywhere (as on a fresh machine): the README's local deploy line must work without one.
NO_REGION: dict[str, str | None] = {"AWS_REGION": None, "AWS_DEFAULT_REGION": None, "AWS_PROFILE": None,
                                    "AWS_CONFIG_FILE": "/nonexistent/aws-config"}


#: seglog's template: the commands run in a working directory of their own, where none is found by default.
TEMPLATE = str(Path(__file__).resolve().parents[2] / "template.yaml")


def run_cli(target: Target, workdir: Path, *args: str, env: dict[str, str | None] | None = None) -> Result:
    """`seglog ARGS` in-process, from ``workdir`` (where .seglog/stacks is written), against the target's endpoint
    with LocalStack's credentials and no region configured (``env`` changes that)."""
    env = {"AWS_ENDPOINT_URL": target.endpoint_url or "", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           **NO_REGION, **(env or {})}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir)
        return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def deployed(deploy_target: Target, manifest: Manifest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """template.yaml deployed once for the module, through the `seglog deploy` command (which builds, reusing the
    session's build)."""
    stack_name = f"dt-{uuid.uuid4().hex[:8]}"
    workdir = tmp_path_factory.mktemp("deploy-cli")
    result = run_cli(deploy_target, workdir, "deploy", "--yes", "--template", TEMPLATE, "--stack-name", stack_name)
    yield Deployed(target=deploy_target, stack_name=stack_name, result=result, workdir=workdir, manifest=manifest)
    with contextlib.suppress(ClientError):  # left by a failed test; destroy deleted it otherwise
        deploy_target.client("cloudformation").delete_stack(StackName=stack_name)


def record_of(deployed: Deployed) -> StackRecord:
    return StackRecord.load(deployed.stack_name, deployed.workdir / ".seglog" / "stacks")


def of_type(resolver: Resolver, kind: str) -> dict[str, dict[str, Any]]:
    return {lid: r for lid, r in resolver.template["Resources"].items() if r["Type"] == kind}


# ------------------------------------------------------------------------------------------------ the command


def test_deploy_reports_each_resource_as_it_completes_prints_the_outputs_and_saves_them(deployed: Deployed) -> None:
    assert 0 == deployed.result.exit_code, deployed.result.output
    out = deployed.result.output
    # The README's line as written: no region configured, the local stack's is used, in one line saying so.
    assert f"no AWS region configured: using {REGION}, the local stack's region" in out
    assert deployed.target.region == REGION == record_of(deployed).region
    assert f"change set for stack {deployed.stack_name} (create): " in out  # shown before it ran (--yes)
    stack = deployed.stack()
    assert "CREATE_COMPLETE" == stack["StackStatus"]
    resolver = deployed.resolver()
    for lid in resolver.template["Resources"]:
        assert any(lid in line and "CREATE_COMPLETE" in line for line in out.splitlines()), f"no progress for {lid}"
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    for key, value in outputs.items():
        assert f"{key}" in out and value in out
    record = StackRecord.load(deployed.stack_name, deployed.workdir / ".seglog" / "stacks")
    assert outputs == record.outputs
    assert deployed.target.endpoint_url == record.endpoint_url


def test_env_points_the_cli_and_client_at_the_deployed_stack(deployed: Deployed) -> None:
    """`seglog env --stack` exports the names the CLI reads (seglog_aws.resources), the API URL the client reads,
    and the region; it unsets the service endpoints a local `seglog env` may have left, which would win."""
    result = deployed.cli("env", "--stack", deployed.stack_name)
    assert 0 == result.exit_code, result.output
    lines = result.output.splitlines()
    outputs = {o["OutputKey"]: o["OutputValue"] for o in deployed.stack()["Outputs"]}
    exported = dict(line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export "))
    assert outputs["EntriesTableName"] == exported["SEGLOG_ENTRIES_TABLE"]
    assert outputs["SegmentsTableName"] == exported["SEGLOG_SEGMENTS_TABLE"]
    assert outputs["PendingSnapshotsTableName"] == exported["SEGLOG_PENDING_TABLE"]
    assert outputs["SnapshotBucketName"] == exported["SEGLOG_BUCKET"]
    assert outputs["SnapshotQueueUrl"] == exported["SEGLOG_QUEUE_URL"]
    assert outputs["ApiUrl"] == exported["SEGLOG_API_URL"]
    assert REGION == exported["AWS_REGION"]
    assert deployed.target.endpoint_url == exported["AWS_ENDPOINT_URL"]
    unset = next(line for line in lines if line.startswith("unset ")).split()[1:]
    assert {"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS"} <= set(unset)


# ------------------------------------------------------------------------------------------------ functions


def test_every_function_runs_the_uploaded_artifact_as_the_template_says(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    lam = deployed.target.client("lambda")
    functions = of_type(resolver, "AWS::Lambda::Function")
    assert {"ApiFunction", "StreamRouterFunction", "SnapshotWorkerFunction", "RetentionFunction",
            "SnapshotSweepFunction"} <= set(functions)
    for lid, resource in functions.items():
        props = resolver.resolve(resource["Properties"])
        live = lam.get_function_configuration(FunctionName=resolver.physical[lid])
        assert "Active" == live["State"], lid
        assert ["arm64"] == live["Architectures"], lid  # DESIGN §10.1: Graviton, what the build targets
        assert "python3.13" == live["Runtime"], lid
        assert props["Handler"] == live["Handler"], lid
        assert int(props["MemorySize"]) == live["MemorySize"], lid
        assert int(props["Timeout"]) == live["Timeout"], lid
        assert props["Environment"]["Variables"] == live["Environment"]["Variables"], lid
        assert resolver.get_att(str(resource["Properties"]["Role"]["Fn::GetAtt"][0]), "Arn") == live["Role"], lid
        # The very bytes `seglog build` made (the manifest carries Lambda's CodeSha256 of each zip).
        assert deployed.manifest.artifact_of(lid).code_sha256 == live["CodeSha256"], f"{lid} runs other code"
        concurrency = lam.get_function_concurrency(FunctionName=resolver.physical[lid])
        expected = props.get("ReservedConcurrentExecutions")
        assert (int(expected) if expected is not None else None) == concurrency.get("ReservedConcurrentExecutions")


def test_the_functions_find_their_resources_by_the_variables_the_code_reads(deployed: Deployed) -> None:
    """Pinned: each function is told the physical names through seglog_aws.resources' variables."""
    resolver = deployed.resolver()
    live = deployed.target.client("lambda").get_function_configuration(
        FunctionName=resolver.physical["ApiFunction"])["Environment"]["Variables"]
    assert resolver.physical["EntriesTable"] == live["SEGLOG_ENTRIES_TABLE"]
    assert resolver.physical["SegmentsTable"] == live["SEGLOG_SEGMENTS_TABLE"]
    assert resolver.physical["PendingSnapshotsTable"] == live["SEGLOG_PENDING_TABLE"]
    assert resolver.physical["SnapshotBucket"] == live["SEGLOG_BUCKET"]
    assert resolver.physical["SnapshotQueue"] == live["SEGLOG_QUEUE_URL"]
    assert resolver.parameters["SnapshotEvery"] == live["SEGLOG_SNAPSHOT_EVERY"]


def test_smoke_on_this_deployment_says_it_has_no_http_api_and_where_smoke_runs(deployed: Deployed) -> None:
    """LocalStack's stand-in ApiUrl leads nowhere: smoke says so and gives the emulator's command (the same handlers,
    artifact and pipeline; tests/deploy/test_smoke.py runs smoke there), instead of timing out. The deploy's own last
    lines say the same instead of suggesting `smoke --stack`."""
    result = deployed.cli("smoke", "--stack", deployed.stack_name)
    assert 2 == result.exit_code
    assert "has no HTTP API" in result.output and "LocalStack's free tier" in result.output
    assert "seglog smoke --api-url http://127.0.0.1:4599" in result.output
    hint = deployed.result.stdout.splitlines()[-2:]
    assert f'eval "$(seglog env --stack {deployed.stack_name})"' in hint[0]
    assert "has no HTTP API" in hint[1] and "seglog smoke --stack" not in deployed.result.stdout


# ------------------------------------------------------------------------------------------------ storage


def test_tables_have_the_templates_keys_billing_stream_and_recovery(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    ddb = deployed.target.client("dynamodb")
    for lid, resource in of_type(resolver, "AWS::DynamoDB::Table").items():
        props = resolver.resolve(resource["Properties"])
        table = ddb.describe_table(TableName=resolver.physical[lid])["Table"]
        assert props["KeySchema"] == table["KeySchema"], lid
        assert sorted(props["AttributeDefinitions"], key=str) == sorted(table["AttributeDefinitions"], key=str), lid
        assert props.get("BillingMode", "PROVISIONED") == table["BillingModeSummary"]["BillingMode"], lid
        stream = props.get("StreamSpecification")
        assert (stream["StreamViewType"] if stream else None) == table.get("StreamSpecification", {}).get(
            "StreamViewType"), lid
        # Point-in-time recovery: DynamoDB Local behind LocalStack has no continuous backups (it answers DISABLED
        # whatever the template asks), so the setting is checked where CloudFormation reads it, the processed
        # template; test_template_hardening.py pins which tables have it.
        recovery = props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False)
        assert (lid in ("EntriesTable", "SegmentsTable")) == (str(recovery).lower() == "true"), lid
    # Pinned (DESIGN §2, §4): the router reads new images of the entries table's stream.
    entries = ddb.describe_table(TableName=resolver.physical["EntriesTable"])["Table"]
    assert {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"} == entries["StreamSpecification"]


def test_queues_have_the_templates_visibility_retention_and_redrive(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    sqs = deployed.target.client("sqs")
    for lid, resource in of_type(resolver, "AWS::SQS::Queue").items():
        props = resolver.resolve(resource.get("Properties", {}))
        attributes = sqs.get_queue_attributes(QueueUrl=resolver.physical[lid], AttributeNames=["All"])["Attributes"]
        for name, value in props.items():
            if name == "RedrivePolicy":
                live = json.loads(attributes["RedrivePolicy"])
                assert value["deadLetterTargetArn"] == live["deadLetterTargetArn"], lid
                assert int(value["maxReceiveCount"]) == int(live["maxReceiveCount"]), lid
            else:
                assert str(value).lower() == attributes[name].lower(), f"{lid}.{name}"
    # Pinned (DESIGN §2, §9.8): jobs past maxReceiveCount park in the DLQ; the visibility timeout is at least
    # six times the worker's timeout (AWS Lambda Developer Guide, with-sqs).
    jobs = sqs.get_queue_attributes(QueueUrl=resolver.physical["SnapshotQueue"], AttributeNames=["All"])["Attributes"]
    dead_letters = json.loads(jobs["RedrivePolicy"])["deadLetterTargetArn"]
    assert resolver.get_att("SnapshotDeadLetterQueue", "Arn") == dead_letters
    worker = deployed.target.client("lambda").get_function_configuration(
        FunctionName=resolver.physical["SnapshotWorkerFunction"])
    assert int(jobs["VisibilityTimeout"]) >= 6 * worker["Timeout"]


def test_bucket_blocks_public_access_and_its_lifecycle_is_in_the_processed_template(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    s3 = deployed.target.client("s3")
    bucket = of_type(resolver, "AWS::S3::Bucket")["SnapshotBucket"]
    props = resolver.resolve(bucket["Properties"])
    name = resolver.physical["SnapshotBucket"]
    assert props["PublicAccessBlockConfiguration"] == s3.get_public_access_block(Bucket=name)[
        "PublicAccessBlockConfiguration"]
    # Versioned (LocalStack applies it), so an overwritten or deleted archive/ object keeps its earlier version.
    assert "Enabled" == props["VersioningConfiguration"]["Status"] == s3.get_bucket_versioning(Bucket=name)["Status"]
    if "BucketEncryption" in props:
        rules = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
        wanted = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
        assert wanted["SSEAlgorithm"] == rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"]
    for lid, policy in of_type(resolver, "AWS::S3::BucketPolicy").items():
        resolved = resolver.resolve(policy["Properties"])
        assert resolved["PolicyDocument"] == json.loads(s3.get_bucket_policy(Bucket=resolved["Bucket"])["Policy"]), lid
    # LocalStack's free tier accepts the lifecycle rules but does not apply them (GetBucketLifecycleConfiguration:
    # NoSuchLifecycleConfiguration), so the rules are checked where CloudFormation got them: the processed template.
    rules = {rule["Id"]: rule for rule in props["LifecycleConfiguration"]["Rules"]}
    assert {"Enabled"} == {rule["Status"] for rule in rules.values()}
    discardable = rules.pop("ExpireDiscardable")
    assert [{"Key": "discardable", "Value": "true"}] == discardable["TagFilters"]
    assert resolver.parameters["DiscardableExpirationDays"] == str(discardable["ExpirationInDays"])
    archive = rules.pop("KeepArchiveVersions")
    assert ("archive/", True) == (archive["Prefix"], archive["ExpiredObjectDeleteMarker"])
    assert resolver.parameters["ArchiveNoncurrentVersionDays"] == str(
        archive["NoncurrentVersionExpiration"]["NoncurrentDays"])
    # The rest: a prefix each, old versions and then expired delete markers gone after a day; none reaches archive/
    # (where rules overlap S3 honours the shorter expiration).
    assert {"snapshots/", "entries/", "uploads/", "imports/", "retention/"} == {r["Prefix"] for r in rules.values()}
    assert {(1, True)} == {(int(r["NoncurrentVersionExpiration"]["NoncurrentDays"]), r["ExpiredObjectDeleteMarker"])
                           for r in rules.values()}


# ------------------------------------------------------------------------------------------------ the pipeline


def test_event_source_mappings_have_every_setting_of_the_template(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    lam = deployed.target.client("lambda")
    mappings = of_type(resolver, "AWS::Lambda::EventSourceMapping")
    assert {"StreamRouterFunctionEntries", "SnapshotWorkerFunctionJobs"} == set(mappings)
    live_by_id = {m["UUID"]: m for m in lam.list_event_source_mappings()["EventSourceMappings"]}
    for lid, resource in mappings.items():
        props = resolver.resolve(resource["Properties"])
        live = live_by_id[resolver.physical[lid]]
        assert props.pop("FunctionName") in live["FunctionArn"], lid
        assert props.pop("EventSourceArn") == live["EventSourceArn"], lid
        for name, value in props.items():
            assert json.loads(json.dumps(value)) == json.loads(json.dumps(live.get(name), default=str)), f"{lid}.{name}"
    # Pinned (DESIGN §4, §9): partial batch failures, bisect, retries until the record's age, failures to a
    # queue, filters on snapshot and external entries, at most five concurrent snapshot jobs.
    router = live_by_id[resolver.physical["StreamRouterFunctionEntries"]]
    assert ["ReportBatchItemFailures"] == router["FunctionResponseTypes"]
    assert router["BisectBatchOnFunctionError"] is True
    assert (-1, 86400) == (router["MaximumRetryAttempts"], router["MaximumRecordAgeInSeconds"])
    assert resolver.get_att("StreamFailureQueue", "Arn") == router["DestinationConfig"]["OnFailure"]["Destination"]
    patterns = [json.loads(f["Pattern"]) for f in router["FilterCriteria"]["Filters"]]
    assert {"T": {"S": ["snap"]}} in [p["dynamodb"]["NewImage"] for p in patterns]
    assert resolver.stream_arns["EntriesTable"] == router["EventSourceArn"]
    jobs = live_by_id[resolver.physical["SnapshotWorkerFunctionJobs"]]
    assert (1, ["ReportBatchItemFailures"]) == (jobs["BatchSize"], jobs["FunctionResponseTypes"])
    assert "MaximumConcurrency" in jobs["ScalingConfig"]


def test_roles_carry_exactly_the_templates_inline_and_managed_policies(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    iam = deployed.target.client("iam")
    roles = of_type(resolver, "AWS::IAM::Role")
    # One role per function, as SAM makes it (the snapshot sweep's included).
    assert {f"{fn}Role" for fn in of_type(resolver, "AWS::Lambda::Function")} == set(roles)
    for lid, resource in roles.items():
        props = resolver.resolve(resource["Properties"])
        name = resolver.physical[lid]
        role = iam.get_role(RoleName=name)["Role"]
        assert props["AssumeRolePolicyDocument"] == role["AssumeRolePolicyDocument"], lid
        inline = {p["PolicyName"]: p["PolicyDocument"] for p in props.get("Policies", [])}
        assert sorted(inline) == sorted(iam.list_role_policies(RoleName=name)["PolicyNames"]), lid
        for policy, document in inline.items():
            live = iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]
            if "Version" not in document:  # SAM writes its OnFailure policy without one; LocalStack's IAM adds it
                live.pop("Version", None)
            assert document == live, policy
        attached = [p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]]
        assert sorted(props.get("ManagedPolicyArns", [])) == sorted(attached), lid
    # Pinned: the router's role may send to the failure queue (OnFailure) and reads the stream through
    # AWSLambdaDynamoDBExecutionRole; the worker's reads its queue through AWSLambdaSQSQueueExecutionRole.
    router = [p["PolicyArn"] for p in iam.list_attached_role_policies(
        RoleName=resolver.physical["StreamRouterFunctionRole"])["AttachedPolicies"]]
    assert "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole" in router


def test_each_schedule_rule_invokes_its_function(deployed: Deployed) -> None:
    """Retention on RetentionSchedule, the snapshot sweep hourly; each rule's target is its function, which lets
    only that rule invoke it."""
    resolver = deployed.resolver()
    events = deployed.target.client("events")
    expected = {"RetentionFunction": resolver.parameters["RetentionSchedule"], "SnapshotSweepFunction": "rate(1 hour)"}
    rules = of_type(resolver, "AWS::Events::Rule")
    assert len(expected) == len(rules)
    invoked = {}
    for lid, rule in rules.items():
        props = resolver.resolve(rule["Properties"])
        live = events.describe_rule(Name=resolver.physical[lid])
        assert (props["ScheduleExpression"], props.get("State", "ENABLED")) == (live["ScheduleExpression"],
                                                                                 live["State"])
        targets = events.list_targets_by_rule(Rule=resolver.physical[lid])["Targets"]
        assert [t["Arn"] for t in props["Targets"]] == [t["Arn"] for t in targets]
        function = next(f for f in expected if resolver.get_att(f, "Arn") == targets[0]["Arn"])
        invoked[function] = live["ScheduleExpression"]
        policy = json.loads(deployed.target.client("lambda").get_policy(
            FunctionName=resolver.physical[function])["Policy"])
        allowed = [s for s in policy["Statement"] if s["Principal"] == {"Service": "events.amazonaws.com"}]
        assert [resolver.get_att(lid, "Arn")] == [s["Condition"]["ArnLike"]["AWS:SourceArn"] for s in allowed]
    assert expected == invoked


def test_the_http_api_is_in_the_processed_template(deployed: Deployed) -> None:
    """apigatewayv2 is not in LocalStack's free tier: the API and its stage are deployed "as a fallback" (no API
    behind them), so the routes, their IAM authorization, the proxy integration and the permissions are checked in
    the processed template, which is what AWS would create them from."""
    resolver = deployed.resolver()
    (api,) = of_type(resolver, "AWS::ApiGatewayV2::Api").values()
    body = api["Properties"]["Body"]
    routes = body["paths"]["/{proxy+}"]
    assert {"get", "post"} == set(routes)  # no ANY: API Gateway answers CORS preflights itself, unsigned
    for route in routes.values():
        assert [{"AWS_IAM": []}] == route["security"]
        integration = route["x-amazon-apigateway-integration"]
        assert ("aws_proxy", "2.0") == (integration["type"], integration["payloadFormatVersion"])
        assert "${ApiFunction.Arn}" in integration["uri"]["Fn::Sub"]
    assert "awsSigv4" == body["components"]["securitySchemes"]["AWS_IAM"]["x-amazon-apigateway-authtype"]
    cors = body["x-amazon-apigateway-cors"]
    assert {"authorization", "x-amz-date", "x-amz-security-token"} <= set(cors["allowHeaders"])
    (stage,) = of_type(resolver, "AWS::ApiGatewayV2::Stage").values()
    assert ("$default", True) == (stage["Properties"]["StageName"], stage["Properties"]["AutoDeploy"])
    for name in ("ApiFunctionHttpGetPermission", "ApiFunctionHttpPostPermission"):
        permission = resolver.template["Resources"][name]["Properties"]
        assert ("lambda:InvokeFunction", "apigateway.amazonaws.com") == (permission["Action"], permission["Principal"])
    assert "${HttpApi}" in resolver.template["Outputs"]["ApiUrl"]["Value"]["Fn::Sub"]


def test_every_output_but_the_api_url_names_the_real_resource(deployed: Deployed) -> None:
    resolver = deployed.resolver()
    live = {o["OutputKey"]: o["OutputValue"] for o in deployed.stack()["Outputs"]}
    outputs = resolver.template["Outputs"]
    assert set(outputs) == set(live)
    for key, output in outputs.items():
        if key != "ApiUrl":  # a fallback API has no id (see the test above)
            assert resolver.resolve(output["Value"]) == live[key], key


# ------------------------------------------------------------------------------------------------ nothing test-only

#: What armed crash points, the clock skew and the botocore fault injector before they moved into the emulator's
#: worker wrapper (DESIGN §10.4): given to a deployed function, none of them may do anything.
OLD_ARMING = ("SEGLOG_CRASH_POINTS", "SEGLOG_CLOCK_SKEW_SECONDS", ENV_PLAN, ENV_DIR)
ALL_POINTS = (*WORKER_CRASH_POINTS, ROUTER_AFTER_SEND)

#: Runs in a fresh interpreter on the deployed bytes: import every module of the project's packages, reach every
#: crash point, run the snapshot worker's handler on a real job, and say what it saw.
DEPLOYED_RUN = """
import importlib, json, pkgutil, sys, time
tree, site, event_path = sys.argv[1:4]
sys.path[:0] = [tree]
sys.path.append(site)
modules = []
for top in ("seglog_core", "seglog_aws", "seglog_services"):
    package = importlib.import_module(top)
    modules += [importlib.import_module(m.name).__name__ for m in pkgutil.walk_packages(package.__path__, top + ".")]
from seglog_core import crashpoints
for point in (*crashpoints.WORKER_CRASH_POINTS, crashpoints.ROUTER_AFTER_SEND):
    crashpoints.should_crash(point)
from seglog_services import snapshot_worker
class Context:
    aws_request_id = "point-7"
    def get_remaining_time_in_millis(self):
        return 60_000
answer = snapshot_worker.handler(json.load(open(event_path)), Context())
print(json.dumps({"answer": answer, "armed": sorted(crashpoints.armed()), "skew": crashpoints.clock() - time.time(),
                  "crashpoints": crashpoints.__file__, "worker": snapshot_worker.__file__, "modules": len(modules),
                  "emulator": importlib.util.find_spec("seglog_emulator") is not None}))
"""


def test_no_deployed_function_is_given_a_variable_that_could_arm_a_fault(deployed: Deployed) -> None:
    """DESIGN §10.4: nothing in the deployed configuration names a crash point, a clock skew or a fault plan."""
    resolver = deployed.resolver()
    lam = deployed.target.client("lambda")
    for lid in of_type(resolver, "AWS::Lambda::Function"):
        variables = lam.get_function_configuration(FunctionName=resolver.physical[lid])["Environment"]["Variables"]
        assert not [name for name in variables if name in OLD_ARMING or name.startswith(("SEGLOG_CRASH", "SEGLOG_FAULT",
                                                                                          "SEGLOG_CLOCK"))], lid


def test_the_deployed_worker_ignores_every_old_arming_variable(deployed: Deployed, tmp_path: Path) -> None:
    """The snapshot worker's deployed bytes, fetched back from Lambda, run here with every crash point named in
    SEGLOG_CRASH_POINTS, a clock an hour fast in SEGLOG_CLOCK_SKEW_SECONDS and a fault plan that fails every call:
    it imports, passes every crash point, builds a real snapshot on the deployed tables and bucket through all six
    points of the protocol, and its clock is the real one. Before §10.4 the first point would have killed it."""
    resolver = deployed.resolver()
    lam = deployed.target.client("lambda")
    worker = lam.get_function_configuration(FunctionName=resolver.physical["SnapshotWorkerFunction"])
    tree, replaced = fetch_deployed_code(lam, resolver.physical["SnapshotWorkerFunction"], tmp_path / "code")
    assert (tree / "seglog_core" / "crashpoints.py").is_file()
    assert not (tree / "seglog_emulator").exists() and not (tree / "seglog_stack").exists()
    for path in tree.rglob("*.py"):
        text = path.read_bytes()
        assert not [name for name in OLD_ARMING if name.encode() in text], f"{path} names an arming variable"

    # A real job: a sheet whose entries reach a snapshot point, on the deployed tables.
    backend = Backend.connect(record_resources(record_of(deployed)), session=local_session(REGION),
                              endpoints=dict.fromkeys(("dynamodb", "s3", "sqs"), deployed.target.endpoint_url))
    sheet = backend.event_log(snapshot_every=3)
    log_id = sheet.create()
    for n in range(3):
        sheet.append(log_id, SetCell(row=n + 1, col=1, value=n))
    (job,) = [e for e in backend.reader().all_entries(log_id) if e.type is EntryType.SNAPSHOT and e.num > 0]
    # Its message goes through a queue of its own, which no event source mapping polls: LocalStack's would hand it
    # to the deployed function, whose arm64 binaries cannot load on an x86_64 host.
    sqs = deployed.target.client("sqs")
    queue = sqs.create_queue(QueueName=f"p7-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"log": str(log_id), "segment": job.segment,
                                                             "entry": job.num}))
    messages = sqs.receive_message(QueueUrl=queue, MessageSystemAttributeNames=["All"],
                                   MessageAttributeNames=["All"], WaitTimeSeconds=5)["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps(sqs_event(messages, queue_arn=arn, region=REGION)))

    faults = FaultRuntime(FaultPlan.from_flags("all", rate=1.0, seed=7), tmp_path / "faults").env()
    env = {**worker["Environment"]["Variables"], "SEGLOG_QUEUE_URL": queue, "AWS_REGION": REGION,
           "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_ENDPOINT_URL": deployed.target.endpoint_url or "", "PATH": os.environ.get("PATH", ""),
           "SEGLOG_CRASH_POINTS": ",".join(ALL_POINTS), "SEGLOG_CLOCK_SKEW_SECONDS": "3600", **faults}
    site = sysconfig.get_paths()["purelib"]
    run = subprocess.run([sys.executable, "-I", "-S", "-c", DEPLOYED_RUN, str(tree), site, str(event)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert 0 == run.returncode, f"the deployed worker died ({run.returncode}): {run.stderr[-3000:]}"
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert str(tree) in seen["crashpoints"] and str(tree) in seen["worker"]  # the deployed bytes ran
    assert seen["modules"] > 20
    assert not seen["emulator"]
    assert [] == seen["armed"]
    assert abs(seen["skew"]) < 1.0
    assert {"batchItemFailures": []} == seen["answer"]
    built = next(e for e in backend.reader().all_entries(log_id) if (e.segment, e.num) == (job.segment, job.num))
    assert built.snapshot_root is not None, "the worker did not complete the snapshot"
    assert [] == backend.pending.for_log(log_id)
    assert replaced in ([], ["msgspec"]), f"native packages taken from the host: {replaced}"


# ------------------------------------------------------------------------------------------------ deployer policy

#: The IAM action each call of the deploy code needs (Amazon S3 User Guide, using-with-s3-policy-actions, "Required
#: permissions for Amazon S3 API operations"; CloudFormation's actions are named as its operations). STS
#: GetCallerIdentity needs no permission (AWS STS API Reference, GetCallerIdentity).
DEPLOY_CALL_ACTIONS = {
    "HeadBucket": "s3:ListBucket", "CreateBucket": "s3:CreateBucket",
    "GetPublicAccessBlock": "s3:GetBucketPublicAccessBlock", "PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock",
    "GetBucketVersioning": "s3:GetBucketVersioning", "PutBucketVersioning": "s3:PutBucketVersioning",
    "GetBucketEncryption": "s3:GetEncryptionConfiguration", "PutBucketEncryption": "s3:PutEncryptionConfiguration",
    "GetBucketPolicy": "s3:GetBucketPolicy", "PutBucketPolicy": "s3:PutBucketPolicy",
    "HeadObject": "s3:GetObject", "GetObject": "s3:GetObject", "PutObject": "s3:PutObject",
    "GetCallerIdentity": "",
}
#: The types CloudFormation names after the stack (a mapping's or API's id is drawn by its service).
NAMED_AFTER_THE_STACK = frozenset({"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::Logs::LogGroup",
                                   "AWS::IAM::Role", "AWS::Lambda::Function", "AWS::Events::Rule"})


def test_the_printed_deployer_policy_allows_every_call_of_a_deploy_and_every_resource_it_made(
        deployed: Deployed, tmp_path: Path) -> None:
    """The policy `deploy --print-policy` prints, evaluated with the emulator's IAM evaluator (LocalStack's free tier
    enforces no IAM): every call a deploy of this stack made, recorded from its clients, and CloudFormation's
    calls for each resource it made, on the names it gave them."""
    printed = deployed.cli("deploy", "--template", TEMPLATE, "--stack-name", deployed.stack_name, "--print-policy")
    assert 0 == printed.exit_code, printed.output
    policy = Policy.parse(json.loads(printed.stdout), source="deployer")
    account, stack_id = deployed.target.account_id(), deployed.stack()["StackId"]

    def denied(action: str, resource: str) -> bool:
        return not evaluate(action, resource, {}, identity=[policy]).allowed

    target = Target.resolve(region=REGION, endpoint_url=deployed.target.endpoint_url, env={})
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for service in ("cloudformation", "s3", "sts", "logs"):
        target.client(service).meta.events.register(
            "provide-client-params.*.*", lambda params, model, **_: calls.append(
                (model.service_model.endpoint_prefix, model.name, dict(params))))
    deploying.deploy(target, stack_name=deployed.stack_name, template_path=None,
                     artifacts=deploying.artifacts_of(deployed.manifest), records=tmp_path)
    refused_calls = []
    for service, operation, params in calls:
        if service == "cloudformation":
            refused_calls += [operation] if denied(f"cloudformation:{operation}", stack_id) else []
        else:
            action = DEPLOY_CALL_ACTIONS[operation]  # a KeyError: a new call, to map and to grant
            if not action:
                continue
            resource = f"arn:aws:s3:::{params['Bucket']}" + (f"/{params['Key']}" if "Key" in params else "")
            refused_calls += [operation] if denied(action, resource) else []
    assert [] == refused_calls

    made = deployed.target.client("cloudformation").describe_stack_resources(StackName=deployed.stack_name)
    refused: list[tuple[str, str, str]] = []
    checked = set()
    for resource in made["StackResources"]:
        kind, physical = resource["ResourceType"], resource["PhysicalResourceId"]
        if kind not in NAMED_AFTER_THE_STACK:
            continue
        checked.add(kind)
        # A queue's physical id is its URL, a rule's may be its ARN: the name is the last part of either.
        arn = arn_of(kind, physical.rsplit("/", 1)[-1], region=REGION, account=account)
        for grant in RESOURCE_TYPES[kind]:
            elsewhere = grant.condition is not None or any("{bucket}" in r for r in grant.resources)
            if grant.resources == ("*",) or elsewhere:
                continue  # listing calls, and calls on another resource (the artifacts, a passed role)
            refused += [(kind, physical, a) for a in grant.actions if denied(a.replace("*", "Lifecycle"), arn)]
    assert ([], NAMED_AFTER_THE_STACK) == (refused, checked)
    assert {"HeadBucket", "HeadObject", "CreateChangeSet", "DescribeChangeSet", "ExecuteChangeSet"} <= {
        operation for _, operation, _ in calls}


# ------------------------------------------------------------------------------------------------ update, destroy


# ------------------------------------------------------------------------------------------------ operating it


def test_alarms_have_the_templates_metrics_thresholds_and_periods_on_the_real_resources(deployed: Deployed) -> None:
    """Each alarm as CloudWatch holds it (DescribeAlarms) is the template's, its dimensions naming the deployed
    function, queue or table; without AlarmTopicArn no alarm has an action."""
    resolver = deployed.resolver()
    cloudwatch = deployed.target.client("cloudwatch")
    alarms = of_type(resolver, "AWS::CloudWatch::Alarm")
    assert 18 == len(alarms)
    names = [resolver.physical[lid] for lid in alarms]
    live = {a["AlarmName"]: a for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNames=names)
            for a in page["MetricAlarms"]}
    assert set(names) == set(live)
    functions = {resolver.physical[lid] for lid in of_type(resolver, "AWS::Lambda::Function")}
    queues = {resolver.get_att(lid, "QueueName") for lid in of_type(resolver, "AWS::SQS::Queue")}
    tables = {resolver.physical[lid] for lid in of_type(resolver, "AWS::DynamoDB::Table")}
    for lid, resource in alarms.items():
        props = resolver.resolve(resource["Properties"])
        alarm = live[resolver.physical[lid]]
        for name in ("EvaluationPeriods", "ComparisonOperator", "TreatMissingData", "AlarmDescription"):
            assert props[name] == alarm[name], f"{lid}.{name}"
        assert float(props["Threshold"]) == alarm["Threshold"], lid
        assert [] == alarm["AlarmActions"] == alarm["OKActions"], lid
        if "Metrics" in props:
            assert [q["Id"] for q in props["Metrics"]] == [q["Id"] for q in alarm["Metrics"]], lid
            for wanted, got in zip(props["Metrics"], alarm["Metrics"], strict=True):
                assert wanted.get("Expression") == got.get("Expression"), lid
                if "MetricStat" in wanted:
                    assert wanted["MetricStat"]["Metric"]["Dimensions"] == got["MetricStat"]["Metric"]["Dimensions"]
                    assert (wanted["MetricStat"]["Period"], wanted["MetricStat"]["Stat"]) == (
                        got["MetricStat"]["Period"], got["MetricStat"]["Stat"]), lid
                    assert got["MetricStat"]["Metric"]["Dimensions"][0]["Value"] in tables, lid
            continue
        for name in ("Namespace", "MetricName", "Statistic", "Period", "Dimensions"):
            assert props[name] == alarm[name], f"{lid}.{name}"
        ((dimension,),) = [alarm["Dimensions"]]
        real = {"FunctionName": functions, "QueueName": queues, "TableName": tables}[dimension["Name"]]
        assert dimension["Value"] in real, f"{lid}: {dimension} names no deployed resource"
    ages = live[resolver.physical["StreamIteratorAgeAlarm"]]
    assert (300000.0, 3, 60) == (ages["Threshold"], ages["EvaluationPeriods"], ages["Period"])


def test_the_dashboard_draws_every_alarm_and_the_figures_of_the_real_resources(deployed: Deployed) -> None:
    """LocalStack's free tier has no AWS::CloudWatch::Dashboard provider (it records the resource with the physical
    id "unknown" and makes nothing), so the body is checked as CloudFormation got it, resolved against the deployed
    stack: the live alarms' ARNs, the real functions, queues and tables."""
    resolver = deployed.resolver()
    cloudwatch = deployed.target.client("cloudwatch")
    props = resolver.resolve(resolver.template["Resources"]["OperationsDashboard"]["Properties"])
    name = props["DashboardName"]
    assert f"{deployed.stack_name}-operations" == name
    body = json.loads(props["DashboardBody"])
    shown = {a for w in body["widgets"] if w["type"] == "alarm" for a in w["properties"]["alarms"]}
    live = {a["AlarmArn"] for page in cloudwatch.get_paginator("describe_alarms").paginate(
        AlarmNames=[resolver.physical[lid] for lid in of_type(resolver, "AWS::CloudWatch::Alarm")])
        for a in page["MetricAlarms"]}
    assert live == shown
    named = {m[3] for w in body["widgets"] if w["type"] == "metric" for m in w["properties"]["metrics"]}
    functions = {resolver.physical[lid] for lid in of_type(resolver, "AWS::Lambda::Function")}
    assert functions <= named
    assert {resolver.get_att(lid, "QueueName") for lid in of_type(resolver, "AWS::SQS::Queue")} <= named
    assert {resolver.physical[lid] for lid in of_type(resolver, "AWS::DynamoDB::Table")} <= named
    assert {REGION} == {w["properties"]["region"] for w in body["widgets"] if w["type"] == "metric"}
    outputs = {o["OutputKey"]: o["OutputValue"] for o in deployed.stack()["Outputs"]}
    assert name == outputs["DashboardName"]


def test_every_function_logs_to_a_group_of_the_stack_with_the_retention_parameter(deployed: Deployed) -> None:
    """Each function's LoggingConfig names a log group the stack made. LocalStack's log-group handler creates the
    group without its RetentionInDays (it never calls PutRetentionPolicy), so the retention is checked where
    CloudFormation got it: the processed template, resolved."""
    resolver = deployed.resolver()
    lam, logs = deployed.target.client("lambda"), deployed.target.client("logs")
    groups = of_type(resolver, "AWS::Logs::LogGroup")
    retention = int(resolver.parameters["LogRetentionDays"])
    for lid in of_type(resolver, "AWS::Lambda::Function"):
        config = lam.get_function_configuration(FunctionName=resolver.physical[lid])
        group = config["LoggingConfig"]["LogGroup"]
        assert group == resolver.physical[f"{lid}Logs"], lid
        assert deployed.stack_name in group, lid  # under the deployer policy's <stack>-* log-group grant
        (found,) = [g for g in logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
                    if g["logGroupName"] == group]
        assert found.get("retentionInDays") in (None, retention), lid
        assert retention == int(resolver.resolve(groups[f"{lid}Logs"]["Properties"])["RetentionInDays"]), lid
    assert 30 == retention
    assert {f"{lid}Logs" for lid in of_type(resolver, "AWS::Lambda::Function")} < set(groups)


def test_an_unchanged_deploy_says_no_changes(deployed: Deployed) -> None:
    result = deployed.cli("deploy", "--yes", "--template", TEMPLATE, "--stack-name", deployed.stack_name)
    assert 0 == result.exit_code, result.output
    assert f"stack {deployed.stack_name}: " in result.output and "(no changes)" in result.output
    assert not [line for line in result.output.splitlines() if "AWS::Lambda::Function" in line]


def test_a_parameter_update_reaches_every_function_and_stays_on_the_next_deploy(deployed: Deployed) -> None:
    lam = deployed.target.client("lambda")
    physical = deployed.resolver().physical
    result = deployed.cli("deploy", "--yes", "--template", TEMPLATE, "--stack-name", deployed.stack_name,
                          "--parameter", "SnapshotEvery=50")
    assert 0 == result.exit_code, result.output
    assert "UPDATE_COMPLETE" == deployed.stack()["StackStatus"]
    for lid in deployed.manifest.functions:
        variables = lam.get_function_configuration(FunctionName=physical[lid])["Environment"]["Variables"]
        assert "50" == variables["SEGLOG_SNAPSHOT_EVERY"], lid
    again = deployed.cli("deploy", "--yes", "--template", TEMPLATE, "--stack-name", deployed.stack_name)
    assert 0 == again.exit_code, again.output
    variables = lam.get_function_configuration(FunctionName=physical["ApiFunction"])["Environment"]["Variables"]
    assert "50" == variables["SEGLOG_SNAPSHOT_EVERY"]
    record = StackRecord.load(deployed.stack_name, deployed.workdir / ".seglog" / "stacks")
    assert "50" == record.parameters["SnapshotEvery"]


def test_destroy_deletes_the_stack_and_lists_what_it_retains(deployed: Deployed) -> None:
    """Run as on a fresh machine (no region, no credentials configured: LocalStack's are used), destroy lists each
    retained resource with a command that, pasted into a shell with nothing configured either, removes exactly that
    resource on LocalStack: every command carries the endpoint, the region and the credentials the destroy used.
    Both buckets are said to be versioned (every version and delete marker goes first), and both go as printed."""
    resolver = deployed.resolver()
    retained = [lid for lid, r in resolver.template["Resources"].items() if r.get("DeletionPolicy") == "Retain"]
    nothing = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None,
               "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials", "AWS_EC2_METADATA_DISABLED": "true"}
    result = run_cli(deployed.target, deployed.workdir, "destroy", "--stack-name", deployed.stack_name,
                     "--endpoint-url", deployed.target.endpoint_url or "", env=nothing)
    assert 0 == result.exit_code, result.output
    assert f"stack {deployed.stack_name} deleted" in result.output
    assert f"no AWS region configured: using {REGION}" in result.output
    cfn = deployed.target.client("cloudformation")
    with pytest.raises(ClientError, match="does not exist"):
        cfn.describe_stacks(StackName=deployed.stack_name)
    with pytest.raises(ClientError, match="ResourceNotFound"):
        deployed.target.client("lambda").get_function(FunctionName=resolver.physical["ApiFunction"])
    ddb = deployed.target.client("dynamodb")
    tables = [lid for lid in of_type(resolver, "AWS::DynamoDB::Table") if lid in retained]
    for lid in of_type(resolver, "AWS::DynamoDB::Table"):
        if lid in retained:
            assert resolver.physical[lid] in result.output
            ddb.describe_table(TableName=resolver.physical[lid])  # still there
        else:
            with pytest.raises(ClientError, match="ResourceNotFound"):
                ddb.describe_table(TableName=resolver.physical[lid])
    for lid in retained:
        assert f"{lid} (" in result.output, f"{lid} is retained but not reported"
    listed = [line for line in result.output.splitlines() if line.startswith("  ") and " (AWS::" in line]
    commands = [line.strip() for line in result.output.splitlines() if line.startswith("    ")]
    assert len(commands) == len(listed) >= len(retained) + 1, result.output  # the artifacts bucket's too
    for command in commands:
        calls = command.count(" aws ")
        assert command.startswith("AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws "), command
        assert calls == command.count("AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws "), command
        assert calls == command.count(f"--endpoint-url {deployed.target.endpoint_url}") == command.count(
            f"--region {REGION}"), command
    bucket = resolver.physical["SnapshotBucket"]
    snapshot_bucket = next(c for c in commands if f"s3://{bucket}" in c)
    assert "list-object-versions" in snapshot_bucket and "# versioned" in snapshot_bucket
    artifacts = commands[-1]
    assert "list-object-versions" in artifacts and "# versioned" in artifacts

    # Pasted into bash with nothing configured: no endpoint, region or credentials but what each line carries.
    shell = {**fresh_shell_env(), "AWS_EC2_METADATA_DISABLED": "true"}
    assert shutil.which("aws", path=shell.get("PATH")), "the AWS CLI (aws) runs destroy's commands as printed"
    artifacts_bucket = artifacts.split("--bucket ")[1].split()[0]
    s3 = deployed.target.client("s3")
    assert s3.list_object_versions(Bucket=artifacts_bucket).get("Versions"), "the deploys uploaded nothing?"
    for command in commands:
        run = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], env=shell, capture_output=True,
                             text=True, timeout=300)
        assert 0 == run.returncode, f"{command}\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
    for lid in tables:
        with pytest.raises(ClientError, match="ResourceNotFound"):
            ddb.describe_table(TableName=resolver.physical[lid])
    for name in (bucket, artifacts_bucket):
        with pytest.raises(ClientError, match=r"NoSuchBucket|Not Found|404"):
            s3.head_bucket(Bucket=name)
    assert not (deployed.workdir / ".seglog" / "stacks" / f"{deployed.stack_name}.json").exists()
