"""The simulator's driver of the one fidelity suite (:mod:`fidelity.drivers` says what a driver answers).

The simulated stream is the template's entries table (one partition key, so one shard, in order) and the queues
are SimSQS's; the pollers are the simulator's own (:class:`seglog_sim.pollers.Pollers`) with the suite's mapping
in place of the template's. The probe is a function of the simulated world that applies the probe_handler's
rules (:func:`fidelity.probe_handler.plan`) and sleeps on the simulated clock.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from fidelity.drivers import QueueRun, Rec, StreamRun, collapse, queue_mapping, stream_mapping
from fidelity.probe_handler import ProbeError, instructions, plan
from seglog_awsmodel.events.sqs import sqs_record
from seglog_awsmodel.faults import FaultKind
from seglog_sim import quiet_logs
from seglog_sim.aws.dynamodb import SimDynamoDB, TableSpec
from seglog_sim.aws.sqs import SimSQS
from seglog_sim.faults import Faults, Profile
from seglog_sim.lambdas import Invocations
from seglog_sim.pollers import Pollers
from seglog_sim.topology import Topology, load_topology
from seglog_sim.world import Task, World

#: Every invocation takes this long at least (simulated seconds): a real one is never instantaneous.
INVOCATION_SECONDS = 0.05
#: Simulated seconds a run lasts: far past any test's last delivery (retries pause 2 s at most).
RUN_SECONDS = 600.0


@dataclasses.dataclass
class _Probe:
    """The functions the simulated pollers invoke (their ``Functions``), applying the probe's rules."""

    world: World
    topology: Topology
    invocations: Invocations = dataclasses.field(default_factory=Invocations)
    calls: list[tuple[float, Task, list[dict[str, Any]]]] = dataclasses.field(default_factory=list)
    delivered: Counter[str] = dataclasses.field(default_factory=Counter)

    def _run(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        read = [instructions(r) for r in records]
        earlier = {r["id"]: self.delivered[r["id"]] for r in read}
        self.delivered.update(r["id"] for r in read)
        seconds, failed, failures = plan(read, earlier)
        self.world.sleep(INVOCATION_SECONDS + seconds)
        if failed:
            raise ProbeError(f"records {failed} are set to fail")
        return {"batchItemFailures": [{"itemIdentifier": i} for i in reversed(failures)]}

    def _start(self, kind: str, records: list[dict[str, Any]], timeout: float) -> Task:
        task = self.world.spawn(f"{kind}-{len(self.calls)}", kind, self._run, records, timeout=timeout)
        self.calls.append((self.world.now, task, records))
        return task

    def router(self, records: list[dict[str, Any]]) -> Task:
        return self._start("router", records, self.topology.router.Timeout)

    def worker(self, messages: list[dict[str, Any]]) -> Task:
        # SimSQS hands over ReceiveMessage's shape; the function gets the event's, as the emulator builds it.
        records = [sqs_record(m, queue_arn="arn:aws:sqs:us-east-1:000000000000:Jobs", region="us-east-1")
                   for m in messages]
        return self._start("worker", records, self.topology.worker.Timeout)

    def names(self) -> list[list[str]]:
        return [[instructions(r)["name"] for r in records] for _, _, records in self.calls]


@dataclasses.dataclass
class SimDriver:
    name: str = "simulator"

    def __post_init__(self) -> None:
        quiet_logs()

    def _world(self, topology: Topology, *, visibility: int = 30, max_receive: int | None = None,
               faults: Mapping[FaultKind, float] | None = None
               ) -> tuple[World, SimDynamoDB, SimSQS, str, str | None, _Probe, Pollers]:
        world = World(start=1_700_000_000.0)
        ddb = SimDynamoDB([TableSpec.from_properties(n, p) for n, p in topology.tables.items()],
                          clock=lambda: world.now, shards=1)
        sqs = SimSQS(clock=lambda: world.now, rng=random.Random(7))
        dlq_url = sqs.create_queue("DeadLetters", visibility_timeout=30) if max_receive else None
        queue_url = sqs.create_queue("Jobs", visibility_timeout=visibility,
                                     dead_letter="DeadLetters" if max_receive else None,
                                     max_receive_count=max_receive)
        probe = _Probe(world=world, topology=topology)
        pollers = Pollers(world=world, faults=Faults(seed=1, profile=Profile(rates=dict(faults or {}))),
                          lambdas=probe, ddb=ddb, sqs=sqs, queue_url=queue_url)
        return world, ddb, sqs, queue_url, dlq_url, probe, pollers

    @staticmethod
    def _run(world: World, pollers: Pollers, setup: Any) -> None:
        def driver(w: World) -> None:
            pollers.start()
            w.spawn("setup", "client", setup)

        world.run(driver, until=world.start + RUN_SECONDS)
        world.close()

    def stream(self, records: list[Rec], **settings: Any) -> StreamRun:
        base = load_topology()
        topology = dataclasses.replace(base, stream=dataclasses.replace(stream_mapping(**settings),
                                                                        table=base.stream.table))
        world, ddb, _, _, _, probe, pollers = self._world(topology)
        table = topology.stream.table

        def write() -> None:
            for num, r in enumerate(records):
                item = {"G": {"B": b"L" * 24}, "N": {"N": str(num)}, "C": {"N": "1"}, "T": {"S": "snap"},
                        "name": {"S": r.name}, "action": {"S": r.action}, **r.extra}
                if r.times is not None:
                    item["times"] = {"N": str(r.times)}
                if r.seconds is not None:
                    item["seconds"] = {"N": str(r.seconds)}
                ddb.call("PutItem", {"TableName": table, "Item": item})
            world.notify(pollers.stream_signal)

        self._run(world, pollers, write)
        (shard,) = ddb.shard_ids(table)
        name_of = {r["dynamodb"]["SequenceNumber"]: r["dynamodb"]["NewImage"]["name"]["S"]
                   for r in ddb.stream_records(table, shard)}
        discarded = [(d.condition, [name_of[r["dynamodb"]["SequenceNumber"]] for r in d.part], d.attempts)
                     for d in pollers.discarded]
        return StreamRun(batches=probe.names(),
                         checkpoints=[name_of[s] for s in collapse([s for _, s in pollers.moves.get(shard, [])])],
                         discarded=discarded,
                         spans=[(start, task.ended or world.now) for start, task, _ in probe.calls])

    def queue(self, messages: list[Rec], *, visibility: int, max_receive: int | None = None,
              faults: Mapping[FaultKind, float] | None = None, **settings: Any) -> QueueRun:
        base = load_topology()
        topology = dataclasses.replace(base, jobs=dataclasses.replace(queue_mapping(**settings), queue=base.jobs.queue))
        world, _, sqs, queue_url, dlq_url, probe, pollers = self._world(topology, visibility=visibility,
                                                                         max_receive=max_receive, faults=faults)

        def send() -> None:
            for m in messages:
                body = {"name": m.name, "action": m.action, "times": m.times, "seconds": m.seconds}
                sqs.call("SendMessage", {"QueueUrl": queue_url, "MessageBody": json.dumps(
                    {k: v for k, v in body.items() if v is not None})})
            world.notify(pollers.queue_signal)

        self._run(world, pollers, send)
        counts: dict[str, list[str]] = {}
        starts: dict[str, list[float]] = {}
        handles: dict[str, list[str]] = {}
        for start, _, records in probe.calls:
            for record in records:
                name = instructions(record)["name"]
                counts.setdefault(name, []).append(str(record["attributes"]["ApproximateReceiveCount"]))
                starts.setdefault(name, []).append(start)
                handles.setdefault(name, []).append(record["receiptHandle"])
        dead = [json.loads(m["Body"])["name"] for m in sqs.messages(dlq_url)] if dlq_url else []
        return QueueRun(batches=probe.names(), receive_counts=counts, dead_lettered=sorted(dead),
                        left=sqs.depth(queue_url), starts=starts, handles=handles)
