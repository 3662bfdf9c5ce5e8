"""The three functions as Lambda runs them: one task per invocation, with the function's timeout and deadline.

Each invocation runs the services' real code with the run's backend (the real adapters on the simulated
clients): the stream router's :func:`~seglog_services.stream_router.route_record` per record, the snapshot
worker built by :func:`~seglog_services.snapshot_worker.worker` from the template's environment, the API's
append through :func:`~seglog_core.idempotence.append_after` as its route calls it. What the Lambda glue does
around them (Powertools' partial batch responses) is the few lines each runner below mirrors.

The invocation's deadline is set as the handlers set it (``seglog_services.runtime.invocation``), so every
retry inside stops before the function's time limit; past it the world kills the task (DESIGN §9.9).
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from seglog_aws.backend import REQUEST_RETRY, Backend
from seglog_aws.resources import Resources
from seglog_core import retry
from seglog_core.idempotence import Position, append_after
from seglog_core.log import Appended, EventLog
from seglog_core.pipeline import Outcome
from seglog_core.ports import QueueMessage
from seglog_core.retention import retain_logs
from seglog_core.schema import Body
from seglog_services import retention, snapshot_worker, stream_router
from seglog_sim.cloud import Cloud
from seglog_sim.faults import Fault, Faults
from seglog_sim.jobs import Jobs
from seglog_sim.scenario import Scenario
from seglog_sim.topology import Topology
from seglog_sim.world import Killed, Task, World


@dataclass(kw_only=True)
class Invocations:
    """Outcomes of the run's invocations, by function and outcome (for the report)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, function: str, outcome: str) -> None:
        key = f"{function}:{outcome}"
        self.counts[key] = self.counts.get(key, 0) + 1


