"""Chaos coverage by design (issue 19, point 6): a 5-run campaign of ``seglog chaos``'s default workload reaches
every named crash point and fires every fault kind the emulator injects, since each run arms what the earlier
ones missed (:mod:`seglog_plugin.chaos.coverage`). At default rates alone, seed 1000's five runs never hit
after_root (and seed 2000's reached after_claim only in the last run).

Minutes long, so not part of the default run: ``./dev test -m liveness tests/emulator/test_chaos_campaign_coverage.py``
runs it. CI does not: its own campaign (``./dev chaos --seed 1000 --runs 5 --faults all --require-coverage`` in
.ci/run) fails when anything is unreached; this test adds the plan files and the per-run targets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seglog_emulator.faults import EMULATED, FaultPlan
from seglog_plugin.chaos import Campaign, Workload
from seglog_plugin.chaos.campaign import PLAN_FILE
from seglog_plugin.chaos.coverage import CRASH_POINT_NAMES

pytestmark = [pytest.mark.stack, pytest.mark.liveness]

SEED = 1000


def test_a_five_run_campaign_reaches_every_crash_point_and_fault_kind(stacks: Any, tmp_path: Path) -> None:
    """Five runs of ``--faults all`` from seed 1000: the totals miss no crash point and no kind, every run after
    the first that armed something says what and why, each run's plan file replays it, and I1-I6 hold."""
    base = stacks.deployment("dynamodb-local")
    campaign = Campaign(base.endpoints, profile=base.profile, region=base.region, state_root=tmp_path,
                        workload=Workload(sheets=2, clients=3, edits=15), prefix="tcover")
    result = campaign.run(SEED, 5, faults="all")
    campaign.close(keep=not result.ok)
    totals = result.totals()

    assert [] == [v for run in result.runs for v in run.violations]
    assert [] == totals["crash_points_missed"], result.render()
    assert set(CRASH_POINT_NAMES) == set(totals["crash_points_hit"])
    assert [] == [str(kind) for kind in EMULATED if not totals["faults"].get(str(kind))], result.render()
    assert [] == result.runs[0].targets  # nothing known before the first run: it runs the base plan
    armed = [t for run in result.runs[1:] for t in run.targets]
    assert armed and all(t.missed and t.rate >= t.base_rate for t in armed)
    for run in result.runs:
        plan = FaultPlan.from_file(Path(run.log_file).parent / PLAN_FILE)
        assert run.seed == plan.seed
        assert {str(t.kind): t.rate for t in run.targets} == {
            str(t.kind): plan.specs[t.kind].rate for t in run.targets}
