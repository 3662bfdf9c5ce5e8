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
from report_page import click_on, ledger, legend_problems, open_report, overflows, timeline
from seglog_cli.demo import demo_plan
from seglog_core.schema import EntryType
from seglog_plugin.chaos import Campaign, Workload
from seglog_plugin.chaos.report import CampaignReport
from seglog_plugin.resources import backend_of
from seglog_report import causes
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
    result = campaign.run(SEED, 1, faults="all", base=demo_plan(SEED, "all"), kind="demo")
    snapshots = set()
    store = backend_of(campaign.deployment).store
    for log_id in result.runs[0].log_ids:
        latest = store.latest_segments(uuid.UUID(log_id), limit=1)[0].num
        for segment in range(latest + 1):
            snapshots |= {(log_id, e.segment, e.num) for e in store.entries(uuid.UUID(log_id), segment, 0)
                          if e.type is EntryType.SNAPSHOT and (e.segment, e.num) != (0, 0)}
    campaign.close(keep=False)
    report = result.to_report("seglog demo --seed 3")
    page, priced = publish(report, root / "report")
    return DemoRun(result=result, report=report, page=page, priced=priced, snapshots=snapshots)


def test_every_snapshot_has_its_life_on_the_timeline(demo_run: DemoRun) -> None:
    [run] = demo_run.report.runs
    assert run.ok, run.violations
    lives = {(str(s.ids["log_id"]), s.ids["segment"], s.ids["entry"]): s for s in run.spans if s.group == "snapshot"}
    assert demo_run.snapshots and set(lives) == demo_run.snapshots
    assert all(s.outcome == "completed" and s.end > s.start for s in lives.values())


def test_every_answered_try_is_linked_to_the_api_invocation_that_served_it(demo_run: DemoRun) -> None:
    """The gateway's apigw-requestid on the answer, the same id on the API invocation's log line: each answered
    try has exactly one "served by" link, to an ApiFunction invocation with that id; a lost answer has none."""
    [run] = demo_run.report.runs
    spans = {s.id: s for s in run.spans}
    served = {link.source: link.target for link in run.links if link.why == "served by"}
    answered = {s.id for s in run.spans if s.group == "client" and s.outcome != "lost"}
    assert answered and answered == set(served)
    assert all(spans[api].lane.startswith("ApiFunction pid ")
               and spans[api].ids["api_request_id"] == spans[try_].ids["api_request_id"]
               for try_, api in served.items())


def test_the_stream_and_the_queues_are_drawn_as_series(demo_run: DemoRun) -> None:
    """Each shard's iterator age from the stream poller's usage lines; both queues' depths sampled at least once a
    second while the run went."""
    [run] = demo_run.report.runs
    series = {s.name: s for s in run.series}
    assert any(name.startswith("iterator age ") and series[name].points for name in series)
    for name in ("snapshot queue depth", "DLQ depth"):
        times = [at for at, _ in series[name].points]
        assert len(times) >= run.seconds and times == sorted(times) and times[-1] <= run.seconds + 1, name


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
    markers = {t["name"]: t["points"] for t in drawn["traces"] if t["mode"] == "markers"}
    assert markers == dict(Counter(m.kind for m in run.markers)) and markers
    bars = sum(t["points"] for t in drawn["traces"] if t["type"] == "bar")
    assert bars == len(run.spans)
    shown = ledger(chromium)
    assert shown["total"] == demo_run.priced.total and shown["shown"] == money(demo_run.priced.total)
    assert [r["dollars"] for r in shown["rows"]] == [line.dollars for line in demo_run.priced.lines]
    chromium.screenshot("demo-report")


def test_why_a_demo_snapshot_took_long_is_answered_by_selection(demo_run: DemoRun, chromium: Page) -> None:
    """Issue 21 "Done when": in a demo report, clicking the snapshot that took longest lights up its Snapshot
    entry, the API invocation that appended it, the router batch that sent its job, every worker invocation on it
    and the one that completed it; the panel says why it waited. The legend tells every fault kind apart and no
    panel overflows at 1280 px."""
    [run] = demo_run.report.runs
    open_report(chromium, demo_run.page)
    assert legend_problems(chromium, run.run) == []
    assert overflows(chromium) == []
    lives = [s for s in run.spans if s.group == "snapshot" and s.outcome == "completed"]
    chosen = max(lives, key=lambda s: s.end - s.start)
    selection = click_on(chromium, run.run, chosen.id)
    assert selection is not None and selection["id"] == chosen.id
    chain = set(selection["chain"])
    assert chain == causes.chain(run, chosen.id)
    k = causes.snapshot_key(chosen)
    spans = {s.id: s for s in run.spans}
    acted = {act: {i for i in chain if i in spans and k in spans[i].acts.get(act, [])} for act in causes.ACTS}
    assert acted[causes.APPENDED] and all(spans[i].lane.startswith("ApiFunction") for i in acted[causes.APPENDED])
    assert acted[causes.ROUTED] and all(spans[i].lane.startswith("StreamRouterFunction")
                                        for i in acted[causes.ROUTED])
    workers = {s.id for s in run.spans if k in s.acts.get(causes.WORKED, [])}
    assert workers and workers <= chain
    assert any(spans[i].outcome == "completed" for i in workers)
    panel = chromium.evaluate(f"document.getElementById('why-{run.run}').innerText")
    assert run.waits[chosen.id] in panel
    chromium.click(5, 5)  # the pointer off the plot, so no hover box covers the screenshot
    chromium.evaluate("window.scrollTo(0, 0)")  # the page from its top: the sticky header in its place
    chromium.screenshot("demo-snapshot-selected")
