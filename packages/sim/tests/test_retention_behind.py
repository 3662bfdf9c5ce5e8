"""checks.retention_behind: once the world is quiet, the last clean scheduled retention run must have retired every
segment its policy made due before it started (seglog_core.retention, "Due segments")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sim_ddb_support import Clock, n

from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.checks import retention_behind

LOG = b"\x07" * 16
START = 1_700_000_000.0


def segments(*created: int, retired: tuple[int, ...] = ()) -> SimDynamoDB:
    sim = SimDynamoDB([TableSpec("Segments", "L", "N", hash_type="B", range_type="N")], clock=Clock(START))
    client = SimDynamoDBClient.of(sim)
    for num, c in enumerate(created):
        item = {"L": {"B": LOG}, "N": n(num), "C": n(c)}
        if num in retired:
            item["A"] = {"S": f"archive/{num}"}
        client.put_item(TableName="Segments", Item=item)
    return sim


def run(started: float, *, complete: bool = True, keep: int = 2, min_age: float = 100.0) -> Any:
    return SimpleNamespace(done=True, killed=None, error=None, started=started, skew=0.0,
                           result={"complete": complete, "failed": 0, "resumed_after": None},
                           tags={"keep": keep, "min_age": min_age})


TOPOLOGY: Any = SimpleNamespace(segments_table="Segments")


def test_a_segment_left_due_by_the_last_clean_run_is_named() -> None:
    """Segment 2 (keep 2 after 0) was created at 1,000, long before the run at 2,000 less 100 s: 0 is due."""
    sim = segments(500, 900, 1_000, 1_950)

    found = retention_behind(sim, TOPOLOGY, [run(2_000.0)])

    assert [("I5", 0)] == [(v.invariant, v.segment) for v in found]


def test_segments_retired_or_not_yet_due_pass() -> None:
    """0 retired; 1 is left behind only by segment 3, created 50 s before the run: not due for 100 s."""
    sim = segments(500, 900, 1_000, 1_950, retired=(0,))
    assert [] == retention_behind(sim, TOPOLOGY, [run(2_000.0)])


def test_only_a_clean_run_judges() -> None:
    """A run cut short (not complete) promises nothing: what it left is the next run's."""
    sim = segments(500, 900, 1_000, 1_950)
    assert [] == retention_behind(sim, TOPOLOGY, [run(2_000.0, complete=False)])
