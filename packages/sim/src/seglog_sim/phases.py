"""One seed's world and its phases: :func:`build` assembles the simulated services, functions, pollers, clients and
operators from the template; :class:`Run` holds them and runs the phase tasks (:mod:`seglog_sim.run` drives a
seed and turns the ended world into its result).

Phases of a run, all in simulated time:

1. setup: the logs are created (through the API with the client's own log id, faults on: a create whose answer
   was lost is retried, and answered 200 the second time);
2. faults: clients append, the pollers deliver, invocations run, and the operator task injects the run-level
   faults (supervisor restarts, DLQ redrives), fires the scheduled retention function and, at drawn moments,
   starts an operator's command (:mod:`seglog_sim.operators`: retain, reprocess, redrive, rebuild) until the
   clients are done and the fault window has passed;
3. liveness: faults stop; the operator redrives the DLQ as an operator answering its alarm would (with the
   takeover timeout as delay, as ``seglog redrive`` advises), runs again every retention run that was cut short
   until it ends (the schedule's next run, the operator's same command), and the run goes on until the pipeline
   is quiet — every Snapshot entry complete, nothing pending, both queues empty, every stream read, no
   retention half done — or the bound passes;
4. checks: :func:`seglog_sim.checks.check_run`, each liveness violation naming its job and the job's last outcome.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from seglog_aws.redrive import redrive
from seglog_awsmodel.faults import FaultKind
from seglog_core import errors
from seglog_core.retention import MIN_KEEP
from seglog_core.violations import Violation
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.aws.dynamodb_throughput import PartitionThroughput
from seglog_sim.aws.s3 import SimS3, SimS3Client
from seglog_sim.aws.sqs import SimSQS, SimSQSClient
from seglog_sim.batching import batch_client
from seglog_sim.cloud import Cloud
from seglog_sim.faults import Faults, Outage, Profile
from seglog_sim.gateway import Gateway
from seglog_sim.jobs import job_key
from seglog_sim.lambdas import Lambdas
from seglog_sim.operators import Operators
from seglog_sim.pollers import Pollers
from seglog_sim.scenario import Scenario
from seglog_sim.topology import Topology, load_topology
from seglog_sim.workload import Clients, new_id
from seglog_sim.world import Task, World

#: Runs, after the faults stopped, that may go to finishing retention cut short before the run gives up on it.
FINISH_RUNS = 20
_QUEUE_WRITES = frozenset({"SendMessage", "SendMessageBatch", "ChangeMessageVisibility",
                           "ChangeMessageVisibilityBatch"})


@dataclass(kw_only=True)
class Run:
    """A seed's world, assembled by :func:`build`, and the tasks of its phases (setup, operator, liveness)."""

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
    operators: Operators
    queue_url: str
    dlq_url: str
    logs: list[uuid.UUID] = field(default_factory=list)
    client_tasks: list[Task] = field(default_factory=list)
    quiescent: bool = False
    setup_failed: bool = False
    #: Messages of the DLQ already seen (each arrival after the faults stopped is counted once).
    _dead_seen: set[str] = field(default_factory=set)
    #: Every run of the scheduled retention function.
    retention_runs: list[Task] = field(default_factory=list)
    #: Runs started, after the faults stopped, to finish retention cut short; and what could not be finished.
    finishing: int = 0
    unfinished: list[Violation] = field(default_factory=list)
    #: When the faults stopped (simulated time); None while they last.
    faults_ended: float | None = None

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
            fn, args = (self.clients.api_client, (index,)) if api else (self.clients.library_client, ())
            self.client_tasks.append(world.spawn(f"{'api' if api else 'lib'}-client-{index}", "client", fn, log_id,
                                                 count, *args, delay=rng.uniform(0.0, 3.0), log_id=str(log_id)))
        if scenario.busy:
            self.client_tasks.append(world.spawn("busy-client", "client", self.clients.busy_client, self.logs[0],
                                                 delay=rng.uniform(0.0, 3.0), log_id=str(self.logs[0])))
        if scenario.batching_client:
            self.client_tasks.append(world.spawn("batch-client", "client", batch_client, self.clients, self.logs[-1],
                                                 rng.randint(*scenario.batch_edits), delay=rng.uniform(0.0, 3.0),
                                                 log_id=str(self.logs[-1])))
        for index in range(scenario.readers):
            log_id, count = self.logs[index % len(self.logs)], rng.randint(*scenario.reads)
            self.client_tasks.append(world.spawn(f"reader-{index}", "client", self.clients.reader, log_id, count,
                                                 delay=rng.uniform(0.0, 3.0)))

    def operator(self) -> None:
        world, faults, scenario = self.world, self.faults, self.scenario
        me = world.current
        next_retention = world.now + faults.amount(me, 0.0, 2 * scenario.retention_every)
        next_action = world.now + faults.amount(me, 0.0, 2 * scenario.operator_every)
        while not (world.now - world.start >= scenario.fault_window
                   and self.client_tasks and all(t.done for t in self.client_tasks)):
            if world.now - world.start > scenario.client_bound or self.setup_failed:
                break  # reported by the checks: clients that never finished
            world.sleep(faults.amount(me, 2.0, 10.0))
            me.calls += 1
            if faults.decide(me, FaultKind.SUPERVISOR_RESTART):
                self._restart()
            if faults.decide(me, FaultKind.REDRIVE):
                self._redrive()
            horizon = self._horizon()
            if world.now >= next_retention:  # the schedule fires (EventBridge, asynchronously)
                self.retention_runs.append(self.lambdas.retention(min_age=horizon))
                next_retention = world.now + faults.amount(me, 0.0, 2 * scenario.retention_every)
            if world.now >= next_action:  # an operator runs a command while clients write
                self.operators.act(me, min_age=horizon)
                next_action = world.now + faults.amount(me, 0.0, 2 * scenario.operator_every)
        if not self.setup_failed and all(t.done for t in self.client_tasks):
            # A last round under faults once the clients are done, free of the retry horizon: the schedule fires and
            # an operator retains, so retention retires what the horizon kept, and may be cut short doing it.
            tasks: list[Task | None] = []
            log: uuid.UUID | None = None
            forms: tuple[str, ...] = ("retain", "retain --delete")
            if self.operators.logs and faults.rng(me).random() < scenario.operator_pairs:
                # Another operator rebuilds a log a moment before it is retained: a rebuild that read a segment
                # before a deletion claimed it reads its snapshots while they go (the mutant
                # rebuild_refuses_deleting needs one; a rebuild that starts after the claim skips the segment).
                log = self.operators.logs[faults.rng(me).randrange(len(self.operators.logs))]
                tasks.append(self.operators.act(me, only=("rebuild",), log=log))
                forms = ("retain --delete",)
                world.sleep(faults.amount(me, 0.0, 0.03))
            # Paired, the deletion keeps the fewest segments a retain may keep, so it has segments to delete.
            tasks.append(self.operators.act(me, only=forms, log=log, keep=None if log is None else MIN_KEEP))
            tasks.append(scheduled := self.lambdas.retention())
            self.retention_runs.append(scheduled)
            for task in tasks:
                if task is not None:
                    world.join(task, timeout=scenario.liveness_bound)
        faults.active = False
        self.faults_ended = world.now
        # What is in the DLQ now got there under faults (some of it may be hidden: an operator's redrive that
        # failed half-way leaves its messages in flight there for a while); only later arrivals count.
        self._dead_seen.update(m["MessageId"] for m in self.sqs.messages(self.dlq_url))
        self.sqs.set_max_receive_count(self.queue_url, self.topology.queue.maxReceiveCount or 1000)
        self._redrive()  # what the faults parked in the DLQ, as an operator answering its alarm would
        bound = world.now + scenario.liveness_bound
        calm = world.now
        while world.now < bound:
            # Without faults no job should reach the DLQ again: each one that does is counted (a violation, naming
            # the job), then redriven so the other checks can go on.
            self._redrive(after_faults=True)
            self._finish_retention()
            if (self._quiet() and self.scenario.finish_retention
                    and not any(t.started >= calm for t in self.retention_runs)):
                # The schedule goes on after the faults: its next run retires what became old enough meanwhile
                # (after a half-done run, it is also the run that finishes it).
                self.retention_runs.append(self.lambdas.retention())
            elif self._quiet():
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

    def _redrive(self, *, after_faults: bool = False) -> int:
        if not sum(self.sqs.depth(self.dlq_url)):
            return 0
        if after_faults:
            dead = self.lambdas.jobs.dead_after_faults
            for message in self.sqs.messages(self.dlq_url):
                key = job_key(message["Body"])
                if key is not None and message["MessageId"] not in self._dead_seen:
                    self._dead_seen.add(message["MessageId"])
                    dead[key] = dead.get(key, 0) + 1
        moved = 0
        takeover = self.topology.takeover
        try:
            moved = redrive(SimSQSClient.of(self.sqs), dlq_url=self.dlq_url, queue_url=self.queue_url, delay=takeover)
            self.faults.counts[str(FaultKind.DLQ)] += moved  # jobs that had reached the DLQ
        except errors.SeglogError:
            pass  # what was not moved stays in the DLQ; the next tick tries again
        self.world.notify(self.pollers.queue_signal)
        return moved

    def _horizon(self) -> float:
        """The minimum age retention keeps while clients write, 0 once they are done (:meth:`horizon`)."""
        writing = not self.client_tasks or not all(t.done for t in self.client_tasks)
        return self.horizon() if writing else 0.0

    def horizon(self) -> float:
        """The retry horizon: Scenario.retry_horizon, else the deployment's (RetentionMinAgeSeconds), which an
        operator's ``log retain`` must keep too (README "Appending exactly once": a 410 since_retired rests on it)."""
        if self.scenario.retry_horizon is not None:
            return self.scenario.retry_horizon
        return float(self.topology.retention.Environment.get("SEGLOG_RETENTION_MIN_AGE_SECONDS", "0"))

    def _finish_retention(self) -> None:
        """Run again what retention left half done, one run at a time: first each ``log retain`` cut short (in its
        form: a ``--delete`` cut short must end as a deletion, an archive run would refuse the half-deleted
        segment), then the scheduled function until a whole pass from the first log ends clean."""
        if not self._retention_pending() or self._busy(("retention", "operator")):
            return
        self.finishing += 1
        if self.finishing > FINISH_RUNS:
            left = [f"`seglog log retain{'' if r.policy.archive else ' --delete'}` of log {r.log_id}"
                    for r in self.operators.unfinished] or ["the scheduled retention function's pass"]
            self.unfinished.append(Violation(invariant="I5", message=f"retention cut short could not be finished in "
                                                                     f"{FINISH_RUNS} runs after the faults stopped: "
                                                                     f"{', '.join(left)}"))
            return
        if self.operators.unfinished:
            self.operators.retain(self.operators.unfinished.pop(0))
        else:
            self.retention_runs.append(self.lambdas.retention())

    def _retention_pending(self) -> bool:
        """Retention was cut short and is not finished yet (nor given up on)."""
        return (self.scenario.finish_retention and self.finishing <= FINISH_RUNS
                and (bool(self.operators.unfinished) or self._schedule_unfinished()))

    def _schedule_unfinished(self) -> bool:
        """A scheduled run was cut short (killed, failed on a log, stopped by its deadline) and no clean run from
        the first log started after it ended."""
        def clean(task: Task) -> bool:
            r = task.result
            return (task.killed is None and task.error is None and isinstance(r, dict) and bool(r.get("complete"))
                    and not r.get("failed"))

        ended = [t for t in self.retention_runs if t.done]
        cut = [t.ended or 0.0 for t in ended if not clean(t)]
        if not cut:
            return False
        last = max(cut)
        return not any(clean(t) and t.result.get("resumed_after") is None and t.started >= last for t in ended)

    def _busy(self, kinds: tuple[str, ...]) -> bool:
        me = self.world.current
        return any(not t.done for t in self.world.tasks if t.kind in kinds and t is not me)

    def _quiet(self) -> bool:
        if self._busy(("api", "router", "worker", "retention", "client", "operator")):
            return False
        if self._retention_pending():
            return False
        if sum(self.sqs.depth(self.queue_url)) or sum(self.sqs.depth(self.dlq_url)):
            return False
        if self.ddb.items(self.topology.pending_table, copy=False):
            return False
        if not self.pollers.caught_up():
            return False
        return all(item.get("T", {}).get("S") != "snap" or "R" in item
                   for item in self.ddb.items(self.topology.entries_table, copy=False))


