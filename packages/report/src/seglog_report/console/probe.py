"""StackProbe: what the console reads from the stack itself, as CloudWatch would show it beside the logs.

Every :data:`PROBE_SECONDS` it asks SQS for each queue's ApproximateNumberOfMessages (visible) and
ApproximateNumberOfMessagesNotVisible (received, in flight) — the figures behind SQS's CloudWatch metrics of the
same names (SQS Developer Guide, sqs-available-cloudwatch-metrics) — and counts the pending snapshots per log in
the pending table (at most :data:`MAX_PENDING_READ` items a reading). The clients and the pending store are
given by the caller (the CLI builds them on the deployment's endpoints), so this package needs no AWS SDK.

A reading that fails (the stack is down, a table is being recreated) is reported as the reading's ``error``;
the probe keeps going and the run never notices.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

import structlog

log = structlog.get_logger("seglog.console.probe")

PROBE_SECONDS: Final = 1.5
MAX_PENDING_READ: Final = 2000
#: Logs shown in the pending panel (those with the most pending snapshots).
MAX_PENDING_LOGS: Final = 50
QUEUE_ATTRIBUTES: Final = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")


class Pending(Protocol):
    """A pending snapshot as the pending store lists it (``seglog_core.ports.PendingSnapshot``)."""

    @property
    def log_id(self) -> Any: ...


class StackProbe:
    """Reads queue depths and pending snapshots per log.

    Args:
        sqs: a boto3 SQS client on the stack.
        queues: a name to show (``"queue"``, ``"dlq"``) for each queue URL.
        pending: lists the pending table's items (``PendingStore.scan``); None: not read.
        interval: seconds between readings.
    """

    def __init__(self, sqs: Any, queues: dict[str, str], pending: Callable[[], Iterable[Pending]] | None = None,
                 *, interval: float = PROBE_SECONDS) -> None:
        self.sqs = sqs
        self.queues = {name: url for name, url in queues.items() if url}
        self.pending = pending
        self.interval = interval

    def read(self) -> dict[str, Any]:
        """One reading: ``{"queues": {name: {"visible", "in_flight"}}, "pending": {log_id: n},
        "pending_total": n, "errors": [...]}``."""
        reading: dict[str, Any] = {"queues": {}, "pending": {}, "pending_total": 0}
        errors: list[str] = []
        for name, url in self.queues.items():
            try:
                attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(QUEUE_ATTRIBUTES))
                values = attributes.get("Attributes", {})
                reading["queues"][name] = {"visible": int(values.get(QUEUE_ATTRIBUTES[0], 0)),
                                           "in_flight": int(values.get(QUEUE_ATTRIBUTES[1], 0))}
            except Exception as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}"[:200])
        if self.pending is not None:
            try:
                counts = Counter(str(item.log_id) for item in itertools.islice(self.pending(), MAX_PENDING_READ))
                reading["pending"] = dict(counts.most_common(MAX_PENDING_LOGS))
                reading["pending_total"] = sum(counts.values())
            except Exception as exc:
                errors.append(f"pending: {type(exc).__name__}: {exc}"[:200])
        if errors:
            reading["errors"] = errors
        return reading

    def run(self, stop: threading.Event, into: Callable[[dict[str, Any]], None]) -> None:
        """Read every interval until ``stop``, handing each reading to ``into``."""
        while not stop.is_set():
            try:
                into(self.read())
            except Exception as exc:  # never let a reading end the probe
                log.warning("console probe failed", error=f"{type(exc).__name__}: {exc}")
            stop.wait(self.interval)
