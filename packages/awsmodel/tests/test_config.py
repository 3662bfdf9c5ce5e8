"""Reading what the emulator runs from template.yaml, with AWS's defaults and AWS's refusals (DESIGN §1.5, §9).

Pages cited (AWS Lambda Developer Guide unless said otherwise): services-ddb-params, services-sqs-parameters,
services-sqs-configure, services-sqs-scaling, invocation-eventfiltering, Lambda API Reference
(CreateEventSourceMapping, ScalingConfig), SAM: sam-resource-function, sam-property-function-dynamodb,
sam-property-function-sqs, sam-property-function-httpapi, sam-specification-template-anatomy-globals.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.config import (
    AWS_IAM,
    LOCAL_MAX_CONCURRENCY,
    EmulatorConfig,
    FunctionResponseType,
    FunctionSpec,
    HttpRoute,
    QueueMapping,
    QueueSpec,
    StreamMapping,
    StreamPosition,
    TemplateConfigError,
)
from seglog_awsmodel.filtering import compile_filter_criteria
from seglog_awsmodel.template import Template, TemplateError, load_template

REPO_ROOT = Path(__file__).resolve().parents[3]
GLOBAL_ENV = {
    "SEGLOG_SEGMENTS_TABLE": "local:Ref:SegmentsTable",
    "SEGLOG_ENTRIES_TABLE": "local:Ref:EntriesTable",
    "SEGLOG_PENDING_TABLE": "local:Ref:PendingSnapshotsTable",
    "SEGLOG_BUCKET": "local:Ref:SnapshotBucket",
    "SEGLOG_QUEUE_URL": "local:Ref:SnapshotQueue",
    "SEGLOG_SNAPSHOT_EVERY": "1000",  # !Ref SnapshotEvery: the parameter's Default
    "SEGLOG_SEGMENT_ENTRIES": "100000",  # !Ref SegmentEntries
}


class FakeResolver:
    """Maps resource intrinsics to recognisable local values and remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.calls.append(value)
        if "Ref" in value:
            return f"local:Ref:{value['Ref']}"
        logical, attribute = value["Fn::GetAtt"]
        return f"local:{logical}.{attribute}"


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(REPO_ROOT / "template.yaml")


@pytest.fixture(scope="module")
def config(template: Template) -> EmulatorConfig:
    return EmulatorConfig.from_template(template, FakeResolver())


# ------------------------------------------------------------------------------------------------ template.yaml


def test_functions_come_from_the_template_with_globals_merged(config: EmulatorConfig) -> None:
    """sam-resource-function + sam-specification-template-anatomy-globals: Runtime and MemorySize from Globals
    unless the function sets its own; Environment.Variables merged, the function's own added."""
    expected = {
        "ApiFunction": FunctionSpec(logical_id="ApiFunction", Handler="seglog_services.api.handler",
                                    Runtime="python3.13", Timeout=15, MemorySize=768,
                                    Environment={**GLOBAL_ENV, "SEGLOG_RETENTION_MIN_AGE_SECONDS": "604800"}),
        "StreamRouterFunction": FunctionSpec(logical_id="StreamRouterFunction",
                                             Handler="seglog_services.stream_router.handler", Runtime="python3.13",
                                             Timeout=30, MemorySize=768, Environment=GLOBAL_ENV),
        "SnapshotWorkerFunction": FunctionSpec(
            logical_id="SnapshotWorkerFunction", Handler="seglog_services.snapshot_worker.handler",
            Runtime="python3.13", Timeout=60,  # !Ref SnapshotWorkerTimeout, Default 60
            MemorySize=768, Environment={**GLOBAL_ENV, "SEGLOG_TAKEOVER_SECONDS": "15"}),  # SnapshotTakeoverSeconds
        "RetentionFunction": FunctionSpec(
            logical_id="RetentionFunction", Handler="seglog_services.retention.handler", Runtime="python3.13",
            Timeout=300, MemorySize=512,
            Environment={**GLOBAL_ENV, "SEGLOG_RETENTION_KEEP": "3", "SEGLOG_RETENTION_MIN_AGE_SECONDS": "604800"}),
        "SnapshotSweepFunction": FunctionSpec(
            logical_id="SnapshotSweepFunction", Handler="seglog_services.snapshot_sweep.handler",
            Runtime="python3.13", Timeout=300, MemorySize=512,
            Environment={**GLOBAL_ENV, "SEGLOG_QUEUE_VISIBILITY_SECONDS": "360"}),
    }
    assert expected == config.functions
    assert ("seglog_services.stream_router", "handler") == (
        config.functions["StreamRouterFunction"].handler_module,
        config.functions["StreamRouterFunction"].handler_function)


