"""Chaos for any SAM application: seeded faults while a user's workload drives it, then a verdict (issue 37).

One run, step by step::

    provision the template under a stack of the run's own ──► emulator up (its plan, or none)
        │                                                        │
        │   workload(app) ─── HTTP and boto3 ───────────────────►│  faults fire; a tick thread restarts the
        │   then, faults still on, until quiet (at most 60 s)    │  whole emulator when the plan says so
    faults off ──► wait until quiet (nothing in flight, every feeding queue empty, 3 s on end)
        │
    check(app) -> violations        or, differential:  read every table, bucket and queue
        │                                              (compared with the fault-free run of the same seed)
    emulator down ──► state saved as JSON ──► stack deleted

1. Each run gets a fresh stack (``chaos-<app>-<run>``, and ``...-base`` for the fault-free run of a
   differential), so runs never see each other's data; it is deleted after the run, its final state kept in the
   run's directory (``state.json``) with the emulator's log and the fault log.
2. The workload may raise: a run whose workload raised is a violation of its own (the traceback is in the report),
   never the end of the campaign. So is a check that raises, and an app still busy after the quiet bound.
3. Every fault decision is a pure function of (seed, kind, site), sites are built from what is delivered, so
   ``--seed S --runs 1`` replays a failing run's decisions (timing may still differ).
4. Differential: the fault-free run and the faulted run share the seed (``app.seed``, ``app.random``): the same
   workload drives both. Their final states compare record by record (:mod:`.state`), fields named by
   ``--ignore`` dropped; any difference fails the run, reported with the faults that fired and the invocations
   that did not end in one successful try.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from seglog_emulator.appchaos.attribution import attribute
from seglog_emulator.appchaos.coverage import AppCoverage, coverage_of
from seglog_emulator.appchaos.kinds import app_plan, template_kinds
from seglog_emulator.appchaos.scripts import Script, violations_of
from seglog_emulator.appchaos.session import FAULT_TAIL, QUIET_TIMEOUT, AppSession, Target
from seglog_emulator.appchaos.state import AppState, Difference, compare, read_state
from seglog_emulator.errors import EmulatorError
from seglog_emulator.faults.call_crash import CRASH_AFTER_CALL_EVENT
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.jsonlog import read_json_lines

#: Invocations listed per run in a report (the rest are counted).
LISTED_INVOCATIONS: Final = 20


@dataclass
class AppRun:
    """What one run did and found."""

    run: int
    seed: int
    faulted: bool
    stack: str
    violations: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    injected: list[dict[str, Any]] = field(default_factory=list)
    invocations: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Invocations that did not end in one successful first try: (function, request id, outcome, attempt).
    troubled: list[dict[str, Any]] = field(default_factory=list)
    quiet_seconds: float | None = None
    #: The most AWS calls one invocation of each function made (its call boundaries: 1 to this).
    most_calls: dict[str, int] = field(default_factory=dict)
    #: The AWS services the functions called (from the invocations' metered requests).
    services: list[str] = field(default_factory=list)
    #: The calls each function was killed after (crash_after_call), by logical id.
    crashed_calls: dict[str, list[int]] = field(default_factory=dict)
    #: The kinds of trigger the app has (:func:`.coverage.triggers_of`); None: not known (the app never came up).
    triggers: list[str] | None = None
    #: When the run started (seconds since the epoch): where its timeline begins.
    started_at: float = 0.0
    seconds: float = 0.0
    supervisor_restarts: int = 0
    directory: str = ""
    #: The run's emulator log: every invocation, and in a faulted run every write (:mod:`.attribution`).
    log_file: str = ""
    state: AppState | None = None
    #: The run's resources' physical names by logical id (a queue's URL), as provisioned.
    names: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.differences

    def save(self) -> None:
        """Write the run as ``run.json`` in its directory (again, once its differences are known)."""
        (Path(self.directory) / "run.json").write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "seed": self.seed, "faulted": self.faulted, "stack": self.stack, "ok": self.ok,
                "violations": self.violations, "differences": [d.to_dict() for d in self.differences],
                "faults": self.faults, "invocations": self.invocations, "troubled": self.troubled,
                "most_calls": self.most_calls, "services": self.services, "crashed_calls": self.crashed_calls,
                "triggers": self.triggers, "started_at": self.started_at,
                "quiet_seconds": self.quiet_seconds, "seconds": self.seconds,
                "supervisor_restarts": self.supervisor_restarts, "directory": self.directory}


class AppChaos:
    """Chaos runs of one app (:class:`~.session.Target`: its template on a running local stack).

    Args:
        state_root: one directory per run under it.
    """

    def __init__(self, target: Target, *, state_root: Path, quiet_timeout: float = QUIET_TIMEOUT,
                 fault_tail: float = FAULT_TAIL) -> None:
        self.target = target
        self.template = target.template
        self.state_root = state_root
        self.quiet_timeout = quiet_timeout
        self.fault_tail = fault_tail
        self.kinds, self.crash_points = template_kinds(self.template)
        self.slug = stack_slug(self.template)

    def plan(self, seed: int, faults: str = "all", rate: float | None = None) -> FaultPlan:
        """The plan of ``--faults`` for this app (see :func:`.kinds.app_plan`)."""
        return app_plan(seed, faults, rate, self.kinds, self.crash_points)

    # ------------------------------------------------------------------------------------------ one run

    def run(self, run: int, plan: FaultPlan | None, workload: Script, *, seed: int, check: Script | None = None,
            read: bool = False, label: str = "") -> AppRun:
        """One run: ``workload`` under ``plan`` (None: no faults), then ``check`` and, with ``read``, the final
        state. Never raises for what the run finds: it reports it."""
        stack = f"chaos-{self.slug}-{run}{label}"
        report = AppRun(run=run, seed=seed, faulted=plan is not None, stack=stack)
        directory = self.state_root / f"run-{run:03d}-seed-{seed}{label}"
        shutil.rmtree(directory, ignore_errors=True)
        report.directory = str(directory)
        started = time.monotonic()
        report.started_at = time.time()
        session = AppSession(self.target, stack=stack, directory=directory, plan=plan, seed=seed, run=run,
                             quiet_timeout=self.quiet_timeout, fault_tail=self.fault_tail)
        report.log_file = str(session.log_file)
        try:
            with session:
                report.triggers = sorted(session.triggers)
                self._judge(session, report, workload, check, read)
                report.supervisor_restarts = session.restarts
        except EmulatorError as exc:
            report.violations.append(f"the run could not complete: {exc}")
        if session.runtime is not None:
            report.injected = session.runtime.injected()
            report.faults = {k: v for k, v in session.runtime.counts().items() if v}
        self._tally(session.log_file, report)
        report.seconds = round(time.monotonic() - started, 1)
        report.save()
        return report

    @staticmethod
    def _judge(session: AppSession, report: AppRun, workload: Script, check: Script | None, read: bool) -> None:
        app = session.app
        try:
            workload(app)
        except Exception as exc:
            report.violations.append(_raised("the workload", exc))
        settled = session.settle()
        report.quiet_seconds = settled.quiet_seconds
        if settled.quiet_seconds is None:
            report.violations.append(f"not quiet {session.quiet_timeout:.0f} s after faults stopped: {settled.last}")
        if check is not None:
            try:
                report.violations += violations_of(check(app), "check(app)")
            except Exception as exc:
                report.violations.append(_raised("the check", exc))
        if read:
            report.names = dict(app.deployment.names)
            report.state = read_state(app.deployment.names, app.deployment.types, app.client)
            (session.directory / "state.json").write_text(json.dumps(report.state.to_dict(), indent=1, default=str))

    @staticmethod
    def _tally(log_file: Path, report: AppRun) -> None:
        """Invocations by function and outcome, the troubled ones, each function's most AWS calls in one
        invocation, and the calls crash_after_call killed it after (its worker's line names the pid, the
        invocation's line the pid and the function's logical id)."""
        invocations: dict[str, Counter[str]] = {}
        crashes: list[tuple[Any, int]] = []
        function_of_pid: dict[Any, str] = {}
        for record in read_json_lines(log_file):
            if record.get("event") == CRASH_AFTER_CALL_EVENT and isinstance(record.get("call"), int):
                crashes.append((record.get("pid"), record["call"]))
            if record.get("event") != "invocation":
                continue
            function, outcome = str(record.get("function", "?")), str(record.get("outcome", "?"))
            function_of_pid[record.get("pid")] = function
            invocations.setdefault(function, Counter())[outcome] += 1
            usage = record.get("usage") or {}
            report.services = sorted(set(report.services) | {str(name) for name in usage})
            calls = sum(int(row.get("requests", 0)) for row in usage.values())
            report.most_calls[function] = max(report.most_calls.get(function, 0), calls)
            if (outcome != "success" or int(record.get("attempt") or 1) > 1) \
                    and len(report.troubled) < LISTED_INVOCATIONS:
                report.troubled.append({k: record.get(k) for k in ("function", "request_id", "outcome", "attempt",
                                                                     "source", "error_type") if record.get(k)})
        for pid, call in crashes:
            crashed = report.crashed_calls.setdefault(function_of_pid.get(pid, "?"), [])
            if call not in crashed:
                crashed.append(call)
        report.invocations = {f: dict(c) for f, c in invocations.items()}


def stack_slug(template: Path) -> str:
    """The part of a run's stack name that names the app: its template's folder, as a stack name may spell it."""
    return re.sub(r"[^a-z0-9]+", "-", template.resolve().parent.name.lower()).strip("-")[:24] or "app"


def _raised(what: str, exc: BaseException) -> str:
    lines = traceback.format_exception(exc)
    return f"{what} raised {type(exc).__name__}: {exc}\n" + "".join(lines[-6:]).rstrip()


# ------------------------------------------------------------------------------------------------ campaigns


@dataclass
class AppCampaign:
    """Runs of one app under consecutive seeds; ``ok`` when every run is."""

    template: str
    runs: list[AppRun] = field(default_factory=list)
    #: The fault-free runs of a differential campaign, by seed.
    baselines: list[AppRun] = field(default_factory=list)
    coverage: AppCoverage = field(default_factory=AppCoverage)

    @property
    def ok(self) -> bool:
        return all(run.ok for run in self.runs) and all(not b.violations for b in self.baselines)

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "ok": self.ok, "runs": [r.to_dict() for r in self.runs],
                "baselines": [b.to_dict() for b in self.baselines],
                "reached": sorted(self.coverage.planned & self.coverage.reached), "missed": self.coverage.missed()}


def run_campaign(chaos: AppChaos, *, seed: int, runs: int, faults: str, rate: float | None, workload: Script,
                 check: Script | None = None, differential: bool = False, ignore: Iterable[str] = (),
                 fail_fast: bool = False, on_run: Callable[[AppRun], None] | None = None) -> AppCampaign:
    """``runs`` runs, seeds ``seed``, ``seed+1``, ...: with ``check``, each checked; with ``differential``, each
    seed run once without faults and once under them, and their final states compared."""
    campaign = AppCampaign(template=str(chaos.template))
    ignored = tuple(ignore)
    plans: list[FaultPlan] = []
    for index in range(runs):
        run_seed = seed + index
        plan = chaos.plan(run_seed, faults, rate)
        plans.append(plan)
        base: AppRun | None = None
        if differential:
            base = chaos.run(index, None, workload, seed=run_seed, read=True, label="-base")
            campaign.baselines.append(base)
            if on_run is not None:
                on_run(base)
        report = chaos.run(index, plan, workload, seed=run_seed, check=check, read=differential)
        if base is not None and base.state is not None and report.state is not None:
            report.differences = attribute(compare(base.state, report.state, ignored),
                                           Path(report.log_file), report.names)
            report.save()
        campaign.runs.append(report)
        if on_run is not None:
            on_run(report)
        campaign.coverage = coverage_of(plans, campaign.runs)
        if fail_fast and not report.ok:
            break
    return campaign
