"""A demo run's report, end to end through the real emulator (issue 12 "Done when"): every snapshot's life is on
the page, the ledger matches a hand calculation from the run's metered units, the meter agrees with the run's
own tallies, and Chromium shows the lanes, faults and ledger the run's data hold."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from browser import Page
from report_page import ledger, open_report, timeline
from seglog_cli.demo import demo_plan
from seglog_core.schema import EntryType
from seglog_emulator.chaos import Campaign, Workload
from seglog_emulator.chaos.report import CampaignReport
from seglog_report.cost import Ledger, money
from seglog_report.html import publish
from seglog_report.model import Report

pytestmark = pytest.mark.stack

SEED = 3


@dataclass
class DemoRun:
    result: CampaignReport
    report: Report
    page: Path
    priced: Ledger
    #: (log id, segment, entry) of every Snapshot entry in the logs after the run (a log's first left out).
    snapshots: set[tuple[str, int, int]]


@pytest.fixture(scope="module")
def demo_run(stacks: Any, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    root = tmp_path_factory.mktemp("demo-report")
    base = stacks.deployment("dynamodb-local")
    campaign = Campaign(base.endpoints, profile=base.profile, region=base.region, state_root=root, prefix="trep",
                        parameters={"SnapshotEvery": 8},
                        workload=Workload(sheets=1, clients=3, edits=12, large_rows=200))
    result = campaign.run(SEED, 1, faults="all", base=demo_plan(SEED, "all"))
    snapshots = set()
    store = campaign.deployment.backend().store
    for log_id in result.runs[0].log_ids:
        latest = store.latest_segments(uuid.UUID(log_id), limit=1)[0].num
        for segment in range(latest + 1):
            snapshots |= {(log_id, e.segment, e.num) for e in store.entries(uuid.UUID(log_id), segment, 0)
                          if e.type is EntryType.SNAPSHOT and (e.segment, e.num) != (0, 0)}
    campaign.close(keep=False)
    result.title = "seglog demo"
    report = result.to_report("demo", "seglog demo --seed 3")
    page, priced = publish(report, root / "report")
    return DemoRun(result=result, report=report, page=page, priced=priced, snapshots=snapshots)


def test_every_snapshot_has_its_life_on_the_timeline(demo_run: DemoRun) -> None:
    [run] = demo_run.report.runs
    assert run.ok, run.violations
    lives = {(str(s.ids["log_id"]), s.ids["segment"], s.ids["entry"]): s for s in run.spans if s.group == "snapshot"}
    assert demo_run.snapshots and set(lives) == demo_run.snapshots
    assert all(s.outcome == "completed" and s.end > s.start for s in lives.values())


def test_the_meter_agrees_with_the_runs_own_tallies(demo_run: DemoRun) -> None:
    [run] = demo_run.result.runs
    meter = demo_run.report.runs[0].meter
    assert meter.appends == run.clients["appends"] > 0
    assert meter.api_requests == run.clients["requests"]
    assert {f: u.invocations for f, u in meter.functions.items()} == {
        f: sum(counts.values()) for f, counts in run.invocations.items()}
    assert meter.dynamodb_write_units == pytest.approx(run.usage["dynamodb"]["wcu"])
    assert meter.dynamodb_read_units == pytest.approx(run.usage["dynamodb"]["rcu"])
    assert meter.s3_write_requests + meter.s3_read_requests <= run.usage["s3"]["requests"]
    assert meter.functions["SnapshotWorkerFunction"].memory_mb == 768  # its own, not Globals' 512


def test_the_ledger_matches_a_hand_calculation(demo_run: DemoRun) -> None:
    """us-east-1 on-demand list prices, written out by hand (arm64 Lambda, as the template deploys it)."""
    m = demo_run.report.meter()
    hand = (m.dynamodb_write_units * 0.625 / 1e6 + m.dynamodb_read_units * 0.125 / 1e6
            + m.s3_write_requests * 0.005 / 1e3 + m.s3_read_requests * 0.0004 / 1e3
            + m.sqs_requests * 0.40 / 1e6 + m.api_requests * 1.00 / 1e6
            + sum(u.invocations for u in m.functions.values()) * 0.20 / 1e6
            + sum(u.memory_mb / 1024 * u.billed_ms / 1000 for u in m.functions.values()) * 0.0000133334)
    assert demo_run.priced.total == pytest.approx(hand, rel=1e-9)
    assert demo_run.priced.per_million_appends == pytest.approx(hand / m.appends * 1e6, rel=1e-9)
    assert demo_run.priced.total > 0


def test_the_demo_report_in_chromium(demo_run: DemoRun, chromium: Page) -> None:
    [run] = demo_run.report.runs
    summary = open_report(chromium, demo_run.page)
    assert chromium.errors == []
    assert summary["ok"] is True and summary["opens_on"] is None
    drawn = timeline(chromium, run.run)
    assert drawn["labels"][::-1] == run.lanes()
    assert sum(label.startswith("snapshot ") for label in drawn["labels"]) == len(demo_run.snapshots)
    markers = {t["name"]: t["points"] for t in drawn["traces"] if t["type"] == "scatter"}
    assert markers == dict(Counter(m.kind for m in run.markers)) and markers
    bars = sum(t["points"] for t in drawn["traces"] if t["type"] == "bar")
    assert bars == len(run.spans)
    shown = ledger(chromium)
    assert shown["total"] == demo_run.priced.total and shown["shown"] == money(demo_run.priced.total)
    assert [r["dollars"] for r in shown["rows"]] == [line.dollars for line in demo_run.priced.lines]
    chromium.screenshot("demo-report")
