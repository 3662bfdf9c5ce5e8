"""The two drivers of the event-source-mapping model, behind one interface, for the one fidelity suite
(:mod:`fidelity.test_esm_rules`; DESIGN §9, §12).

A test states records or messages, each with what the probe function does with it (:class:`Rec`: ``ok``,
``fail``, ``report``, ``sleep``; ``times`` n limits it to the first n deliveries — the probe_handler's rules),
and the mapping's settings in AWS's names. A driver runs them through its pollers until the mapping is done and
answers what happened in the same terms: the names each invocation received, where the checkpoint moved, what
was discarded to OnFailure, the receive counts, what reached the dead-letter queue.

- :class:`EmulatorDriver`: the emulator's pollers (threads, boto3) on the local stack's stream and queues,
  invoking the probe function in real worker processes; real time.
- ``SimDriver`` (:mod:`fidelity.sim_driver`): the simulator's pollers (greenlets) on its simulated stream and
  queues, the same probe rules in a function of the simulated world; simulated time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from fidelity.conftest import MakeInvoker, MakeQueue, Probe, RecordingCheckpoints, Table, quick_retries, running
from seglog_awsmodel.config import QueueMapping, StreamMapping, StreamPosition
from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.invoker import LambdaInvoker
from seglog_emulator.pollers.queue import QueuePoller
from seglog_emulator.pollers.stream import StreamPoller
from seglog_stack.local import LocalDeployment

#: How long a driver lets a mapping run on after it looks done, for an invocation that should not happen.
AFTER: float = 0.5


@dataclass(frozen=True)
class Rec:
    """One stream record or queue message, named, with the probe's action for it."""

    name: str
    action: str = "ok"
    times: int | None = None
    seconds: float | None = None
    #: More attributes of the stream record's item (DynamoDB JSON), for filters.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StreamRun:
    #: The names of each invocation's records, in invocation order.
    batches: list[list[str]]
    #: The names of the records the checkpoint moved to, in order (putting the same position again is no move).
    checkpoints: list[str]
    #: (condition, names, approximate invoke count) of every part sent to OnFailure.
    discarded: list[tuple[str, list[str], int]]
    #: (start, end) of every invocation, seconds on the driver's clock.
    spans: list[tuple[float, float]]


@dataclass
class QueueRun:
    batches: list[list[str]]
    #: ApproximateReceiveCount of each delivery, by message name.
    receive_counts: dict[str, list[str]]
    #: Names of the messages in the dead-letter queue at the end.
    dead_lettered: list[str]
    #: (visible, not visible) messages left in the queue.
    left: tuple[int, int]
    #: Start times of every invocation, by message name (seconds on the driver's clock).
    starts: dict[str, list[float]]
    #: The receipt handle of each delivery, by message name.
    handles: dict[str, list[str]] = field(default_factory=dict)


class Driver(Protocol):
    name: str

    def stream(self, records: list[Rec], **settings: Any) -> StreamRun: ...

    def queue(self, messages: list[Rec], *, visibility: int, max_receive: int | None = None,
              faults: Mapping[FaultKind, float] | None = None, **settings: Any) -> QueueRun: ...


def stream_mapping(**settings: Any) -> StreamMapping:
    """The stream mapping both drivers run: from the trim horizon, AWS's defaults but for ``settings``."""
    return StreamMapping(function="probe", event="Stream", table="Table", StartingPosition=StreamPosition.TRIM_HORIZON,
                         **settings)


def queue_mapping(**settings: Any) -> QueueMapping:
    return QueueMapping(function="probe", event="Queue", queue="Queue", **settings)


def collapse(positions: list[str]) -> list[str]:
    """Checkpoint moves: a position put again right after itself is no move."""
    moves: list[str] = []
    for position in positions:
        if not moves or moves[-1] != position:
            moves.append(position)
    return moves


def wait_until(condition: Any, what: str, timeout: float = 20.0, *, holds: float = 0.0) -> None:
    """Poll ``condition`` until it is true — and, with ``holds``, has stayed true on every read for that many
    seconds (a queue read as empty may be between an expired visibility timeout and LocalStack putting the message
    back: (0, 0) for a moment, then (1, 0); seen once in ./dev test on the whole-batch failure test)."""
    deadline = time.monotonic() + timeout
    since: float | None = None
    while True:
        now = time.monotonic()
        if condition():
            since = now if since is None else since
            if now - since >= holds:
                return
        else:
            since = None
        if now > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def warm(invoker: LambdaInvoker, workers: int | None = None) -> LambdaInvoker:
    """Starts every execution environment of ``invoker`` at once, so a test's invocations start without a cold
    start and their times are the poller's doing (a cold start longer than a short visibility timeout would
    let the message come back while its first invocation is still starting)."""
    workers = workers or invoker.concurrency
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: invoker.invoke({}), range(workers)))
    return invoker


