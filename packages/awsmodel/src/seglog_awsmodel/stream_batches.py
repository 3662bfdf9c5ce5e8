"""One stream batch's life on its shard: the rules of DESIGN §9.1, §9.3 and §9.4 as a state machine both drivers
run (the emulator's :class:`~seglog_emulator.pollers.stream.StreamPoller`, the simulator's
:class:`~seglog_sim.pollers.Pollers`). Pure: the driver reads the stream, invokes, sleeps and checkpoints; this
says what to invoke next, what to checkpoint and how long to wait.

Steps, for one batch (one batch in flight per shard, ParallelizationFactor 1; with-ddb)::

    driver                                  StreamBatch
    ------                                  -----------
    records read, filter applied  ------>   StreamBatch(mapping, kept, last_sequence=last record read)
    step(now)                     <------   Invoke(part, attempt) | Discard(part, reason, ...) | Done
    invoke(part)                            (a Discard: send its description to OnFailure, checkpoint)
    settle(payload or error, now) <------   Settled(checkpoint, pause)
    checkpoint, sleep(pause)                ... until step() says Done: checkpoint last_sequence unless a
                                            part's end already put it there (each position is put once)

1. A part whose oldest record is older than MaximumRecordAgeInSeconds (or the stream's 24 h) is not sent: it is
   discarded with condition RecordAgeExceeded (services-dynamodb-errors: "retries until the records expire or
   exceed the maximum age").
2. Success: the part is done; the checkpoint moves to its last record, or to the last record read (filtered-out
   records included, invocation-eventfiltering) when it was the batch's last part.
3. A partial batch response (ReportBatchItemFailures): the checkpoint moves to just before the lowest reported
   SequenceNumber, and the part resumes there, later successes included (services-ddb-batchfailurereporting).
   With BisectBatchOnFunctionError that resumption *is* the split ("Lambda splits the batch at the reported
   record"), and spends no retry; without it, it spends one.
4. A whole failure (an error, a timeout, a crash, a malformed response): with BisectBatchOnFunctionError and
   more than one record, the part is split in halves and retried at once, spending no retry (services-ddb-params:
   "If the function returns an error, split the batch in two and retry"; §9.4: "without spending retries").
   Otherwise it spends a retry.
5. After a spent retry: past MaximumRetryAttempts (-1: no limit) the part is discarded with condition
   RetryAttemptsExhausted; past the record age, RecordAgeExceeded; else the driver waits :func:`retry_pause`.

Where AWS's docs are silent the model chooses, once, here:

* the pause between retries of a failing part — AWS documents no figure. 0.1 s doubling per spent retry up to
  2 s: a failing shard neither spins nor stalls for long (the simulator used 2ⁿ s capped at 60 s, the emulator
  this; found by issue 19);
* an identifier not in the batch fails the whole batch (:mod:`seglog_awsmodel.batch_responses`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from seglog_awsmodel.batch_responses import reported_failures
from seglog_awsmodel.config import StreamMapping

#: DynamoDB Streams keep records for 24 hours, so no record is retried past that (with-ddb).
RETENTION_SECONDS: Final = 24 * 3600
#: The pause between retries of a failing part: the model's choice (AWS documents none), see above.
RETRY_BASE_SECONDS: Final = 0.1
RETRY_CAP_SECONDS: Final = 2.0

Record = Mapping[str, Any]
"""A stream record as the function's event carries it (``record["dynamodb"]["SequenceNumber"]``)."""


def sequence_number(record: Record) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def retry_pause(retries: int) -> float:
    """Seconds to wait before the next try of a part that has spent ``retries`` retries."""
    return float(min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** min(retries, 10)))


@dataclass(frozen=True, slots=True)
class Invoke:
    """Invoke the function with ``part``; ``attempt`` counts invocations since the last part finished."""

    part: list[Record]
    attempt: int


@dataclass(frozen=True, slots=True)
class Discard:
    """Send ``part``'s description (never its records) to the OnFailure destination, then checkpoint
    ``checkpoint`` (services-dynamodb-errors). ``condition`` is the description's reason."""

    part: list[Record]
    condition: str
    attempts: int
    checkpoint: str


@dataclass(frozen=True, slots=True)
class Done:
    """Every part is finished: checkpoint ``checkpoint`` (the last record read; None when the last part's
    settle or discard already moved it there) and read on."""

    checkpoint: str | None


