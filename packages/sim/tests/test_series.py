"""A seed's series under its timeline (seglog_sim.series): each shard's iterator age, as the liveness check reads
it, and the queues' depths, read from the simulated queues without changing what the seed does; and a campaign's
row for every seed (issue 21)."""

from __future__ import annotations

from itertools import pairwise

import msgspec

from seglog_core.violations import Violation
from seglog_report.model import Report, decode
from seglog_sim import quiet_logs
from seglog_sim.campaign import Campaign
from seglog_sim.liveness import stalled_shards
from seglog_sim.run import ROW_VIOLATIONS, execute, run_seed
from seglog_sim.series import DLQ, MAX_POINTS, SNAPSHOT_QUEUE, decimate, iterator_ages
from seglog_sim.timeline import run_data, seeds_report

quiet_logs()
#: Builds snapshots and parks jobs in the DLQ under faults (redriven after them).
SEED = 4
#: A stream shard whose oldest record waits half a minute under faults (a router attempt to its timeout).
STALLED = 54


def _at(points: list[tuple[float, float]], t: float) -> float:
    """The series' value at ``t``, on the straight lines between its points (the highest of several at ``t``)."""
    at_t = [v for at, v in points if at == t]
    if at_t:
        return max(at_t)
    (t0, v0), (t1, v1) = next((a, b) for a, b in pairwise(points) if a[0] < t < b[0])
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def test_a_seed_draws_each_shards_iterator_age_and_both_queues_depths_over_the_run() -> None:
    result, data = run_data(SEED)
    again = run_seed(SEED)  # watching the queues changed nothing
    assert (result.fired, result.steps, result.meter) == (again.fired, again.steps, again.meter)
    run, _ = execute(SEED)
    shards = run.ddb.shard_ids(run.topology.stream.table)
    by_name = {s.name: s for s in data.series}
    assert set(by_name) == {f"iterator age {shard}" for shard in shards} | {SNAPSHOT_QUEUE, DLQ}
    for series in data.series:
        assert series.basis == "modelled" and series.unit == ("s" if series.name.startswith("iterator") else
                                                                "messages")
        times = [t for t, _ in series.points]
        assert times == sorted(times) and times[0] == 0.0 and times[-1] == data.seconds, series.name
        assert all(v >= 0 for _, v in series.points)
    assert result.snapshots > 0 and max(v for _, v in by_name[SNAPSHOT_QUEUE].points) > 0
    assert max(v for _, v in by_name[DLQ].points) > 0  # jobs parked there under faults ...
    assert by_name[SNAPSHOT_QUEUE].points[-1][1] == by_name[DLQ].points[-1][1] == 0  # ... and all done by the end
    assert any(v > 0 for shard in shards for _, v in by_name[f"iterator age {shard}"].points)
    # A queue's depth moves in whole messages, as steps: each change is two points at one instant.
    depth = by_name[SNAPSHOT_QUEUE].points
    assert all(v == int(v) for _, v in depth)
    assert all(a[0] == b[0] or a[1] == b[1] for a, b in pairwise(depth))
    assert msgspec.json.decode(msgspec.json.encode(data))["series"][0]["points"][0] == [0.0, 0.0]


def test_the_iterator_age_is_the_liveness_checks_figure() -> None:
    """The longest wait of each shard under faults, as seglog_sim.liveness reports it (with no bound, each shard
    that waited at all), is the series' highest point before the faults stopped, at the same moment."""
    run, result = execute(STALLED)
    assert result.ok and run.faults_ended is not None
    start = run.world.start
    waited = stalled_shards(run.ddb, run.topology, run.pollers.moves, start=start, until=run.faults_ended, bound=0.0)
    assert waited and any("waited 30 s" in v.message for v in waited)
    ages = {s.name.removeprefix("iterator age "): s.points for s in iterator_ages(run)}
    ended = round(run.faults_ended - start, 3)
    for violation in waited:
        shard = violation.message.split()[2]
        points = ages[shard]
        before = [v for t, v in points if t <= ended] + [_at(points, ended)]
        assert violation.at is not None and max(before) == _at(points, violation.at)
        assert f"waited {max(before):.0f} s unread" in violation.message


def test_a_long_series_keeps_its_first_last_highest_and_lowest_points() -> None:
    points = [(t / 10, float((t * 7919) % 101)) for t in range(20_000)]
    points[12_345] = (1234.5, 500.0)
    kept = decimate(points, MAX_POINTS)
    assert len(kept) <= MAX_POINTS + 2 and kept[0] == points[0] and kept[-1] == points[-1]
    assert (1234.5, 500.0) in kept and min(v for _, v in kept) == 0.0
    assert [t for t, _ in kept] == sorted(t for t, _ in kept)
    assert decimate(points[:10], MAX_POINTS) == points[:10]


def test_a_campaign_keeps_a_row_for_every_seed_and_the_report_lists_them_failing_first() -> None:
    campaign = Campaign()
    results = [run_seed(seed) for seed in (11, 12, 13)]
    broken = results[1]
    broken.violations = [Violation(invariant="I3", message=f"broken {n}") for n in range(ROW_VIOLATIONS + 3)]
    for result in results:
        campaign.add(result)
    assert [row.seed for row in campaign.rows] == [11, 12, 13]
    row = campaign.rows[1]
    assert not row.ok and row.violations[0] == "I3: broken 0" and row.violations[-1] == "... and 3 more"
    first = campaign.rows[0]
    assert first.ok and first.faults == len(results[0].fired) and first.acknowledged == results[0].acknowledged
    assert first.invocations == sum(u.invocations for u in results[0].meter.functions.values()) > 0
    assert first.seconds == round(results[0].sim_seconds, 3)

    report = seeds_report([], None, command="seglog simulate", title="t", replay=lambda s: f"replay {s}",
                          rows=campaign.rows)
    table = decode(msgspec.json.encode(report)).seeds
    assert [(r.seed, r.ok, r.replay) for r in table] == [(12, False, "replay 12"), (11, True, "replay 11"),
                                                          (13, True, "replay 13")]
    assert isinstance(report, Report) and report.runs == []