def test_stream_mapping_has_every_setting_the_template_gives(config: EmulatorConfig, template: Template) -> None:
    """sam-property-function-dynamodb / services-ddb-params: each property of StreamRouterFunction's Entries event."""
    props = template.resources["StreamRouterFunction"]["Properties"]["Events"]["Entries"]["Properties"]
    expected = StreamMapping(
        function="StreamRouterFunction", event="Entries", table="EntriesTable",
        StartingPosition=StreamPosition.TRIM_HORIZON, BatchSize=100, MaximumBatchingWindowInSeconds=0,
        MaximumRetryAttempts=-1, MaximumRecordAgeInSeconds=86400, BisectBatchOnFunctionError=True,
        ParallelizationFactor=1, FunctionResponseTypes=(FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,),
        OnFailure="StreamFailureQueue", FilterCriteria=compile_filter_criteria(props["FilterCriteria"]), Enabled=True)
    assert (expected,) == config.stream_mappings
    patterns = [m.pattern for m in config.stream_mappings[0].FilterCriteria]
    assert [{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"T": {"S": ["snap"]}}}},
            {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"E": {"S": [{"exists": True}]}}}}] == patterns
    assert config.stream_mappings[0].reports_batch_item_failures


def test_queue_mapping_has_every_setting_the_template_gives(config: EmulatorConfig) -> None:
    """sam-property-function-sqs / services-sqs-parameters: SnapshotWorkerFunction's Jobs event."""
    expected = QueueMapping(function="SnapshotWorkerFunction", event="Jobs", queue="SnapshotQueue", BatchSize=1,
                            MaximumBatchingWindowInSeconds=0, MaximumConcurrency=5,
                            FunctionResponseTypes=(FunctionResponseType.REPORT_BATCH_ITEM_FAILURES,),
                            FilterCriteria=(), Enabled=True)
    assert (expected,) == config.queue_mappings
    assert 5 == config.queue_mappings[0].concurrency


def test_queues_carry_visibility_timeout_and_redrive(config: EmulatorConfig) -> None:
    """AWS::SQS::Queue: VisibilityTimeout (default 30) and RedrivePolicy as the template sets them."""
    assert {
        "SnapshotQueue": QueueSpec(logical_id="SnapshotQueue", VisibilityTimeout=360, FifoQueue=False,
                                   dead_letter_queue="SnapshotDeadLetterQueue", maxReceiveCount=50),
        "SnapshotDeadLetterQueue": QueueSpec(logical_id="SnapshotDeadLetterQueue", VisibilityTimeout=30,
                                             FifoQueue=False, dead_letter_queue=None, maxReceiveCount=None),
        "StreamFailureQueue": QueueSpec(logical_id="StreamFailureQueue", VisibilityTimeout=30, FifoQueue=False,
                                        dead_letter_queue=None, maxReceiveCount=None),
    } == config.queues


