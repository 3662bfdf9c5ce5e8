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
    MAX_FILTERS,
    EmulatorConfig,
    EventRule,
    FunctionResponseType,
    FunctionSpec,
    HttpRoute,
    QueueMapping,
    Resolver,
    S3Notification,
    ScheduleRule,
    ScheduleV2Rule,
    SnsSubscription,
    StreamMapping,
    TemplateConfigError,
)
from seglog_awsmodel.errors import ScheduleExpressionError, ToolError
from seglog_awsmodel.filtering import FilterPatternError, Matcher, compile_filter_criteria
from seglog_awsmodel.http_api_reader import HttpApiReader
from seglog_awsmodel.lambda_logging import APPLICATION_LOG_LEVELS
from seglog_awsmodel.mapping_reader import queue_mapping, queue_spec, stream_mapping
from seglog_awsmodel.notification_reader import event_rule, s3_notification, sns_subscription
from seglog_awsmodel.schedule_expressions import parse_schedule_expression
from seglog_awsmodel.schedule_v2_reader import schedule_v2
from seglog_awsmodel.template import Template

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
        queues = {logical: queue_spec(self, logical, res.get("Properties") or {})
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
            "DynamoDB": (functools.partial(stream_mapping, self), streams), "HttpApi": (http.route, routes),
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
                    mapping = queue_mapping(self, logical, event, props, where, spec, queues)
                    if mapping is not None:
                        queue_mappings.append(mapping)
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
        if level is not None and (log_format != "JSON" or level not in APPLICATION_LOG_LEVELS):
            self._problem(f"{where}.ApplicationLogLevel: {level!r}; Lambda takes one of "
                          f"{', '.join(APPLICATION_LOG_LEVELS)}, with LogFormat JSON only")
            level = None
        return log_format, (level or "INFO") if log_format == "JSON" else ""

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
