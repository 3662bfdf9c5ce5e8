"""The two event source mappings, with the delivery rules of DESIGN §9, as tasks of the world.

Streams (one poller per shard, ParallelizationFactor 1): one batch in flight per shard; records the filter drops
advance the checkpoint without an invocation (§9.5); the checkpoint moves only when a batch succeeds (§9.1);
with ReportBatchItemFailures the batch resumes from the lowest reported SequenceNumber, later successes run
again (§9.1); a failed batch is retried (MaximumRetryAttempts -1: until it succeeds, §9.3), split in halves first
when BisectBatchOnFunctionError is on (§9.4). The checkpoint lives outside the poller (as the emulator's
checkpoint store), so a restarted poller resumes from it and redelivers what was in flight.

SQS: batches run concurrently up to MaximumConcurrency (§9.9); a receive hides the messages for the visibility
timeout and counts the receive (§9.6, the simulated queue does that, and moves a message received more than
maxReceiveCount times to the DLQ); after an invocation the mapping deletes every message of the batch except
the reported failures; an invocation that crashed or timed out deletes nothing (§9.7): the messages reappear
when their visibility ends.

Idle pollers wait for a signal (a new stream record, a message sent or made visible) instead of asking four
times a second: the same deliveries, without thousands of empty polls per simulated hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from seglog_aws.events.dynamodb_stream import stream_record
from seglog_emulator.filtering import select
from seglog_emulator.pollers.common import reported_failures
from seglog_sim.faults import Fault, Faults
from seglog_sim.lambdas import Invocations
from seglog_sim.topology import REGION, Topology
from seglog_sim.world import Signal, Task, World


class Functions(Protocol):
    """What the pollers invoke: the template's functions (:class:`seglog_sim.lambdas.Lambdas`, or a probe in the
    fidelity tests). Each call starts an invocation task whose result is the partial batch response."""

    topology: Topology
    invocations: Invocations

    def router(self, records: list[dict[str, Any]]) -> Task: ...

    def worker(self, messages: list[dict[str, Any]]) -> Task: ...


@dataclass(kw_only=True)
class Pollers:
    """The mappings' pollers and their durable state (checkpoints), restartable as the supervisor restarts."""

    world: World
    faults: Faults
    lambdas: Functions
    ddb: Any
    sqs: Any
    queue_url: str
    stream_signal: Signal = field(default_factory=lambda: Signal("stream"))
    queue_signal: Signal = field(default_factory=lambda: Signal("queue"))
    #: shard id -> the SequenceNumber of the last record the mapping is done with.
    checkpoints: dict[str, str | None] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)
    restarts: int = 0
    #: Router invocations per outcome, batches bisected, records filtered out.
    stats: dict[str, int] = field(default_factory=dict)

    def _count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def start(self) -> None:
        table = self.lambdas.topology.stream.table
        for shard in self.ddb.shard_ids(table):
            self.checkpoints.setdefault(shard, None)
            self.tasks.append(self.world.spawn(f"stream-poller-{shard}-{self.restarts}", "poller",
                                               self._stream, shard))
        self.tasks.append(self.world.spawn(f"queue-poller-{self.restarts}", "poller", self._queue))

    def restart(self) -> None:
        """Kill the pollers (their in-memory state is lost) and start them again from the checkpoints."""
        for task in self.tasks:
            self.world.kill(task, "supervisor restart")
        self.tasks.clear()
        self.restarts += 1
        self.start()

    # -------------------------------------------------------------------------------------------- stream

    def caught_up(self) -> bool:
        table = self.lambdas.topology.stream.table
        return all(not self.ddb.stream_records(table, shard, after=self.checkpoints.get(shard), limit=1)
                   for shard in self.ddb.shard_ids(table))

    def _stream(self, shard: str) -> None:
        world, mapping = self.world, self.lambdas.topology.stream
        rng = self.faults.rng(world.current)
        arn = self.ddb.stream_arn(mapping.table)
        while True:
            raw = self.ddb.stream_records(mapping.table, shard, after=self.checkpoints[shard],
                                          limit=mapping.BatchSize)
            if not raw:
                world.wait(self.stream_signal, 600.0)
                world.sleep(rng.uniform(0.0, 0.25))  # the next poll comes within a quarter second (§9.2)
                continue
            records = [stream_record(r, event_source_arn=arn, region=REGION) for r in raw]
            batch = select(mapping.FilterCriteria, records) if mapping.FilterCriteria else records
            self._count("stream records filtered out", len(records) - len(batch))
            if batch:
                self._deliver([dict(r) for r in batch])
            self.checkpoints[shard] = records[-1]["dynamodb"]["SequenceNumber"]

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        """Invoke the router until the batch has succeeded: retried without end (MaximumRetryAttempts -1), halved
        first on a function error when BisectBatchOnFunctionError is on, resumed from the lowest reported
        failure."""
        world, mapping = self.world, self.lambdas.topology.stream
        parts, retries = [batch], 0
        while parts:
            part = parts.pop(0)
            task = self.lambdas.router(part)
            world.join(task)
            if task.killed is not None or task.error is not None:
                self._count(f"router {'crashed' if task.killed == 'crash' else task.killed or 'error'}")
                if mapping.BisectBatchOnFunctionError and len(part) > 1:
                    self._count("router batches bisected")
                    retry = [part[:len(part) // 2], part[len(part) // 2:]]
                else:
                    retry = [part]
            else:
                known = {r["dynamodb"]["SequenceNumber"] for r in part}
                failures = reported_failures(task.result, known) if mapping.reports_batch_item_failures else set()
                if failures is None:  # a malformed response fails the whole batch (§9.7)
                    self._count("router batches failed by their response")
                    retry = [part]
                elif failures:
                    self._count("router partial failures")
                    lowest = min(int(f) for f in failures)
                    retry = [[r for r in part if int(r["dynamodb"]["SequenceNumber"]) >= lowest]]
                else:
                    self._count("router ok")
                    continue
            parts[:0] = retry
            retries += 1
            world.sleep(min(2.0 ** min(retries, 6), 60.0))

    # --------------------------------------------------------------------------------------------- queue

    def _queue(self) -> None:
        world, mapping = self.world, self.lambdas.topology.jobs
        me = world.current
        running: list[Task] = []
        while True:
            running = [t for t in running if not t.done]
            if len(running) >= mapping.MaximumConcurrency:
                world.wait(self.queue_signal, 1.0)
                continue
            duplicate = self.faults.decide(me, Fault.DUPLICATE_DELIVERY)
            messages = self.sqs.receive(self.queue_url, max_messages=mapping.BatchSize, duplicate=duplicate)
            if not messages:
                visible_at = self.sqs.next_visible_at(self.queue_url)
                wait = 600.0 if visible_at is None else max(0.0, visible_at - world.now)
                world.wait(self.queue_signal, min(wait, 600.0) + 0.01)
                continue
            invocation = self.lambdas.worker(messages)
            running.append(invocation)
            world.spawn(f"{invocation.name}-done", "poller", self._finish, invocation, messages)

    def _finish(self, invocation: Task, messages: list[dict[str, Any]]) -> None:
        """Lambda's part after the invocation: delete what succeeded (DeleteMessageBatch); nothing on a crash."""
        self.world.join(invocation)
        self.world.notify(self.queue_signal)
        if invocation.killed is not None or invocation.error is not None:
            self.lambdas.invocations.add("worker", "crashed" if invocation.killed == "crash" or (
                invocation.killed or "").startswith("crash") else invocation.killed or "error")
            return
        known = {m["MessageId"] for m in messages}
        failed = reported_failures(invocation.result, known) if self.lambdas.topology.jobs.reports_batch_item_failures \
            else set()
        if failed is None:  # the whole batch failed: nothing is deleted
            return
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self.sqs.call("DeleteMessageBatch", {"QueueUrl": self.queue_url, "Entries": [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)]})
