"""One child of the supervisor: the HTTP gateway of a function, the poller of one event source mapping, or the
scheduler of one Schedule event.

``python -m seglog_emulator.child gateway:HttpApi`` (or ``stream:Function.Event``, ``queue:Function.Event``,
``schedule:Function.Event``) with :data:`seglog_emulator.settings.ENV_VAR` set. The child reads the template
itself (so a restarted child sees the same configuration), runs its part until SIGTERM, then drains: the batch or
request in flight finishes (and is checkpointed or deleted), the worker processes get their grace period, and it
exits 0.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import structlog

from seglog_awsmodel.config import EmulatorConfig, FunctionSpec, ScheduleV2Rule
from seglog_awsmodel.events.dynamodb_stream import StreamReader
from seglog_awsmodel.template import crash_points_of, emulator_metadata, load_template
from seglog_emulator import logfeed, logs, metrics
from seglog_emulator.access_log import AccessLog
from seglog_emulator.api_auth import IamAuthorizer
from seglog_emulator.artifacts import code_dirs, host_artifact
from seglog_emulator.checkpoints import CheckpointStore
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.gateway import Gateway
from seglog_emulator.iam.evaluation import FunctionPermissions
from seglog_emulator.invoker import LambdaInvoker
from seglog_emulator.lambda_api import ENDPOINT_VARIABLE as LAMBDA_ENDPOINT_VARIABLE
from seglog_emulator.lambda_api import LISTENER_ENV as LAMBDA_LISTENER_ENV
from seglog_emulator.lambda_api import AsyncConfig, AsyncInvoker, LambdaApi, async_configs
from seglog_emulator.notifications import (
    Notification,
    NotificationPoller,
    eventbridge_event,
    kind,
    queue_name,
    s3_event,
    sns_event,
)
from seglog_emulator.pollers import QueuePoller, StreamPoller
from seglog_emulator.pollers.usage import usage_seconds
from seglog_emulator.resolve import LocalResolver
from seglog_emulator.scheduler import Scheduler
from seglog_emulator.settings import LISTENER_ENV, EmulatorSettings
from seglog_stack.clients import local_client
from seglog_stack.provision import resource_name

log = structlog.get_logger("seglog.emulator.child")

#: Concurrent requests the gateway runs (API Gateway has no such limit; this bounds local worker processes).
GATEWAY_CONCURRENCY = 8
#: The children of services notifying functions through a queue, and what each makes of a message.
NOTIFIED: Final[dict[str, Callable[[Any], Any]]] = {"s3": s3_event, "sns": sns_event, "events": eventbridge_event}
#: Overlapping invocations of one scheduled rule (a slow function fired again before it ended; retries).
SCHEDULE_CONCURRENCY = 4


#: How often a child writes its status file (what the demo's live view shows).
STATUS_SECONDS = 0.25


def ready_marker(state_dir: Path, name: str) -> Path:
    return state_dir / "ready" / name.replace(":", "_")


def status_file(state_dir: Path, name: str) -> Path:
    """``{"child", "pid", "function", "in_flight", "async_unfinished", "invocations"}`` (``async_unfinished``: the
    asynchronous events accepted and not done with, retries waiting included), rewritten every
    :data:`STATUS_SECONDS`."""
    return state_dir / "status" / f"{name.replace(':', '_')}.json"


def read_statuses(state_dir: Path) -> list[dict[str, Any]]:
    """The children's last status files (a child that died leaves its last one)."""
    found = []
    for path in sorted((state_dir / "status").glob("*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):  # being replaced right now
            continue
    return found


class Child:
    """Builds and runs one role of the emulator."""

    def __init__(self, name: str, settings: EmulatorSettings) -> None:
        self.name = name
        self.role, _, self.target = name.partition(":")
        self.settings = settings
        deployment = settings.deployment
        self.sqs = local_client("sqs", endpoint_url=deployment.endpoints["sqs"], region=deployment.region)
        self.ddb = local_client("dynamodb", endpoint_url=deployment.endpoints["dynamodb"], region=deployment.region)
        template = load_template(settings.template)
        resolver = LocalResolver(template, stack=settings.stack, region=deployment.region, dynamodb=self.ddb,
                                 sqs=self.sqs, parameters=settings.parameters)
        self.config = EmulatorConfig.from_template(template, resolver, parameters=settings.parameters)
        self._template, self._resolver = template, resolver
        #: The application's invocation hook module (template Metadata SeglogEmulator.InvocationHook), if any.
        self.invocation_hook = emulator_metadata(template).get("InvocationHook")
        #: Each function's crash points (Metadata SeglogEmulator CrashPoints).
        self.crash_points = crash_points_of(template)
        self._permissions: dict[str, FunctionPermissions] | None = None
        runtime = FaultRuntime.from_env()
        self.faults: FaultSchedule | None = runtime.schedule(name, count_start=True) if runtime else None
        self._stop: Any = None
        #: The invokers this child runs functions with (a gateway: one per function of its API).
        self.invokers: list[LambdaInvoker] = []
        #: Asynchronous invocations this child accepted (their retries wait outside any invoker).
        self.asynchronous: list[AsyncInvoker] = []

    def _invoker(self, function: str, concurrency: int) -> LambdaInvoker:
        spec: FunctionSpec = self.config.functions[function]
        level = logging.getLevelNamesMapping()[self.settings.log_level.upper()]
        # The handler logs at info at least while its lines feed the console or the metrics; the invoker's log tap
        # keeps this child's level in what it copies (seglog_emulator.worker_handle).
        if logfeed.address() is not None or metrics.directory() is not None:
            handler_level = logging.getLevelName(min(level, logging.INFO))
        else:
            handler_level = self.settings.log_level.upper()
        spec = dataclasses.replace(spec, Environment={**spec.Environment, "SEGLOG_LOG_LEVEL": handler_level})
        artifact = self.settings.artifact or host_artifact(self.settings.template)
        invoker = LambdaInvoker(spec, code=code_dirs(artifact, function), concurrency=concurrency,
                                iam=self._iam(function), invocation_hook=self.invocation_hook,
                                crash_points=self.crash_points.get(function, ()), log_level=level)
        self.invokers.append(invoker)
        return invoker

    def _iam(self, function: str) -> FunctionPermissions | None:
        """The function's permissions from the template (None with IAM off): worked out once per child."""
        if not self.settings.iam:
            return None
        if self._permissions is None:
            from seglog_emulator.iam.roles import function_permissions

            self._permissions = function_permissions(self._template, stack=self.settings.stack,
                                                     region=self.settings.deployment.region,
                                                     parameters=self.settings.parameters, fallback=self._resolver)
            own = self._permissions[function]
            log.info("iam enforced", function=function, principal=own.caller.session,
                     policies=[p.source for p in own.identity])
        return self._permissions[function]

    def _mapping_client(self, service: str, function: str) -> Any:
        """A client for the calls the Lambda service makes for an event source mapping (receive, delete, read the
        stream, send to OnFailure), evaluated against the function's execution role as on AWS."""
        deployment = self.settings.deployment
        made = local_client(service, endpoint_url=deployment.endpoints[service], region=deployment.region)
        permissions = self._iam(function)
        if permissions is not None:
            from seglog_emulator.iam.guard import EVENT_SOURCE_OPERATIONS, IamGuard

            IamGuard(permissions, only=EVENT_SOURCE_OPERATIONS).attach(made)
        return made

    def run(self) -> None:
        if self.role == "gateway":
            # One port serves the API's routes, each by its function, with the API's CORS and access log.
            routes = [r for r in self.config.http_routes if r.api == self.target]
            api = self.config.http_apis.get(routes[0].ApiId or "") if routes else None
            invokers = {f: self._invoker(f, GATEWAY_CONCURRENCY) for f in dict.fromkeys(r.function for r in routes)}
            authorizer = IamAuthorizer.accepting(self.settings.api_credentials, region=self.settings.deployment.region)
            inherited = os.environ.get(LISTENER_ENV)
            gateway = Gateway(routes, invokers, host=self.settings.host,
                              port=self.settings.port, faults=self.faults, authorizer=authorizer,
                              cors=api.CorsConfiguration if api is not None else None,
                              access_log=AccessLog(api.AccessLogFormat) if api and api.AccessLogFormat else None,
                              sock=socket.socket(fileno=int(inherited)) if inherited else None)
            self._serve(gateway.serve, gateway.stop)
        elif self.role == "stream":
            mapping = next(m for m in self.config.stream_mappings if f"{m.function}.{m.event}" == self.target)
            table = self.ddb.describe_table(TableName=self._name(mapping.table))["Table"]
            reader = StreamReader(self._mapping_client("dynamodbstreams", mapping.function), table["LatestStreamArn"])
            on_failure = self._on_failure(mapping.OnFailure, mapping.function)
            poller = StreamPoller(mapping, self._invoker(mapping.function, 4), reader,
                                  CheckpointStore(self.settings.state_dir / "checkpoints" / f"{self.target}.json"),
                                  region=self.settings.deployment.region, on_failure=on_failure,
                                  faults=self.faults, usage_seconds=usage_seconds(self.settings.alarm_scale))
            self._serve(poller.run, poller.stop)
        elif self.role == "queue":
            mapping_q = next(m for m in self.config.queue_mappings if f"{m.function}.{m.event}" == self.target)
            name = self._name(mapping_q.queue)
            url = self.sqs.get_queue_url(QueueName=name)["QueueUrl"]
            arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            # Duplicate deliveries run beside the batch they copy: room for one each.
            invoker = self._invoker(mapping_q.function, 2 * mapping_q.concurrency)
            queue_poller = QueuePoller(mapping_q, invoker, self._mapping_client("sqs", mapping_q.function),
                                       queue_url=url, queue_arn=arn,
                                       region=self.settings.deployment.region, faults=self.faults)
            self._serve(queue_poller.run, queue_poller.stop)
        elif self.role == "schedule":
            rule = next(r for r in self.config.scheduled() if f"{r.function}.{r.event}" == self.target)
            # A rule's name defaults to CloudFormation's {stack}-{LogicalId}; SAM names a schedule itself.
            name = rule.schedule_name if isinstance(rule, ScheduleV2Rule) else rule.Name or self._name(rule.logical_id)
            scheduler = Scheduler(rule, self._invoker(rule.function, SCHEDULE_CONCURRENCY), rule_name=name,
                                  region=self.settings.deployment.region, scale=self.settings.schedule_scale,
                                  faults=self.faults)
            self._serve(scheduler.run, scheduler.stop)
        elif self.role == "lambda":
            self._serve_lambda_api()
        elif self.role in NOTIFIED:
            found: list[Notification] = [
                *self.config.s3_notifications, *self.config.sns_subscriptions, *self.config.event_rules]
            notification = next(n for n in found if f"{n.function}.{n.event}" == self.target
                                and kind(n) == self.role)
            url = self.sqs.get_queue_url(QueueName=queue_name(self.settings.stack, notification))["QueueUrl"]
            invoker = self._invoker(notification.function, GATEWAY_CONCURRENCY)
            asynchronous = AsyncInvoker(lambda _function: invoker, configs=self._async_configs(), sqs=self.sqs,
                                        region=self.settings.deployment.region, faults=self.faults)
            self.asynchronous.append(asynchronous)
            notifications = NotificationPoller(notification, queue_url=url, sqs=self.sqs, asynchronous=asynchronous,
                                               convert=NOTIFIED[self.role], faults=self.faults)
            self._serve(notifications.run, notifications.stop)
        else:
            raise SystemExit(f"unknown emulator child {self.name!r}: expected gateway:, stream:, queue:, schedule:, "
                             "s3:, sns:, events: or lambda:")

    def _serve_lambda_api(self) -> None:
        """The Lambda Invoke API (:mod:`seglog_emulator.lambda_api`) for every function, each run by an invoker of
        its own, made on its first invocation."""
        names = {spec.name: logical for logical, spec in self.config.functions.items()}  # FunctionName or logical id
        invokers: dict[str, LambdaInvoker] = {}
        lock = threading.Lock()

        def invoker(function: str) -> LambdaInvoker:
            with lock:
                if function not in invokers:
                    invokers[function] = self._invoker(function, GATEWAY_CONCURRENCY)
                return invokers[function]

        api = LambdaApi(names, invoker, configs=self._async_configs(), sqs=self.sqs,
                        region=self.settings.deployment.region, faults=self.faults)
        self.asynchronous.append(api.asynchronous)
        server = api.server(socket.socket(fileno=int(os.environ[LAMBDA_LISTENER_ENV])))
        log.info("lambda api listening", url=os.environ.get(LAMBDA_ENDPOINT_VARIABLE), functions=sorted(names))
        self._serve(server.serve_forever, server.shutdown)

    def _async_configs(self) -> dict[str, AsyncConfig]:
        """Each function's asynchronous handling (EventInvokeConfig, DeadLetterQueue), queues by URL."""
        def queue_url(arn: str) -> str:
            return str(self.sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[-1])["QueueUrl"])

        return async_configs(self._template, self._resolver, queue_url)

    def _name(self, logical: str) -> str:
        """The physical name of one of the template's resources, as `seglog up` named it."""
        return resource_name(self._template.resources, self.settings.stack, logical, self._resolver.parameters)

    def _on_failure(self, destination: str | None, function: str) -> Any:
        if destination is None:
            return None
        url = self.sqs.get_queue_url(QueueName=self._name(destination))["QueueUrl"]
        sqs = self._mapping_client("sqs", function)

        def send(info: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=url, MessageBody=json.dumps(info))
        return send

    def _report_status(self, stopping: threading.Event) -> None:
        path = status_file(self.settings.state_dir, self.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        invokers = self.invokers
        while not stopping.wait(STATUS_SECONDS):
            status = {"child": self.name, "pid": os.getpid(),
                      "function": ", ".join(i.function.logical_id for i in invokers) or None,
                      "in_flight": sum(i.in_flight for i in invokers),
                      "async_unfinished": sum(a.unfinished for a in self.asynchronous),
                      "invocations": sum(i.invocations for i in invokers)}
            tmp.write_text(json.dumps(status))
            os.replace(tmp, path)

    def _serve(self, run: Any, stop: Any) -> None:
        stopping = threading.Event()

        def on_signal(signum: int, _frame: Any) -> None:
            if not stopping.is_set():
                stopping.set()
                log.info("draining", child=self.name, signal=signal.Signals(signum).name)
                threading.Thread(target=stop, daemon=True).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to handle
        marker = ready_marker(self.settings.state_dir, self.name)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(os.getpid()))
        threading.Thread(target=self._report_status, args=(stopping,), daemon=True).start()
        try:
            run()
        finally:
            grace = float(max((f.Timeout for f in self.config.functions.values()), default=30))
            for invoker in self.invokers:
                invoker.close(grace=grace)
            log.info("child stopped", child=self.name)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m seglog_emulator.child ROLE:NAME", file=sys.stderr)
        return 2
    settings = EmulatorSettings.from_env()
    logs.configure_json_lines(settings.log_level)
    logfeed.install(args[0])
    metrics.install()
    structlog.contextvars.bind_contextvars(child=args[0])
    Child(args[0], settings).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