@dataclass(frozen=True, slots=True)
class Settled:
    """What one invocation's outcome means: checkpoint ``checkpoint`` now (None: leave it), then wait ``pause``.

    ``outcome`` names it for counters: ``ok``, ``partial``, ``failed`` or ``bisected``."""

    outcome: str
    checkpoint: str | None = None
    pause: float = 0.0


class StreamBatch:
    """The parts of one batch still to run, in stream order (a bisected part becomes two).

    Args:
        mapping: the event source mapping (BisectBatchOnFunctionError, MaximumRetryAttempts,
            MaximumRecordAgeInSeconds, FunctionResponseTypes).
        records: the records to send, after the filter (in stream order; may be empty).
        last_sequence: the SequenceNumber of the last record read, filtered-out ones included: the checkpoint
            once every part is finished.
    """

    __slots__ = ("_give_up", "_reached_end", "attempt", "last_sequence", "mapping", "retries", "todo")

    def __init__(self, mapping: StreamMapping, records: Sequence[Record], *, last_sequence: str) -> None:
        self.mapping = mapping
        self.todo: list[list[Record]] = [list(records)] if records else []
        self.last_sequence = last_sequence
        self.retries = 0
        self.attempt = 0
        self._give_up: str | None = None
        self._reached_end = False

    def step(self, now: float) -> Invoke | Discard | Done:
        """What to do next, at Unix time ``now``."""
        if not self.todo:
            return Done(None if self._reached_end else self.last_sequence)
        if self._give_up is not None:
            return self._discard(self._give_up)
        if self.attempt == 0 and self._too_old(self.todo[0], now):
            return self._discard("RecordAgeExceeded")  # rule 1
        self.attempt += 1
        return Invoke(self.todo[0], self.attempt)

    def settle(self, payload: Any, *, failed: bool, now: float) -> Settled:
        """The outcome of the last :class:`Invoke`: ``failed`` for an error, a timeout or a crash; otherwise
        ``payload`` is the function's response."""
        current = self.todo[0]
        sequence = [sequence_number(r) for r in current]
        failures: set[str] | None
        if failed:
            failures = None
        elif self.mapping.reports_batch_item_failures:
            failures = reported_failures(payload, set(sequence))
        else:
            failures = set()
        if failures is not None and not failures:  # rule 2
            return Settled("ok", checkpoint=self._finish())
        checkpoint = None
        if failures:  # rule 3
            lowest = min(i for i, s in enumerate(sequence) if s in failures)
            if lowest > 0:
                checkpoint = sequence[lowest - 1]
            self.todo[0] = current[lowest:]
            split = self.mapping.BisectBatchOnFunctionError and lowest > 0 and len(self.todo[0]) > 1
            if not split:
                self.retries += 1
            outcome = "partial"
        elif self.mapping.BisectBatchOnFunctionError and len(current) > 1:  # rule 4
            half = len(current) // 2
            self.todo[0:1] = [current[:half], current[half:]]
            return Settled("bisected")
        else:
            self.retries += 1
            outcome = "failed"
        self._give_up = self._reason(now)  # rule 5
        pause = retry_pause(self.retries) if self._give_up is None else 0.0
        return Settled(outcome, checkpoint=checkpoint, pause=pause)

    # ------------------------------------------------------------------------------------------ internals

    def _finish(self) -> str:
        """The current part is done (succeeded or discarded): the checkpoint to move to."""
        part = self.todo.pop(0)
        self.retries = self.attempt = 0
        self._give_up = None
        self._reached_end = not self.todo
        return self.last_sequence if not self.todo else sequence_number(part[-1])

    def _discard(self, condition: str) -> Discard:
        part, attempts = self.todo[0], self.attempt
        return Discard(part, condition, attempts, self._finish())

    def _reason(self, now: float) -> str | None:
        limit = self.mapping.MaximumRetryAttempts
        if limit != -1 and self.retries > limit:
            return "RetryAttemptsExhausted"
        if self._too_old(self.todo[0], now):
            return "RecordAgeExceeded"
        return None

    def _too_old(self, part: Sequence[Record], now: float) -> bool:
        """Whether the part's oldest record is past MaximumRecordAgeInSeconds (or the stream's 24 h)."""
        max_age = self.mapping.MaximumRecordAgeInSeconds
        max_age = RETENTION_SECONDS if max_age == -1 else min(max_age, RETENTION_SECONDS)
        oldest = part[0]["dynamodb"].get("ApproximateCreationDateTime")
        return oldest is not None and now - float(oldest) > max_age
