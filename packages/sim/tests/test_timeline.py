"""A seed drawn for the report: the same world replayed, its invocations, client tries, faults and snapshots'
lives on lanes, and its meter."""

from __future__ import annotations

from seglog_sim import quiet_logs
from seglog_sim.run import run_seed
from seglog_sim.timeline import run_data, seeds_report

quiet_logs()
SEED = 7


def test_the_drawing_is_of_the_same_world_as_the_seed() -> None:
    result, data = run_data(SEED)
    again = run_seed(SEED)
    assert result.fired == again.fired and result.meter == again.meter
    # Every fault that fired is a marker, on the lane of the task it hit.
    assert len(data.markers) == len(result.fired)
    lanes = set(data.lanes())
    assert all(m.lane in lanes for m in data.markers)
    assert data.clock == "simulated" and data.ok == result.ok


def test_lanes_hold_invocations_client_tries_and_snapshot_lives() -> None:
    result, data = run_data(SEED)
    groups = {s.group for s in data.spans}
    assert {"function", "client", "snapshot"} <= groups
    api_tries = [s for s in data.spans if s.group == "client"]
    assert sum(s.outcome == "acknowledged" for s in api_tries) > 0
    assert all(s.end >= s.start for s in data.spans)
    worker = [s for s in data.spans if s.lane.startswith("SnapshotWorkerFunction")]
    counted = sum(n for key, n in result.invocations.items() if key.startswith("worker:"))
    assert worker and len(worker) <= counted  # one span per invocation; a batch's jobs count once each
    lives = [s for s in data.spans if s.group == "snapshot" and s.outcome == "completed"]
    assert len(lives) == result.snapshots  # every Snapshot entry, completed by the end (the seed passes)


def test_the_meter_counts_the_seeds_usage() -> None:
    result, data = run_data(SEED)
    meter = data.meter
    assert meter.appends == result.acknowledged
    assert meter.dynamodb_write_units > 0 and meter.dynamodb_read_units > 0
    assert meter.dynamodb_requests == sum(n for k, n in result.operations.items() if k.startswith("dynamodb "))
    assert meter.functions["SnapshotWorkerFunction"].memory_mb == 768  # the template's own, not Globals' 512
    invocations = sum(use.invocations for use in meter.functions.values())
    assert invocations == len([s for s in data.spans if s.group == "function"])


def test_a_report_of_seeds_draws_each_and_keeps_the_campaign_total() -> None:
    _, data = run_data(SEED)
    report = seeds_report([SEED, SEED + 1], None, command="seglog simulate", title="t",
                          replay=lambda s: f"seglog simulate --seed {s}", total=data.meter)
    assert [r.seed for r in report.runs] == [SEED, SEED + 1]
    assert report.runs[0].replay == f"seglog simulate --seed {SEED}"
    assert report.meter() == data.meter
