"""One seed, start to finish: build the world (:mod:`seglog_sim.phases`), run the workload under faults, let it
settle, check it, and turn the ended world into a :class:`SeedResult`. The phases are described there.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seglog_core import errors
from seglog_core.violations import Violation
from seglog_report.model import Meter, SeedRow
from seglog_services.api.routes import hosting
from seglog_sim.checks import check_run, horizon_kept, named, retention_behind, retired, retiring
from seglog_sim.cloud import Call
from seglog_sim.liveness import idle_snapshots, stalled_shards
from seglog_sim.metering import meter_of
from seglog_sim.phases import Run, build
from seglog_sim.scenario import Scenario
from seglog_sim.waste import counts as waste_counts
from seglog_sim.waste import figures
from seglog_sim.workload import Ledger
from seglog_sim.world import World

#: Violations' texts a seed's row keeps (:meth:`SeedResult.row`): a campaign keeps a row for every seed.
ROW_VIOLATIONS = 10


@dataclass(kw_only=True)
class SeedResult:
    """What one seed did and whether it passed."""

    seed: int
    violations: list[Violation]
    #: Kinds on in this seed's profile.
    kinds: list[str]
    #: Ids of the faults that fired, in order (what the shrinker works on).
    fired: list[str]
    #: FaultKind counts by kind and by kind@site.
    fault_counts: dict[str, int]
    #: Storage calls by "task kind:call site", and by "service operation".
    sites: dict[str, int]
    operations: dict[str, int]
    invocations: dict[str, int]
    stats: dict[str, int]
    acknowledged: int
    snapshots: int
    sim_seconds: float
    steps: int
    history: list[Call] = field(repr=False, default_factory=list)
    quiescent: bool = True
    #: What the seed used, in the units AWS bills (for the cost ledger).
    meter: Meter = field(default_factory=Meter)
    #: The scenario the seed drew (Scenario.describe).
    scenario: dict[str, Any] = field(default_factory=dict)
    #: Segments archived or deleted by the end of the run.
    retired: int = 0
    #: The counts behind the waste figures (seglog_sim.waste).
    waste: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def row(self, replay: str = "") -> SeedRow:
        """The seed's line in a campaign's report (:attr:`seglog_report.model.Report.seeds`): its verdict and
        figures, the first :data:`ROW_VIOLATIONS` violations' texts (and how many more there were)."""
        texts = [v.text for v in self.violations[:ROW_VIOLATIONS]]
        if len(self.violations) > ROW_VIOLATIONS:
            texts.append(f"... and {len(self.violations) - ROW_VIOLATIONS} more")
        return SeedRow(seed=self.seed, ok=self.ok, violations=texts, faults=len(self.fired),
                       invocations=sum(use.invocations for use in self.meter.functions.values()),
                       acknowledged=self.acknowledged, seconds=round(self.sim_seconds, 3), replay=replay)

    def summary(self) -> dict[str, Any]:
        return {"seed": self.seed, "ok": self.ok, "violations": [v.to_dict() for v in self.violations],
                "kinds": self.kinds, "faults": len(self.fired), "acknowledged": self.acknowledged,
                "snapshots": self.snapshots, "sim_seconds": round(self.sim_seconds, 1), "steps": self.steps,
                "scenario": self.scenario, "retired": self.retired, "waste": figures(self.waste)}


def run_seed(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None) -> SeedResult:
    """Run one seed; ``only`` limits the faults to those ids (a shrunk schedule's replay)."""
    return execute(seed, scenario, only=only)[1]


@functools.cache  # once per process
def _freeze_startup() -> None:
    """Before a process's first seed, move every object it has (modules, their functions and tables, the caller's
    own) to the garbage collector's permanent generation: none of it is garbage from one seed, yet each full
    collection during the seeds would walk all of it again (half the collector's time). Collected first, so no
    garbage is frozen. A seed's results do not depend on when the collector runs."""
    gc.collect()
    gc.freeze()


