"""Chaos coverage by design (issue 19, point 6): each run of a campaign arms exactly the crash points and fault
kinds its earlier runs did not reach, and the plans are a pure function of the seed and the reached sets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog_core.crashpoints import ROUTER_AFTER_SEND, WORKER_CRASH_POINTS
from seglog_emulator.faults import EMULATED, FaultKind, FaultPlan, FaultPlanError
from seglog_plugin.chaos.coverage import (
    CRASH_POINT_NAMES,
    TARGET_RATES,
    WORKER_CRASH_MOST,
    WORKER_CRASH_PER_POINT,
    Coverage,
    Target,
    armed_plan,
    parse_targets,
    reachable,
    target_args,
)
from seglog_plugin.chaos.report import CampaignReport
from seglog_plugin.chaos.runner import DEFAULT_RATES, RunReport, default_plan

#: Every name a ``--faults all`` campaign must reach.
EVERYTHING = (*(str(kind) for kind in EMULATED), *CRASH_POINT_NAMES)


def run_reaching(coverage: Coverage, names: set[str]) -> None:
    """Count one run that reached ``names`` (and nothing else), as its report would say it."""
    coverage.add({p: int(p in names) for p in CRASH_POINT_NAMES}, {str(k): int(str(k) in names) for k in EMULATED})


def test_the_run_after_one_that_missed_arms_exactly_what_it_missed() -> None:
    """Run 1000 of a ``--faults all`` campaign hit every crash point but after_root and router_after_send, and
    fired every kind but dlq and poller_restart (as seed 1000's five runs did for after_root). Run 1001 arms
    worker_crash for after_root alone (at WORKER_CRASH_MOST: a snapshot passes it once), router_crash_after_send,
    dlq and poller_restart at their target rates, and leaves every other kind as the base plan has it: if it did not,
    the campaign could miss them again."""
    coverage = Coverage()
    assert (default_plan(1000), []) == coverage.arm(default_plan(1000))  # nothing known yet: the base plan
    run_reaching(coverage, set(EVERYTHING) - {"after_root", ROUTER_AFTER_SEND, "dlq", "poller_restart"})

    plan, targets = coverage.arm(default_plan(1001))

    assert [(FaultKind.WORKER_CRASH, ("after_root",), ("after_root",)),
            (FaultKind.ROUTER_CRASH_AFTER_SEND, (), (ROUTER_AFTER_SEND,)),
            (FaultKind.POLLER_RESTART, (), ("poller_restart",)),
            (FaultKind.DLQ, (), ("dlq",))] == [(t.kind, t.crash_points, t.missed) for t in targets]
    assert {FaultKind.WORKER_CRASH: (WORKER_CRASH_MOST, DEFAULT_RATES[FaultKind.WORKER_CRASH]),
            **{t.kind: (TARGET_RATES[t.kind], DEFAULT_RATES[t.kind]) for t in targets[1:]}} == {
        t.kind: (t.rate, t.base_rate) for t in targets}
    assert 1001 == plan.seed
    assert ("after_root",) == plan.specs[FaultKind.WORKER_CRASH].crash_points
    assert 1.0 == plan.specs[FaultKind.DLQ].rate
    base = default_plan(1001)
    assert {k: s for k, s in base.specs.items() if k not in {t.kind for t in targets}} == {
        k: s for k, s in plan.specs.items() if k not in {t.kind for t in targets}}


def test_what_any_earlier_run_reached_is_not_armed_again() -> None:
    """Reached sets add up over runs: two runs that each reached half of everything leave nothing to arm, so the
    third runs the base plan (all six worker points again, at the default rate)."""
    coverage = Coverage()
    run_reaching(coverage, set(EVERYTHING[::2]))
    run_reaching(coverage, set(EVERYTHING[1::2]))

    assert (default_plan(1002), []) == coverage.arm(default_plan(1002))


@given(reached=st.sets(st.sampled_from(EVERYTHING)), seed=st.integers(0, 2**32))
def test_the_next_plan_arms_exactly_the_missed_names(reached: set[str], seed: int) -> None:
    """For any reached set: the targets name exactly what was missed, each armed kind fires at least at its
    target rate (worker_crash at 0.4 per missed point, at most 0.9), worker_crash draws only from missed points
    (all of its points when none is missed), and the plan is the same when asked again (no draw of its own: a
    replayed campaign gets the same plans)."""
    coverage = Coverage()
    run_reaching(coverage, reached)

    plan, targets = coverage.arm(default_plan(seed))

    assert set(EVERYTHING) - reached == {name for t in targets for name in t.missed}
    missed_points = tuple(p for p in WORKER_CRASH_POINTS if p not in reached)
    wanted = dict(TARGET_RATES)
    if missed_points:
        wanted[FaultKind.WORKER_CRASH] = (WORKER_CRASH_MOST if missed_points == ("after_root",) else
                                          min(WORKER_CRASH_MOST, WORKER_CRASH_PER_POINT * len(missed_points)))
    assert {t.kind: max(wanted[t.kind], DEFAULT_RATES[t.kind]) for t in targets} == {
        t.kind: plan.specs[t.kind].rate for t in targets}
    assert (missed_points or WORKER_CRASH_POINTS) == plan.specs[FaultKind.WORKER_CRASH].crash_points
    assert (plan, targets) == coverage.arm(default_plan(seed))


def test_a_run_replays_from_its_seed_and_its_target_option() -> None:
    """The report's ``--target`` for a run, given to a one-run campaign with the run's seed, arms the same plan
    (the replay command a failing targeted run needs)."""
    coverage = Coverage()
    run_reaching(coverage, set(EVERYTHING) - {"mid_chunk", "after_root", "s3_latency", "supervisor_restart"})
    plan, targets = coverage.arm(default_plan(1003))
    args = target_args(targets)

    assert "--target mid_chunk,after_root,supervisor_restart,s3_latency" == args
    assert (plan, targets) == Coverage(targets=parse_targets(args.removeprefix("--target "))).arm(default_plan(1003))


def test_a_campaign_of_some_kinds_arms_only_what_its_plan_reaches() -> None:
    """A plan of some kinds (or a file's plan with some crash points) reaches only those: a missed kind the plan
    leaves off is not switched on, and a --target naming one is refused, saying what the plan reaches."""
    crash = {"rate": 0.2, "crash_points": ["after_claim", "mid_chunk"]}
    plan = FaultPlan.from_mapping({"seed": 5, "faults": {"ddb_throttle": 0.1, "worker_crash": crash}})
    assert ("worker_crash", "ddb_throttle", "after_claim", "mid_chunk") == reachable(plan)
    coverage = Coverage()
    run_reaching(coverage, {"worker_crash", "ddb_throttle", "after_claim"})

    armed, targets = coverage.arm(plan)

    assert {FaultKind.WORKER_CRASH, FaultKind.DDB_THROTTLE} == set(armed.specs)
    assert [(FaultKind.WORKER_CRASH, ("mid_chunk",))] == [(t.kind, t.missed) for t in targets]
    with pytest.raises(FaultPlanError, match=r"'dlq' cannot be reached by this plan; it reaches worker_crash"):
        armed_plan(plan, {"dlq"})
    with pytest.raises(FaultPlanError, match=r"unknown crash point or fault kind 'after_rot'"):
        parse_targets("after_rot, dlq")


def test_a_campaigns_report_names_what_no_run_reached_and_replays_a_run_with_what_it_armed() -> None:
    armed = Target(kind=FaultKind.WORKER_CRASH, rate=0.4, base_rate=0.1, crash_points=("after_root",),
                   missed=("after_root",))
    report = CampaignReport(seed=5, faults="all", missed=["stale_read"],
                            runs=[RunReport(run=0, seed=5), RunReport(run=1, seed=6, targets=[armed])])

    assert "seglog chaos --seed 6 --runs 1 --faults all --target after_root" == report.replay(report.runs[1])
    assert "seglog chaos --seed 5 --runs 1 --faults all" == report.replay(report.runs[0])
    assert ["stale_read"] == report.totals()["unreached"]
    text = report.render()
    assert "coverage: not reached: stale_read" in text and "armed for coverage: after_root" in text
