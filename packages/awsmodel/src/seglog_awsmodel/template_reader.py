"""Reading template.yaml into the emulator's specs (:mod:`seglog_awsmodel.config`): one pass over the template,
collecting specs, every problem and notes, with AWS's defaults and ranges cited where they are applied."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final

from seglog_awsmodel.config import (
    FUNCTION_TYPE,
    LOCAL_MAX_CONCURRENCY,
    MAX_FILTERS,
    EmulatorConfig,
    EventRule,
    FunctionResponseType,
    FunctionSpec,
    HttpRoute,
    QueueMapping,
    QueueSpec,
    Resolver,
    S3Notification,
    ScheduleRule,
    ScheduleV2Rule,
    SnsSubscription,
    StreamMapping,
    StreamPosition,
    TemplateConfigError,
)
from seglog_awsmodel.errors import ScheduleExpressionError, ToolError
from seglog_awsmodel.filtering import FilterPatternError, Matcher, compile_filter_criteria
from seglog_awsmodel.http_api_reader import HttpApiReader
from seglog_awsmodel.notification_reader import event_rule, s3_notification, sns_subscription
from seglog_awsmodel.schedule_expressions import parse_schedule_expression
from seglog_awsmodel.schedule_v2_reader import schedule_v2
from seglog_awsmodel.template import Template

#: DynamoDB event properties the emulator reads; others are ignored with a note (sam-property-function-dynamodb).
_DYNAMODB_PROPERTIES: Final = frozenset({
    "Stream", "StartingPosition", "BatchSize", "MaximumBatchingWindowInSeconds", "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds", "BisectBatchOnFunctionError", "ParallelizationFactor", "FunctionResponseTypes",
    "DestinationConfig", "FilterCriteria", "Enabled",
})
#: SQS event properties the emulator reads (sam-property-function-sqs).
#: LoggingConfig.ApplicationLogLevel's values (AWS::Lambda::Function LoggingConfig).
_APPLICATION_LOG_LEVELS: Final = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_SQS_PROPERTIES: Final = frozenset({
    "Queue", "BatchSize", "MaximumBatchingWindowInSeconds", "ScalingConfig", "FunctionResponseTypes",
    "FilterCriteria", "Enabled",
})
#: Schedule event properties the emulator reads (sam-property-function-schedule); Description only describes.
_SCHEDULE_PROPERTIES: Final = frozenset({"Schedule", "Enabled", "State", "Input", "Name", "Description"})
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")


class TemplateReader:
    """One pass over a template, collecting specs, problems and notes."""

    def __init__(self, template: Template, resolve: Resolver, overrides: Mapping[str, Any]) -> None:
        self.template = template
        self.resolve = resolve
        self.resources = template.resources
        self.parameters: dict[str, Any] = {**template.parameters, **overrides}
        self.problems: list[str] = []
        self.notes: list[str] = []

    def read(self) -> EmulatorConfig:
        queues = {logical: self._queue(logical, res.get("Properties") or {})
                  for logical, res in self.resources.items() if res.get("Type") == "AWS::SQS::Queue"}
        http = HttpApiReader(self)
        apis = http.read_apis()
        functions: dict[str, FunctionSpec] = {}
        streams: list[StreamMapping] = []
        queue_mappings: list[QueueMapping] = []
        routes: list[HttpRoute] = []
        schedules: list[ScheduleRule] = []
        notifications: list[S3Notification] = []
        subscriptions: list[SnsSubscription] = []
        rules: list[EventRule] = []
        schedules_v2: list[ScheduleV2Rule] = []
        # Each event type's reader (function, event, properties, where -> its spec, or None with the problem
        # recorded) and the list its specs go to; SQS's reader also needs the function's spec and the queues.
        readers: dict[str, tuple[Callable[[str, str, Mapping[str, Any], str], Any], list[Any]]] = {
            "DynamoDB": (self._stream_mapping, streams), "HttpApi": (http.route, routes),
            "Api": (http.rest_route, routes), "S3": (functools.partial(s3_notification, self), notifications),
            "SNS": (functools.partial(sns_subscription, self), subscriptions),
            "EventBridgeRule": (functools.partial(event_rule, self), rules),
            "CloudWatchEvent": (functools.partial(event_rule, self), rules),
            "Schedule": (self._schedule, schedules), "ScheduleV2": (functools.partial(schedule_v2, self), schedules_v2),
        }
        for logical, res in self.resources.items():
            if res.get("Type") == "AWS::Lambda::Function":  # refused, never half-run (DESIGN §14)
                self._problem(f"{logical}: AWS::Lambda::Function is not run by the emulator; declare it as "
                              f"{FUNCTION_TYPE}")
            if res.get("Type") != FUNCTION_TYPE:
                continue
            spec = self._function(logical, res.get("Properties") or {})
            if spec is not None:
                functions[logical] = spec
            for event, body in ((res.get("Properties") or {}).get("Events") or {}).items():
                where = f"{logical}.Events.{event}"
                kind = body.get("Type") if isinstance(body, Mapping) else None
                props = (body.get("Properties") if isinstance(body, Mapping) else None) or {}
                if kind == "SQS":
                    queue_mapping = self._queue_mapping(logical, event, props, where, spec, queues)
                    if queue_mapping is not None:
                        queue_mappings.append(queue_mapping)
                elif isinstance(kind, str) and kind in readers:
                    read, found = readers[kind]
                    made = read(logical, event, props, where)
                    if made is not None:
                        found.append(made)
                else:  # refused by name, never half-run (DESIGN §14): the app would miss these deliveries
                    self._problem(f"{where}: event type {kind!r} is not emulated; the emulator runs DynamoDB, "
                                  "SQS, HttpApi, Api, S3, SNS, EventBridgeRule (CloudWatchEvent), Schedule and "
                                  "ScheduleV2 events: remove this event (or the function) from the template you "
                                  "emulate")
        if self.problems:
            raise TemplateConfigError(self.template.path, self.problems)
        return EmulatorConfig(functions=functions, queues=queues, stream_mappings=tuple(streams),
                              queue_mappings=tuple(queue_mappings), http_routes=tuple(routes),
                              schedules=tuple(schedules), s3_notifications=tuple(notifications),
                              sns_subscriptions=tuple(subscriptions), event_rules=tuple(rules),
                              schedules_v2=tuple(schedules_v2), http_apis=apis,
                              notes=tuple(self.notes))

    # ------------------------------------------------------------------------------------ resources

    def _function(self, logical: str, own: Mapping[str, Any]) -> FunctionSpec | None:
        # Globals (sam-specification-template-anatomy-globals): a function's own property replaces the global
        # one, except maps such as Environment.Variables, which are merged with the function's keys winning.
        global_props: Mapping[str, Any] = (self.template.body.get("Globals") or {}).get("Function") or {}
        props = {**global_props, **own}
        variables = {**_variables(global_props), **_variables(own)}
        where = logical
        handler = props.get("Handler")
        runtime = props.get("Runtime")
        if not isinstance(handler, str) or "." not in handler.strip("."):
            self._problem(f"{where}.Handler: {handler!r} is not 'module.function'")
        if not isinstance(runtime, str):
            self._problem(f"{where}.Runtime: missing (set it on the function or in Globals.Function)")
        # AWS::Serverless::Function (sam-resource-function) and Lambda's CreateFunction: Timeout defaults to 3 s,
        # 1..900; MemorySize defaults to 128 MB, 128..10,240.
        timeout = self._int(props.get("Timeout", 3), f"{where}.Timeout", low=1, high=900)
        memory = self._int(props.get("MemorySize", 128), f"{where}.MemorySize", low=128, high=10240)
        environment: dict[str, str] = {}
        for name, value in variables.items():
            text = self._text(value, f"{where}.Environment.Variables.{name}")
            if text is not None:
                environment[name] = text
        explicit = self._text(props["FunctionName"], f"{where}.FunctionName") if "FunctionName" in props else None
        if not isinstance(handler, str) or not isinstance(runtime, str) or timeout is None or memory is None:
            return None
        log_format, log_level = self._logging_config(props.get("LoggingConfig") or {}, f"{where}.LoggingConfig")
        return FunctionSpec(logical_id=logical, FunctionName=explicit or "", Handler=handler, Runtime=runtime,
                            Timeout=timeout, MemorySize=memory, Environment=environment, LogFormat=log_format,
                            ApplicationLogLevel=log_level)

    def _logging_config(self, config: Any, where: str) -> tuple[str, str]:
        """LoggingConfig's format and application log level (AWS::Lambda::Function LoggingConfig: LogFormat Text or
        JSON; ApplicationLogLevel only with JSON, whose default is INFO; LogGroup and SystemLogLevel change nothing
        a handler sees)."""
        log_format = config.get("LogFormat", "Text") if isinstance(config, Mapping) else None
        if log_format not in ("Text", "JSON"):
            self._problem(f"{where}: LogFormat must be Text or JSON, got {log_format!r}")
            return "Text", ""
        level = config.get("ApplicationLogLevel")
        if level is not None and (log_format != "JSON" or level not in _APPLICATION_LOG_LEVELS):
            self._problem(f"{where}.ApplicationLogLevel: {level!r}; Lambda takes one of "
                          f"{', '.join(_APPLICATION_LOG_LEVELS)}, with LogFormat JSON only")
            level = None
        return log_format, (level or "INFO") if log_format == "JSON" else ""

    def _queue(self, logical: str, props: Mapping[str, Any]) -> QueueSpec:
        where = logical
        # AWS::SQS::Queue: VisibilityTimeout defaults to 30 s, 0..43,200.
        visibility = self._int(props.get("VisibilityTimeout", 30), f"{where}.VisibilityTimeout", low=0, high=43200)
        redrive = props.get("RedrivePolicy") or {}
        dead_letter = None
        max_receive = None
        if redrive:
            dead_letter = self._target(redrive.get("deadLetterTargetArn"), "Arn", ("AWS::SQS::Queue",),
                                       f"{where}.RedrivePolicy.deadLetterTargetArn")
            max_receive = self._int(redrive.get("maxReceiveCount"), f"{where}.RedrivePolicy.maxReceiveCount",
                                    low=1, high=1000)
        return QueueSpec(logical_id=logical, VisibilityTimeout=30 if visibility is None else visibility,
                         FifoQueue=self._bool(props.get("FifoQueue", False), f"{where}.FifoQueue"),
                         dead_letter_queue=dead_letter, maxReceiveCount=max_receive)

    # ------------------------------------------------------------------------------------ events

    def _stream_mapping(self, function: str, event: str, props: Mapping[str, Any],
                        where: str) -> StreamMapping | None:
        # Defaults and ranges: AWS Lambda Developer Guide, services-ddb-params (BatchSize 100, max 10,000;
        # MaximumBatchingWindowInSeconds 0; MaximumRecordAgeInSeconds -1, max 604,800; MaximumRetryAttempts -1,
        # max 10,000; ParallelizationFactor 1, max 10; BisectBatchOnFunctionError false; StartingPosition
        # required, TRIM_HORIZON or LATEST) and the SAM page sam-property-function-dynamodb. The SAM page gives
        # BatchSize a maximum of 1,000; Lambda's own pages say 10,000, which is what Lambda enforces.
        self._note_unread(props, _DYNAMODB_PROPERTIES, where)
        table = self._target(props.get("Stream"), "StreamArn", ("AWS::DynamoDB::Table",), f"{where}.Stream")
        if table is not None and not (self.resources[table].get("Properties") or {}).get("StreamSpecification"):
            self._problem(f"{where}.Stream: table {table} has no StreamSpecification, so it has no stream")
        position = self._choice(props.get("StartingPosition"), StreamPosition, f"{where}.StartingPosition")
        batch = self._int(props.get("BatchSize", 100), f"{where}.BatchSize", low=1, high=10000)
        window = self._int(props.get("MaximumBatchingWindowInSeconds", 0), f"{where}.MaximumBatchingWindowInSeconds",
                           low=0, high=300)
        retries = self._int(props.get("MaximumRetryAttempts", -1), f"{where}.MaximumRetryAttempts",
                            low=-1, high=10000)
        age = self._int(props.get("MaximumRecordAgeInSeconds", -1), f"{where}.MaximumRecordAgeInSeconds",
                        low=-1, high=604800)
        parallel = self._int(props.get("ParallelizationFactor", 1), f"{where}.ParallelizationFactor", low=1, high=10)
        if parallel is not None and parallel > 1:
            self._note(f"{where}.ParallelizationFactor: {parallel} is read; one batch per shard runs at a time "
                       "locally (DESIGN §9.1)")
        on_failure = None
        destination = ((props.get("DestinationConfig") or {}).get("OnFailure") or {})
        if destination:
            on_failure = self._target(destination.get("Destination"), "Arn", ("AWS::SQS::Queue", "AWS::SNS::Topic"),
                                      f"{where}.DestinationConfig.OnFailure.Destination")
        filters = self._filters(props.get("FilterCriteria"), f"{where}.FilterCriteria")
        responses = self._response_types(props.get("FunctionResponseTypes"), f"{where}.FunctionResponseTypes")
        bisect = self._bool(props.get("BisectBatchOnFunctionError", False), f"{where}.BisectBatchOnFunctionError")
        enabled = self._bool(props.get("Enabled", True), f"{where}.Enabled")
        if (table is None or position is None or batch is None or window is None or retries is None or age is None
                or parallel is None or filters is None or responses is None):
            return None
        return StreamMapping(function=function, event=event, table=table, StartingPosition=position,
                             BatchSize=batch, MaximumBatchingWindowInSeconds=window, MaximumRetryAttempts=retries,
                             MaximumRecordAgeInSeconds=age, BisectBatchOnFunctionError=bisect,
                             ParallelizationFactor=parallel, FunctionResponseTypes=responses, OnFailure=on_failure,
                             FilterCriteria=filters, Enabled=enabled)

    def _queue_mapping(self, function: str, event: str, props: Mapping[str, Any], where: str,
                       spec: FunctionSpec | None, queues: Mapping[str, QueueSpec]) -> QueueMapping | None:
        # Defaults and ranges: AWS Lambda Developer Guide, services-sqs-parameters (BatchSize 10; "For standard
        # queues, the maximum is 10,000. For FIFO queues, the maximum is 10."; MaximumBatchingWindowInSeconds 0,
        # "Batching window is not supported for FIFO queues"), Lambda API Reference ScalingConfig
        # (MaximumConcurrency 2..1,000) and sam-property-function-sqs.
        self._note_unread(props, _SQS_PROPERTIES, where)
        queue = self._target(props.get("Queue"), "Arn", ("AWS::SQS::Queue",), f"{where}.Queue")
        queue_spec = queues.get(queue) if queue is not None else None
        fifo = queue_spec is not None and queue_spec.FifoQueue
        batch = self._int(props.get("BatchSize", 10), f"{where}.BatchSize", low=1, high=10 if fifo else 10000)
        window = self._int(props.get("MaximumBatchingWindowInSeconds", 0), f"{where}.MaximumBatchingWindowInSeconds",
                           low=0, high=0 if fifo else 300)
        # "For streams and Amazon SQS event sources, when you set BatchSize to a value greater than 10, you must set
        # MaximumBatchingWindowInSeconds to at least 1" (Lambda API Reference, CreateEventSourceMapping). Checked
        # for SQS only: the stream defaults themselves (BatchSize 100, window 0) contradict it for streams.
        if batch is not None and window is not None and batch > 10 and window < 1:
            self._problem(f"{where}.BatchSize: {batch} > 10 needs MaximumBatchingWindowInSeconds >= 1 "
                          "(CreateEventSourceMapping, 'Related setting')")
        scaling = props.get("ScalingConfig") or {}
        concurrency = self._int(scaling.get("MaximumConcurrency", 1000),
                                f"{where}.ScalingConfig.MaximumConcurrency", low=2, high=1000)
        if concurrency is not None and concurrency > LOCAL_MAX_CONCURRENCY:
            self._note(f"{where}.ScalingConfig.MaximumConcurrency: {concurrency} runs as {LOCAL_MAX_CONCURRENCY} "
                       "concurrent batches locally (LOCAL_MAX_CONCURRENCY)")
        if spec is not None and queue_spec is not None:
            self._check_visibility(spec, queue_spec, where)
        filters = self._filters(props.get("FilterCriteria"), f"{where}.FilterCriteria")
        responses = self._response_types(props.get("FunctionResponseTypes"), f"{where}.FunctionResponseTypes")
        enabled = self._bool(props.get("Enabled", True), f"{where}.Enabled")
        if (queue is None or batch is None or window is None or concurrency is None or filters is None
                or responses is None):
            return None
        return QueueMapping(function=function, event=event, queue=queue, BatchSize=batch,
                            MaximumBatchingWindowInSeconds=window, MaximumConcurrency=concurrency,
                            FunctionResponseTypes=responses, FilterCriteria=filters, Enabled=enabled)

    def _check_visibility(self, spec: FunctionSpec, queue: QueueSpec, where: str) -> None:
        # "Your function's timeout must be less than or equal to the queue's visibility timeout. Lambda validates
        # this requirement when you create or update an event source mapping and will return an error if the
        # function timeout exceeds the queue's visibility timeout." (AWS Lambda Developer Guide,
        # services-sqs-configure). DESIGN §9.8.
        if spec.Timeout > queue.VisibilityTimeout:
            self._problem(f"{where}: function {spec.logical_id} has Timeout {spec.Timeout} s, more than queue "
                          f"{queue.logical_id}'s VisibilityTimeout {queue.VisibilityTimeout} s; Lambda refuses "
                          "such a mapping (services-sqs-configure): raise the visibility timeout (AWS advises six "
                          "times the function timeout) or lower the function's")
        elif queue.VisibilityTimeout < 6 * spec.Timeout:
            # Same page: "set the source queue's visibility timeout to at least six times the configuration
            # timeout on your function". Advice, not a rule.
            self._note(f"{where}: queue {queue.logical_id}'s VisibilityTimeout {queue.VisibilityTimeout} s is "
                       f"less than 6 x the function's Timeout {spec.Timeout} s that AWS recommends")

    def _schedule(self, function: str, event: str, props: Mapping[str, Any], where: str) -> ScheduleRule | None:
        # sam-property-function-schedule: SAM makes an AWS::Events::Rule with ScheduleExpression = Schedule and
        # the function as its target. "Specify either the Enabled or State property, but not both"; Enabled true
        # passes State ENABLED, false DISABLED. Input is "valid JSON text passed to the target".
        self._note_unread(props, _SCHEDULE_PROPERTIES, where)
        expression = self._expression(props.get("Schedule"), parse_schedule_expression, "a rate() or cron()",
                                      f"{where}.Schedule")
        enabled = True
        if "Enabled" in props and "State" in props:
            self._problem(f"{where}: set Enabled or State, not both (sam-property-function-schedule)")
        elif "State" in props:
            state = self._parameter(props["State"])
            if state not in ("ENABLED", "DISABLED"):
                self._problem(f"{where}.State: {state!r} is neither ENABLED nor DISABLED")
            enabled = state == "ENABLED"
        else:
            enabled = self._bool(props.get("Enabled", True), f"{where}.Enabled")
        payload = self._parameter(props.get("Input"))
        if payload is not None:
            try:
                parsed = json.loads(payload)
            except (TypeError, ValueError):
                parsed = None
            if not isinstance(parsed, dict):
                self._problem(f"{where}.Input: {payload!r} is not the JSON text of an object (the function gets it "
                              "as its event; the emulator passes objects only)")
                payload = None
        name = self._parameter(props.get("Name"))
        if name is not None and not isinstance(name, str):
            self._problem(f"{where}.Name: {name!r} is not a string")
        if expression is None or not (name is None or isinstance(name, str)):
            return None
        return ScheduleRule(function=function, event=event, Schedule=expression, Name=name, Enabled=enabled,
                            Input=payload)

    # ------------------------------------------------------------------------------------ values

    def _expression[E](self, raw: Any, parse: Callable[[str], E], kinds: str, where: str) -> E | None:
        """A required schedule expression read by ``parse`` (``kinds`` names what it reads), or None with the
        problem recorded."""
        text = self._parameter(raw)
        if not isinstance(text, str):
            self._problem(f"{where}: required, {kinds} expression, got {text!r}")
            return None
        try:
            return parse(text)
        except ScheduleExpressionError as exc:
            self._problem(f"{where}: {exc}")
            return None

    def _problem(self, text: str) -> None:
        self.problems.append(text)

    def _note(self, text: str) -> None:
        self.notes.append(text)  # the supervisor logs them once; each child reads the template too

    def _note_unread(self, props: Mapping[str, Any], known: frozenset[str], where: str) -> None:
        for name in props:
            if name not in known:
                self._note(f"{where}.{name}: not emulated, ignored")

    def _parameter(self, value: Any) -> Any:
        """``value`` with a ``!Ref`` to a template parameter replaced by the parameter's value."""
        if isinstance(value, Mapping) and set(value) == {"Ref"} and value["Ref"] in self.parameters:
            return self.parameters[value["Ref"]]
        return value

    def _int(self, raw: Any, where: str, *, low: int, high: int) -> int | None:
        value = self._parameter(raw)
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            number = int(value)
        if number is None:
            shown = f"{raw!r} (= {value!r})" if raw is not value else repr(value)
            self._problem(f"{where}: {shown} is not an integer")
            return None
        if not low <= number <= high:
            self._problem(f"{where}: {number} is outside AWS's range {low}..{high}")
            return None
        return number

    def _bool(self, value: Any, where: str) -> bool:
        value = self._parameter(value)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        self._problem(f"{where}: {value!r} is not true or false")
        return False

    def _choice[E: StrEnum](self, value: Any, choices: type[E], where: str) -> E | None:
        value = self._parameter(value)
        try:
            return choices(value)
        except ValueError:
            allowed = ", ".join(choices)
            self._problem(f"{where}: {value!r} is not one of {allowed}" if value is not None
                          else f"{where}: required ({allowed})")
            return None

    def _response_types(self, value: Any, where: str) -> tuple[FunctionResponseType, ...] | None:
        items = value or []
        if not isinstance(items, list):
            self._problem(f"{where}: must be a list")
            return None
        found = [self._choice(item, FunctionResponseType, f"{where}[{i}]") for i, item in enumerate(items)]
        return tuple(t for t in found if t is not None) if all(found) else None

    def _filters(self, value: Any, where: str) -> tuple[Matcher, ...] | None:
        try:
            matchers = compile_filter_criteria(value)
        except FilterPatternError as exc:
            self._problem(f"{where}: {exc}")
            return None
        if len(matchers) > MAX_FILTERS:
            self._problem(f"{where}: {len(matchers)} filters; Lambda allows {MAX_FILTERS} per mapping unless a "
                          "quota increase (up to 10) was granted (invocation-eventfiltering)")
            return None
        return matchers

    def _target(self, value: Any, attribute: str, types: tuple[str, ...], where: str) -> str | None:
        """The logical id X of ``!GetAtt X.<attribute>``, checked to be a resource of one of ``types``."""
        arn = value.get("Fn::GetAtt") if isinstance(value, Mapping) and set(value) == {"Fn::GetAtt"} else None
        if not (isinstance(arn, list) and len(arn) == 2 and arn[1] == attribute):
            self._problem(f"{where}: must be !GetAtt <LogicalId>.{attribute} of a resource in this template, got "
                          f"{value!r}; the emulator maps logical ids to local resources, not literal ARNs")
            return None
        logical = str(arn[0])
        type_ = (self.resources.get(logical) or {}).get("Type")
        if type_ not in types:
            self._problem(f"{where}: {logical} is {'not in the template' if type_ is None else type_}, "
                          f"expected {' or '.join(types)}")
            return None
        return logical

    def _text(self, value: Any, where: str) -> str | None:
        """An environment value as the string Lambda would see, intrinsics resolved."""
        value = self._parameter(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        if isinstance(value, Mapping) and len(value) == 1:
            (key, arg), = value.items()
            if key == "Fn::Sub":
                return self._sub(arg, where)
            if key == "Ref" and isinstance(arg, str) and not arg.startswith("AWS::") and arg not in self.resources:
                self._problem(f"{where}: !Ref {arg} names no parameter or resource of the template")
                return None
            try:
                resolved = self.resolve(value)
            except (ToolError, LookupError, ValueError) as exc:
                self._problem(f"{where}: cannot resolve {value!r}: {exc}")
                return None
            if isinstance(resolved, Mapping | list) or resolved is None:
                self._problem(f"{where}: the resolver left {value!r} unresolved ({resolved!r})")
                return None
            return self._text(resolved, where)
        self._problem(f"{where}: {value!r} is not a string, number or supported intrinsic")
        return None

    def _sub(self, arg: Any, where: str) -> str | None:
        """Fn::Sub: ``${Name}``, ``${Logical.Attribute}``, ``${!Literal}``; the list form adds a variable map."""
        if isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str) and isinstance(arg[1], Mapping):
            text, variables = arg[0], arg[1]
        elif isinstance(arg, str):
            text, variables = arg, {}
        else:
            self._problem(f"{where}: malformed !Sub {arg!r}")
            return None
        failed = False

        def replace(match: re.Match[str]) -> str:
            nonlocal failed
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                target: Any = variables[name]
            elif "." in name and not name.startswith("AWS::"):
                target = {"Fn::GetAtt": name.split(".", 1)}
            else:
                target = {"Ref": name}
            out = self._text(target, f"{where} (${{{name}}})")
            failed = failed or out is None
            return out or ""

        result = _SUB_VARIABLE.sub(replace, text)
        return None if failed else result


def _variables(props: Mapping[str, Any]) -> dict[str, Any]:
    return dict(((props.get("Environment") or {}).get("Variables")) or {})