@dataclass
class EmulatorDriver:
    """The emulator's pollers on the local stack (the fixtures of :mod:`fidelity.conftest`)."""

    stack: LocalDeployment
    table: Table
    probe: Probe
    make_invoker: MakeInvoker
    checkpoints: RecordingCheckpoints
    make_queue: MakeQueue
    name: str = "emulator"

    def stream(self, records: list[Rec], **settings: Any) -> StreamRun:
        for r in records:
            self.table.put(r.name, r.action, times=r.times, seconds=r.seconds, **r.extra)
        written = self.table.wait_for_records(len(records))
        name_of = {r["dynamodb"]["SequenceNumber"]: r["dynamodb"]["NewImage"]["name"]["S"] for r in written}
        order = [r["dynamodb"]["SequenceNumber"] for r in written]
        last = order[-1]
        failures: list[dict[str, Any]] = []
        # Five workers: nothing but the poller keeps two batches of one shard from running at once.
        poller = StreamPoller(stream_mapping(**settings), self.make_invoker(concurrency=5), self.table.reader,
                              self.checkpoints, region=self.stack.region, on_failure=failures.append,
                              sleep=quick_retries)
        with running(poller):
            wait_until(lambda: any(seq == last for _, _, seq in self.checkpoints.moves),
                        "the checkpoint to reach the last record")
            time.sleep(AFTER)
        discarded = []
        for info in failures:
            batch = info["DDBStreamBatchInfo"]
            span = order[order.index(batch["startSequenceNumber"]):order.index(batch["endSequenceNumber"]) + 1]
            discarded.append((info["requestContext"]["condition"], [name_of[s] for s in span],
                              info["requestContext"]["approximateInvokeCount"]))
        starts = self.probe.starts()
        return StreamRun(batches=self.probe.batches(),
                         checkpoints=[name_of[s] for s in collapse([s for _, _, s in self.checkpoints.moves])],
                         discarded=discarded,
                         spans=[(s["time"], s["end"]["time"] if s["end"] else time.time()) for s in starts])

    def queue(self, messages: list[Rec], *, visibility: int, max_receive: int | None = None,
              faults: Mapping[FaultKind, float] | None = None, **settings: Any) -> QueueRun:
        dead_letter = self.make_queue(visibility_timeout=30) if max_receive else None
        queue = self.make_queue(visibility_timeout=visibility, dead_letter=dead_letter, max_receive_count=max_receive)
        for m in messages:
            queue.send(m.name, m.action, times=m.times, seconds=m.seconds)
        invoker = warm(self.make_invoker(concurrency=settings.get("MaximumConcurrency", 2)))
        schedule = None if not faults else FaultSchedule(FaultPlan.from_mapping(
            {"seed": 1, "faults": {str(kind): {"rate": rate} for kind, rate in faults.items()}}))
        poller = QueuePoller(queue_mapping(**settings), invoker, queue.sqs, queue_url=queue.url, queue_arn=queue.arn,
                             region=self.stack.region, faults=schedule)
        with running(poller):
            wait_until(lambda: (0, 0) == queue.counts(), "the queue to be empty", timeout=60.0, holds=1.0)
        counts: dict[str, list[str]] = {}
        starts: dict[str, list[float]] = {}
        handles: dict[str, list[str]] = {}
        for start in self.probe.starts():
            for record, name in zip(start["event"]["Records"], start["names"], strict=True):
                counts.setdefault(name, []).append(record["attributes"]["ApproximateReceiveCount"])
                starts.setdefault(name, []).append(start["time"])
                handles.setdefault(name, []).append(record["receiptHandle"])
        dead = [json.loads(m["Body"])["name"] for m in dead_letter.receive()] if dead_letter else []
        return QueueRun(batches=self.probe.batches(), receive_counts=counts, dead_lettered=sorted(dead),
                        left=queue.counts(), starts=starts, handles=handles)
