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
from seglog_awsmodel.faults import FaultKind
from seglog_core import retry
from seglog_core.log import EventLog
from seglog_core.pipeline import Outcome
from seglog_core.ports import QueueMessage
from seglog_core.retention import retain_due
from seglog_core.turns import Turns
from seglog_services import api, retention, snapshot_worker, stream_router
from seglog_services.api.routes import Services
from seglog_services.api.uploads import Uploads
from seglog_sim.cloud import Cloud
from seglog_sim.faults import Faults
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
    #: The run's S3 client (the API's uploads untag landed bodies with it, as the route does with boto3's).
    s3: Any = None
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
                   backend=backend, queue_url=queue_url, s3=clients["s3"])

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
            if faults.decide(task, FaultKind.CLOCK_SKEW):  # its clock runs fast: live claims look stale to it
                takeover = float(self.topology.takeover)
                task.skew = faults.amount(task, takeover, 3.0 * takeover)
            environ = dict(self.topology.worker.Environment)
            environ["SEGLOG_CHUNK_CELLS"] = str(scenario.chunk_cells)
            if faults.decide(task, FaultKind.MIXED_VERSION):  # the other code version, cutting chunks its own way
                environ["SEGLOG_CHUNK_CELLS"] = str(scenario.other_chunk_cells)
            task.tags.update(skew=task.skew, chunk_cells=environ["SEGLOG_CHUNK_CELLS"])
            rng = faults.rng(task)

            def crash(point: str) -> None:
                if self.faults.decide(task, FaultKind.WORKER_CRASH, point):
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
                    self.jobs.ended(job, f"error {task.tags['error']}", self.world.now)
                    self.invocations.add("worker", "error")
                    failures.append({"itemIdentifier": message.message_id})
                    continue
                self.jobs.ended(job, str(outcome), self.world.now)
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
            task.tags.update(keep=policy.keep, min_age=policy.min_age)  # for checks.retention_behind
            deadline = retention.Deadline(self._deadline(task), clock=self.world.clock)
            run = retain_due(self.backend.store, self.backend.blobs, policy, stop=deadline, clock=self.world.clock)
            self.invocations.add("retention", "complete" if run.complete else "partial")
            return {"segments_archived": run.segments, "failed": len(run.failed), "complete": run.complete,
                    "resumed_after": run.resumed_after}

        return self._start("retention", body, self.topology.retention.Timeout)

    # ------------------------------------------------------------------------------------------------ API

    def api_services(self) -> Services:
        """What the API's routes use in this run: the run's backend, the scenario's sizes (a snapshot every few
        entries, small segments, a small large-body threshold and small load pages), no tail cache as deployed.
        Built once for the run, as one warm container would: retries jitter and new ids come from the generator of
        the invocation running at the time, so each stays a function of the seed and the task."""
        scenario, backend = self.scenario, self.backend
        rng = _TaskRandom(self.world, self.faults)
        policy = retry.RetryPolicy(rng=rng, sleep=self.world.sleep)

        def event_log(large_threshold: int) -> EventLog:
            made = EventLog(store=backend.append_store, blobs=backend.append_blobs, retry=policy,
                            clock=self.world.clock, id_factory=lambda: uuid.UUID(int=rng.getrandbits(128), version=4),
                            snapshot_every=scenario.snapshot_every, segment_entries=scenario.segment_entries,
                            cache_tail=False, large_threshold=large_threshold, turns=Turns())
            if scenario.rebases_before_backoff is None:
                return made
            return dataclasses.replace(made, rebases_before_backoff=scenario.rebases_before_backoff)

        # Presigned by the simulated S3 client, to a URL the world's gateway takes as S3's (seglog_sim.gateway).
        uploads = Uploads(s3=self.s3, bucket=self.topology.bucket, blobs=backend.blobs,
                          new_id=lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
        return Services(backend=backend, log=event_log(scenario.large_threshold), external_log=event_log(0),
                        document=backend.document(), uploads=uploads, page_bytes=scenario.page_bytes,
                        horizon=float(self.topology.api.Environment.get("SEGLOG_RETENTION_MIN_AGE_SECONDS", "604800")))

    def api(self, event: dict[str, Any], **tags: Any) -> Task:
        """Invoke the API function's handler on one payload 2.0 event (the gateway built it); its result is what the
        handler returned, for the gateway to answer with."""

        def run(task: Task) -> Any:
            return api.handler(event, _Context(task.name, self._deadline(task)))

        return self._start("api", run, self.topology.api.Timeout, **tags)


class _TaskRandom(random.Random):
    """A generator that draws from the running task's own (``Faults.rng``): shared objects built once per run
    (the API's EventLog, its retry policy) still draw per invocation, so a task's draws do not depend on what
    other tasks drew."""

    def __init__(self, world: World, faults: Faults) -> None:
        super().__init__(0)
        self._world, self._faults = world, faults

    def random(self) -> float:
        return self._faults.rng(self._world.current).random()

    def getrandbits(self, k: int, /) -> int:
        return self._faults.rng(self._world.current).getrandbits(k)


@dataclass(frozen=True)
class _Context:
    """The Lambda context object a handler gets: its request id and the time left (AWS Lambda Developer Guide,
    "Using the Lambda context object to retrieve Python function information")."""

    aws_request_id: str
    remaining: Callable[[], float]

    def get_remaining_time_in_millis(self) -> int:
        return int(self.remaining() * 1000)
