"""Campaign: chaos runs on fresh resources of their own, one seed after another (``seglog chaos``, the demo).

Every campaign provisions the template under a new stack name (``seglog-chaos-<hex>``) with
:data:`~.runner.CHAOS_PARAMETERS`, so a replayed seed meets the same empty sheets, and a developer's own
stack is never touched. Each run after the first arms what the earlier ones did not reach (:mod:`.coverage`).
Each run's drawing is saved as ``run.json`` in its run directory the moment it ends
(:func:`seglog_report.files.save_run`), so a campaign stopped on the way — Ctrl-C, kill -9 — loses no finished run:
``seglog report <state directory>`` draws them.
:meth:`Campaign.close` deletes those resources when the campaign passed and keeps them
for inspection when it failed; the logs stay in the state directory until the next campaign starts.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from seglog_awsmodel.template import default_template_path
from seglog_emulator.artifacts import host_artifact
from seglog_emulator.faults.plan import FaultPlan, FaultPlanError
from seglog_plugin.chaos.coverage import Coverage, Target
from seglog_plugin.chaos.report import CampaignReport
from seglog_plugin.chaos.runner import (
    CHAOS_PARAMETERS,
    CHAOS_STACK,
    ChaosRunner,
    RunProgress,
    RunReport,
    default_plan,
)
from seglog_plugin.chaos.workload import Workload
from seglog_report.files import save_run
from seglog_stack import local

log = structlog.get_logger("seglog.chaos")

#: Each run's plan, in its run directory: ``seglog chaos --fault-plan <it> --seed <the run's seed>`` replays it.
PLAN_FILE = "plan.toml"


class Campaign:
    """Fresh resources on the running local stack at ``endpoints``, and a runner on them.

    Args:
        state_root: emptied, then holds one directory per campaign (logs, checkpoints, fault logs).
        prefix: the stack name's prefix.
        parameters: template parameter overrides on top of :data:`CHAOS_PARAMETERS`.
        artifact: the code the functions run (:mod:`seglog_emulator.artifacts`); by default this machine's twin
            of the template's artifacts, built (or reused) once for the whole campaign.
    """

    def __init__(self, endpoints: dict[str, str], *, profile: str, region: str, state_root: Path,
                 workload: Workload, prefix: str = CHAOS_STACK, parameters: dict[str, Any] | None = None,
                 template: Path | None = None, artifact: Path | None = None) -> None:
        self.endpoints = endpoints
        self.region = region
        self.stack = f"{prefix}-{uuid.uuid4().hex[:6]}"
        self.parameters = {**CHAOS_PARAMETERS, **(parameters or {})}
        self.template = template or default_template_path()
        self.artifact = artifact or host_artifact(self.template)
        self.deployment = local.provision(endpoints, profile=profile, region=region, stack_name=self.stack,
                                          parameters=self.parameters, template=self.template)
        shutil.rmtree(state_root, ignore_errors=True)
        self.state_dir = state_root / self.stack
        self.runner = ChaosRunner(self.deployment, template=self.template, state_dir=self.state_dir,
                                  workload=workload, parameters=self.parameters, stack=self.stack,
                                  artifact=self.artifact)

    @staticmethod
    def plan(run_seed: int, faults: str, rate: float | None, base: FaultPlan | None) -> FaultPlan | None:
        """The fault plan of the run with ``run_seed``: a file's plan reseeded, ``--faults``, or none."""
        if base is not None:
            return FaultPlan(seed=run_seed, specs=base.specs)
        if faults == "none":
            return None
        return default_plan(run_seed, faults, rate)

    def run(self, seed: int, runs: int, *, faults: str = "all", rate: float | None = None,
            base: FaultPlan | None = None, label: str | None = None,
            on_run: Callable[[RunReport], None] | None = None,
            monitor: Callable[[RunProgress], None] | None = None, fail_fast: bool = False,
            cover: bool = True, targets: frozenset[str] = frozenset(), kind: str = "chaos",
            replay_args: str = "") -> CampaignReport:
        """Runs with seeds ``seed`` .. ``seed + runs - 1`` (up to the first failing one with ``fail_fast``).

        A Ctrl-C (KeyboardInterrupt) ends the campaign instead of raising: the report holds the runs finished and
        the interrupted one (:attr:`RunReport.interrupted`), and says it was :attr:`~CampaignReport.interrupted`.

        Args:
            cover: each run arms the crash points and kinds no earlier run reached (:mod:`.coverage`).
            targets: crash points and kinds the first run arms (every run, without ``cover``).
            kind: what the report calls the runs ("chaos", "demo"); its title is ``seglog <kind>``.
            replay_args: the options that replay a run besides its seed (:attr:`CampaignReport.replay_args`).

        Raises:
            FaultPlanError: ``targets`` names what the plan cannot reach (before the first run starts).
        """
        campaign = CampaignReport(seed=seed, faults=label or faults, kind=kind, title=f"seglog {kind}",
                                  replay_args=replay_args)
        coverage = Coverage(targets=targets)
        reached = Coverage()  # what the runs reached, with coverage or without: the report's "missed"
        started = time.monotonic()
        try:
            for i in range(runs):
                plan, armed = self.armed_plan(seed + i, faults, rate, base, coverage)
                if armed:
                    log.info("run arms what earlier runs did not reach", run=i, seed=seed + i,
                             targets=[t.to_dict() for t in armed])
                report = self.runner.run(i, plan, seed=seed + i, monitor=monitor)
                report.targets = armed
                campaign.runs.append(report)
                campaign.seconds = time.monotonic() - started
                self._keep(campaign, report, plan)
                if not report.interrupted:
                    if cover:
                        coverage.add(report.crash_points_hit, report.faults)
                    reached.add(report.crash_points_hit, report.faults)
                    campaign.missed = sorted(reached.missed(plan)) if plan is not None else []
                if on_run is not None:
                    on_run(report)
                if report.interrupted:
                    campaign.interrupted = True
                    break
                if fail_fast and not report.ok:
                    break
        except KeyboardInterrupt:  # between runs, or while one was being read: the runs finished so far stand
            log.warning("campaign interrupted between runs", runs=len(campaign.runs))
            campaign.interrupted = True
        return campaign

    @staticmethod
    def _keep(campaign: CampaignReport, report: RunReport, plan: FaultPlan | None) -> None:
        """The run's plan and drawing in its run directory (``plan.toml``, ``run.json``), as soon as it ended."""
        run_dir = Path(report.log_file).parent
        if plan is not None:
            plan.dump(run_dir / PLAN_FILE)
        try:
            save_run(campaign.run_data(report), run_dir)
        except OSError as exc:  # the page at the end still draws it; only an after-the-fact page would miss it
            log.error("the run's run.json could not be written", run=report.run, path=str(run_dir),
                      error=str(exc))

    @classmethod
    def armed_plan(cls, run_seed: int, faults: str, rate: float | None, base: FaultPlan | None,
                   coverage: Coverage) -> tuple[FaultPlan | None, list[Target]]:
        """The plan of the run with ``run_seed`` (:meth:`plan`), arming what ``coverage`` says was missed.

        Raises:
            FaultPlanError: the campaign's targets name what the plan cannot reach.
        """
        plan = cls.plan(run_seed, faults, rate, base)
        if plan is None:
            if coverage.targets:
                raise FaultPlanError("--target", ["a run without faults arms nothing: drop --target or name "
                                                  "--faults"])
            return None, []
        return coverage.arm(plan)

    def close(self, *, keep: bool) -> None:
        """Delete the campaign's resources unless ``keep``."""
        if not keep:
            local.deprovision(self.endpoints, region=self.region, stack_name=self.stack, template=self.template)
