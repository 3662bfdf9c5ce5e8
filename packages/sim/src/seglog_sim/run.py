"""One seed, start to finish: build the world, run the workload under faults, let it settle, check it.

Phases of a run, all in simulated time:

1. setup: the logs are created (through the API with the client's own log id, faults on: a create whose answer
   was lost is retried, and answered 200 the second time);
2. faults: clients append, the pollers deliver, invocations run, and the operator task injects the run-level
   faults (supervisor restarts, DLQ redrives) until the clients are done and the fault window has passed;
3. liveness: faults stop; the operator redrives the DLQ as an operator answering its alarm would (with the
   takeover timeout as delay, as ``seglog redrive`` advises) and the run goes on until the pipeline is quiet —
   every Snapshot entry complete, nothing pending, both queues empty, every stream read — or the bound passes;
4. checks: :func:`seglog_sim.checks.check_run`.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from seglog_aws.redrive import redrive
from seglog_core import errors
from seglog_report.model import Meter
from seglog_services.api.routes import hosting
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.aws.sqs import SimSQS, SimSQSClient
from seglog_sim.checks import Violation, check_run
from seglog_sim.cloud import Call, Cloud
from seglog_sim.faults import Fault, Faults, Profile
from seglog_sim.gateway import Gateway
from seglog_sim.lambdas import Lambdas
from seglog_sim.metering import meter_of
from seglog_sim.pollers import Pollers
from seglog_sim.scenario import Scenario
from seglog_sim.topology import Topology, load_topology
from seglog_sim.workload import Clients, Ledger, new_id
from seglog_sim.world import Task, World

_QUEUE_WRITES = frozenset({"SendMessage", "SendMessageBatch", "ChangeMessageVisibility",
                           "ChangeMessageVisibilityBatch"})


@dataclass(kw_only=True)
class SeedResult:
    """What one seed did and whether it passed."""

    seed: int
    violations: list[Violation]
    #: Kinds on in this seed's profile.
    kinds: list[str]
    #: Ids of the faults that fired, in order (what the shrinker works on).
    fired: list[str]
    #: Fault counts by kind and by kind@site.
    fault_counts: dict[str, int]
    #: Storage calls by "task kind:call site", and by "service operation".
    sites: dict[str, int]
    operations: dict[str, int]
    invocations: dict[str, int]
    stats: dict[str, int]
    acknowledged: int
    snapshots: int
    sim_seconds: float
    steps: int
    history: list[Call] = field(repr=False, default_factory=list)
    quiescent: bool = True
    #: What the seed used, in the units AWS bills (for the cost ledger).
    meter: Meter = field(default_factory=Meter)

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> dict[str, Any]:
        return {"seed": self.seed, "ok": self.ok, "violations": [v.to_dict() for v in self.violations],
                "kinds": self.kinds, "faults": len(self.fired), "acknowledged": self.acknowledged,
                "snapshots": self.snapshots, "sim_seconds": round(self.sim_seconds, 1), "steps": self.steps}


@dataclass(kw_only=True)
class _Run:
    seed: int
    scenario: Scenario
    topology: Topology
    world: World
    faults: Faults
    ddb: SimDynamoDB
    sqs: SimSQS
    s3: SimS3
    cloud: Cloud
    lambdas: Lambdas
    pollers: Pollers
    clients: Clients
    queue_url: str
    dlq_url: str
    logs: list[uuid.UUID] = field(default_factory=list)
    client_tasks: list[Task] = field(default_factory=list)
    quiescent: bool = False
    setup_failed: bool = False
    #: Jobs that reached the DLQ after the faults stopped.
    dlq_after_faults: int = 0

    # ----------------------------------------------------------------------------------------------- tasks

    def setup(self) -> None:
        world, rng = self.world, self.faults.rng(self.world.current)
        try:
            for _ in range(self.scenario.logs):
                log_id = new_id(rng)
                self.clients.create(log_id)
                self.logs.append(log_id)
        except BaseException:
            self.setup_failed = True
            raise
        scenario = self.scenario
        for index in range(scenario.api_clients + scenario.library_clients):
            log_id = self.logs[index % len(self.logs)]
            count = rng.randint(*scenario.appends)
            api = index < scenario.api_clients
            fn = self.clients.api_client if api else self.clients.library_client
            self.client_tasks.append(world.spawn(f"{'api' if api else 'lib'}-client-{index}", "client", fn, log_id,
                                                 count, delay=rng.uniform(0.0, 3.0)))
        for index in range(scenario.readers):
            log_id, count = self.logs[index % len(self.logs)], rng.randint(*scenario.reads)
            self.client_tasks.append(world.spawn(f"reader-{index}", "client", self.clients.reader, log_id, count,
                                                 delay=rng.uniform(0.0, 3.0)))

    def operator(self) -> None:
        world, faults, scenario = self.world, self.faults, self.scenario
        me = world.current
        next_retention = world.now + faults.amount(me, 0.0, 2 * scenario.retention_every)
        while not (world.now - world.start >= scenario.fault_window
                   and self.client_tasks and all(t.done for t in self.client_tasks)):
            if world.now - world.start > scenario.client_bound or self.setup_failed:
                break  # reported by the checks: clients that never finished
            world.sleep(faults.amount(me, 2.0, 10.0))
            me.calls += 1
            if faults.decide(me, Fault.SUPERVISOR_RESTART):
                self._restart()
            if faults.decide(me, Fault.REDRIVE):
                self._redrive()
            if world.now >= next_retention:  # the schedule fires (EventBridge, asynchronously)
                self.lambdas.retention()
                next_retention = world.now + faults.amount(me, 0.0, 2 * scenario.retention_every)
        faults.active = False
        self.sqs.set_max_receive_count(self.queue_url, self.topology.queue.maxReceiveCount or 1000)
        self._redrive()  # what the faults parked in the DLQ, as an operator answering its alarm would
        bound = world.now + scenario.liveness_bound
        while world.now < bound:
            # Without faults no job should reach the DLQ again: each one that does is counted (a violation), then
            # redriven so the other checks can go on.
            self.dlq_after_faults += self._redrive()
            if self._quiet():
                self.quiescent = True
                break
            world.sleep(30.0)
        world.stop()

    def _restart(self) -> None:
        """The supervisor restarts: every invocation dies with it, the pollers start again from checkpoints."""
        for task in self.world.tasks:
            if task.kind in ("api", "router", "worker") and not task.done:
                self.world.kill(task, "supervisor restart")
        self.pollers.restart()

    def _redrive(self) -> int:
        if not sum(self.sqs.depth(self.dlq_url)):
            return 0
        moved = 0
        takeover = int(self.topology.worker.Environment.get("SEGLOG_TAKEOVER_SECONDS", "60"))
        try:
            moved = redrive(SimSQSClient.of(self.sqs), dlq_url=self.dlq_url, queue_url=self.queue_url, delay=takeover)
            self.faults.counts[str(Fault.DLQ)] += moved  # jobs that had reached the DLQ
        except errors.SeglogError:
            pass  # what was not moved stays in the DLQ; the next tick tries again
        self.world.notify(self.pollers.queue_signal)
        return moved

    def _quiet(self) -> bool:
        if any(not t.done for t in self.world.tasks if t.kind in ("api", "router", "worker", "retention", "client")):
            return False
        if sum(self.sqs.depth(self.queue_url)) or sum(self.sqs.depth(self.dlq_url)):
            return False
        if self.ddb.items(self.topology.pending_table, copy=False):
            return False
        if not self.pollers.caught_up():
            return False
        return all(item.get("T", {}).get("S") != "snap" or "R" in item
                   for item in self.ddb.items(self.topology.entries_table, copy=False))


def build(seed: int, scenario: Scenario, *, only: frozenset[str] | None = None) -> _Run:
    rng = random.Random(seed)
    topology = load_topology(None, scenario.parameters)
    world = World()
    profile = Profile.draw(random.Random(rng.getrandbits(64)), scenario.faults)
    faults = Faults(seed=seed, profile=profile, only=only, clock=lambda: world.now)
    # The template's tables. The Segments table gets a stream too, read by the checks only (its item's S over
    # time, I4); the router's mapping reads the Entries table's stream, as deployed.
    specs = [TableSpec.from_properties(name, props) for name, props in topology.tables.items()]
    specs = [dataclasses.replace(s, stream=True) if s.name == topology.segments_table else s for s in specs]
    ddb = SimDynamoDB(specs, clock=lambda: world.now, shards=scenario.shards)
    sqs = SimSQS(clock=lambda: world.now, rng=random.Random(rng.getrandbits(64)))
    dlq_name = topology.dead_letter_queue or "SnapshotDeadLetterQueue"
    dlq_url = sqs.create_queue(dlq_name, visibility_timeout=30)
    receives = scenario.dlq_max_receive_count if faults.on(Fault.DLQ) else topology.queue.maxReceiveCount
    queue_url = sqs.create_queue(topology.queue.logical_id, visibility_timeout=topology.queue.VisibilityTimeout,
                                 dead_letter=dlq_name, max_receive_count=receives)
    s3 = SimS3()
    s3.create_bucket(topology.bucket)
    cloud = Cloud(world=world, faults=faults, ddb=ddb, sqs=sqs, s3=s3)
    clients: dict[str, Any] = {
        "dynamodb": SimDynamoDBClient(lambda op, p: cloud.io("dynamodb", op, p)),
        "s3": SimS3Client(lambda op, p: cloud.io("s3", op, p)),
        "sqs": SimSQSClient(lambda op, p: cloud.io("sqs", op, p)),
    }
    lambdas = Lambdas.build(world, cloud, faults, topology, scenario, random.Random(rng.getrandbits(64)), clients,
                            queue_url)
    pollers = Pollers(world=world, faults=faults, lambdas=lambdas, ddb=ddb, sqs=sqs, queue_url=queue_url)
    routes = tuple(r for r in topology.config.http_routes if r.function == topology.api.logical_id)
    gateway = Gateway(world=world, faults=faults, lambdas=lambdas, routes=routes)

    def on_write(service: str, operation: str, params: dict[str, Any]) -> None:
        if service == "sqs" and operation in _QUEUE_WRITES:
            world.notify(pollers.queue_signal)
        elif service == "dynamodb" and operation != "DeleteItem":
            world.notify(pollers.stream_signal)

    cloud.on_write = on_write
    return _Run(seed=seed, scenario=scenario, topology=topology, world=world, faults=faults, ddb=ddb, sqs=sqs, s3=s3,
                cloud=cloud, lambdas=lambdas, pollers=pollers, queue_url=queue_url, dlq_url=dlq_url,
                clients=Clients(world=world, faults=faults, lambdas=lambdas, scenario=scenario, gateway=gateway))


def run_seed(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None) -> SeedResult:
    """Run one seed; ``only`` limits the faults to those ids (a shrunk schedule's replay)."""
    return execute(seed, scenario, only=only)[1]


def execute(seed: int, scenario: Scenario | None = None, *, only: frozenset[str] | None = None
            ) -> tuple[_Run, SeedResult]:
    """Run one seed: the world as it ended (for the report's timeline) and its result."""
    scenario = scenario or Scenario()
    run = build(seed, scenario, only=only)
    world = run.world

    def driver(w: World) -> None:
        w.spawn("setup", "client", run.setup)
        run.pollers.start()
        w.spawn("operator", "operator", run.operator)

    with hosting(run.lambdas.api_services()):  # the API handler answers from this world
        try:
            world.run(driver)
        finally:
            world.close()
    ledger: Ledger = run.clients.ledger
    queues = {"the snapshot queue": run.sqs.depth(run.queue_url), "the DLQ": run.sqs.depth(run.dlq_url)}
    stuck = [t.name for t in run.client_tasks if not t.done]
    setup = next((t for t in world.tasks if t.name == "setup"), None)
    violations = [Violation(invariant="SIM", message=f"the logs could not be created: {setup.error!r}")
                  for _ in [0] if setup is not None and setup.error is not None]
    violations += [Violation(invariant="I5", message=f"client {name} never finished its appends within "
                                                     f"{run.scenario.client_bound:.0f} s") for name in stuck]
    if run.dlq_after_faults:
        violations.append(Violation(invariant="I5", message=f"{run.dlq_after_faults} jobs reached the DLQ after the "
                                                            "faults stopped (maxReceiveCount used up without faults)"))
    violations += check_run(ddb=run.ddb, s3=run.s3, topology=run.topology, logs=run.logs, ledger=ledger,
                           quiescent=run.quiescent, queues=queues)
    snapshots = sum(1 for item in run.ddb.items(run.topology.entries_table, copy=False)
                    if item.get("T", {}).get("S") == "snap")
    stats = dict(run.pollers.stats)
    stats.update({"client tries": ledger.tries + ledger.counters.requests, "client lost answers": ledger.lost_answers,
                  "client gave up": ledger.gave_up, "clients vanished": ledger.vanished,
                  "loads": len(ledger.loads), "load pages": sum(load.pages for load in ledger.loads),
                  "syncs": len(ledger.syncs), "supervisor restarts": run.pollers.restarts,
                  **{f"refused as expected: {code}": n for code, n in ledger.expected_refusals.items()}})
    result = SeedResult(seed=seed, violations=violations, kinds=sorted(str(k) for k in run.faults.profile.rates),
                        fired=list(run.faults.fired), fault_counts=dict(run.faults.counts),
                        sites=dict(run.cloud.sites), operations=dict(run.cloud.operations),
                        invocations=dict(run.lambdas.invocations.counts), stats=stats, acknowledged=ledger.appends,
                        snapshots=snapshots, sim_seconds=world.now - world.start, steps=world.steps,
                        history=run.cloud.history, quiescent=run.quiescent, meter=meter_of(run))
    return run, result
