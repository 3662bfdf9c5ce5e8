"""What the emulator runs, read from template.yaml: functions, event source mappings, HTTP routes (DESIGN §1.5).

The template is the only description of the topology; this module reads it the way SAM and Lambda would and
keeps AWS's names (BatchSize, MaximumRetryAttempts, FilterCriteria, ...) so every setting can be looked up in
the AWS documentation. Defaults are AWS's, cited where they are set. A template AWS would refuse is refused
here, with every problem listed at once (:class:`TemplateConfigError`); what the emulator does not run (event
types other than DynamoDB, SQS, HttpApi and Schedule, properties it does not emulate) is ignored and recorded in
:attr:`EmulatorConfig.notes`; an authorizer it cannot enforce (JWT, Lambda) is refused rather than left open.

Intrinsics: ``!Ref`` to a template parameter is resolved here (the parameter's Default, or an override passed
in). ``!Sub`` is expanded here. Everything else that names a resource or a pseudo parameter (``!Ref Table``,
``!GetAtt Queue.Arn``, ``!Ref AWS::Region``) goes to the ``resolve`` callback, so the caller maps it to the
local physical name (``seglog_stack.provision.Provisioner.resolve`` fits).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import structlog

from seglog_awsmodel.cors import CorsConfiguration
from seglog_awsmodel.errors import ModelError
from seglog_awsmodel.filtering import Matcher
from seglog_awsmodel.schedule_expressions import ScheduleExpression, SchedulerExpression
from seglog_awsmodel.template import Template, TemplateError

log = structlog.get_logger("seglog.emulator.config")

Resolver = Callable[[Any], Any]
"""Maps ``{"Ref": resource-or-pseudo-parameter}`` or ``{"Fn::GetAtt": [logical, attribute]}`` to a local value."""

FUNCTION_TYPE: Final = "AWS::Serverless::Function"

#: The emulator runs at most this many SQS batches of one mapping at a time, whatever ScalingConfig says. AWS's
#: ceiling is 1,000 ("The maximum number of batches that an event source mapping can process simultaneously is
#: 1,000", AWS Lambda Developer Guide, services-sqs-scaling); locally every invocation is a worker process on a
#: small machine, and 5 concurrent batches already exercise every interleaving DESIGN §7 needs.
LOCAL_MAX_CONCURRENCY: Final = 5
#: Lambda's default quota of filters per event source mapping ("By default, you can define up to five different
#: filters for a single event source mapping", invocation-eventfiltering; a quota increase allows up to 10).
MAX_FILTERS: Final = 5


class StreamPosition(StrEnum):
    """StartingPosition of a DynamoDB event source mapping (services-ddb-params: "TRIM_HORIZON or LATEST")."""

    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"


class FunctionResponseType(StrEnum):
    """FunctionResponseTypes values (Lambda API Reference, CreateEventSourceMapping: "ReportBatchItemFailures")."""

    REPORT_BATCH_ITEM_FAILURES = "ReportBatchItemFailures"


class TemplateConfigError(ModelError, TemplateError):
    """template.yaml describes something AWS would refuse, or the emulator cannot run.

    Attributes:
        path: the template file.
        problems: one sentence per problem, each naming the resource and setting.
    """

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = tuple(problems)
        listed = "\n  - ".join(self.problems)
        super().__init__(f"{path}: fix these before the emulator (or AWS) can run the template:\n  - {listed}")


# ------------------------------------------------------------------------------------------------ specs


@dataclass(frozen=True, kw_only=True)
class FunctionSpec:
    """One AWS::Serverless::Function: what to import and how to run it. The template reader makes one per
    function, and :class:`~seglog_emulator.invoker.LambdaInvoker` runs exactly that (tests make their own, with
    Lambda's defaults for what they leave out)."""

    #: The function's logical id (log lines, the emulator's lanes).
    logical_id: str
    #: Its explicit FunctionName, resolved ("" when the template gives none): see :attr:`name`.
    FunctionName: str = ""
    #: "module.function", e.g. "seglog_services.stream_router.handler"; the module may be dotted.
    Handler: str
    Runtime: str = "python3.13"
    #: Seconds; after this the invocation is killed and counts as failed (DESIGN §9.9). Lambda's default is 3.
    Timeout: float = 3
    #: MB, informational: reported by the context, not enforced.
    MemorySize: int = 128
    #: LoggingConfig.LogFormat: "Text" (Lambda's default) or "JSON" (the standard library's log as JSON lines).
    LogFormat: str = "Text"
    #: LoggingConfig.ApplicationLogLevel ("" with the Text format, which has none; JSON's default is INFO).
    ApplicationLogLevel: str = ""
    #: Globals' variables merged with the function's own (the function's win), values resolved; set over the
    #: invoker's own environment in every worker.
    Environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The name it runs under locally: its FunctionName when the template gives one (CloudFormation keeps it,
        and handlers hard-code it in ``lambda.invoke``), else its logical id, which is what ``!Ref`` gives locally
        (CloudFormation would generate ``<stack>-<LogicalId>-<suffix>``, reached the same way: by ``!Ref``)."""
        return self.FunctionName or self.logical_id

    @property
    def handler_module(self) -> str:
        return self.Handler.rpartition(".")[0]

    @property
    def handler_function(self) -> str:
        return self.Handler.rpartition(".")[2]


@dataclass(frozen=True, kw_only=True)
class QueueSpec:
    """One AWS::SQS::Queue, as far as the emulator's checks need it."""

    logical_id: str
    #: Seconds (AWS::SQS::Queue: default 30).
    VisibilityTimeout: int
    FifoQueue: bool
    #: Logical id of the RedrivePolicy's deadLetterTargetArn queue, if any.
    dead_letter_queue: str | None
    maxReceiveCount: int | None


@dataclass(frozen=True, kw_only=True)
class StreamMapping:
    """A DynamoDB event of a function: an event source mapping on a table's stream (services-ddb-params)."""

    function: str
    #: The event's name under the function's Events.
    event: str
    #: Logical id of the table whose stream is read (the X of ``!GetAtt X.StreamArn``).
    table: str
    StartingPosition: StreamPosition
    BatchSize: int = 100
    MaximumBatchingWindowInSeconds: int = 0
    #: -1 means infinite: retried until the record expires.
    MaximumRetryAttempts: int = -1
    #: -1 means infinite.
    MaximumRecordAgeInSeconds: int = -1
    BisectBatchOnFunctionError: bool = False
    ParallelizationFactor: int = 1
    FunctionResponseTypes: tuple[FunctionResponseType, ...] = ()
    #: Logical id of DestinationConfig.OnFailure's destination (a queue or topic), if any.
    OnFailure: str | None = None
    FilterCriteria: tuple[Matcher, ...] = ()
    Enabled: bool = True

    @property
    def reports_batch_item_failures(self) -> bool:
        return FunctionResponseType.REPORT_BATCH_ITEM_FAILURES in self.FunctionResponseTypes


@dataclass(frozen=True, kw_only=True)
class QueueMapping:
    """An SQS event of a function: an event source mapping on a queue (services-sqs-parameters)."""

    function: str
    event: str
    #: Logical id of the queue (the X of ``!GetAtt X.Arn``).
    queue: str
    BatchSize: int = 10
    MaximumBatchingWindowInSeconds: int = 0
    #: ScalingConfig.MaximumConcurrency as AWS would apply it (1,000 when unset); see :attr:`concurrency`.
    MaximumConcurrency: int = 1000
    FunctionResponseTypes: tuple[FunctionResponseType, ...] = ()
    FilterCriteria: tuple[Matcher, ...] = ()
    Enabled: bool = True

    @property
    def concurrency(self) -> int:
        """Batches run at once locally: MaximumConcurrency capped at :data:`LOCAL_MAX_CONCURRENCY`."""
        return min(self.MaximumConcurrency, LOCAL_MAX_CONCURRENCY)

    @property
    def reports_batch_item_failures(self) -> bool:
        return FunctionResponseType.REPORT_BATCH_ITEM_FAILURES in self.FunctionResponseTypes


#: The one authorizer the emulator enforces: IAM (SigV4), as SAM names it.
AWS_IAM: Final = "AWS_IAM"


#: The logical id SAM gives the implicit HTTP API its functions' HttpApi events without an ApiId share
#: (AWS SAM Developer Guide, sam-property-function-httpapi: "ServerlessHttpApi").
IMPLICIT_HTTP_API: Final = "ServerlessHttpApi"
#: The logical id of SAM's implicit REST API, which Api events without a RestApiId share (sam-property-function-api).
IMPLICIT_REST_API: Final = "ServerlessRestApi"


@dataclass(frozen=True, kw_only=True)
class HttpRoute:
    """An HttpApi event of a function (sam-property-function-httpapi), or an Api event (a REST API's method:
    sam-property-function-api), which ``Rest`` marks; a REST API's events are payload format 1.0."""

    function: str
    event: str
    #: "/{proxy+}", or "$default" when the event names neither Path nor Method.
    Path: str
    Method: str
    PayloadFormatVersion: str = "2.0"
    #: Logical id of the AWS::Serverless::HttpApi of the event's ApiId; None for SAM's implicit API.
    ApiId: str | None = None
    #: The route's authorizer after SAM's rules (the event's Auth.Authorizer, else the API's DefaultAuthorizer):
    #: :data:`AWS_IAM`, or None for an open route.
    Authorizer: str | None = None
    #: An Api event: a REST API's method (its ApiId is the RestApiId).
    Rest: bool = False
    #: The stage the API is deployed to (a REST API's StageName; the implicit one's is "Prod").
    Stage: str = "$default"

    @property
    def api(self) -> str:
        """The logical id of the API the route belongs to (SAM's implicit one's when the event names none)."""
        return self.ApiId or (IMPLICIT_REST_API if self.Rest else IMPLICIT_HTTP_API)


@dataclass(frozen=True, kw_only=True)
class HttpApiSpec:
    """An AWS::Serverless::HttpApi (sam-resource-httpapi): what its gateway enforces before a function runs."""

    logical_id: str
    #: Auth.DefaultAuthorizer: :data:`AWS_IAM` (with Auth.EnableIamAuthorizer), or None.
    DefaultAuthorizer: str | None = None
    EnableIamAuthorizer: bool = False
    CorsConfiguration: CorsConfiguration | None = None
    #: AccessLogSettings.Format: the gateway writes one line per request in it (the destination is the stage's
    #: log group on AWS; the emulator's log here).
    AccessLogFormat: str | None = None


@dataclass(frozen=True, kw_only=True)
class S3Notification:
    """An S3 event of a function: the bucket's notification SAM configures, invoking the function asynchronously
    for each object event that matches (sam-property-function-s3)."""

    function: str
    event: str
    #: Logical id of the AWS::S3::Bucket (SAM requires one of the same template).
    bucket: str
    #: S3 event types: "s3:ObjectCreated:*", "s3:ObjectRemoved:Delete", ...
    events: tuple[str, ...]
    #: Filter.S3Key.Rules: ("prefix" | "suffix", value) pairs.
    rules: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class SnsSubscription:
    """An SNS event of a function: its subscription to a topic, invoking the function asynchronously with each
    message the filter policy passes (sam-property-function-sns)."""

    function: str
    event: str
    #: Logical id of the AWS::SNS::Topic.
    topic: str
    #: The subscription's FilterPolicy as JSON text, if any, and its scope.
    filter_policy: str | None = None
    scope: str = "MessageAttributes"


@dataclass(frozen=True, kw_only=True)
class GeneratedRule:
    """An event of a function for which SAM generates an AWS::Events::Rule (Schedule, EventBridgeRule)."""

    function: str
    event: str

    @property
    def logical_id(self) -> str:
        """The AWS::Events::Rule SAM generates: the function's logical id followed by the event's name."""
        return f"{self.function}{self.event}"


@dataclass(frozen=True, kw_only=True)
class EventRule(GeneratedRule):
    """An EventBridgeRule (or CloudWatchEvent, its older name) event of a function: the rule SAM makes on an event
    bus with the event's pattern, invoking the function asynchronously with each event the pattern matches
    (sam-property-function-eventbridgerule)."""

    #: The event pattern as JSON text.
    Pattern: str
    #: The bus's name: "default", a literal name, or the physical name of the template's AWS::Events::EventBus.
    EventBusName: str = "default"
    #: Logical id of the template's AWS::Events::EventBus when the event names one (the emulator creates it).
    bus: str | None = None
    #: JSON text the target gets instead of the event, or a JSONPath selecting the part it gets (not both).
    Input: str | None = None
    InputPath: str | None = None
    #: The rule's name if the event gives one; otherwise CloudFormation names it (:attr:`logical_id`).
    RuleName: str | None = None
    Enabled: bool = True


@dataclass(frozen=True, kw_only=True)
class ScheduleRule(GeneratedRule):
    """A Schedule event of a function: the EventBridge rule SAM makes for it, invoking the function
    asynchronously at each time ``Schedule`` names (sam-property-function-schedule)."""

    Schedule: ScheduleExpression
    #: The rule's name if the event gives one; otherwise CloudFormation names it after the stack and the rule's
    #: logical id (:attr:`logical_id`).
    Name: str | None = None
    Enabled: bool = True
    #: The event's Input: JSON text sent instead of the scheduled event ("nothing from the event text itself
    #: is passed to the target"), None for the scheduled event itself.
    Input: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScheduleV2Rule(GeneratedRule):
    """A ScheduleV2 event of a function: the EventBridge Scheduler schedule SAM makes for it (an
    AWS::Scheduler::Schedule), invoking the function asynchronously at each time ``Schedule`` names
    (sam-property-function-schedulev2)."""

    Schedule: SchedulerExpression
    #: ScheduleExpressionTimezone as an IANA name; cron() and at() read the clocks there.
    Timezone: str = "UTC"
    #: The schedule's name (SAM's default: the function's logical id followed by the event's name) and group.
    Name: str | None = None
    GroupName: str = "default"
    Enabled: bool = True
    #: JSON text the function gets, context attributes such as <aws.scheduler.scheduled-time> replaced; None for
    #: Scheduler's default notification.
    Input: str | None = None
    #: FlexibleTimeWindow: Mode FLEXIBLE's MaximumWindowInMinutes, 0 for Mode OFF.
    FlexibleWindowMinutes: int = 0
    #: StartDate and EndDate (aware): no invocation before the one or after the other.
    StartDate: dt.datetime | None = None
    EndDate: dt.datetime | None = None

    @property
    def schedule_name(self) -> str:
        return self.Name or self.logical_id


@dataclass(frozen=True, kw_only=True)
class EmulatorConfig:
    """Everything the emulator runs, in template order."""

    functions: dict[str, FunctionSpec]
    queues: dict[str, QueueSpec]
    stream_mappings: tuple[StreamMapping, ...]
    queue_mappings: tuple[QueueMapping, ...]
    http_routes: tuple[HttpRoute, ...]
    schedules: tuple[ScheduleRule, ...] = ()
    s3_notifications: tuple[S3Notification, ...] = ()
    sns_subscriptions: tuple[SnsSubscription, ...] = ()
    event_rules: tuple[EventRule, ...] = ()
    schedules_v2: tuple[ScheduleV2Rule, ...] = ()
    #: The template's AWS::Serverless::HttpApi resources by logical id.
    http_apis: dict[str, HttpApiSpec] = field(default_factory=dict)
    #: What was ignored or adjusted, one sentence each (also logged).
    notes: tuple[str, ...] = field(default=())

    def scheduled(self) -> tuple[ScheduleRule | ScheduleV2Rule, ...]:
        """The Schedule and ScheduleV2 events: each is run by a schedule: child."""
        return (*self.schedules, *self.schedules_v2)

    @classmethod
    def from_template(cls, template: Template, resolve: Resolver, *,
                      parameters: Mapping[str, Any] | None = None) -> EmulatorConfig:
        """Read the functions, mappings and routes of ``template``.

        Args:
            template: the parsed template.yaml.
            resolve: maps resource and pseudo-parameter intrinsics to local values (see the module docstring).
            parameters: overrides of template parameters (as ``--parameter-overrides`` would give them).

        Raises:
            TemplateConfigError: with every problem found, e.g. a BatchSize out of AWS's range or a function
                timeout longer than its queue's visibility timeout.
        """
        from seglog_awsmodel.template_reader import TemplateReader  # it builds the specs defined here

        return TemplateReader(template, resolve, parameters or {}).read()
