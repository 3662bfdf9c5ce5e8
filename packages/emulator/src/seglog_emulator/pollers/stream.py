"""StreamPoller: a DynamoDB stream event source mapping (DESIGN §9, behaviours 1-5).

What it reproduces, each from the AWS Lambda Developer Guide:

* one batch in flight per shard (ParallelizationFactor 1), one thread per shard, and a child shard is read
  only after its parent was read to its end (with-ddb: "Lambda processes shards ... parent before child");
* each shard is polled about four times a second (with-ddb: "Lambda polls shards in your DynamoDB stream for
  records at a base rate of 4 times per second"); a batch is invoked when BatchSize records are there, when
  MaximumBatchingWindowInSeconds has passed since the first one, or at 6 MB of event (services-ddb-params);
* what happens to a batch once read — checkpoints, retries, bisect, record age, OnFailure — is the model's
  (:mod:`seglog_awsmodel.stream_batches`, DESIGN §12), which the simulator runs too; this poller carries its
  steps out (invokes, sleeps, checkpoints, sends the discarded batch's description);
* FilterCriteria: records no filter matches are never sent, and they advance the checkpoint
  (invocation-eventfiltering);
* a record's ApproximateCreationDateTime is to the second and the same on every delivery, as it is one value of
  the record on AWS (DynamoDB Streams API Reference, StreamRecord), though the local stacks give the minute: the
  poller raises it to the second it can tell, once, and the checkpoint store keeps that value across restarts
  (:mod:`seglog_emulator.checkpoints`).

Throttles do not count as retries on AWS; here the invoker queues an invocation for a free worker instead of
throttling it, so a throttle never happens.

Faults (DESIGN §7): router_crash_after_send arms the stream router's crash point for one invocation;
crash_after_call kills the worker after one of its AWS calls; poller_restart ends this process between an
invocation and its checkpoint; function_timeout cuts an invocation short; duplicate_delivery hands a batch to the
function a second time before its checkpoint. Decision sites are the batch's first
and last keys, its attempt and the process's incarnation (the attempt restarts at 1 in a new process: without
the incarnation the same restart fired in every new process), which a seed replays.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from seglog_awsmodel.config import StreamMapping, StreamPosition
from seglog_awsmodel.events.dynamodb_stream import (
    ShardIteratorType,
    StreamReader,
    creation_second,
    epoch_seconds,
    lambda_stream_arn,
    stream_record,
)
from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.filtering import matches
from seglog_awsmodel.stream_batches import Discard, Done, Record, StreamBatch, sequence_number
from seglog_emulator.checkpoints import CheckpointStore
from seglog_emulator.faults.call_crash import draw_crash_after_call
from seglog_emulator.faults.invocation import draw_clock_skew, draw_timeout
from seglog_emulator.faults.schedule import FaultSchedule
from seglog_emulator.iam.arns import function_arn
from seglog_emulator.invoker import LOCAL_ACCOUNT_ID, InvocationResult
from seglog_emulator.pollers.common import Invoker, maybe_restart
from seglog_emulator.pollers.usage import USAGE_SECONDS, PollerUsage, ShardAges

log = structlog.get_logger("seglog.poller.stream")

#: "Lambda polls shards in your DynamoDB stream for records at a base rate of 4 times per second" (with-ddb).
POLL_SECONDS: Final = 0.25
#: A Lambda invocation payload is at most 6 MB (services-ddb-params: "... or the batch reaches the payload
#: limit of 6 MB").
MAX_EVENT_BYTES: Final = 6 * 1024 * 1024

OnFailure = Callable[[dict[str, Any]], None]


class StreamPoller:
    """Polls every shard of one stream for one mapping and invokes the function with its batches.

    Args:
        mapping: the event source mapping from the template.
        invoker: runs the function.
        reader: reads the stream.
        checkpoints: where each shard's position is kept across restarts, with the creation second given to each
            record after it.
        region: the region put in event records.
        on_failure: sends a discarded batch's description to the OnFailure destination (None: no destination).
        faults: the seeded schedule, if faults are in play.
        clock: wall-clock seconds, for record age (a seam for tests).
        poll_seconds: the pause between polls of an idle shard.
        usage_seconds: how often its "poller usage" line (requests, IteratorAge) is logged.
    """

    def __init__(self, mapping: StreamMapping, invoker: Invoker, reader: StreamReader, checkpoints: CheckpointStore,
                 *, region: str, on_failure: OnFailure | None = None, faults: FaultSchedule | None = None,
                 clock: Callable[[], float] = time.time, poll_seconds: float = POLL_SECONDS,
                 sleep: Callable[[float], None] | None = None, usage_seconds: float = USAGE_SECONDS) -> None:
        self.mapping = mapping
        self.invoker = invoker
        self.reader = reader
        self.checkpoints = checkpoints
        self.region = region
        self.on_failure = on_failure
        self.faults = faults
        self.clock = clock
        self.poll_seconds = poll_seconds
        self.name = f"{mapping.function}.{mapping.event}"
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self.batches = 0  # invocations made, for status and tests
        self.ages = ShardAges(clock)
        self.usage = PollerUsage(self.name, "dynamodbstreams", getattr(reader, "client", None), self.ages.figures,
                                 every=usage_seconds)

    # ------------------------------------------------------------------------------------------ lifecycle

    def run(self) -> None:
        """Discover shards and consume each in its own thread until :meth:`stop`; returns after draining."""
        log.info("stream poller started", poller=self.name, stream=self.reader.stream_arn)
        self.usage.start()
        while not self._stop.is_set():
            try:
                self._discover()
            except Exception as exc:  # a poller never dies of one failed DescribeStream
                log.warning("describe stream failed", poller=self.name, error=str(exc))
            self._stop.wait(1.0)
        for thread in list(self._threads.values()):
            thread.join()
        self.usage.stop()
        log.info("stream poller stopped", poller=self.name)

    def stop(self) -> None:
        """Finish the batches in flight (they are checkpointed) and stop."""
        self._stop.set()

    def _discover(self) -> None:
        shards = self.reader.shards()
        parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self._threads or self.checkpoints.finished(shard_id):
                continue
            thread = threading.Thread(target=self._consume, args=(shard_id, parents.get(shard_id), parents),
                                      name=f"shard-{shard_id[-12:]}", daemon=True)
            self._threads[shard_id] = thread
            thread.start()

    # ------------------------------------------------------------------------------------------ a shard

    def _consume(self, shard_id: str, parent: str | None, known: Mapping[str, str | None]) -> None:
        bound = structlog.contextvars.bound_contextvars
        with bound(poller=self.name, shard_id=shard_id):
            # Parent before child: wait until the parent (if the stream still lists it) is read to its end.
            while parent is not None and parent in known and not self.checkpoints.finished(parent) \
                    and not self._stop.is_set():
                self._stop.wait(self.poll_seconds)
            buffer: list[dict[str, Any]] = []
            iterator: str | None = None
            first_buffered = 0.0
            not_before: float | None = None  # when the last read that found the end of the shard began
            while not self._stop.is_set():
                try:
                    if iterator is None and not buffer:
                        iterator = self._iterator(shard_id)
                    if iterator is not None and len(buffer) < self.mapping.BatchSize:
                        asked = self.clock()
                        records, iterator = self.reader.read_from(iterator, limit=min(1000, self.mapping.BatchSize))
                        if not records:
                            not_before = asked
                        records = self._to_the_second(shard_id, records, not_before)
                        if records and not buffer:
                            first_buffered = time.monotonic()
                        buffer.extend(records)
                        if records:
                            self.ages.read(shard_id, _created(records[-1]))
                        elif not buffer:
                            self.ages.caught_up(shard_id)
                        if iterator is None and not buffer:
                            self.checkpoints.finish(shard_id)  # a closed shard, read to its end
                            self.ages.closed(shard_id)
                            log.info("shard finished")
                            return
                except Exception as exc:  # an expired iterator, a hiccup: start again from the checkpoint
                    log.warning("get records failed: resuming from the checkpoint", error=str(exc))
                    buffer, iterator, not_before = [], None, None  # records before the last end come again
                    self._stop.wait(self.poll_seconds)
                    continue
                window = self.mapping.MaximumBatchingWindowInSeconds
                full = len(buffer) >= self.mapping.BatchSize
                if buffer and (full or time.monotonic() - first_buffered >= window or iterator is None):
                    batch = self._take(buffer)
                    del buffer[:len(batch)]
                    if buffer:
                        first_buffered = time.monotonic()
                    self._deliver(shard_id, batch)
                    self.ages.finished(shard_id, _created(batch[-1]), drained=not buffer)
                    continue
                self._stop.wait(self.poll_seconds)

    def _to_the_second(self, shard_id: str, records: list[dict[str, Any]], not_before: float | None
                       ) -> list[dict[str, Any]]:
        """``records`` with their ApproximateCreationDateTime in seconds, as AWS gives it (:func:`creation_second`:
        the local stacks give the minute), each with the value it was first given: the checkpoint store keeps
        them, so a record read again after a failed read, or by a restarted poller, which knows no bound, is
        delivered as before."""
        given = self.checkpoints.creation_seconds(shard_id)
        new: dict[str, int] = {}
        timed = []
        for record in records:
            change = record.get("dynamodb") or {}
            created = change.get("ApproximateCreationDateTime")
            if created is None:
                timed.append(record)
                continue
            number = sequence_number(record)
            second = given.get(number)
            if second is None:
                second = new[number] = creation_second(created, not_before=not_before)
            timed.append({**record, "dynamodb": {**change, "ApproximateCreationDateTime": second}})
        if new:
            self.checkpoints.give_creation_seconds(shard_id, new)
        return timed

    def _iterator(self, shard_id: str) -> str:
        position = self.checkpoints.get(shard_id)
        if position is not None:
            return self.reader.iterator(shard_id, ShardIteratorType.AFTER_SEQUENCE_NUMBER, position)
        kind = (ShardIteratorType.TRIM_HORIZON if self.mapping.StartingPosition is StreamPosition.TRIM_HORIZON
                else ShardIteratorType.LATEST)
        iterator = self.reader.iterator(shard_id, kind)
        return iterator

    def _take(self, buffer: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The next batch: up to BatchSize records, and no more than 6 MB of event — the JSON the invoker
        sends, ``{"Records": [...]}`` and the separators between records counted too."""
        taken: list[dict[str, Any]] = []
        size = len(json.dumps({"Records": []}))
        for record in buffer[:self.mapping.BatchSize]:
            size += len(json.dumps(self._event_record(record))) + (len(", ") if taken else 0)
            if taken and size > MAX_EVENT_BYTES:
                break
            taken.append(record)
        return taken

    def _event_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        return stream_record(record, event_source_arn=self.reader.stream_arn, region=self.region)

    # ------------------------------------------------------------------------------------------ a batch

    def _deliver(self, shard_id: str, batch: list[dict[str, Any]]) -> None:
        """Invoke until the batch is checkpointed or discarded (one batch in flight per shard); the rules are
        the model's (:class:`~seglog_awsmodel.stream_batches.StreamBatch`), this only carries them out."""
        events = [self._event_record(r) for r in batch]
        kept = [e for e in events if not self.mapping.FilterCriteria or matches(self.mapping.FilterCriteria, e)]
        state = StreamBatch(self.mapping, kept, last_sequence=sequence_number(events[-1]))
        while not isinstance(step := state.step(self.clock()), Done):
            if isinstance(step, Discard):
                self._discard(shard_id, step)
                continue
            if self._stop.is_set() and step.attempt > 1 and state.retries > 0:
                return  # draining: a failing batch is left for the next start, uncheckpointed
            result = self._invoke(shard_id, step.part, step.attempt)
            self._duplicate(shard_id, step.part, step.attempt)
            maybe_restart(self.faults, self.name, site(sequence_number(step.part[0]), step.attempt))
            settled = state.settle(result.payload, failed=not result.ok, now=self.clock())
            if settled.checkpoint is not None:
                self.checkpoints.put(shard_id, settled.checkpoint)
            if settled.outcome == "bisected":
                log.info("batch bisected", sizes=[len(p) for p in state.todo[:2]])
            if settled.pause:
                self._sleep(settled.pause)
        if step.checkpoint is not None:
            self.checkpoints.put(shard_id, step.checkpoint)

    def _keys(self, current: list[Record], attempt: int) -> tuple[Any, ...]:
        """What names a batch's delivery in its decision sites: its first and last keys, attempt, incarnation."""
        return (current[0]["dynamodb"].get("Keys"), current[-1]["dynamodb"].get("Keys"), attempt,
                self._incarnation)

    def _invoke(self, shard_id: str, current: list[Record], attempt: int) -> InvocationResult:
        keys = self._keys(current, attempt)
        crash_points: list[str] = []
        timeout: float | None = None
        skew = 0.0
        if self.faults is not None:
            points = list(getattr(self.invoker, "crash_points", ()))
            # Every point the function declares is armed: the first its code reaches kills it.
            if points and self.faults.decide(FaultKind.ROUTER_CRASH_AFTER_SEND, site("router", *keys)):
                crash_points.extend(points)
            timeout = draw_timeout(self.faults, site("stream-timeout", *keys))
            skew = draw_clock_skew(self.faults, site("skew", "stream", *keys))
        self.batches += 1
        return self.invoker.invoke(
            {"Records": list(current)}, attempt=attempt, source=self.name, crash_points=crash_points,
            timeout=timeout, clock_skew=skew,
            log_fields={"shard_id": shard_id, "first_sequence_number": sequence_number(current[0])},
            crash_after_call=draw_crash_after_call(self.faults, "stream", *keys))

    def _duplicate(self, shard_id: str, current: list[Record], attempt: int) -> None:
        """duplicate_delivery: the same batch handed to the function again, after the first invocation and before
        the checkpoint — Lambda processes a stream's records at least once, and a batch read again (a poller that
        lost its place, a retry) reaches the function twice. The copy's outcome settles nothing: the first's does."""
        if self.faults is None:
            return
        decision = self.faults.decide(FaultKind.DUPLICATE_DELIVERY, site("stream-duplicate", *self._keys(current,
                                                                                                      attempt)))
        for copy in range(decision.amount or 1 if decision is not None else 0):
            log.warning("stream batch delivered again (injected fault)", shard_id=shard_id, copy=copy + 1,
                        first_sequence_number=sequence_number(current[0]))
            self.batches += 1
            self.invoker.invoke({"Records": list(current)}, attempt=attempt, source=self.name, log_fields={
                "shard_id": shard_id, "first_sequence_number": sequence_number(current[0]), "copy": copy + 1})

    @property
    def _incarnation(self) -> int:
        """Part of every decision site keyed by ``attempt``, which restarts at 1 in a new process."""
        return self.faults.incarnation if self.faults is not None else 0

    def _discard(self, shard_id: str, step: Discard) -> None:
        """Send the part's description to OnFailure and move past it (services-dynamodb-errors)."""
        first, last = step.part[0]["dynamodb"], step.part[-1]["dynamodb"]
        # The invocation record Lambda sends to an on-failure destination (services-dynamodb-errors, "Example
        # invocation record"): metadata of the batch, never its records.
        info = {
            "requestContext": {"requestId": str(uuid.uuid4()), "functionArn": self._function_arn(),
                               "condition": step.condition, "approximateInvokeCount": step.attempts},
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "DDBStreamBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": first["SequenceNumber"],
                "endSequenceNumber": last["SequenceNumber"],
                "approximateArrivalOfFirstRecord": _iso(first.get("ApproximateCreationDateTime")),
                "approximateArrivalOfLastRecord": _iso(last.get("ApproximateCreationDateTime")),
                "batchSize": len(step.part),
                "streamArn": lambda_stream_arn(self.reader.stream_arn, self.region),
            },
        }
        log.error("batch discarded", condition=step.condition, batch_size=len(step.part), attempts=step.attempts,
                  destination=self.mapping.OnFailure)
        if self.on_failure is not None:
            self.on_failure(info)
        self.checkpoints.put(shard_id, step.checkpoint)

    def _function_arn(self) -> str:
        arn = getattr(self.invoker, "arn", None)
        return str(arn) if arn else function_arn(self.region, LOCAL_ACCOUNT_ID, self.mapping.function)


def _created(record: Mapping[str, Any]) -> float | None:
    """A record's ApproximateCreationDateTime as Unix seconds (None when it has none)."""
    value = (record.get("dynamodb") or {}).get("ApproximateCreationDateTime")
    try:
        return float(epoch_seconds(value)) if value is not None else None
    except TypeError:
        return None


def _iso(epoch: Any) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(float(epoch), UTC).isoformat().replace("+00:00", "Z")
