"""The snapshot liveness check (seglog_sim.liveness.idle_snapshots, issue 34): a buildable snapshot no live claim
holds is built by the next job of its sheet, so it never stays idle through later jobs' runs while faults last."""

from __future__ import annotations

import uuid

from seglog_core.schema import pending_key
from seglog_sim.cloud import Call
from seglog_sim.history import describe_key, snapshot_times
from seglog_sim.jobs import job_key
from seglog_sim.liveness import _idle_stretches, live_claims
from seglog_sim.run import execute

LOG = uuid.UUID("6b1c0d3e-0000-4000-8000-000000000001")
TABLE = "PendingSnapshots"
#: A busy sheet's seed (Scenario.busy_share): a writer all through the fault window, worker crashes armed.
BUSY = 39


def _update(at: float, entry: int, expression: str, stamp: int | None = None) -> Call:
    values = {} if stamp is None else {":m": {"N": str(stamp)}}
    return Call(at, "worker-1", "dynamodb", "UpdateItem", {
        "TableName": TABLE, "Key": {"L": {"B": LOG.bytes}, "P": {"B": pending_key(0, entry)}},
        "UpdateExpression": expression, "ExpressionAttributeValues": values}, "ok", "")


def test_a_claim_is_live_from_the_claim_while_renewed_and_until_let_go_or_stale() -> None:
    history = [
        _update(100.0, 4, "SET A = :t, M = :m ADD X :one", 100),  # claimed
        _update(110.0, 4, "SET S = :s, M = :m", 110),  # renewed: live until 110 + 15 (+1, whole seconds)
        _update(140.0, 4, "SET A = :t, M = :m ADD X :one", 140),  # the dead claim taken anew after it went stale
        _update(142.0, 4, "SET A = :f, M = :m", 142),  # released (a handoff)
        _update(150.0, 8, "SET A = :t, M = :m ADD X :one", 150),  # never let go: stale at 166
    ]
    live = live_claims(history, TABLE, takeover=15)
    assert {(str(LOG), 0, 4): [(100.0, 126.0), (140.0, 142.0)], (str(LOG), 0, 8): [(150.0, 166.0)]} == live


def test_idle_stretches_are_what_no_live_claim_covers() -> None:
    assert [(10.0, 20.0), (30.0, 40.0)] == list(_idle_stretches(10.0, 40.0, [(20.0, 25.0), (24.0, 30.0)]))
    assert [] == list(_idle_stretches(10.0, 40.0, [(0.0, 50.0)]))


def test_a_busy_sheet_under_worker_crashes_has_its_lost_jobs_built_by_later_ones() -> None:
    """The world issue 34 found outside the simulator: a sheet written all through the faults, worker crashes on.
    Every check passes (the idle check among them), and snapshots were completed by jobs of later snapshots."""
    run, result = execute(BUSY)
    assert result.scenario["busy"] and "worker_crash" in result.kinds, "seed BUSY must draw a busy sheet"
    assert result.ok, [v.text for v in result.violations]
    tasks = {task.name: task for task in run.world.tasks}
    helped = []
    for call in run.cloud.history:
        if (call.operation != "UpdateItem" or not str(call.params.get("UpdateExpression", "")).startswith("SET R =")
                or not call.outcome.startswith(("ok", "applied"))):
            continue
        log_id, where = describe_key(call.params["Key"])
        segment, _, entry = where.partition("/")
        own = {job_key(body) for body in tasks[call.task].tags.get("bodies") or []}
        if (log_id, int(segment), int(entry)) not in own:
            helped.append(call)
    assert len(snapshot_times(run.cloud.history)) > 20
    assert helped, "a busy sheet's later jobs build earlier snapshots"
