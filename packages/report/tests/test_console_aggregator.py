"""The console's aggregator: a bounded window of bars and markers, running totals of everything, bad input
counted and ignored."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from seglog_report.console.aggregator import IN_FLIGHT_SECONDS, MAX_KEYS, STALLED_AGE_MS, Aggregator
from seglog_report.legend import CHILD_RESTART, CRASH_POINT, EMULATOR_STARTED, EMULATOR_STOPPED, FAULTS
from seglog_report.metering import Metering


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def invocation(request_id: str, ts: float, *, function: str = "SnapshotWorkerFunction", pid: int = 7,
               outcome: str = "success", duration_ms: float = 40.2, **more: Any) -> dict[str, Any]:
    return {"event": "invocation", "ts": ts, "function": function, "pid": pid, "request_id": request_id,
            "outcome": outcome, "duration_ms": duration_ms, "source": "SnapshotWorkerFunction.Jobs", "attempt": 1,
            "memory_mb": 512, **more}


def started(request_id: str, ts: float, *, function: str = "SnapshotWorkerFunction", pid: int = 7,
            sender: int = 100) -> dict[str, Any]:
    return {"event": "invocation started", "ts": ts, "function": function, "pid": pid, "request_id": request_id,
            "sender": sender}


def test_two_hundred_thousand_events_keep_the_window_bounded_and_the_totals_whole() -> None:
    """An hour-long run must not grow the console: detail is capped, counts take every event."""
    clock = Clock()
    aggregator = Aggregator(clock=clock, max_items=5000, max_age=600.0)
    rng = random.Random(1)
    outcomes = {"success": 0, "error": 0, "crashed": 0}
    faults = 0
    for i in range(200_000):
        clock.now += 0.02  # 200,000 events over 4,000 s
        roll = rng.random()
        if roll < 0.1:
            aggregator.ingest({"event": "fault injected", "ts": clock.now, "fault": rng.choice(["a", "b"]),
                               "lane": f"F pid {i % 50}"})
            faults += 1
            continue
        outcome = rng.choice(list(outcomes))
        outcomes[outcome] += 1
        aggregator.ingest(started(f"r{i}", clock.now - 0.01, pid=i % 50))
        aggregator.ingest(invocation(f"r{i}", clock.now, pid=i % 50, outcome=outcome))
        if i % 1000 == 0:
            aggregator.tick()
            assert len(aggregator.window) <= 5000

    state = aggregator.state()
    assert len(state["items"]) <= 5000
    assert outcomes == state["panels"]["invocations"]["SnapshotWorkerFunction"]
    assert faults == sum(state["panels"]["faults"].values())
    assert sum(outcomes.values()) == state["panels"]["cost"]["meter"]["functions"]["SnapshotWorkerFunction"][
        "invocations"]
    assert not state["in_flight"]
    assert state["panels"]["feed"]["evicted"] + len(state["items"]) == sum(outcomes.values()) + faults


def test_items_older_than_the_window_roll_out_on_the_tick() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock, max_age=60.0)
    aggregator.ingest(invocation("old", clock.now))
    clock.now += 61
    aggregator.ingest(invocation("new", clock.now))
    aggregator.tick()

    assert ["new"] == [item["ids"]["request_id"] for item in aggregator.state()["items"]]
    assert {"success": 2} == aggregator.state()["panels"]["invocations"]["SnapshotWorkerFunction"]


def test_an_invocation_is_in_flight_from_its_start_to_its_end_and_its_bar_spans_its_duration() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    aggregator.ingest(started("r1", clock.now + 1.0))
    assert {"SnapshotWorkerFunction": 1} == aggregator.state()["panels"]["in_flight"]
    aggregator.ingest({"event": "snapshot job", "request_id": "r1", "outcome": "completed", "log_id": "L",
                       "segment": 0, "entry": 10})
    aggregator.ingest(invocation("r1", clock.now + 3.0, duration_ms=2000.0))

    state = aggregator.state()
    [span] = state["items"]
    # on its worker's lane, in the colour of the job it ran (as the report draws it)
    assert ("SnapshotWorkerFunction pid 7", 1.0, 3.0, "completed") == (span["lane"], span["start"], span["end"],
                                                                        span["outcome"])
    assert {"log_id": "L", "segment": 0, "entry": 10} == {k: span["ids"][k] for k in ("log_id", "segment", "entry")}
    assert {} == state["panels"]["in_flight"]


def test_a_dead_child_or_a_new_supervisor_ends_what_was_in_flight_as_incomplete() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    aggregator.ingest(started("a", clock.now, sender=100))
    aggregator.ingest(started("b", clock.now, sender=200))
    aggregator.ingest({"event": "child exited: restarting", "ts": clock.now + 1, "child": "queue:F.E", "pid": 100,
                       "status": -9})
    assert ["b"] == [f["request_id"] for f in aggregator.state()["in_flight"]]
    aggregator.ingest({"event": "emulator started", "ts": clock.now + 2})

    state = aggregator.state()
    assert [] == state["in_flight"]
    assert ["a", "b"] == [i["ids"]["request_id"] for i in state["items"] if i.get("outcome") == "incomplete"]
    assert [CHILD_RESTART, EMULATOR_STARTED] == [i["kind"] for i in state["items"] if i["type"] == "marker"]


def test_markers_are_of_the_legends_kinds_a_crash_point_one_kind_named_in_its_label() -> None:
    """Issue 21: a marker's kind is what the legend styles it by. Every crash point is the one kind crash_point
    (one symbol, as in the report), its label naming the point; faults keep their kind; the supervisor's markers
    are the legend's constants."""
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    aggregator.ingest({"event": "emulator started", "ts": clock.now})
    aggregator.ingest({"event": "fault injected", "ts": clock.now + 1, "fault": "ddb_5xx", "lane": "F pid 7"})
    for point in ("mid_chunk", "after_claim"):
        aggregator.ingest({"event": "crash point reached: killing this process", "ts": clock.now + 2,
                           "crash_point": point, "lane": "F pid 7"})
    aggregator.ingest({"event": "emulator stopped", "ts": clock.now + 3})

    state = aggregator.state()
    markers = [(i["kind"], i["label"]) for i in state["items"] if i["type"] == "marker"]
    assert [(EMULATOR_STARTED, "emulator started"), ("ddb_5xx", "fault: ddb_5xx"),
            (CRASH_POINT, "mid_chunk: the worker kills itself here"),
            (CRASH_POINT, "after_claim: the worker kills itself here"),
            (EMULATOR_STOPPED, "emulator stopped")] == markers
    assert all(kind in FAULTS for kind, _ in markers)
    assert {"mid_chunk": 1, "after_claim": 1} == state["panels"]["crash_points"]


