"""What only the simulator's event source mappings show: SQS concurrency, function timeouts and visibility races
in simulated time. The behaviours both drivers share (checkpoints, partial failures, retries, bisect, filters,
SQS settlement and the dead-letter queue) are one suite run against both: tests/fidelity/test_esm_rules.py.
A probe function stands in for the router and the worker, recording each invocation; the mappings, the queue and
the stream are the simulator's."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest

from seglog_sim import quiet_logs
from seglog_sim.aws.dynamodb import SimDynamoDB, TableSpec
from seglog_sim.aws.sqs import SimSQS
from seglog_sim.faults import Faults, Profile
from seglog_sim.lambdas import Invocations
from seglog_sim.pollers import Pollers
from seglog_sim.topology import Topology, load_topology
from seglog_sim.world import Task, World

Behaviour = Callable[[World, list[dict[str, Any]]], dict[str, Any]]


@pytest.fixture(autouse=True, scope="module")
def _quiet() -> None:
    quiet_logs()


@dataclasses.dataclass
class Probe:
    """The functions the pollers invoke: each invocation runs ``behaviour`` and is recorded with its time span."""

    world: World
    topology: Topology
    on_router: Behaviour
    on_worker: Behaviour
    invocations: Invocations = dataclasses.field(default_factory=Invocations)
    calls: list[tuple[str, float, Task, list[dict[str, Any]]]] = dataclasses.field(default_factory=list)

    def _start(self, kind: str, behaviour: Behaviour, batch: list[dict[str, Any]], timeout: float) -> Task:
        task = self.world.spawn(f"{kind}-{len(self.calls)}", kind, lambda: behaviour(self.world, batch),
                                timeout=timeout)
        self.calls.append((kind, self.world.now, task, batch))
        return task

    def router(self, records: list[dict[str, Any]]) -> Task:
        return self._start("router", self.on_router, records, self.topology.router.Timeout)

    def worker(self, messages: list[dict[str, Any]]) -> Task:
        return self._start("worker", self.on_worker, messages, self.topology.worker.Timeout)

    def spans(self, kind: str) -> list[tuple[float, float]]:
        return [(start, task.ended or self.world.now) for k, start, task, _ in self.calls if k == kind]


def ok(world: World, batch: list[dict[str, Any]]) -> dict[str, Any]:
    world.sleep(0.5)
    return {"batchItemFailures": []}


@dataclasses.dataclass
class Harness:
    world: World
    ddb: SimDynamoDB
    sqs: SimSQS
    queue_url: str
    dlq_url: str
    probe: Probe
    pollers: Pollers

    def write(self, n: int, *, snapshot: bool = True, log: bytes = b"L" * 16) -> None:
        """n entries in one segment (one partition key, so one shard, in order)."""
        for num in range(n):
            item = {"G": {"B": log + bytes(8)}, "N": {"N": str(num)}, "C": {"N": "1"},
                    "T": {"S": "snap" if snapshot else "cell"}}
            self.ddb.call("PutItem", {"TableName": "EntriesTable", "Item": item})
        self.world.notify(self.pollers.stream_signal)

    def send(self, n: int) -> None:
        for index in range(n):
            self.sqs.call("SendMessage", {"QueueUrl": self.queue_url, "MessageBody": f"job {index}"})
        self.world.notify(self.pollers.queue_signal)

    def run(self, until: float, setup: Callable[[], None] = lambda: None) -> None:
        def driver(w: World) -> None:
            self.pollers.start()
            w.spawn("setup", "client", setup)

        self.world.run(driver, until=self.world.start + until)
        self.world.close()


def harness(*, on_router: Behaviour = ok, on_worker: Behaviour = ok, batch_size: int | None = None,
            visibility: int | None = None, max_receive: int = 3) -> Harness:
    topology = load_topology()
    if batch_size is not None:
        topology = dataclasses.replace(topology, jobs=dataclasses.replace(topology.jobs, BatchSize=batch_size))
    world = World(start=1_700_000_000.0)
    ddb = SimDynamoDB([TableSpec.from_properties(n, p) for n, p in topology.tables.items()], clock=lambda: world.now,
                      shards=1)
    sqs = SimSQS(clock=lambda: world.now, rng=random.Random(7))
    dlq_url = sqs.create_queue("SnapshotDeadLetterQueue")
    queue_url = sqs.create_queue("SnapshotQueue", visibility_timeout=visibility or topology.queue.VisibilityTimeout,
                                 dead_letter="SnapshotDeadLetterQueue", max_receive_count=max_receive)
    probe = Probe(world=world, topology=topology, on_router=on_router, on_worker=on_worker)
    pollers = Pollers(world=world, faults=Faults(seed=1, profile=Profile(rates={})), lambdas=probe, ddb=ddb, sqs=sqs,
                      queue_url=queue_url)
    return Harness(world=world, ddb=ddb, sqs=sqs, queue_url=queue_url, dlq_url=dlq_url, probe=probe, pollers=pollers)


def _seqs(batch: list[dict[str, Any]]) -> list[int]:
    return [int(r["dynamodb"]["SequenceNumber"]) for r in batch]


# ------------------------------------------------------------------------------------------------ streams


# ---------------------------------------------------------------------------------------------------- SQS


def test_sqs_batches_run_concurrently_up_to_maximum_concurrency() -> None:
    def slow(world: World, batch: list[dict[str, Any]]) -> dict[str, Any]:
        world.sleep(20.0)
        return {"batchItemFailures": []}

    h = harness(on_worker=slow)
    h.run(200.0, lambda: h.send(12))
    spans = h.probe.spans("worker")
    peak = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert peak == h.probe.topology.jobs.MaximumConcurrency == 5
    assert len(spans) == 12 and h.sqs.depth(h.queue_url) == (0, 0)


def test_sqs_invocation_past_the_function_timeout_is_killed_and_counts_as_failed() -> None:
    def too_slow(world: World, batch: list[dict[str, Any]]) -> dict[str, Any]:
        world.sleep(10_000.0)
        return {"batchItemFailures": []}

    h = harness(on_worker=too_slow, visibility=360)
    h.run(100.0, lambda: h.send(1))
    (_, start, task, _), *_ = h.probe.calls
    assert task.killed == "timeout"
    assert task.ended is not None and task.ended - start == pytest.approx(h.probe.topology.worker.Timeout, abs=0.01)
    assert h.sqs.depth(h.queue_url) == (0, 1)  # not deleted: back after its visibility timeout


def test_sqs_visibility_timeout_shorter_than_the_run_gives_a_concurrent_second_delivery() -> None:
    def long(world: World, batch: list[dict[str, Any]]) -> dict[str, Any]:
        world.sleep(25.0)
        return {"batchItemFailures": []}

    h = harness(on_worker=long, visibility=10, max_receive=10)
    h.run(40.0, lambda: h.send(1))
    spans = h.probe.spans("worker")
    assert len(spans) >= 2 and spans[1][0] < spans[0][1]  # the second delivery starts while the first runs