def test_http_routes_are_the_api_functions_httpapi_events(config: EmulatorConfig) -> None:
    """sam-property-function-httpapi: Path, Method, PayloadFormatVersion and ApiId of ApiFunction's events; each
    route takes the API's DefaultAuthorizer, AWS_IAM (sam-property-httpapi-httpapiauth)."""
    assert (HttpRoute(function="ApiFunction", event="HttpGet", Path="/{proxy+}", Method="GET",
                      PayloadFormatVersion="2.0", ApiId="HttpApi", Authorizer=AWS_IAM),
            HttpRoute(function="ApiFunction", event="HttpPost", Path="/{proxy+}", Method="POST",
                      PayloadFormatVersion="2.0", ApiId="HttpApi", Authorizer=AWS_IAM)) == config.http_routes


def test_the_real_template_needs_no_notes(config: EmulatorConfig) -> None:
    """Every event and property of template.yaml is one the emulator runs."""
    assert () == config.notes


def test_resource_intrinsics_go_to_the_resolver_and_parameters_do_not(template: Template) -> None:
    """Parameters resolve from their Default; resources go to the caller, who knows the local names."""
    resolver = FakeResolver()
    EmulatorConfig.from_template(template, resolver)
    asked = {value["Ref"] for value in resolver.calls}
    assert {"SegmentsTable", "EntriesTable", "PendingSnapshotsTable", "SnapshotBucket", "SnapshotQueue"} == asked


def test_parameter_overrides_apply_and_are_checked(template: Template) -> None:
    """A SnapshotWorkerTimeout override changes the worker's Timeout; above the queue's 360 s it is refused
    (services-sqs-configure)."""
    raised = EmulatorConfig.from_template(template, FakeResolver(), parameters={"SnapshotWorkerTimeout": 120})
    assert 120 == raised.functions["SnapshotWorkerFunction"].Timeout
    assert any("less than 6 x" in note for note in raised.notes)
    with pytest.raises(TemplateConfigError, match="Timeout 400 s, more than queue SnapshotQueue's VisibilityTimeout"):
        EmulatorConfig.from_template(template, FakeResolver(), parameters={"SnapshotWorkerTimeout": "400"})


# ------------------------------------------------------------------------------------------------ hand-made


def make_template(events: dict[str, Any], *, function: dict[str, Any] | None = None,
                  extra: dict[str, Any] | None = None, globals_: dict[str, Any] | None = None) -> Template:
    """A small template: one function with ``events``, a stream table, a plain queue and a FIFO queue."""
    body: dict[str, Any] = {
        "Resources": {
            "Table": {"Type": "AWS::DynamoDB::Table",
                      "Properties": {"StreamSpecification": {"StreamViewType": "NEW_IMAGE"}}},
            "NoStreamTable": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Fifo": {"Type": "AWS::SQS::Queue", "Properties": {"FifoQueue": True}},
            "Fn": {"Type": "AWS::Serverless::Function",
                   "Properties": {"Handler": "pkg.mod.handler", "Runtime": "python3.13", **(function or {}),
                                  "Events": events}},
            **(extra or {}),
        },
    }
    if globals_ is not None:
        body["Globals"] = {"Function": globals_}
    return Template(path=Path("hand-made.yaml"), body=copy.deepcopy(body))


def ddb_event(**props: Any) -> dict[str, Any]:
    return {"E": {"Type": "DynamoDB", "Properties": {"Stream": {"Fn::GetAtt": ["Table", "StreamArn"]},
                                                     "StartingPosition": "LATEST", **props}}}


