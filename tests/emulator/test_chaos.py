"""Chaos runs through the real emulator (issue 4, points 3 and 4): a run under faults verifies clean, its report
counts what was injected, and the same seed makes the same fault decisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seglog_awsmodel.faults import EMULATED
from seglog_emulator.faults.plan import FaultPlan
from seglog_plugin.chaos import Campaign, Workload

pytestmark = pytest.mark.stack

SMALL = Workload(sheets=1, clients=2, edits=10)


def campaign(stacks: Any, root: Path, workload: Workload = SMALL, **parameters: Any) -> Campaign:
    base = stacks.deployment("dynamodb-local")
    return Campaign(base.endpoints, profile=base.profile, region=base.region, state_root=root, workload=workload,
                    prefix="tchaos", parameters=parameters)


def decisions(report_log: str, process: str) -> list[tuple[str, str]]:
    path = Path(report_log).parent / "faults" / "faults.jsonl"
    return sorted((f["kind"], f["key"]) for f in map(json.loads, path.read_text().splitlines())
                  if f["process"] == process)


def test_same_seed_same_fault_decisions_and_a_clean_verify(stacks: Any, tmp_path: Path) -> None:
    """Lost answers at the gateway are decided from the request's content, so two runs of one seed on fresh
    resources lose the same answers (one client, so the requests themselves are the same); the retries (with
    ``since``) still leave each edit in the log exactly once. Decisions inside the functions are keyed on
    their AWS requests, which carry time stamps: the same request gets the same decision, but a later clock
    makes a different request."""
    plan = FaultPlan.from_flags("lost_response", rate=0.2, seed=42)
    reports = []
    for i in range(2):
        c = campaign(stacks, tmp_path / f"c{i}", Workload(sheets=1, clients=1, edits=6))
        result = c.run(42, 1, base=plan, label="lost_response=0.2")
        c.close(keep=False)
        reports.append(result.runs[0])
    first, second = reports
    assert first.ok and second.ok, (first.violations, second.violations)
    assert first.faults["lost_response"] > 0
    assert first.clients["deduplicated"] > 0  # a retried append found its first try in the log
    lost = decisions(first.log_file, "gateway:HttpApi")
    assert lost and lost == decisions(second.log_file, "gateway:HttpApi")
    assert first.seed == second.seed == 42


def test_a_run_with_every_fault_kind_reports_what_it_injected(stacks: Any, tmp_path: Path) -> None:
    """Every kind switched on at high rates: the report lists each kind, the crash points reached and the
    job outcomes, and I1-I6 hold after quiescence."""
    c = campaign(stacks, tmp_path / "all")
    result = c.run(7, 1, faults="all", rate=0.15)
    c.close(keep=not result.ok)
    run = result.runs[0]
    assert run.ok, run.violations
    totals = result.totals()
    assert set(totals["faults"]) == {str(kind) for kind in EMULATED}  # every kind of the plan listed
    assert sum(totals["faults"].values()) > 10
    # Snapshots were built and the report counted their jobs. Not "two of two": at these rates the writer
    # owing a Snapshot entry can fail past its retries, and the entry is then left to the next multiple
    # (DESIGN §3, as after a crash), so a 20-edit run may have one. That every Snapshot entry written was
    # built is I5, which ``run.ok`` covers.
    assert run.snapshots >= 1 and sum(totals["job_outcomes"].values()) >= 1
    assert totals["usage"]["dynamodb"]["requests"] > 0
    assert "seed 7" in result.render()