def test_an_invocation_never_heard_of_again_leaves_flight_after_lambdas_longest_timeout() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    aggregator.ingest(started("lost", clock.now))
    clock.now += IN_FLIGHT_SECONDS + 1
    aggregator.tick()

    assert [] == aggregator.state()["in_flight"]
    assert {"incomplete": 1} == aggregator.state()["panels"]["invocations"]["SnapshotWorkerFunction"]


@pytest.mark.parametrize("event", [
    None, 42, "invocation", [], {"no": "event"}, {"event": 3},
    {"event": "invocation", "function": {"x": 1}, "duration_ms": "slow", "pid": "seven", "ts": "yesterday"},
    {"event": "invocation started"},
    {"event": "poller usage", "shards": ["not", "a", "map"], "requests": -5},
    {"event": "client try", "start": None, "end": float("nan"), "client": "c" * 10_000},
    {"event": "fault injected", "fault": "x" * 10_000, "lane": ["odd"]},
    {"event": "snapshot job", "outcome": None, "request_id": ["r"]},
], ids=repr)
def test_bad_input_is_counted_or_defaulted_and_the_state_still_encodes(event: Any) -> None:
    aggregator = Aggregator(clock=Clock())
    aggregator.ingest(event)
    state = aggregator.state()

    assert 1 == state["panels"]["feed"]["received"]
    encoded = msgspec.json.encode(state)
    assert len(encoded) < 20_000  # long strings were cut


def test_events_that_are_not_objects_count_as_malformed() -> None:
    aggregator = Aggregator(clock=Clock())
    events: list[Any] = [None, 42, [], {"event": 3}, {"event": "invocation started"}]
    for event in events:
        aggregator.ingest(event)
    assert 5 == aggregator.state()["panels"]["feed"]["malformed"]


def test_made_up_names_cannot_grow_the_tables() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    for i in range(1000):
        aggregator.ingest({"event": "fault injected", "ts": clock.now, "fault": f"kind{i}"})
        aggregator.ingest(invocation(f"r{i}", clock.now, function=f"F{i}"))
        aggregator.ingest({"event": "poller usage", "ts": clock.now, "poller": f"p{i}", "service": "sqs",
                           "requests": 1, "shards": {f"s{i}": 5}})
    panels = aggregator.state()["panels"]

    assert MAX_KEYS == len(panels["faults"]) and 1000 == sum(panels["faults"].values())
    assert len(panels["invocations"]) <= MAX_KEYS
    assert len(panels["pollers"]) <= MAX_KEYS and len(panels["iterator_age"]) <= MAX_KEYS
    assert len(panels["cost"]["meter"]["functions"]) <= 33


