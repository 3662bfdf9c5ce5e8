"""PollerUsage: what an event source mapping's poller asked of AWS, logged every few seconds.

Lambda's pollers make requests of their own — GetRecords, GetShardIterator and DescribeStream on a stream;
ReceiveMessage, DeleteMessage and ChangeMessageVisibility on a queue — which SQS bills and CloudWatch shows.
Every :data:`USAGE_SECONDS`, and once more when the poller stops, one line says how many the poller made since
the line before::

    {"event": "poller usage", "poller": "SnapshotWorkerFunction.Jobs", "service": "sqs", "requests": 12,
     "oldest_age_ms": 840}
    {"event": "poller usage", "poller": "StreamRouterFunction.Entries", "service": "dynamodbstreams",
     "requests": 21, "shards": {"shardId-000...": 0}}

The cost ledger reads these lines from a run's log to meter SQS and stream requests, and the live console
shows them; the names are therefore fixed. Requests are counted as botocore completes them on the poller's own
client (its ``after-call`` event, as :mod:`seglog_emulator.usage` counts a function's), so every call and
every page of a paginated one is counted once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final

import structlog

from seglog_emulator.usage import UsageCounter

log = structlog.get_logger("seglog.poller.usage")

#: How often a poller logs its usage.
USAGE_SECONDS: Final = 5.0
#: The shortest period of an alarm on IteratorAge: Lambda's metrics have one-minute resolution, and CloudWatch takes
#: periods under 60 s only for high-resolution metrics.
ALARM_PERIOD_SECONDS: Final = 60.0


def usage_seconds(alarm_scale: float) -> float:
    """How often a stream poller logs its usage when the emulator runs the alarms' periods at ``alarm_scale``
    (EmulatorSettings.alarm_scale): :data:`USAGE_SECONDS`, or twice per scaled 60 s period when that is shorter,
    so that every period of an IteratorAge alarm holds a datapoint while the stream is read.

    The IteratorAge datapoints come from these lines (seglog_emulator.metrics), one a line; an alarm period
    without one is missing data (notBreaching in the template), so at ``--alarm-scale 0.05`` (a 60 s period in
    3 s) lines every 5 s left most periods empty and StreamIteratorAgeAlarm could never see three in a row.
    """
    return min(USAGE_SECONDS, ALARM_PERIOD_SECONDS * alarm_scale / 2)

Figures = Callable[[], dict[str, Any]]


class PollerUsage:
    """Counts the requests made on ``client`` and logs them with ``figures()`` (the poller's own keys, taken
    and reset for the next period) every ``every`` seconds from :meth:`start` until :meth:`stop`.

    Args:
        poller: the mapping's name (``Function.Event``).
        service: the AWS service of ``client`` (``"sqs"``, ``"dynamodbstreams"``).
        client: a boto3 client; one without botocore's event hooks (a test's fake) is counted as making none.
        figures: the period's other keys, called once per line.
    """

    def __init__(self, poller: str, service: str, client: Any, figures: Figures, *,
                 every: float = USAGE_SECONDS) -> None:
        self.poller = poller
        self.service = service
        self.figures = figures
        self.every = every
        self._counter = UsageCounter()
        self._reported = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        try:
            self._counter.attach(client)
        except AttributeError:  # not a botocore client
            log.debug("poller usage not counted: the client has no botocore events", poller=poller)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"usage-{self.poller}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Log the last period and stop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.report()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.report()

    def report(self) -> None:
        """Log the requests made since the last line, with the period's figures."""
        with self._lock:
            total = self._counter.totals().get(self.service, {}).get("requests", 0.0)
            requests, self._reported = int(total - self._reported), total
            try:
                figures = self.figures()
            except Exception as exc:  # the line is still worth logging: the requests are what is billed
                figures = {"figures_error": str(exc)}
        log.info("poller usage", poller=self.poller, service=self.service, requests=requests, **figures)


