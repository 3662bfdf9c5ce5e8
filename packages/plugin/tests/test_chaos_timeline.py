"""A chaos run drawn from what it left: its log, its fault log, its clients' tries, its snapshots' lives; and
metered for the cost ledger from the same lines."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from seglog_core.violations import Violation
from seglog_plugin.chaos.timeline import log_records, run_data
from seglog_plugin.chaos.watch import SnapshotLife
from seglog_plugin.chaos.workload import ClientTry
from seglog_report.legend import CRASH_POINT
from seglog_report.model import Link, Series

T0 = 1_800_000_000.0
LOG = "3f0c6f7e-1111-4d6b-9a58-000000000001"


def stamp(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(T0 + seconds, UTC).isoformat().replace("+00:00", "Z")


def line(at: float, event: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, "timestamp": stamp(at), **fields}


def write_run(tmp_path: Path) -> tuple[Path, Path]:
    records = [
        line(1.0, "invocation", function="ApiFunction", pid=10, request_id="r-api", api_request_id="gw-2",
             outcome="success",
             duration_ms=400.4, init_duration_ms=1200.2, cold_start=True, memory_mb=512,
             usage={"dynamodb": {"requests": 3, "rcu": 1.5, "wcu": 4.0}}),
        line(1.9, "snapshot entry appended", log_id=LOG, segment=0, entry=10),
        line(2.2, "routed", log_id=LOG, segment=0, entry=10, request_id="r-router"),
        line(2.25, "invocation", function="StreamRouterFunction", pid=20, request_id="r-router", outcome="success",
             duration_ms=50.0, usage={"sqs": {"requests": 1}}),
        line(2.9, "fault injected", fault="worker_crash", key="crash:k1", request_id="r-w1", log_id=LOG),
        line(3.0, "crash point reached: killing this process", crash_point="mid_chunk", pid=30, request_id="r-w1",
             log_id=LOG, segment=0, entry=10),
        line(3.0, "invocation", function="SnapshotWorkerFunction", pid=30, request_id="r-w1", outcome="crashed",
             duration_ms=500.0, usage={}, memory_mb=1024),
        line(6.0, "snapshot job", outcome="taken_over", request_id="r-w2", log_id=LOG, segment=0, entry=10,
             message_id="m-1"),
        line(6.1, "invocation", function="SnapshotWorkerFunction", pid=31, request_id="r-w2", outcome="success",
             duration_ms=1000.0, memory_mb=1024,
             usage={"s3": {"requests": 5, "write_requests": 3, "free_requests": 1},
                    "dynamodb": {"requests": 4, "rcu": 2.0, "wcu": 3.0}}),
        line(6.5, "poller usage", poller="SnapshotWorkerFunction.Jobs", service="sqs", requests=7),
        line(6.5, "poller usage", poller="StreamRouterFunction.Entries", service="dynamodbstreams", requests=11,
             shards={"shardId-00000001700000000000-aaaa1111": 1500, "shardId-00000001700000000000-bbbb2222": 0}),
        line(7.5, "poller usage", poller="StreamRouterFunction.Entries", service="dynamodbstreams", requests=0,
             shards={"shardId-00000001700000000000-aaaa1111": 250}),
    ]
    log = tmp_path / "emulator.log"
    log.write_text("not json\n" + "".join(json.dumps(r) + "\n" for r in records))
    faults = tmp_path / "faults.jsonl"
    faults.write_text(json.dumps({"kind": "worker_crash", "key": "crash:k1", "params": {"point": "mid_chunk"},
                                  "at": T0 + 2.9, "process": "SnapshotWorkerFunction", "pid": 30}) + "\n"
                      + json.dumps({"kind": "supervisor_restart", "key": "supervisor:1", "params": {},
                                    "at": T0 + 4.0, "process": "chaos", "pid": 1}) + "\n")
    return log, faults


def tries() -> list[ClientTry]:
    path = f"/sheets/{LOG}/entries"
    return [ClientTry(client="client 0", start=T0 + 0.5, end=T0 + 1.2, method="POST", path=path, number=1,
                      status=None, error="timeout", log_id=LOG),
            ClientTry(client="client 0", start=T0 + 1.4, end=T0 + 1.8, method="POST", path=path, number=2,
                      status=201, error=None, log_id=LOG, api_request_id="gw-2")]


DEPTHS = [Series(name="snapshot queue depth", unit="messages", points=[(0.5, 0.0), (2.3, 1.0), (6.2, 0.0)])]


def draw(tmp_path: Path, violations: list[Violation] | None = None) -> Any:
    log, faults = write_run(tmp_path)
    lives = [SnapshotLife(log_id=uuid.UUID(LOG), segment=0, entry=10, appeared=T0 + 1.9, completed=T0 + 6.0)]
    return run_data(run=0, seed=7, started_at=T0, seconds=8.0, records=log_records(log), fault_log=faults,
                    tries=tries(), lives=lives, violations=violations or [], quiescence=2.5, series=DEPTHS)


def test_invocations_are_spans_on_their_worker_process_lane_with_the_jobs_outcome(tmp_path: Path) -> None:
    data = draw(tmp_path)
    spans = {s.ids.get("request_id"): s for s in data.spans if s.group == "function"}
    assert spans["r-api"].lane == "ApiFunction pid 10"
    assert spans["r-api"].start == pytest.approx(1.0 - 0.4004) and spans["r-api"].end == pytest.approx(1.0)
    assert spans["r-w1"].outcome == "crashed"
    assert spans["r-w2"].outcome == "taken_over"  # the job's outcome, over the invocation's "success"
    assert spans["r-w2"].ids["message_id"] == "m-1"
    assert data.lanes()[:1] == ["client 0"]


def test_faults_land_on_the_lane_of_the_process_they_hit_with_the_request_id(tmp_path: Path) -> None:
    data = draw(tmp_path)
    crash = next(m for m in data.markers if m.kind == "worker_crash")
    assert crash.lane == "SnapshotWorkerFunction pid 30" and crash.at == pytest.approx(2.9)
    assert crash.ids["request_id"] == "r-w1"
    restart = next(m for m in data.markers if m.kind == "supervisor_restart")
    assert restart.group == "operator" and restart.lane == "chaos (pid 1)"
    assert any(m.kind == CRASH_POINT and m.label.startswith("mid_chunk:") for m in data.markers)


def test_clients_tries_snapshot_lives_and_latencies(tmp_path: Path) -> None:
    data = draw(tmp_path)
    client = [s for s in data.spans if s.group == "client"]
    assert [s.outcome for s in client] == ["lost", "acknowledged"]
    life = next(s for s in data.spans if s.group == "snapshot")
    assert (life.start, life.end, life.outcome) == (pytest.approx(1.9), pytest.approx(6.0), "completed")
    assert data.latencies["append"] == [pytest.approx(1.3)]  # first try's start to the acknowledged answer
    assert data.latencies["stream_hop"] == [pytest.approx(0.3)]
    assert data.latencies["quiescence"] == [2.5]


def test_the_meter_adds_up_the_lines(tmp_path: Path) -> None:
    meter = draw(tmp_path).meter
    assert meter.dynamodb_read_units == 3.5 and meter.dynamodb_write_units == 7.0
    assert meter.dynamodb_requests == 7
    assert (meter.s3_write_requests, meter.s3_read_requests) == (3, 1)  # 5 requests: 3 PUT-tier, 1 free DELETE
    assert meter.sqs_requests == 1 + 7 and meter.stream_read_requests == 11
    assert meter.appends == 1 and meter.api_requests == 2
    api = meter.functions["ApiFunction"]
    assert (api.invocations, api.billed_ms, api.memory_mb) == (1, 1601, 512)  # ceil(400.4 + 1200.2): Init billed
    worker = meter.functions["SnapshotWorkerFunction"]
    assert (worker.invocations, worker.billed_ms) == (2, 1500)
    assert worker.gb_seconds == pytest.approx(1.5)
    assert meter.functions["StreamRouterFunction"].memory_mb == 128  # its line names none: Lambda's default


def test_a_violation_outlines_what_touched_its_entry(tmp_path: Path) -> None:
    given = Violation(invariant="I3", log_id=LOG, segment=0, entry=10,
                      message="the snapshot is not the fold of the log")
    data = draw(tmp_path, [given])
    [violation] = data.violations
    assert (violation.invariant, violation.log_id, violation.segment, violation.entry) == ("I3", LOG, 0, 10)
    outlined = {s.ids.get("request_id") or s.lane for s in data.spans if s.highlight}
    # The router that routed it, the crashed try (its log and entry from its crash line), the take-over, the
    # snapshot's life; not the client's tries (on the log, but no entry of theirs is known) nor the API's.
    assert {"r-router", "r-w1", "r-w2", f"snapshot {LOG[:8]} 0/10"} == outlined
    assert sorted(m.kind for m in data.markers if m.highlight) == [CRASH_POINT, "worker_crash"]
    assert violation.at is not None and not data.ok
    assert given.at is None  # the report's copy got the time, the caller's violation is as it was


def test_a_try_is_linked_to_the_api_invocation_that_served_it(tmp_path: Path) -> None:
    """The answered try carries its answer's apigw-requestid, the API invocation's line the same id: one "served
    by" link between them. The lost try got no answer, so no id and no link (not a guess by time)."""
    data = draw(tmp_path)
    lost, answered = [s for s in data.spans if s.group == "client"]
    api = next(s for s in data.spans if s.ids.get("request_id") == "r-api")
    assert ("gw-2", "gw-2") == (answered.ids["api_request_id"], api.ids["api_request_id"])
    served = [link for link in data.links if link.why == "served by"]
    assert [Link(answered.id, api.id, "served by")] == served
    assert "api_request_id" not in lost.ids


def test_each_shards_iterator_age_and_the_sampled_depths_are_series_under_the_timeline(tmp_path: Path) -> None:
    """One series per stream shard from the stream poller's "poller usage" lines (ms -> s, at the line's time
    since the run started), named by the part of the shard id that tells them apart; then the depths sampled
    while the run went, as given."""
    data = draw(tmp_path)
    ages = {s.name: s for s in data.series if s.name.startswith("iterator age ")}
    assert ["iterator age aaaa1111", "iterator age bbbb2222"] == sorted(ages)
    assert [(6.5, 1.5), (7.5, 0.25)] == ages["iterator age aaaa1111"].points
    assert [(6.5, 0.0)] == ages["iterator age bbbb2222"].points
    assert {("s", "measured")} == {(s.unit, s.basis) for s in ages.values()}
    assert DEPTHS == [s for s in data.series if s.name not in ages]
