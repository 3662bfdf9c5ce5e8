"""One application up for one run: provisioned under a stack of its own, emulated under a fault plan (or none),
settled, and taken down — what a chaos run (:mod:`.runner`) and the pytest plugin (:mod:`seglog_emulator.pytest_plugin`)
both do around the user's code::

    with AppSession(...) as session:      # provision, emulator up, faults on
        workload(session.app)
        session.settle()                  # faults on until quiet (bounded), faults off, quiet again
        check(session.app)
                                          # emulator down, stack deleted (the notification queues too)
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from seglog_awsmodel.faults import FaultKind
from seglog_emulator import jsonlog
from seglog_emulator.appchaos.app import App
from seglog_emulator.appchaos.coverage import triggers_of
from seglog_emulator.appchaos.quiet import Busy, busy, wait_quiet
from seglog_emulator.errors import EmulatorError
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.notifications import Notification, queue_name
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor import STATE_FILE, read_config
from seglog_emulator.supervisor_process import SupervisorProcess
from seglog_stack import local
from seglog_stack.clients import local_client

log = jsonlog.get_logger("seglog.appchaos")

#: The supervisor_restart decision is taken once per tick while the app runs under faults.
TICK_SECONDS: Final = 3.0
#: After faults stop, the app must be quiet within this (else the run fails: it never settled).
QUIET_TIMEOUT: Final = 120.0
#: After the workload returns, faults stay on until the app is quiet, or this long at most: the functions run
#: behind the workload (queues, streams, retries) and must meet the faults too.
FAULT_TAIL: Final = 60.0


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where an app runs: the local stack and the template, with its parameters."""

    template: Path
    endpoints: dict[str, str]
    profile: str
    region: str
    parameters: dict[str, Any] = field(default_factory=dict)
    iam: bool = True
    artifact: Path | None = None
    #: How many times faster than real time the template's schedules run (60: a rate(1 minute) fires every second).
    schedule_scale: float = 1.0


@dataclass
class Settled:
    """How settling went: the seconds until quiet after faults stopped (None: never), and the last look."""

    quiet_seconds: float | None
    last: Busy