def build(seed: int, scenario: Scenario, *, only: frozenset[str] | None = None) -> Run:
    rng = random.Random(seed)
    # The seed's own scenario, from a generator of its own: the draws below stay where they were.
    scenario = scenario.draw(random.Random(seed * 7_919 + 104_729))
    topology = load_topology(None, scenario.parameters)
    world = World()
    # A busy sheet's seed loses jobs before their claims: worker crashes are on in it (seglog_sim.scenario).
    armed = (*scenario.armed, FaultKind.WORKER_CRASH) if scenario.busy else scenario.armed
    profile = Profile.draw(random.Random(rng.getrandbits(64)), scenario.faults, armed=armed)
    faults = Faults(seed=seed, profile=profile, only=only, clock=lambda: world.now)
    # The template's tables. The Segments table gets a stream too, read by the checks only (its item's S over
    # time, I4); the router's mapping reads the Entries table's stream, as deployed.
    specs = [TableSpec.from_properties(name, props) for name, props in topology.tables.items()]
    specs = [dataclasses.replace(s, stream=True) if s.name == topology.segments_table else s for s in specs]
    read_units, write_units = scenario.partition_units
    ddb = SimDynamoDB(specs, clock=lambda: world.now, shards=scenario.shards,
                      throughput=PartitionThroughput(read_units=read_units, write_units=write_units))
    sqs = SimSQS(clock=lambda: world.now, rng=random.Random(rng.getrandbits(64)))
    dlq_name = topology.dead_letter_queue or "SnapshotDeadLetterQueue"
    dlq_url = sqs.create_queue(dlq_name, visibility_timeout=30)
    receives = scenario.dlq_max_receive_count if faults.on(FaultKind.DLQ) else topology.queue.maxReceiveCount
    queue_url = sqs.create_queue(topology.queue.logical_id, visibility_timeout=topology.queue.VisibilityTimeout,
                                 dead_letter=dlq_name, max_receive_count=receives)
    s3 = SimS3()
    s3.create_bucket(topology.bucket)
    outage = None
    if scenario.outage is not None:
        what, start, length = scenario.outage
        outage = Outage(what=what, start=world.start + start, end=world.start + start + length,
                        entries_table=topology.entries_table)
    cloud = Cloud(world=world, faults=faults, ddb=ddb, sqs=sqs, s3=s3, outage=outage)
    clients: dict[str, Any] = {
        "dynamodb": SimDynamoDBClient(lambda op, p: cloud.io("dynamodb", op, p)),
        "s3": SimS3Client(lambda op, p: cloud.io("s3", op, p)),
        "sqs": SimSQSClient(lambda op, p: cloud.io("sqs", op, p)),
    }
    lambdas = Lambdas.build(world, cloud, faults, topology, scenario, random.Random(rng.getrandbits(64)), clients,
                            queue_url)
    lambdas.jobs.start = world.start
    pollers = Pollers(world=world, faults=faults, lambdas=lambdas, ddb=ddb, sqs=sqs, queue_url=queue_url)
    routes = tuple(r for r in topology.config.http_routes if r.function == topology.api.logical_id)
    gateway = Gateway(world=world, faults=faults, lambdas=lambdas, routes=routes,
                      s3=lambda op, p: cloud.io("s3", op, p), latency=scenario.api_latency)
    logs: list[uuid.UUID] = []
    operators = Operators(world=world, faults=faults, scenario=scenario, topology=topology, lambdas=lambdas, ddb=ddb,
                          s3=s3, queue_url=queue_url, dlq_url=dlq_url, logs=logs,
                          on_redrive=lambda: world.notify(pollers.queue_signal))

    def on_write(service: str, operation: str, params: dict[str, Any]) -> None:
        if service == "sqs" and operation in _QUEUE_WRITES:
            world.notify(pollers.queue_signal)
        elif service == "dynamodb" and operation != "DeleteItem":
            world.notify(pollers.stream_signal)

    cloud.on_write = on_write
    return Run(seed=seed, scenario=scenario, topology=topology, world=world, faults=faults, ddb=ddb, sqs=sqs, s3=s3,
                cloud=cloud, lambdas=lambdas, pollers=pollers, queue_url=queue_url, dlq_url=dlq_url, logs=logs,
                clients=Clients(world=world, faults=faults, lambdas=lambdas, scenario=scenario, gateway=gateway),
                operators=operators)