class ShardAges:
    """Iterator age per shard, as Lambda's IteratorAge metric has it for a stream event source mapping.

    "Lambda emits the IteratorAge metric when your function finishes processing a batch of records. The metric
    indicates how old the last record in the batch was when processing finished." (AWS Lambda Developer Guide,
    events-dynamodb-metrics.) So each period reports, per shard, the largest such age of the batches that
    finished in it; a shard whose records are read but not yet processed (a batch stuck in retries, a buffer
    waiting for its window) reports how old the last record read is now; a shard caught up reports 0.

    A record's creation time is its ``ApproximateCreationDateTime``, which AWS rounds down to the second and the
    local stacks to the minute (:mod:`seglog_awsmodel.events.dynamodb_stream`) — up to 60 s too early. So it is
    raised to the last time the poller found the shard caught up, if later: a record read after a read that
    found nothing new was written after that read. Behind (nothing caught up since), the creation time stands;
    on AWS the raise can only take off the stream's own propagation delay.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        #: Shard -> creation time of the last record read and not yet processed.
        self._unprocessed: dict[str, float] = {}
        #: Shard -> the largest age (ms) of a batch finished this period.
        self._finished: dict[str, float] = {}
        #: Shard -> when a read last found nothing new and nothing waiting.
        self._caught_up_at: dict[str, float] = {}
        self._shards: set[str] = set()

    def read(self, shard_id: str, created: float | None) -> None:
        """Records were read on ``shard_id``, the last of them created at ``created`` (Unix seconds)."""
        with self._lock:
            self._shards.add(shard_id)
            if created is not None:
                self._unprocessed[shard_id] = self._creation(shard_id, created)

    def caught_up(self, shard_id: str) -> None:
        """Nothing is left to process on ``shard_id``: its buffer is empty and its last read found nothing new."""
        with self._lock:
            self._shards.add(shard_id)
            self._unprocessed.pop(shard_id, None)
            self._caught_up_at[shard_id] = self.clock()

    def _creation(self, shard_id: str, created: float) -> float:
        return max(created, self._caught_up_at.get(shard_id, created))

    def finished(self, shard_id: str, created: float | None, *, drained: bool) -> None:
        """A batch whose last record was created at ``created`` finished; ``drained``: nothing read remains."""
        with self._lock:
            if created is not None:
                age = max(0.0, (self.clock() - self._creation(shard_id, created)) * 1000)
                self._finished[shard_id] = max(age, self._finished.get(shard_id, 0.0))
            if drained:
                self._unprocessed.pop(shard_id, None)

    def closed(self, shard_id: str) -> None:
        """The shard was read to its end: it is reported once more (as 0), then no longer."""
        with self._lock:
            self._unprocessed.pop(shard_id, None)
            self._caught_up_at.pop(shard_id, None)
            self._shards.discard(shard_id)
            self._finished.setdefault(shard_id, 0.0)

    def figures(self) -> dict[str, Any]:
        """``{"shards": {shard_id: iterator_age_ms}}`` for the period now ending."""
        with self._lock:
            now = self.clock()
            ages = dict(self._finished)
            for shard_id in self._shards:
                pending = self._unprocessed.get(shard_id)
                waiting = max(0.0, (now - pending) * 1000) if pending is not None else 0.0
                ages[shard_id] = max(waiting, ages.get(shard_id, 0.0))
            self._finished.clear()
        return {"shards": {shard: round(age) for shard, age in sorted(ages.items())}}


class OldestMessage:
    """The age of the oldest message a queue poller received in a period, from its SentTimestamp attribute
    (SQS API Reference, ReceiveMessage: "SentTimestamp - Returns the time the message was sent to the queue
    (epoch time in milliseconds)") — what the queue's ApproximateAgeOfOldestMessage metric shows, as far as
    this poller sees it."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._oldest_ms = 0.0

    def received(self, messages: list[dict[str, Any]]) -> None:
        now_ms = self.clock() * 1000
        ages = []
        for message in messages:
            sent = (message.get("Attributes") or {}).get("SentTimestamp")
            if isinstance(sent, str) and sent.isdigit():
                ages.append(max(0.0, now_ms - int(sent)))
        if ages:
            with self._lock:
                self._oldest_ms = max(self._oldest_ms, *ages)

    def figures(self) -> dict[str, Any]:
        """``{"oldest_age_ms": ms}`` for the period now ending (0: nothing received)."""
        with self._lock:
            oldest, self._oldest_ms = self._oldest_ms, 0.0
        return {"oldest_age_ms": round(oldest)}