class AppSession:
    """The app of ``target`` provisioned as ``stack`` and emulated under ``plan``, its files in ``directory``
    (``emulator.log``, ``emulator/``, ``faults/``)."""

    def __init__(self, target: Target, *, stack: str, directory: Path, plan: FaultPlan | None, seed: int,
                 run: int = 0, quiet_timeout: float = QUIET_TIMEOUT, fault_tail: float = FAULT_TAIL) -> None:
        self.target, self.stack, self.directory = target, stack, directory
        # The workers log what each invocation writes: a differing record is then named with who wrote it.
        self.runtime = FaultRuntime(plan, directory / "faults", record_writes=True) if plan is not None else None
        self.seed, self.run = seed, run
        self.quiet_timeout, self.fault_tail = quiet_timeout, fault_tail
        self.log_file = directory / "emulator.log"
        self.supervisor: SupervisorProcess | None = None
        self._app: App | None = None
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None
        #: The kinds of trigger the app has, once it is up (:func:`.coverage.triggers_of`).
        self.triggers: set[str] = set()

    @property
    def app(self) -> App:
        if self._app is None:
            raise EmulatorError("the app is not up: use the session as a context manager")
        return self._app

    def __enter__(self) -> AppSession:
        self.directory.mkdir(parents=True, exist_ok=True)
        delete_stack(self.target, self.stack)  # what a run interrupted before its clean-up left
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _start(self) -> None:
        target = self.target
        log.info("app: provisioning", stack=self.stack, seed=self.seed, faulted=self.runtime is not None)
        deployment = local.provision(target.endpoints, profile=target.profile, region=target.region,
                                     template=target.template, stack_name=self.stack, parameters=target.parameters)
        state = self.directory / "emulator"
        settings = EmulatorSettings(deployment=deployment, template=target.template, stack=self.stack,
                                    state_dir=state, parameters=target.parameters, iam=target.iam,
                                    artifact=target.artifact, schedule_scale=target.schedule_scale)
        if self.runtime is not None:
            self.runtime.start()
        self.supervisor = SupervisorProcess(settings, self.runtime, self.log_file)
        log.info("app: starting the emulator", stack=self.stack)
        self.supervisor.start()
        self._app = App(deployment=deployment, apis=_apis(state, self.supervisor.api_url), seed=self.seed,
                        run=self.run, parameters=target.parameters, settler=self._settle_or_fail,
                        credentials=settings.api_credentials[0])
        sqs = self._app.client("sqs")
        config = read_config(deployment, target.template, self.stack, target.parameters)
        self.triggers = triggers_of(config)
        feeding = [deployment.names[m.queue] for m in config.queue_mappings if m.queue in deployment.names]
        notified: list[Notification] = [*config.s3_notifications, *config.sns_subscriptions, *config.event_rules]
        feeding += [sqs.get_queue_url(QueueName=queue_name(self.stack, n))["QueueUrl"] for n in notified]
        self._feeding = feeding
        self._ticker = threading.Thread(target=self._ticks, daemon=True)
        self._ticker.start()

    def busy(self) -> Busy:
        """What is in flight and queued now."""
        return busy(self.directory / "emulator", self.app.client("sqs"), self._feeding)

    def settle(self) -> Settled:
        """Faults on until the app is quiet (at most ``fault_tail`` seconds), then off; the emulator started again
        if a fault had just killed it; then wait until quiet (at most ``quiet_timeout``)."""
        if self.runtime is not None:
            log.info("app: faults on until quiet", stack=self.stack)
            wait_quiet(self.busy, timeout=self.fault_tail)
        self._stop_ticks()
        if self.runtime is not None:
            self.runtime.stop()
        supervisor = self.supervisor
        if supervisor is not None and (supervisor.proc is None or supervisor.proc.poll() is not None):
            supervisor.start()  # killed at the very end: what was delivered must still be handled
        log.info("app: faults off, waiting until quiet", stack=self.stack)
        took, last = wait_quiet(self.busy, timeout=self.quiet_timeout)
        log.info("app: settled" if took is not None else "app: never quiet", stack=self.stack, quiet_seconds=took,
                 busy=str(last))
        return Settled(took, last)

    def _settle_or_fail(self) -> None:
        settled = self.settle()
        if settled.quiet_seconds is None:
            raise AssertionError(f"the app was not quiet {self.quiet_timeout:.0f} s after faults stopped: "
                                 f"{settled.last}")

    @property
    def restarts(self) -> int:
        return self.supervisor.restarts if self.supervisor is not None else 0

    def close(self) -> None:
        """Stop the emulator and delete the stack (idempotent)."""
        self._stop_ticks()
        if self.supervisor is not None:
            log.info("app: stopping the emulator", stack=self.stack)
            self.supervisor.stop()
            self.supervisor = None
        delete_stack(self.target, self.stack)

    def _stop_ticks(self) -> None:
        self._done.set()
        if self._ticker is not None and self._ticker.is_alive():
            self._ticker.join()

    def _ticks(self) -> None:
        """The supervisor_restart decisions, one per tick while faults are on."""
        if self.runtime is None or FaultKind.SUPERVISOR_RESTART not in self.runtime.plan.specs:
            return
        schedule = self.runtime.schedule("chaos")
        tick = 0
        while not self._done.wait(TICK_SECONDS):
            tick += 1
            if schedule.decide(FaultKind.SUPERVISOR_RESTART, f"supervisor:{tick}") and self.supervisor is not None:
                log.warning("supervisor restart (injected fault)", tick=tick)
                try:
                    self.supervisor.restart()
                except EmulatorError as exc:
                    log.error("supervisor did not come back", error=str(exc))


def delete_stack(target: Target, stack: str) -> None:
    """Delete the stack's resources and the emulator's notification queues of it (named after the stack)."""
    try:
        local.deprovision(target.endpoints, region=target.region, stack_name=stack, template=target.template,
                          parameters=target.parameters)
        sqs = local_client("sqs", endpoint_url=target.endpoints["sqs"], region=target.region)
        for url in sqs.list_queues(QueueNamePrefix=f"{stack}-").get("QueueUrls", []):
            sqs.delete_queue(QueueUrl=url)
    except Exception as exc:  # a clean-up that fails leaves scratch behind, never a lost verdict
        log.warning("could not delete the run's stack", stack=stack, error=str(exc))


def _apis(state: Path, url: str) -> dict[str, str]:
    """The API the emulator serves, by its logical id (its gateway child's name)."""
    children = json.loads((state / STATE_FILE).read_text()).get("children", [])
    return {name.partition(":")[2]: url for name in children if name.startswith("gateway:")}
