"""The two event source mappings as tasks of the world: the simulator's driver of the model's rules (DESIGN §12).

What happens to a stream batch once read (checkpoint, retries, bisect, partial failures, record age, OnFailure)
is :class:`seglog_awsmodel.stream_batches.StreamBatch`, and what an SQS batch deletes after its invocation is
:func:`seglog_awsmodel.queue_batches.settled_messages` — the emulator's pollers run the same two. This module
only reads the simulated stream and queue, invokes, sleeps on the world's clock and keeps the checkpoints.

Streams (one poller per shard, ParallelizationFactor 1): one batch in flight per shard; records the filter drops
advance the checkpoint without an invocation (§9.5). The checkpoints live outside the poller (as the emulator's
checkpoint store), so a restarted poller resumes from them and redelivers what was in flight. A discarded part
(MaximumRetryAttempts or the record age; the template sets neither, so none is discarded) is counted, as the
simulated world has no OnFailure destination.

SQS: batches run concurrently up to MaximumConcurrency (§9.9); a receive hides the messages for the visibility
timeout and counts the receive (§9.6, the simulated queue does that, and moves a message received more than
maxReceiveCount times to the DLQ); an invocation that crashed or timed out deletes nothing (§9.7): the messages
reappear when their visibility ends.

Faults: poller_restart ends a stream poller between an invocation and its checkpoint, as the emulator's does; the
new one starts after the supervisor's restart pause and resumes from the checkpoint. The decision is keyed by its
site — the shard, the part's first SequenceNumber, its attempt and the poller's incarnation — not by the task's
generator: the attempt restarts at 1 in a new poller, so without the incarnation the same restart would fire in
every new poller and the shard would stall while faults last (the emulator's bug of issue 19; the mutant
restart_repeats brings it back, and :mod:`seglog_sim.liveness` finds the stalled shard).

Idle pollers wait for a signal (a new stream record, a message sent or made visible) instead of asking four
times a second: the same deliveries, without thousands of empty polls per simulated hour.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from seglog_awsmodel.events.dynamodb_stream import stream_record
from seglog_awsmodel.fault_sites import restart_site
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.filtering import select
from seglog_awsmodel.queue_batches import settled_messages
from seglog_awsmodel.stream_batches import Discard, Done, StreamBatch, sequence_number
from seglog_sim.faults import Faults
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


#: The counter each of the model's outcomes bumps (the summary's names, as before the model).
_OUTCOMES: Final = {"ok": "router ok", "partial": "router partial failures", "failed": "router batches failed",
                    "bisected": "router batches bisected"}
#: Seconds before a poller stopped by poller_restart runs again: the emulator supervisor's first restart backoff
#: (RESTART_BASE_SECONDS).
RESTART_PAUSE: Final = 0.5


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
    #: Stream pollers started per shard, ever (supervisor and poller restarts): a restarted poller's incarnation.
    incarnations: Counter[str] = field(default_factory=Counter)
    #: shard id -> (simulated time, checkpoint) of every move of its checkpoint, for the liveness checks.
    moves: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    #: Router invocations per outcome, batches bisected, records filtered out.
    stats: dict[str, int] = field(default_factory=dict)
    #: Every part the model discarded (what the emulator sends to OnFailure; the simulated world has no
    #: destination, so it is kept here for the fidelity suite and the counters).
    discarded: list[Discard] = field(default_factory=list)

    def _count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def start(self) -> None:
        table = self.lambdas.topology.stream.table
        for shard in self.ddb.shard_ids(table):
            self.checkpoints.setdefault(shard, None)
            self._start_stream(shard)
        self.tasks.append(self.world.spawn(f"queue-poller-{self.restarts}", "poller", self._queue))

    def _start_stream(self, shard: str, delay: float = 0.0) -> None:
        incarnation = self.incarnations[shard]
        self.incarnations[shard] += 1
        name = f"stream-poller-{shard}-{self.restarts}"
        # The first poller of a supervisor's start keeps its name (and so its generator and every seed's history).
        if incarnation > self.restarts:
            name += f"~{incarnation}"
        self.tasks.append(self.world.spawn(name, "poller", self._stream, shard, incarnation, delay=delay))

    def _put(self, shard: str, checkpoint: str) -> None:
        self.checkpoints[shard] = checkpoint
        self.moves.setdefault(shard, []).append((self.world.now, checkpoint))

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

    def _stream(self, shard: str, incarnation: int = 0) -> None:
        world, mapping = self.world, self.lambdas.topology.stream
        if world.current.killed is not None:
            return  # stopped before it started (a supervisor restart during the restart pause)
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
            if not self._deliver(shard, batch, sequence_number(records[-1]), incarnation):
                return

    def _deliver(self, shard: str, batch: list[Any], last_sequence: str, incarnation: int = 0) -> bool:
        """Carry out the model's steps for one batch until it is done; False when poller_restart stopped this
        poller (a new one is started)."""
        world = self.world
        state = StreamBatch(self.lambdas.topology.stream, batch, last_sequence=last_sequence)
        while not isinstance(step := state.step(world.now), Done):
            if isinstance(step, Discard):
                self._count(f"router batches discarded ({step.condition})")
                self.discarded.append(step)
                self._put(shard, step.checkpoint)
                continue
            task = self.lambdas.router([dict(r) for r in step.part])
            world.join(task)
            if self._restarts_here(shard, step.part, step.attempt, incarnation):
                self._start_stream(shard, delay=RESTART_PAUSE)
                return False
            failed = task.killed is not None or task.error is not None
            if failed:
                self._count(f"router {'crashed' if task.killed == 'crash' else task.killed or 'error'}")
            settled = state.settle(task.result, failed=failed, now=world.now)
            self._count(_OUTCOMES[settled.outcome])
            if settled.checkpoint is not None:
                self._put(shard, settled.checkpoint)
            if settled.pause:
                world.sleep(settled.pause)
        if step.checkpoint is not None:
            self._put(shard, step.checkpoint)
        return True

    def _restarts_here(self, shard: str, part: list[Any], attempt: int, incarnation: int) -> bool:
        """The poller_restart decision after an invocation, before its checkpoint: keyed by the site, the
        poller's incarnation included (see the module's docstring)."""
        key = restart_site(shard, f"{sequence_number(part[0])}:{attempt}", incarnation)
        return self.faults.decide_at(self.world.current, FaultKind.POLLER_RESTART, key)

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
            expiry = self.faults.decide(me, FaultKind.VISIBILITY_EXPIRY)
            messages = self.sqs.receive(self.queue_url, max_messages=mapping.BatchSize, in_flight_again=expiry)
            if not messages:
                visible_at = self.sqs.next_visible_at(self.queue_url)
                wait = 600.0 if visible_at is None else max(0.0, visible_at - world.now)
                world.wait(self.queue_signal, min(wait, 600.0) + 0.01)
                continue
            invocation = self.lambdas.worker(messages)
            running.append(invocation)
            world.spawn(f"{invocation.name}-done", "poller", self._finish, invocation, messages)
            if self.faults.decide(me, FaultKind.DUPLICATE_DELIVERY):
                # The batch again, as received (same ids, receipt handles, receive counts), beside the first; the
                # copy settles nothing: the first invocation's outcome decides (FaultKind.DUPLICATE_DELIVERY).
                self.lambdas.worker([dict(m) for m in messages])

    def _finish(self, invocation: Task, messages: list[dict[str, Any]]) -> None:
        """Lambda's part after the invocation: delete what succeeded (DeleteMessageBatch); nothing on a crash."""
        self.world.join(invocation)
        self.world.notify(self.queue_signal)
        failed = invocation.killed is not None or invocation.error is not None
        if failed:
            self.lambdas.invocations.add("worker", "crashed" if invocation.killed == "crash" or (
                invocation.killed or "").startswith("crash") else invocation.killed or "error")
        done_ids = settled_messages(self.lambdas.topology.jobs, [m["MessageId"] for m in messages],
                                    invocation.result, failed=failed)
        if done_ids is None:  # the whole batch failed (the invocation, or its response): nothing is deleted
            return
        deleted = set(done_ids)
        done = [m for m in messages if m["MessageId"] in deleted]
        if done:
            self.sqs.call("DeleteMessageBatch", {"QueueUrl": self.queue_url, "Entries": [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)]})
