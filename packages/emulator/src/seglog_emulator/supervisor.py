"""Supervisor: ``seglog emulate`` — runs the template's functions the way AWS runs them (DESIGN §1.4, §9).

From template.yaml it starts, each as its own process (:mod:`seglog_emulator.child`):

* ``gateway:<Api>`` — an HTTP server speaking API Gateway HTTP API payload 2.0 to the functions of one API's
  HttpApi events, each by the function its route names (one base URL for clients);
* ``stream:<Function>.<Event>`` — a DynamoDB Streams poller per stream event source mapping;
* ``queue:<Function>.<Event>`` — an SQS poller per queue event source mapping;
* ``schedule:<Function>.<Event>`` — the scheduled rule of each Schedule event, the schedule of each ScheduleV2 event
  (its clock scaled by ``schedule_scale``);
* ``s3:``, ``sns:``, ``events:<Function>.<Event>`` — the queue a bucket, a topic or an EventBridge rule notifies,
  handed to the function as Lambda's asynchronous invocation (:mod:`seglog_emulator.notifications`).

Each child runs its function's handler in warm worker processes (:class:`~seglog_emulator.invoker.LambdaInvoker`)
with the function's timeout and environment from the template, and logs one structured line per invocation.
The supervisor restarts a child that dies (with backoff), and on SIGTERM or Ctrl-C drains: every child
finishes what it has in flight, checkpoints or deletes, and exits; a child still busy after the drain timeout
is killed. Children die with the supervisor (PR_SET_PDEATHSIG), so a kill -9 of the supervisor — a fault a
chaos run injects — leaves nothing running but the worker processes finishing their invocation.

State (checkpoints, ready markers, the fault log) lives in ``state_dir`` and survives restarts, as an event
source mapping's position survives on AWS.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import structlog

from seglog_awsmodel.config import EmulatorConfig
from seglog_awsmodel.template import Template, crash_points_of, load_template
from seglog_emulator import lambda_api, logfeed, metrics, notifications
from seglog_emulator.alarm_watch import AlarmWatcher, metrics_dir
from seglog_emulator.artifacts import code_dirs, host_artifact
from seglog_emulator.child import ready_marker
from seglog_emulator.errors import EmulatorError
from seglog_emulator.faults.plan import check_crash_points
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.pollers.common import RESTART_EXIT_STATUS
from seglog_emulator.resolve import LocalResolver
from seglog_emulator.settings import ENV_VAR, LISTENER_ENV, EmulatorSettings, listener
from seglog_stack.clients import local_client
from seglog_stack.local import LocalDeployment
from seglog_stack.provision import resource_name

log = structlog.get_logger("seglog.supervisor")

#: The child serving the Lambda Invoke API.
LAMBDA_CHILD = "lambda:api"

STATE_FILE: Final = "emulator.json"
#: Restart backoff: doubles from the base up to the cap, for a child that keeps dying young (a port taken, a
#: template it cannot run). A child that ran this long was healthy, and one a poller_restart fault stopped was
#: stopped on purpose: either starts again after the base pause. Before issue 34 only 30 s of running reset it,
#: which an injected restart every 10-15 s never reached: pollers (and after five quick deaths the gateway) came
#: back 10 s late every time, the queue's worker idle half of a faulty run and the API away 24 s.
RESTART_BASE_SECONDS: Final = 0.5
RESTART_CAP_SECONDS: Final = 8.0
HEALTHY_AFTER_SECONDS: Final = 5.0
#: How soon the API answers again after a restart of any part of the emulator: its gateway (the restart pause and
#: a child's start, about 3 s here), its supervisor (a chaos supervisor_restart: about 5 s here) or the API's
#: worker processes (the next request starts another), with room for a machine three times slower. The listening
#: socket outlives them all, so a request sent meanwhile waits instead of being refused. bench.bench_recovery
#: measures it; the chaos clients' patience is derived from it (seglog_plugin.chaos.workload).
API_RECOVERY_SECONDS: Final = 15.0
_PR_SET_PDEATHSIG: Final = 1


@dataclass
class _Child:
    name: str
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    restarts: int = 0
    next_start: float = 0.0
    exits: list[int] = field(default_factory=list)


def child_names(config: EmulatorConfig) -> list[str]:
    """The children the template needs, in start order (pollers first, then schedules, then gateways)."""
    names = [f"stream:{m.function}.{m.event}" for m in config.stream_mappings if m.Enabled]
    names += [f"queue:{m.function}.{m.event}" for m in config.queue_mappings if m.Enabled]
    names += [f"schedule:{r.function}.{r.event}" for r in config.scheduled() if r.Enabled]
    names += [f"s3:{n.function}.{n.event}" for n in config.s3_notifications]
    names += [f"sns:{n.function}.{n.event}" for n in config.sns_subscriptions]
    names += [f"events:{r.function}.{r.event}" for r in config.event_rules if r.Enabled]
    apis = list(dict.fromkeys(r.api for r in config.http_routes))
    if len(apis) > 1:
        raise EmulatorError(f"the template declares {len(apis)} APIs with routes ({', '.join(apis)}): the "
                            "emulator serves one API per run, on --port; give the routes one ApiId, or run the "
                            "emulator once per API with a template each")
    names += [f"gateway:{api}" for api in apis]
    return names


def _resolver(template: Template, deployment: LocalDeployment, stack: str, parameters: dict[str, Any]
              ) -> LocalResolver:
    region, endpoints = deployment.region, deployment.endpoints
    return LocalResolver(template, stack=stack, region=region,
                         dynamodb=local_client("dynamodb", endpoint_url=endpoints["dynamodb"], region=region),
                         sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region), parameters=parameters)


def read_config(deployment: LocalDeployment, template_path: Path, stack: str, parameters: dict[str, Any]
                ) -> EmulatorConfig:
    """What the emulator runs of the template provisioned as ``deployment`` under ``stack`` (as its supervisor and
    children read it)."""
    template = load_template(template_path)
    return EmulatorConfig.from_template(template, _resolver(template, deployment, stack, parameters),
                                        parameters=parameters)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class Supervisor:
    """Starts, watches and drains the emulator's children.

    Args:
        settings: the run (a port of 0 picks a free one).
        faults: the fault plan's runtime, handed to every child and worker (None: no faults).
        output: where children's log lines go (inherited standard error by default).
        drain_seconds: how long children get to drain on stop; by default the longest function timeout + 5.
    """

    def __init__(self, settings: EmulatorSettings, *, faults: FaultRuntime | None = None,
                 output: IO[Any] | int | None = None, drain_seconds: float | None = None,
                 watch_parent: bool = False) -> None:
        #: The API's listening socket, open for as long as this supervisor runs (inherited from the process that
        #: started it, if that one made it): every gateway child accepts on it, so one that restarts finds its
        #: clients' connections waiting instead of refused.
        try:
            self.listener = listener(settings.host, settings.port)
        except OSError as exc:
            raise EmulatorError(f"the API cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}; "
                                "stop what listens there, or pass another --port (0 picks a free one)") from exc
        settings = dataclasses.replace(settings, port=self.listener.getsockname()[1])
        # Every child runs the same build: made (or found) once, here, when the caller names none.
        artifact = settings.artifact or host_artifact(settings.template)
        settings = dataclasses.replace(settings, artifact=artifact)
        self.settings = settings
        self.faults = faults
        self.output = output
        deployment = settings.deployment
        region, endpoints = deployment.region, deployment.endpoints
        template = load_template(settings.template)
        if faults is not None:
            check_crash_points(faults.plan, crash_points_of(template))
        resolver = _resolver(template, deployment, settings.stack, settings.parameters)
        self.config = EmulatorConfig.from_template(template, resolver, parameters=settings.parameters)
        for function in self.config.functions:  # a manifest without a function, or for another machine: say so now
            code_dirs(artifact, function)
        for note in self.config.notes:
            log.info("template note", note=note)
        longest = max((f.Timeout for f in self.config.functions.values()), default=30)
        self.drain_seconds = drain_seconds if drain_seconds is not None else longest + 5.0
        self.children = {name: _Child(name) for name in child_names(self.config)}
        # Buckets, topics and rules notify queues the s3:, sns: and events: children read
        # (seglog_emulator.notifications).
        def named(logical: str) -> str:
            return resource_name(template.resources, settings.stack, logical, resolver.parameters)

        if self.config.s3_notifications:
            notifications.configure_s3(
                self.config.s3_notifications, stack=settings.stack, bucket_name=named,
                s3=local_client("s3", endpoint_url=endpoints["s3"], region=region),
                sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region))
        if self.config.sns_subscriptions:
            if "sns" not in endpoints:
                raise EmulatorError("the template's SNS events need the stack's SNS endpoint, which this deployment "
                                    "record lacks: run `seglog up` again")
            notifications.configure_sns(
                self.config.sns_subscriptions, stack=settings.stack,
                topic_arn=lambda logical: resolver({"Ref": logical}),
                sns=local_client("sns", endpoint_url=endpoints["sns"], region=region),
                sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region))
        buses = [logical for logical, res in template.resources.items() if res.get("Type") == "AWS::Events::EventBus"]
        if self.config.event_rules or buses:
            if "events" not in endpoints:
                raise EmulatorError("the template's EventBridge rules and buses need the stack's EventBridge endpoint, "
                                    "which this deployment record lacks: run `seglog up` again")
            notifications.configure_rules(
                self.config.event_rules, stack=settings.stack,
                buses=[named(bus) for bus in buses], bus_name=named,
                events=local_client("events", endpoint_url=endpoints["events"], region=region),
                sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region))
        #: The Lambda Invoke API's listening socket, when a function may invoke another (lambda_api.wanted).
        self.lambda_listener: socket.socket | None = None
        if lambda_api.wanted(template):
            self.lambda_listener = socket.create_server((settings.host, 0))
            self.lambda_listener.set_inheritable(True)
            self.children[LAMBDA_CHILD] = _Child(LAMBDA_CHILD)
        #: The template's alarms, evaluated as CloudWatch would on the children's metrics: a thread of this
        #: process (a child of its own would cost every start a Python process for a loop that mostly sleeps).
        self.alarms = AlarmWatcher(template, stack=settings.stack, parameters=settings.parameters,
                                   state_dir=settings.state_dir, time_scale=settings.alarm_scale,
                                   sqs=local_client("sqs", endpoint_url=endpoints["sqs"], region=region))
        self._alarm_thread: threading.Thread | None = None
        self._stopping = threading.Event()
        #: With watch_parent, the parent's pid: when the process that started this one is gone, stop.
        self._parent = os.getppid() if watch_parent else None

    @property
    def api_url(self) -> str:
        return self.settings.api_url

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start every child (returns at once; see :meth:`wait_ready`)."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.settings.state_dir / "ready", ignore_errors=True)
        for child in self.children.values():
            self._spawn(child)
        if self.alarms.alarms:
            self._alarm_thread = threading.Thread(target=self.alarms.run, name="alarms", daemon=True)
            self._alarm_thread.start()
        self._write_state()
        log.info("emulator started", api_url=self.api_url, children=list(self.children),
                 state_dir=str(self.settings.state_dir), seed=self.faults.plan.seed if self.faults else None)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every child has started its loop.

        Raises:
            EmulatorError: a child did not get ready in time (its log says why).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            waiting = [c.name for c in self.children.values()
                       if not ready_marker(self.settings.state_dir, c.name).is_file()]
            if not waiting:
                return
            time.sleep(0.1)
        raise EmulatorError(f"emulator children not ready after {timeout:.0f} s: {waiting}; see their log lines "
                            "above (a template the emulator cannot run, or the local stack is down)")

    def run(self) -> int:
        """Start, watch until SIGTERM/SIGINT, drain. Returns the exit status."""
        def on_signal(signum: int, _frame: Any) -> None:
            log.info("stop requested: draining", signal=signal.Signals(signum).name)
            self._stopping.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self.start()
        while not self._stopping.wait(0.2):
            if self._parent is not None and os.getppid() != self._parent:
                log.warning("the process that started the emulator is gone: stopping")
                break
            self.check()
        self.stop()
        return 0

    def check(self) -> None:
        """Restart children that exited (with backoff); called by :meth:`run` and :meth:`wait_ready`."""
        now = time.monotonic()
        for child in self.children.values():
            if child.proc is None:
                if now >= child.next_start and not self._stopping.is_set():
                    self._spawn(child)
                    self._write_state()
                continue
            status = child.proc.poll()
            if status is None:
                continue
            child.exits.append(status)
            pid = child.proc.pid
            ran = now - child.started
            if ran >= HEALTHY_AFTER_SECONDS or status == RESTART_EXIT_STATUS:
                child.restarts = 0
            delay = min(RESTART_CAP_SECONDS, RESTART_BASE_SECONDS * 2 ** child.restarts)
            child.restarts += 1
            child.proc = None
            child.next_start = now + delay
            log.warning("child exited: restarting", child=child.name, pid=pid, status=status,
                        ran_seconds=round(ran, 1), restart_in=delay)

    def stop(self) -> None:
        """Drain: SIGTERM every child, wait up to the drain timeout, kill what is left."""
        self._stopping.set()
        procs = [c.proc for c in self.children.values() if c.proc is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.drain_seconds
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("child did not drain in time: killed", pid=proc.pid)
                proc.kill()
                proc.wait()
        if self._alarm_thread is not None:
            self.alarms.stop()
            self._alarm_thread.join(timeout=10)
        (self.settings.state_dir / STATE_FILE).unlink(missing_ok=True)
        self.listener.close()
        if self.lambda_listener is not None:
            self.lambda_listener.close()
        log.info("emulator stopped")

    def restart_child(self, name: str) -> None:
        """kill -9 one child (a poller_restart); :meth:`check` starts it again."""
        child = self.children[name]
        if child.proc is not None and child.proc.poll() is None:
            child.proc.kill()

    # ------------------------------------------------------------------------------------------ internals

    def _spawn(self, child: _Child) -> None:
        env = {**os.environ, **self.settings.deployment.env(), ENV_VAR: self.settings.to_json(),
               metrics.ENV_VAR: str(metrics_dir(self.settings.state_dir))}
        if self.faults is not None:
            env.update(self.faults.env())
        passed: tuple[int, ...] = ()
        env.pop(LISTENER_ENV, None)
        if child.name.startswith("gateway:"):
            passed = (self.listener.fileno(),)
            env[LISTENER_ENV] = str(passed[0])
        if self.lambda_listener is not None:  # every worker's SDK reaches the Lambda API (lambda.invoke)
            host, port = self.lambda_listener.getsockname()[:2]
            env[lambda_api.ENDPOINT_VARIABLE] = f"http://{host}:{port}"
            if child.name == LAMBDA_CHILD:
                passed = (self.lambda_listener.fileno(),)
                env[lambda_api.LISTENER_ENV] = str(passed[0])
        ready_marker(self.settings.state_dir, child.name).unlink(missing_ok=True)
        child.proc = subprocess.Popen(
            [sys.executable, "-m", "seglog_emulator.child", child.name], env=env, stdin=subprocess.DEVNULL,
            stdout=self.output, stderr=self.output, start_new_session=True, preexec_fn=die_with_parent,
            pass_fds=passed)
        child.started = time.monotonic()
        log.info("child started", child=child.name, pid=child.proc.pid)

    def _write_state(self) -> None:
        state = {"pid": os.getpid(), "api_url": self.api_url,
                 "children": {c.name: c.proc.pid for c in self.children.values() if c.proc is not None},
                 "seed": self.faults.plan.seed if self.faults else None}
        path = self.settings.state_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, path)


def die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the supervisor dies (Linux prctl PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def main() -> int:
    """``python -m seglog_emulator.supervisor [--watch-parent]``: the settings and fault plan come from the
    environment (how ``seglog chaos`` starts, kills and restarts a supervisor of its own); with
    ``--watch-parent`` it stops when the process that started it is gone."""
    from seglog_emulator import logs

    settings = EmulatorSettings.from_env()
    logs.configure_json_lines(settings.log_level)
    logfeed.install("supervisor")
    return Supervisor(settings, faults=FaultRuntime.from_env(), watch_parent="--watch-parent" in sys.argv).run()


if __name__ == "__main__":
    raise SystemExit(main())
