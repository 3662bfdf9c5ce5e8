"""Many seeds: run them (in one process, or split over several), add up what they exercised, keep the failures.

The counts answer "did the campaign exercise everything?": every fault kind fired, every storage call site was
reached by each kind of caller, every protocol outcome happened, and a share of seeds retired a segment (the
share that reaches what comes after retention). The speed answers "a thousand worlds a minute?". The waste
figures (:mod:`seglog_sim.waste`) say what the guards save.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from seglog_report.model import Meter, SeedRow
from seglog_sim.run import SeedResult, run_seed
from seglog_sim.scenario import Scenario
from seglog_sim.waste import figures

#: Failing seeds kept in full (their histories); the rest are counted.
KEEP_FAILURES = 5


@dataclass(kw_only=True)
class Campaign:
    seeds: int = 0
    elapsed: float = 0.0
    jobs: int = 1
    failures: list[SeedResult] = field(default_factory=list)
    failing_seeds: list[int] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    kinds_on: Counter[str] = field(default_factory=Counter)
    sites: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    invocations: Counter[str] = field(default_factory=Counter)
    stats: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    snapshots: int = 0
    sim_seconds: float = 0.0
    #: What every seed used, in the units AWS bills.
    meter: Meter = field(default_factory=Meter)
    #: Seeds that archived or deleted at least one segment.
    retiring: int = 0
    #: The counts behind the waste figures, over every seed.
    waste: Counter[str] = field(default_factory=Counter)
    #: Every seed's row for the report (SeedResult.row, without its replay command: the command line knows it), in
    #: the order they ran; a few hundred bytes each, no history.
    rows: list[SeedRow] = field(default_factory=list)

    @property
    def seeds_per_minute(self) -> float:
        return 60.0 * self.seeds / self.elapsed if self.elapsed else 0.0

    @property
    def ok(self) -> bool:
        return not self.failing_seeds

    @property
    def retired_share(self) -> float:
        """The share of seeds (0 to 1) that archived or deleted a segment."""
        return self.retiring / self.seeds if self.seeds else 0.0

    def add(self, result: SeedResult) -> None:
        self.seeds += 1
        if not result.ok:
            self.failing_seeds.append(result.seed)
            if len(self.failures) < KEEP_FAILURES:
                self.failures.append(result)
        self.faults.update(result.fault_counts)
        self.kinds_on.update(result.kinds)
        self.sites.update(result.sites)
        self.operations.update(result.operations)
        self.invocations.update(result.invocations)
        self.stats.update(result.stats)
        self.acknowledged += result.acknowledged
        self.snapshots += result.snapshots
        self.sim_seconds += result.sim_seconds
        self.meter = self.meter.add(result.meter)
        self.retiring += result.retired > 0
        self.waste.update(result.waste)
        self.rows.append(result.row())

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "seeds": self.seeds, "jobs": self.jobs, "elapsed_seconds": round(self.elapsed, 2),
                "seeds_per_minute": round(self.seeds_per_minute), "failing_seeds": self.failing_seeds,
                "failures": [f.summary() for f in self.failures], "faults": dict(sorted(self.faults.items())),
                "kinds_on": dict(sorted(self.kinds_on.items())), "sites": dict(sorted(self.sites.items())),
                "operations": dict(sorted(self.operations.items())),
                "invocations": dict(sorted(self.invocations.items())), "stats": dict(sorted(self.stats.items())),
                "acknowledged_appends": self.acknowledged, "snapshots": self.snapshots,
                "simulated_hours": round(self.sim_seconds / 3600, 1), "retired_share": round(self.retired_share, 4),
                "waste": figures(self.waste), "waste_counts": dict(sorted(self.waste.items()))}


def _slim(result: SeedResult) -> SeedResult:
    """A passing seed's result without its history (what crosses a process boundary)."""
    if result.ok:
        result.history = []
    return result


def _run_many(args: tuple[list[int], Scenario]) -> list[SeedResult]:
    seeds, scenario = args
    return [_slim(run_seed(seed, scenario)) for seed in seeds]


def run_campaign(seeds: Iterable[int], scenario: Scenario | None = None, *, jobs: int = 1,
                 progress: Callable[[Campaign], None] | None = None, stop_on_failure: bool = False) -> Campaign:
    """Run ``seeds``; ``jobs`` > 1 splits them over that many processes, in blocks (results in seed order)."""
    scenario = scenario or Scenario()
    campaign = Campaign(jobs=jobs)
    started = time.perf_counter()
    todo = list(seeds)
    if jobs <= 1:
        for seed in todo:
            campaign.add(_slim(run_seed(seed, scenario)))
            campaign.elapsed = time.perf_counter() - started
            if progress is not None and campaign.seeds % 50 == 0:
                progress(campaign)
            if stop_on_failure and not campaign.ok:
                break
        return campaign
    block = 50
    blocks = [(todo[i:i + block], scenario) for i in range(0, len(todo), block)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for results in pool.imap(_run_many, blocks):
            for result in results:
                campaign.add(result)
            campaign.elapsed = time.perf_counter() - started
            if progress is not None:
                progress(campaign)
            if stop_on_failure and not campaign.ok:
                pool.terminate()
                break
    campaign.elapsed = time.perf_counter() - started
    return campaign