def execute(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None,
            watch: Callable[[Run], None] | None = None) -> tuple[Run, SeedResult]:
    """Run one seed: the world as it ended (for the report's timeline) and its result. ``watch`` is given the
    world before it runs, to install observers (:class:`seglog_sim.series.QueueDepths`): they may look, never
    draw from the seed's generators nor schedule, so the seed does what it does without them."""
    _freeze_startup()
    scenario = scenario or Scenario()
    run = build(seed, scenario, only=only)
    world = run.world
    if watch is not None:
        watch(run)

    def driver(w: World) -> None:
        w.spawn("setup", "client", run.setup)
        run.pollers.start()
        w.spawn("operator", "operator", run.operator)

    with hosting(run.lambdas.api_services()):  # the API handler answers from this world
        try:
            world.run(driver)
        finally:
            world.close()
    ledger: Ledger = run.clients.ledger
    queues = {"the snapshot queue": run.sqs.depth(run.queue_url), "the DLQ": run.sqs.depth(run.dlq_url)}
    jobs = run.lambdas.jobs
    setup = next((t for t in world.tasks if t.name == "setup"), None)
    violations = [Violation(invariant="SIM", message=f"the logs could not be created: {setup.error!r}")
                  for _ in [0] if setup is not None and setup.error is not None]
    violations += [Violation(invariant="I5", log_id=t.tags.get("log_id"),
                             message=f"client {t.name} never finished its appends within "
                                     f"{run.scenario.client_bound:.0f} s") for t in run.client_tasks if not t.done]
    violations += [named(Violation(invariant="I5", log_id=key[0], segment=key[1], entry=key[2],
                                   message=f"its job reached the DLQ {times} time{'s' if times > 1 else ''} after the "
                                           "faults stopped (maxReceiveCount used up without faults)"), jobs)
                   for key, times in sorted(jobs.dead_after_faults.items())]
    violations += run.unfinished + run.operators.violations
    if run.quiescent and run.scenario.finish_retention:
        violations += retiring(run.ddb, run.topology)
        violations += retention_behind(run.ddb, run.topology, run.retention_runs)
    if run.client_tasks and all(t.done for t in run.client_tasks):
        violations += horizon_kept(run.ddb, run.topology, run.horizon(),
                                   max(t.ended or world.now for t in run.client_tasks))
    violations += [Violation(invariant="SIM", message=f"operator command {t.name} failed: "
                                                      f"{type(t.error).__name__}: {t.error}")
                   for t in world.tasks if t.kind == "operator" and t.error is not None
                   and not isinstance(t.error, errors.SeglogError)]
    if run.faults_ended is not None:
        violations += stalled_shards(run.ddb, run.topology, run.pollers.moves, start=world.start,
                                     until=run.faults_ended)
        violations += [named(v, jobs) for v in idle_snapshots(run.cloud.history, run.topology, jobs.runs,
                                                             start=world.start, until=run.faults_ended)]
    waiting = [m["Body"] for url in (run.queue_url, run.dlq_url) for m in run.sqs.messages(url)]
    violations += check_run(ddb=run.ddb, s3=run.s3, topology=run.topology, logs=run.logs, ledger=ledger,
                            quiescent=run.quiescent, queues=queues, jobs=jobs, waiting=waiting,
                            running=[t.name for t in world.tasks if not t.done and t.kind != "poller"])
    snapshots = sum(1 for item in run.ddb.items(run.topology.entries_table, copy=False)
                    if item.get("T", {}).get("S") == "snap")
    stats = dict(run.pollers.stats)
    stats.update({"client tries": ledger.tries + ledger.counters.requests, "client lost answers": ledger.lost_answers,
                  "client gave up": ledger.gave_up, "clients vanished": ledger.vanished,
                  "client pauses mid-retry": ledger.pauses, "client outcome unknown": ledger.outcome_unknown,
                  "clients came back to reuse ids": ledger.returns,
                  "loads": len(ledger.loads), "load pages": sum(load.pages for load in ledger.loads),
                  "syncs": len(ledger.syncs), "supervisor restarts": run.pollers.restarts,
                  **{f"refused as expected: {code}": n for code, n in ledger.expected_refusals.items()}})
    stats["retention runs finishing one cut short"] = run.finishing
    if run.cloud.outage is not None:
        stats[f"calls hit by an outage of {run.cloud.outage.what}"] = run.cloud.outage.hit
    stats.update({f"operator {name}": count for name, count in run.operators.counts.items()})
    waste = waste_counts(run.cloud.history, builds_completed=run.lambdas.invocations.counts.get("worker:completed", 0),
                         receives=jobs.total_receives, jobs=len(jobs.receives), appends=ledger.appends)
    result = SeedResult(seed=seed, violations=violations, kinds=sorted(str(k) for k in run.faults.profile.rates),
                        fired=list(run.faults.fired), fault_counts=dict(run.faults.counts),
                        sites=dict(run.cloud.sites), operations=dict(run.cloud.operations),
                        invocations=dict(run.lambdas.invocations.counts), stats=stats, acknowledged=ledger.appends,
                        snapshots=snapshots, sim_seconds=world.now - world.start, steps=world.steps,
                        history=run.cloud.history, quiescent=run.quiescent, meter=meter_of(run),
                        scenario=run.scenario.describe(), retired=retired(run.ddb, run.topology, run.logs), waste=waste)
    return run, result