@dataclass(kw_only=True)
class Lambdas:
    """Runs invocations of the template's functions in the world."""

    world: World
    cloud: Cloud
    faults: Faults
    topology: Topology
    scenario: Scenario
    rng: random.Random
    backend: Backend
    queue_url: str
    invocations: Invocations = field(default_factory=Invocations)
    #: Each job's receives and last outcome (what a liveness violation quotes).
    jobs: Jobs = field(default_factory=Jobs)
    _counter: int = 0

    @classmethod
    def build(cls, world: World, cloud: Cloud, faults: Faults, topology: Topology, scenario: Scenario,
              rng: random.Random, clients: dict[str, Any], queue_url: str) -> Lambdas:
        """The run's backend: the real adapters on the world's clients, retrying as deployed (REQUEST_RETRY) but
        sleeping in simulated time with the seed's jitter."""
        policy = dataclasses.replace(REQUEST_RETRY, rng=random.Random(rng.getrandbits(64)), sleep=world.sleep)
        resources = Resources(segments_table=topology.segments_table, entries_table=topology.entries_table,
                              pending_table=topology.pending_table, bucket=topology.bucket, queue_url=queue_url)
        backend = Backend.over(resources, dynamodb=clients["dynamodb"], s3=clients["s3"], sqs=clients["sqs"],
                               retry=policy)
        return cls(world=world, cloud=cloud, faults=faults, topology=topology, scenario=scenario, rng=rng,
                   backend=backend, queue_url=queue_url)

    def _name(self, function: str) -> str:
        self._counter += 1
        return f"{function}-{self._counter}"

    def _deadline(self, task: Task) -> Callable[[], float]:
        return lambda: (task.deadline or self.world.now + 900.0) - self.world.now

    def _start(self, kind: str, body: Callable[[Task], Any], timeout: float, **tags: Any) -> Task:
        holder: list[Task] = []

        def run() -> Any:
            task = holder[0]
            with retry.deadline(self._deadline(task)):
                return body(task)

        task = self.world.spawn(self._name(kind), kind, run, timeout=timeout, **tags)
        holder.append(task)
        return task

    # -------------------------------------------------------------------------------------- stream router

    def router(self, records: list[dict[str, Any]]) -> Task:
        """Invoke the stream router on a batch of Lambda-form stream records; its result is the partial batch
        response (``batchItemFailures`` by SequenceNumber)."""

        def body(task: Task) -> dict[str, Any]:
            failures = []
            for record in records:
                try:
                    stream_router.route_record(record, self.backend)
                except Exception:  # Powertools reports the record as failed and goes on with the batch
                    failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
            return {"batchItemFailures": failures}

        return self._start("router", body, self.topology.router.Timeout, records=len(records))

    # ------------------------------------------------------------------------------------ snapshot worker

    def worker(self, messages: list[dict[str, Any]]) -> Task:
        """Invoke the snapshot worker on a batch of received messages; its result is the partial batch response
        (``batchItemFailures`` by messageId: the messages the protocol keeps, and those that failed)."""
        def body(task: Task) -> dict[str, Any]:
            faults, scenario = self.faults, self.scenario
            if faults.decide(task, Fault.CLOCK_SKEW):  # its clock runs fast: live claims look stale to it
                takeover = float(self.topology.worker.Environment.get("SEGLOG_TAKEOVER_SECONDS", "60"))
                task.skew = faults.amount(task, takeover, 3.0 * takeover)
            environ = dict(self.topology.worker.Environment)
            environ["SEGLOG_CHUNK_CELLS"] = str(scenario.chunk_cells)
            if faults.decide(task, Fault.MIXED_VERSION):  # the other code version, cutting chunks its own way
                environ["SEGLOG_CHUNK_CELLS"] = str(scenario.other_chunk_cells)
            task.tags.update(skew=task.skew, chunk_cells=environ["SEGLOG_CHUNK_CELLS"])
            rng = faults.rng(task)

            def crash(point: str) -> None:
                if self.faults.decide(task, Fault.WORKER_CRASH, point):
                    self.world.kill(task, f"crash at {point}")
                    raise Killed(point)

            worker = snapshot_worker.worker(self.backend, environ, clock=self.world.clock, rng=rng,
                                            sleep=self.world.sleep, crash=crash)
            failures = []
            for m in messages:
                message = QueueMessage(message_id=m["MessageId"], receipt_handle=m["ReceiptHandle"], body=m["Body"],
                                       receive_count=int(m["Attributes"]["ApproximateReceiveCount"]))
                job = self.jobs.received(message.body, task, self.world.now, message.receive_count)
                try:
                    outcome = worker.process(message, remaining=self._deadline(task))
                except Exception as exc:
                    task.tags["error"] = f"{type(exc).__name__}: {exc}"
                    self.jobs.ended(job, f"error {task.tags['error']}")
                    self.invocations.add("worker", "error")
                    failures.append({"itemIdentifier": message.message_id})
                    continue
                self.jobs.ended(job, str(outcome))
                self.invocations.add("worker", str(outcome))
                task.tags.setdefault("outcomes", []).append(str(outcome))
                if outcome in (Outcome.COMPLETED,):
                    task.tags["completed"] = True
                if outcome.keeps_message:
                    failures.append({"itemIdentifier": message.message_id})
            return {"batchItemFailures": failures}

        return self._start("worker", body, self.topology.worker.Timeout, messages=[m["MessageId"] for m in messages],
                           bodies=[m["Body"] for m in messages])

    # ---------------------------------------------------------------------------------------------- retention

    def retention(self, *, min_age: float = 0.0) -> Task:
        """Invoke the scheduled retention function as its handler runs: the template's policy (keeping segments
        younger than ``min_age`` too), its Deadline."""

        def body(task: Task) -> dict[str, Any]:
            policy = retention.policy_from_env(self.topology.retention.Environment)
            policy = dataclasses.replace(policy, min_age=max(policy.min_age, min_age))
            deadline = retention.Deadline(self._deadline(task), clock=self.world.clock)
            run = retain_logs(self.backend.store, self.backend.blobs, policy, stop=deadline, clock=self.world.clock)
            self.invocations.add("retention", "complete" if run.complete else "partial")
            return {"segments_archived": run.segments, "failed": len(run.failed), "complete": run.complete,
                    "resumed_after": run.resumed_after}

        return self._start("retention", body, self.topology.retention.Timeout)

    # ------------------------------------------------------------------------------------------------ API

    def append(self, log_id: uuid.UUID, body: Body, *, entry_id: uuid.UUID, since: Position) -> Task:
        """Invoke the API's append (POST /sheets/{id}/entries with entry_id and since) as its route runs it."""
        scenario = self.scenario

        def run(task: Task) -> Appended:
            policy = retry.RetryPolicy(rng=self.faults.rng(task), sleep=self.world.sleep)
            ids = self.faults.rng(task)
            event_log = EventLog(store=self.backend.append_store, blobs=self.backend.append_blobs, retry=policy,
                                 clock=self.world.clock, id_factory=lambda: uuid.UUID(int=ids.getrandbits(128),
                                                                                       version=4),
                                 snapshot_every=scenario.snapshot_every, segment_entries=scenario.segment_entries,
                                 cache_tail=False, large_threshold=scenario.large_threshold)
            appended = append_after(event_log, log_id, body, entry_id=entry_id, since=since)
            # As the route's keep_body: a deduplicated large entry's body was written again, tagged; keep it.
            if appended.deduplicated and appended.entry.external is not None:
                self.backend.blobs.keep(appended.entry.external)
            return appended

        return self._start("api", run, self.topology.api.Timeout, log_id=str(log_id), entry_id=str(entry_id))