def sqs_event(queue: str = "Queue", **props: Any) -> dict[str, Any]:
    return {"E": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": [queue, "Arn"]}, **props}}}


def read(template: Template) -> EmulatorConfig:
    return EmulatorConfig.from_template(template, FakeResolver())


def problems(template: Template) -> tuple[str, ...]:
    with pytest.raises(TemplateConfigError) as caught:
        read(template)
    assert isinstance(caught.value, TemplateError)
    return caught.value.problems


def test_function_defaults_are_sams() -> None:
    """sam-resource-function: Timeout 3 s and MemorySize 128 MB when neither the function nor Globals set them."""
    spec = read(make_template({})).functions["Fn"]
    assert (3, 128, {}) == (spec.Timeout, spec.MemorySize, spec.Environment)


def test_function_environment_overrides_globals_key_by_key() -> None:
    """sam-specification-template-anatomy-globals: maps are merged; the function's entry wins."""
    template = make_template({}, globals_={"Environment": {"Variables": {"A": "global", "B": "global"}}},
                             function={"Environment": {"Variables": {"B": "own", "C": 7, "D": True}}})
    assert {"A": "global", "B": "own", "C": "7", "D": "true"} == read(template).functions["Fn"].Environment


def test_logging_config_json_comes_from_globals_with_lambdas_default_level() -> None:
    """AWS::Lambda::Function LoggingConfig: JSON's application log level defaults to INFO; Text has none."""
    spec = read(make_template({}, globals_={"LoggingConfig": {"LogFormat": "JSON"}})).functions["Fn"]
    assert ("JSON", "INFO") == (spec.LogFormat, spec.ApplicationLogLevel)
    spec = read(make_template({})).functions["Fn"]
    assert ("Text", "") == (spec.LogFormat, spec.ApplicationLogLevel)


@pytest.mark.parametrize(("config", "needle"), [
    ({"LogFormat": "Text", "ApplicationLogLevel": "DEBUG"}, "with LogFormat JSON only"),
    ({"LogFormat": "JSON", "ApplicationLogLevel": "VERBOSE"}, "Lambda takes one of TRACE, DEBUG"),
    ({"LogFormat": "Yaml"}, "LogFormat must be Text or JSON"),
])
def test_a_logging_config_lambda_refuses_is_refused(config: dict[str, Any], needle: str) -> None:
    assert any(needle in p for p in problems(make_template({}, function={"LoggingConfig": config})))


def test_sub_in_environment_expands_through_the_resolver() -> None:
    """Fn::Sub: ${Logical.Attribute} and ${AWS::Region} go to the resolver, ${!Literal} stays literal."""
    template = make_template({}, function={"Environment": {"Variables": {
        "V": {"Fn::Sub": "${Queue.Arn}/${AWS::Region}/${!Keep}/${Name}"}}}})
    template.body["Parameters"] = {"Name": {"Type": "String", "Default": "p"}}
    assert "local:Queue.Arn/local:Ref:AWS::Region/${Keep}/p" == read(template).functions["Fn"].Environment["V"]


def test_stream_mapping_defaults_are_awss() -> None:
    """services-ddb-params: BatchSize 100, window 0, retries -1, record age -1, bisect false, parallelization 1."""
    assert (StreamMapping(function="Fn", event="E", table="Table", StartingPosition=StreamPosition.LATEST),) == \
        read(make_template(ddb_event())).stream_mappings


def test_queue_mapping_defaults_are_awss_with_local_concurrency_capped() -> None:
    """services-sqs-parameters: BatchSize 10, window 0; services-sqs-scaling: up to 1,000 concurrent batches
    without ScalingConfig, run locally as LOCAL_MAX_CONCURRENCY."""
    config = read(make_template(sqs_event()))
    assert (QueueMapping(function="Fn", event="E", queue="Queue"),) == config.queue_mappings
    assert (1000, LOCAL_MAX_CONCURRENCY) == (config.queue_mappings[0].MaximumConcurrency,
                                             config.queue_mappings[0].concurrency)
    assert any("runs as 5 concurrent batches" in note for note in config.notes)


def test_function_timeout_over_the_queues_visibility_timeout_is_rejected() -> None:
    """services-sqs-configure: "Lambda ... will return an error if the function timeout exceeds the queue's
    visibility timeout." The queue's VisibilityTimeout defaults to 30 s (AWS::SQS::Queue)."""
    found = problems(make_template(sqs_event(), function={"Timeout": 31}))
    assert 1 == len(found)
    assert "Fn.Events.E: function Fn has Timeout 31 s, more than queue Queue's VisibilityTimeout 30 s" in found[0]


def test_function_timeout_equal_to_the_visibility_timeout_is_accepted() -> None:
    """services-sqs-configure: the timeout "must be less than or equal to the queue's visibility timeout"."""
    config = read(make_template(sqs_event(), function={"Timeout": 30}))
    assert 1 == len(config.queue_mappings)


@pytest.mark.parametrize(("events", "fragment"), [
    (ddb_event(BatchSize=0), "Fn.Events.E.BatchSize: 0 is outside AWS's range 1..10000"),
    (ddb_event(BatchSize=10001), "Fn.Events.E.BatchSize: 10001 is outside AWS's range 1..10000"),
    (ddb_event(MaximumRetryAttempts=-2), "MaximumRetryAttempts: -2 is outside AWS's range -1..10000"),
    (ddb_event(MaximumRecordAgeInSeconds=604801), "MaximumRecordAgeInSeconds: 604801 is outside"),
    (ddb_event(ParallelizationFactor=11), "ParallelizationFactor: 11 is outside AWS's range 1..10"),
    (ddb_event(MaximumBatchingWindowInSeconds=301), "MaximumBatchingWindowInSeconds: 301 is outside"),
    (ddb_event(StartingPosition="AT_TIMESTAMP"), "StartingPosition: 'AT_TIMESTAMP' is not one of"),
    (ddb_event(StartingPosition=None), "StartingPosition: required (TRIM_HORIZON, LATEST)"),
    (ddb_event(Stream="arn:aws:dynamodb:us-east-1:1:table/T/stream/x"), "must be !GetAtt <LogicalId>.StreamArn"),
    (ddb_event(Stream={"Fn::GetAtt": ["NoStreamTable", "StreamArn"]}), "NoStreamTable has no StreamSpecification"),
    (ddb_event(Stream={"Fn::GetAtt": ["Queue", "StreamArn"]}), "Queue is AWS::SQS::Queue, expected"),
    (ddb_event(FunctionResponseTypes=["ReportFailures"]), "FunctionResponseTypes[0]: 'ReportFailures' is not"),
    (ddb_event(DestinationConfig={"OnFailure": {"Destination": {"Fn::GetAtt": ["Missing", "Arn"]}}}),
     "OnFailure.Destination: Missing is not in the template"),
    (ddb_event(FilterCriteria={"Filters": [{"Pattern": '{"eventName": "INSERT"}'}]}),
     "FilterCriteria: FilterCriteria pattern is not valid at Filters[0].Pattern.eventName"),
    (ddb_event(FilterCriteria={"Filters": [{"Pattern": '{"a": ["x"]}'}] * 6}), "6 filters; Lambda allows 5"),
    (sqs_event(BatchSize=0), "Fn.Events.E.BatchSize: 0 is outside AWS's range 1..10000"),
    (sqs_event(BatchSize=10001, MaximumBatchingWindowInSeconds=1), "BatchSize: 10001 is outside"),
    (sqs_event(BatchSize=11), "BatchSize: 11 > 10 needs MaximumBatchingWindowInSeconds >= 1"),
    (sqs_event("Fifo", BatchSize=11, MaximumBatchingWindowInSeconds=1), "BatchSize: 11 is outside AWS's range 1..10"),
    (sqs_event("Fifo", MaximumBatchingWindowInSeconds=1), "MaximumBatchingWindowInSeconds: 1 is outside"),
    (sqs_event(ScalingConfig={"MaximumConcurrency": 1}), "MaximumConcurrency: 1 is outside AWS's range 2..1000"),
    (sqs_event(ScalingConfig={"MaximumConcurrency": 1001}), "MaximumConcurrency: 1001 is outside"),
    (sqs_event("Table"), "Fn.Events.E.Queue: Table is AWS::DynamoDB::Table, expected AWS::SQS::Queue"),
    ({"E": {"Type": "HttpApi", "Properties": {"Path": "/x"}}}, "both Path and Method, or neither"),
    ({"E": {"Type": "HttpApi", "Properties": {"PayloadFormatVersion": "3.0"}}}, "PayloadFormatVersion: '3.0'"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 60 else None)
def test_settings_aws_refuses_are_refused_with_the_setting_named(events: dict[str, Any], fragment: str) -> None:
    """Ranges from services-ddb-params, services-sqs-parameters, API ScalingConfig, CreateEventSourceMapping
    ("Related setting": BatchSize > 10 needs a batching window), sam-property-function-httpapi."""
    found = problems(make_template(events))
    assert any(fragment in problem for problem in found), found


def test_every_problem_is_reported_at_once() -> None:
    """One run lists all problems, so a template is fixed in one go."""
    template = make_template({**ddb_event(BatchSize=0), **{"Q": sqs_event(BatchSize=0)["E"]}},
                             function={"Timeout": 0})
    found = problems(template)
    assert 3 == len(found), found
    assert ["Fn.Timeout", "Fn.Events.E.BatchSize", "Fn.Events.Q.BatchSize"] == [p.split(":")[0] for p in found]


def test_an_event_type_the_emulator_does_not_run_is_refused_by_name() -> None:
    """Only DynamoDB, SQS, HttpApi, Api, S3, SNS, EventBridgeRule, Schedule and ScheduleV2 events run locally; any
    other (here CloudWatch Logs subscriptions, and Kinesis) is refused when the template is read, never half-run
    (DESIGN §14), as is a bare AWS::Lambda::Function."""
    found = problems(make_template({
        "Nightly": {"Type": "CloudWatchLogs", "Properties": {"LogGroupName": "g", "FilterPattern": ""}},
        "Clicks": {"Type": "Kinesis", "Properties": {"Stream": "arn", "StartingPosition": "LATEST"}}},
        extra={"Raw": {"Type": "AWS::Lambda::Function", "Properties": {}}}))
    assert ["Fn.Events.Nightly: event type 'CloudWatchLogs' is not emulated",
            "Fn.Events.Clicks: event type 'Kinesis' is not emulated",
            "Raw: AWS::Lambda::Function is not run by the emulator"] == [p.split(";")[0] for p in found]
    assert all("ScheduleV2" in p for p in found[:2])


def test_event_properties_the_emulator_does_not_run_are_noted() -> None:
    """sam-property-function-dynamodb lists more properties than the emulator reproduces; they are noted."""
    config = read(make_template(ddb_event(TumblingWindowInSeconds=30, ParallelizationFactor=2)))
    assert ["Fn.Events.E.TumblingWindowInSeconds: not emulated, ignored"] == [
        n for n in config.notes if "Tumbling" in n]
    assert 2 == config.stream_mappings[0].ParallelizationFactor


def test_httpapi_without_path_and_method_is_the_default_route() -> None:
    """sam-property-function-httpapi: no Path and Method routes every otherwise unmatched request; format 2.0."""
    config = read(make_template({"Any": {"Type": "HttpApi"}}))
    assert (HttpRoute(function="Fn", event="Any", Path="$default", Method="ANY", PayloadFormatVersion="2.0"),) == \
        config.http_routes


def test_a_parameter_without_default_or_override_is_named() -> None:
    """A !Ref to a parameter that has no Default needs a value from parameters=."""
    template = make_template(sqs_event(), function={"Timeout": {"Ref": "T"}})
    template.body["Parameters"] = {"T": {"Type": "Number"}}
    assert ("Fn.Timeout: {'Ref': 'T'} (= None) is not an integer",) == problems(template)
    assert 20 == EmulatorConfig.from_template(template, FakeResolver(), parameters={"T": 20}).functions["Fn"].Timeout


def test_an_unresolvable_environment_value_names_the_variable() -> None:
    """A !Ref to nothing in the template is an error naming the function and the variable."""
    template = make_template({}, function={"Environment": {"Variables": {"X": {"Ref": "Nowhere"}}}})
    assert ("Fn.Environment.Variables.X: !Ref Nowhere names no parameter or resource of the template",) == \
        problems(template)
