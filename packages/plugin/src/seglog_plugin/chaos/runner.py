"""ChaosRunner: one chaos run = a supervisor under a seeded fault plan, client workloads through the HTTP API,
faults stopped, quiescence awaited, DESIGN §6's invariants verified (issue 4, point 4).

A run, step by step:

1. a fresh state directory; the supervisor (``python -m seglog_emulator.supervisor``) is started as its own
   process with the run's fault plan in its environment, and every child reports ready;
2. the run's sheets are created and edited by concurrent clients (:mod:`.workload`) while a
   :class:`~.watch.SnapshotWatcher` notes when each Snapshot entry appears and completes, and a tick
   thread kills -9 and restarts the whole supervisor (supervisor_restart) and redrives the dead-letter queue
   (redrive) when the schedule says so; with the dlq kind the run's queue parks jobs in the DLQ early
   (:mod:`.dead_letters`);
3. faults stop (every process's schedule goes quiet through the run's ``off`` switch, the DLQ is redriven)
   and the runner waits for quiescence: every Snapshot entry complete, no pending item, an empty queue (I5,
   within a bound);
4. each sheet is verified (I1-I6, quiescent) with the entry ids the clients were told were appended (I2);
5. the supervisor drains and stops; its log (one JSON line per invocation, per job outcome, per crash point
   reached) and the shared fault log are read into a :class:`RunReport`.

Every fault decision is a pure function of (seed, kind, site) and sites are built from request content, so a
failing seed replays with ``seglog chaos --seed S --runs 1``: the same decisions at the same sites (timing still
differs, so a site that depends on timing — a claim's time stamp — may be visited or not).
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog

from seglog_awsmodel.faults import FaultKind
from seglog_core.crashpoints import WORKER_CRASH_POINTS
from seglog_core.violations import Violation
from seglog_emulator.appchaos.kinds import APP_RATES, HOOKED_RATES
from seglog_emulator.errors import EmulatorError
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.runtime import LOG_FILE, FaultRuntime
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.supervisor_process import SupervisorProcess
from seglog_emulator.usage import Usage
from seglog_plugin.chaos import timeline
from seglog_plugin.chaos.coverage import Target
from seglog_plugin.chaos.dead_letters import DeadLetterFaults, claims_stale_after, stack_update
from seglog_plugin.chaos.runlog import tally
from seglog_plugin.chaos.verdict import await_quiescence, verify_sheets
from seglog_plugin.chaos.watch import (
    QueueDepths,
    SnapshotLife,
    SnapshotWatcher,
    percentile,
    queue_depth,
)
from seglog_plugin.chaos.workload import ApiClient, ClientStats, Workload
from seglog_plugin.resources import backend_of, resources_of
from seglog_report.model import RunData, Series
from seglog_stack.local import LocalDeployment

log = structlog.get_logger("seglog.chaos")

#: Template parameters of the chaos stack: snapshots often, and a short worker timeout with a visibility
#: timeout and takeover time to match, so a crashed job comes back in seconds, not minutes.
CHAOS_PARAMETERS: Final[dict[str, Any]] = {
    "SnapshotEvery": 10, "SnapshotWorkerTimeout": 3, "SnapshotQueueVisibilityTimeout": 5,
    "SnapshotTakeoverSeconds": 4, "ApiTimeout": 4,
}
CHAOS_STACK: Final = "seglog-chaos"
#: Rates of `--faults all` in a chaos run: each kind fires often enough in a short run to matter, none so
#: often that a run never finishes. worker_crash is high so that 20 runs reach every crash point.
DEFAULT_RATES: Final[dict[FaultKind, float]] = {
    **APP_RATES, **HOOKED_RATES,  # the tool's rates for any app, and for crash points and clock skew
    # dlq is decided once per run: half the runs park jobs in the DLQ. redrive once per tick (about every
    # 10 s). mixed_version per delivery, like worker_crash, so that builds meet both versions.
    FaultKind.DLQ: 0.5, FaultKind.REDRIVE: 0.3, FaultKind.MIXED_VERSION: 0.2,
}
#: The supervisor_restart and redrive decisions are taken once per tick of the workload phase.
RESTART_TICK_SECONDS: Final = 3.0
#: After the clients are done, faults stay on this long (or until every snapshot so far completed): the
#: pipeline runs behind the clients, and its workers must meet the faults too.
FAULT_TAIL_SECONDS: Final = 6.0
#: The report's time series of the two queues' depths, sampled while the run goes.
SNAPSHOT_QUEUE_DEPTH: Final = "snapshot queue depth"
DLQ_DEPTH: Final = "DLQ depth"
#: I5's bound: after faults stop, everything completes within this.
QUIESCENCE_SECONDS: Final = 120.0


def default_plan(seed: int, faults: str = "all", rate: float | None = None) -> FaultPlan:
    """The plan of ``--faults`` for a chaos run: named kinds at :data:`DEFAULT_RATES` (or ``rate``), a kind
    given as ``kind=rate`` at its own rate; worker_crash names the snapshot worker's points (the coverage rounds
    narrow them to the missed ones)."""
    mapping = FaultPlan.from_flags(faults, rate=rate if rate is not None else 0.05, seed=seed).to_mapping()
    explicit = {part.split("=", 1)[0].strip() for part in faults.split(",") if "=" in part}
    for name, entry in mapping["faults"].items():
        if rate is None and name not in explicit:
            entry["rate"] = DEFAULT_RATES[FaultKind(name)]
        if name == FaultKind.WORKER_CRASH:
            entry["crash_points"] = list(WORKER_CRASH_POINTS)
    return FaultPlan.from_mapping(mapping, source="--faults")


@dataclass
class RunReport:
    """What one run did and whether the invariants held."""

    run: int
    seed: int
    violations: list[Violation] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    crash_points_hit: dict[str, int] = field(default_factory=dict)
    job_outcomes: dict[str, int] = field(default_factory=dict)
    invocations: dict[str, dict[str, int]] = field(default_factory=dict)
    usage: Usage = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)
    snapshots: int = 0
    snapshot_latency: list[float] = field(default_factory=list)
    quiescence_seconds: float | None = None
    seconds: float = 0.0
    supervisor_restarts: int = 0
    child_restarts: int = 0
    #: What reached the dead-letter queue and what was redriven (:class:`.dead_letters.DeadLetterTally`).
    dead_letters: dict[str, int] = field(default_factory=dict)
    #: Invocations run as another code version and the builds they touched (:class:`.runlog.RunLog`).
    mixed_version: dict[str, int] = field(default_factory=dict)
    log_file: str = ""
    log_ids: list[str] = field(default_factory=list)
    #: What the run armed beyond the campaign's plan, for crash points and kinds earlier runs missed.
    targets: list[Target] = field(default_factory=list)
    #: The run as the report draws it (timeline, latencies, metered usage).
    data: RunData | None = None
    #: Stopped by Ctrl-C (or SIGTERM) before it was verified; drawn from what its log held.
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in ("snapshot_latency", "data")}
        data["ok"] = self.ok
        data["targets"] = [t.to_dict() for t in self.targets]
        data["violations"] = [v.to_dict() for v in self.violations]
        data["snapshot_latency_p50"] = percentile(self.snapshot_latency, 50)
        data["snapshot_latency_p99"] = percentile(self.snapshot_latency, 99)
        return data


@dataclass
class RunProgress:
    """What a run's monitor is shown, several times a second (the demo's live view)."""

    phase: str
    stats: ClientStats
    watcher: SnapshotWatcher | None
    runtime: FaultRuntime | None
    state_dir: Path
    planned_edits: int


class ChaosRunner:
    """Runs chaos runs against one provisioned chaos deployment.

    Args:
        deployment: the chaos stack's resources (provisioned with :data:`CHAOS_PARAMETERS`).
        template: template.yaml.
        state_dir: one subdirectory per run (logs, checkpoints, the fault log).
        workload: what the clients do in each run.
        parameters: the template parameters the deployment was provisioned with.
        artifact: the code the functions run (:mod:`seglog_emulator.artifacts`); None: each supervisor finds the
            host twin itself (cached).
    """

    def __init__(self, deployment: LocalDeployment, *, template: Path, state_dir: Path, workload: Workload,
                 parameters: dict[str, Any], stack: str = CHAOS_STACK, quiescence_seconds: float = QUIESCENCE_SECONDS,
                 log_level: str = "INFO", artifact: Path | None = None) -> None:
        self.deployment = deployment
        self.template = template
        self.artifact = artifact
        self.state_dir = state_dir
        self.workload = workload
        self.parameters = parameters
        self.stack = stack
        self.quiescence_seconds = quiescence_seconds
        self.log_level = log_level
        self.backend = backend_of(deployment)

    def run(self, run: int, plan: FaultPlan | None, *, seed: int | None = None,
            monitor: Callable[[RunProgress], None] | None = None) -> RunReport:
        """One run under ``plan`` (None: no faults; ``seed`` then names the workload); never raises for what
        the run finds — it reports it. ``monitor`` is called from a thread about four times a second.

        A KeyboardInterrupt (Ctrl-C) while the run goes stops it as an error would — clients, faults, the
        emulator — and the run is returned drawn from what its log holds, ``interrupted`` and with a RUN violation
        (it was never verified); the caller decides what to do next."""
        seed = plan.seed if plan is not None else (seed or 0)
        report = RunReport(run=run, seed=seed)
        started = time.monotonic()
        started_at = time.time()
        run_dir = self.state_dir / f"run-{run:03d}-seed-{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        # Stream checkpoints are shared by every run (an event source mapping keeps its position); the rest
        # of the state is the run's own.
        state = self.state_dir / "emulator"
        runtime = FaultRuntime(plan, run_dir / "faults") if plan is not None else None
        if runtime is not None:
            runtime.start()
        dlq_url = resources_of(self.deployment).dlq_url
        dead_letters = DeadLetterFaults(
            self.backend.sqs, queue_url=resources_of(self.deployment).queue_url, dlq_url=dlq_url,
            parameters=self.parameters, update=stack_update(self.deployment, template=self.template, stack=self.stack),
            schedule=runtime.schedule("chaos") if runtime is not None else None,
            depth=lambda: queue_depth(self.backend, dlq_url), stale_after=claims_stale_after(self.parameters, plan))
        settings = EmulatorSettings(deployment=self.deployment, template=self.template, stack=self.stack,
                                    state_dir=state, parameters=dead_letters.begin(),
                                    log_level=self.log_level, artifact=self.artifact)
        report.log_file = str(run_dir / "emulator.log")
        supervisor = SupervisorProcess(settings, runtime, Path(report.log_file))
        settings = supervisor.settings  # with the port its listening socket took
        stats = ClientStats()
        log_ids: list[uuid.UUID] = []
        watcher: SnapshotWatcher | None = None
        progress = RunProgress(phase="starting the emulator", stats=stats, watcher=None, runtime=runtime,
                               state_dir=state, planned_edits=self.workload.planned_edits)
        stop_monitor = threading.Event()
        depths = QueueDepths(self.backend, {SNAPSHOT_QUEUE_DEPTH: resources_of(self.deployment).queue_url,
                                            DLQ_DEPTH: dlq_url})
        threading.Thread(target=_monitor, args=(monitor, progress, stop_monitor, depths.sample), daemon=True).start()
        done = threading.Event()  # the ticks' end
        ticker: threading.Thread | None = None
        stop_clients = threading.Event()
        try:
            supervisor.start()
            progress.phase = "clients editing"
            # The clients sign as the API requires, with a key the emulator accepts (DESIGN §10.3).
            credentials = settings.api_credentials[0]
            client = ApiClient(settings.api_url, stats, credentials)
            log_ids = self.workload.create(client, seed, run)
            watcher = progress.watcher = SnapshotWatcher(self.backend, log_ids).start()
            ticker = threading.Thread(target=self._ticks, args=(supervisor, runtime, dead_letters, done),
                                      daemon=True)
            ticker.start()
            self.workload.run(settings.api_url, log_ids, seed, stats, credentials, stop=stop_clients)
            tail_end = time.monotonic() + FAULT_TAIL_SECONDS
            while time.monotonic() < tail_end and watcher.incomplete():
                time.sleep(0.2)
            done.set()
            ticker.join()
            if runtime is not None:
                runtime.stop()
            dead_letters.stop()
            progress.phase = "faults off: waiting for quiescence"
            if supervisor.proc is None or supervisor.proc.poll() is not None:
                supervisor.start()  # killed at the very end: the pipeline still has to drain
            report.quiescence_seconds = self._await_quiescence(log_ids, watcher, report)
            progress.phase = "verifying I1-I6"
            dead_letters.tally.left = self._verify(log_ids, stats, report)
            report.violations += watcher.order_violations()
        except KeyboardInterrupt:
            log.warning("run interrupted: stopping the emulator, then drawing the run from its log (Ctrl-C again "
                        "quits without it)", run=run, seed=seed, phase=progress.phase)
            report.interrupted = True
            report.violations.append(Violation(invariant="RUN", message=f"interrupted while {progress.phase}: "
                                               "never verified; drawn from what its log holds"))
            stop_clients.set()
            if runtime is not None:
                runtime.stop()
        except Exception as exc:  # the run could not complete: that is a finding, with its reason
            log.error("chaos run failed", run=run, seed=seed, error=str(exc), exc_info=True)
            report.violations.append(Violation(invariant="RUN",
                                               message=f"run did not complete: {type(exc).__name__}: {exc}"))
        finally:
            progress.phase = "stopping the emulator"
            done.set()  # no supervisor_restart or redrive after this, whatever ended the run
            if ticker is not None:
                ticker.join()
            if watcher is not None:
                watcher.stop()
                report.snapshot_latency = watcher.latencies()
                report.snapshots = len(report.snapshot_latency)
            supervisor.stop()
            dead_letters.restore()
        try:  # the monitor (and the depth sampling) runs until the run is drawn, however that ends
            lives = watcher.lives() if watcher is not None else []
            report.supervisor_restarts = supervisor.restarts
            report.dead_letters = dead_letters.tally.to_dict()
            report.clients = {"appends": stats.appends, "requests": stats.requests, "retries": stats.retries,
                              "deduplicated": stats.deduplicated, "gave_up": len(stats.failures),
                              "statuses": dict(stats.statuses)}
            if runtime is not None:
                report.faults = runtime.counts()
            records = timeline.log_records(Path(report.log_file))
            self._tally(records, report)
            report.seconds = round(time.monotonic() - started, 1)
            report.log_ids = [str(i) for i in log_ids]
            report.data = self._run_data(report, records, started_at, stats, lives, runtime,
                                         depths.series(started_at))
        finally:
            stop_monitor.set()
        return report

    @staticmethod
    def _run_data(report: RunReport, records: list[dict[str, Any]], started_at: float, stats: ClientStats,
                  lives: list[SnapshotLife], runtime: FaultRuntime | None, series: list[Series]) -> RunData | None:
        """The run for the report; None (and a log line) if it cannot be drawn — the run's verdict stands."""
        try:
            return timeline.run_data(
                run=report.run, seed=report.seed, started_at=started_at, seconds=report.seconds, records=records,
                fault_log=runtime.directory / LOG_FILE if runtime is not None else None, tries=list(stats.tries),
                lives=lives, violations=report.violations, quiescence=report.quiescence_seconds, series=series)
        except Exception as exc:
            log.error("the run's timeline could not be read", run=report.run, error=str(exc), exc_info=True)
            return None

    # ------------------------------------------------------------------------------------------ phases

    def _ticks(self, supervisor: SupervisorProcess, runtime: FaultRuntime | None, dead_letters: DeadLetterFaults,
               done: threading.Event) -> None:
        """The faults decided by the run's clock, once per tick until ``done``: redrive, supervisor_restart."""
        if runtime is None:
            return
        schedule = runtime.schedule("chaos")
        tick = 0
        while not done.wait(RESTART_TICK_SECONDS):
            tick += 1
            dead_letters.tick(tick)
            if schedule.decide(FaultKind.SUPERVISOR_RESTART, f"supervisor:{tick}"):
                log.warning("supervisor restart (injected fault)", tick=tick)
                try:
                    supervisor.restart()
                except EmulatorError as exc:
                    log.error("supervisor did not come back", error=str(exc))

    def _await_quiescence(self, log_ids: list[uuid.UUID], watcher: SnapshotWatcher, report: RunReport) -> float | None:
        resources = resources_of(self.deployment)
        took, violation = await_quiescence(self.backend, log_ids, watcher, resources.queue_url, resources.dlq_url,
                                           self.quiescence_seconds)
        if violation is not None:
            report.violations.append(violation)
        return took

    def _verify(self, log_ids: list[uuid.UUID], stats: ClientStats, report: RunReport) -> int:
        """Check I1-I6 of every sheet into ``report``; the messages left in the dead-letter queue."""
        violations, dlq = verify_sheets(self.backend, log_ids, stats, resources_of(self.deployment).dlq_url)
        report.violations += violations
        return dlq

    @staticmethod
    def _tally(records: list[dict[str, Any]], report: RunReport) -> None:
        """Tally the run's log: invocations by function and outcome, job outcomes, crash points, usage."""
        found = tally(records)
        report.invocations, report.job_outcomes = found.invocations, found.job_outcomes
        report.crash_points_hit, report.usage = found.crash_points_hit, found.usage
        report.child_restarts, report.mixed_version = found.child_restarts, found.mixed_version


def _monitor(monitor: Callable[[RunProgress], None] | None, progress: RunProgress, stop: threading.Event,
             sample: Callable[[], None]) -> None:
    """Four times a second until ``stop``: ``sample`` (it reads the queues when its own period has passed), then
    the run's ``monitor``, if any."""
    while not stop.wait(0.25):
        sample()
        if monitor is None:
            continue
        try:
            monitor(progress)
        except Exception as exc:  # a view that fails must not end the run
            log.warning("monitor failed", error=str(exc))
            monitor = None