def test_a_shard_whose_iterator_age_keeps_growing_past_the_threshold_is_flagged_stalled_and_a_healthy_one_not(
        ) -> None:
    """Every 5 s the stream poller reports each shard's iterator age. A shard stuck on one batch reports an age that
    grows by the period each time; a busy but healthy shard's age goes up and down, even past the threshold. If the
    stuck shard were not flagged the console would hide a frozen pipeline; if the busy one were, it would cry wolf."""
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    stuck_from, busy = clock.now, [40_000, 70_000, 65_000, 90_000, 62_000, 95_000, 61_000]
    for i, busy_age in enumerate(busy):
        clock.now += 5.0
        aggregator.ingest({"event": "poller usage", "ts": clock.now, "poller": "StreamRouterFunction.Entries",
                           "service": "dynamodbstreams", "requests": 4,
                           "shards": {"shardId-stuck": round((clock.now - stuck_from) * 1000) + 30_000,
                                      "shardId-busy": busy_age, "shardId-idle": 0}})
        panels = aggregator.state()["panels"]
        if i == 0:
            assert [] == panels["stalled_shards"]  # growing, but not yet past the threshold
    shards = panels["iterator_age"]

    assert shards["shardId-stuck"]["age_ms"] >= STALLED_AGE_MS
    assert {"shardId-stuck": True, "shardId-busy": False, "shardId-idle": False} == {
        shard: figures["stalled"] for shard, figures in shards.items()}
    assert ["shardId-stuck"] == panels["stalled_shards"]


def test_a_stalled_shard_that_catches_up_is_no_longer_flagged() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock)
    for age in (50_000, 60_000, 70_000, 80_000, 0):
        clock.now += 5.0
        aggregator.ingest({"event": "poller usage", "ts": clock.now, "poller": "p", "service": "dynamodbstreams",
                           "shards": {"s": age}})
        if age == 80_000:
            assert ["s"] == aggregator.state()["panels"]["stalled_shards"]

    assert [] == aggregator.state()["panels"]["stalled_shards"]


def test_the_meter_bills_each_invocation_rounded_up_and_prices_s3_by_kind() -> None:
    metering = Metering()
    metering.invocation(invocation("r1", 0, duration_ms=10.2, init_duration_ms=300.5, usage={
        "dynamodb": {"requests": 3, "rcu": 1.5, "wcu": 2.0},
        "s3": {"requests": 5, "write_requests": 2, "free_requests": 1}, "sqs": {"requests": 1}}))
    metering.invocation(invocation("r2", 0, duration_ms=0.4, source="api"))
    metering.poller({"service": "dynamodbstreams", "requests": 40})
    metering.poller({"service": "sqs", "requests": 9})
    metering.request({"method": "POST", "path": "/sheets/abc/entries", "status": 200})
    metering.request({"method": "POST", "path": "/sheets/abc/uploads/u1/complete", "status": 201})
    metering.request({"method": "GET", "path": "/sheets/abc/entries", "status": 200})
    metering.request({"method": "POST", "path": "/sheets/abc/entries", "status": 409})
    meter = metering.meter

    # each invocation rounded up, a cold start's Init included: ceil(10.2 + 300.5) + ceil(0.4)
    assert 312.0 == meter.functions["SnapshotWorkerFunction"].billed_ms
    assert (3, 1.5, 2.0) == (meter.dynamodb_requests, meter.dynamodb_read_units, meter.dynamodb_write_units)
    assert (2, 2) == (meter.s3_write_requests, meter.s3_read_requests)
    assert (40, 10, 1, 2) == (meter.stream_read_requests, meter.sqs_requests, meter.api_requests, meter.appends)


def test_the_cost_is_the_ledgers_bill_of_the_meter_or_the_units_alone_when_it_cannot_be_priced() -> None:
    from seglog_report.cost import ledger

    metering = Metering()
    metering.invocation(invocation("r1", 0, usage={"dynamodb": {"requests": 2, "rcu": 1.0, "wcu": 4.0}}))
    cost = metering.cost()
    assert ledger(metering.meter).total == cost["total"] > 0
    assert "total" == cost["rows"][-1][0]

    metering.region = "nowhere-1"
    unpriced = metering.cost()
    assert (None, 4.0) == (unpriced["total"], unpriced["meter"]["dynamodb_write_units"])
    assert "nowhere-1" in unpriced["error"]
