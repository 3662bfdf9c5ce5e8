"""snapshot_worker: builds snapshots from the queue (DESIGN §5), one message at a time.

A message the protocol keeps (deferred, busy, handed off, taken over) is reported as a batch item failure,
so the Lambda integration does not delete it; its visibility was already set by the worker. Completed and
duplicate messages were deleted by the worker itself, in the protocol's order (AWS Lambda Developer Guide,
services-sqs-errorhandling: ReportBatchItemFailures).

A throttled or failed storage call is retried inside the invocation (the stores' RetryPolicy, up to the
function's deadline), not by failing the message: that would cost a whole visibility timeout and a receive
toward the DLQ.

A snapshot that waits long (deferred past the backoff's patience, 20 receives: over an hour behind an earlier
snapshot) or is blocked (an entry only newer code reads) is counted as a CloudWatch metric, ``SnapshotsDeferredLong``
or ``SnapshotsBlocked`` in namespace ``seglog`` by FunctionName, for an alarm to watch: one log line in the
embedded metric format, which CloudWatch Logs turns into the metric with no API call (Amazon CloudWatch User
Guide, CloudWatch_Embedded_Metric_Format_Specification). Lambda sends the function's output lines to CloudWatch
Logs as they are, and structlog writes each as one JSON object.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Final

import structlog
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from seglog_aws.backend import Backend
from seglog_core.crashpoints import clock, should_crash
from seglog_core.document import SheetDocument
from seglog_core.pipeline import Outcome, SnapshotWorker
from seglog_core.pipeline.claims import DEFAULT_TAKEOVER_SECONDS
from seglog_core.pipeline.order import ORDER_WAIT_SECONDS
from seglog_core.ports import QueueMessage
from seglog_services import runtime

log = structlog.get_logger("seglog.snapshot_worker")

#: The CloudWatch namespace of the worker's metrics.
METRIC_NAMESPACE: Final = "seglog"


class MessageKept(Exception):
    """Not an error: the protocol keeps this message for a later delivery."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        super().__init__(f"message kept: {outcome}")


def worker(backend: Backend | None = None, environ: Mapping[str, str] = os.environ, **seams: Any) -> SnapshotWorker:
    """The worker as the function configures it from its environment (the template's variables). ``backend`` and
    ``seams`` (clock, rng, sleep, crash) replace the container's defaults: the simulator builds its workers here,
    so they are configured exactly as the deployed function's."""
    backend = backend or runtime.backend()
    document = SheetDocument(reader=backend.reader(), blobs=backend.blobs)
    options: dict[str, Any] = {
        "crash": should_crash,  # armed only by the emulator's fault injector (DESIGN §7)
        "clock": clock,  # the real clock, unless the emulator's clock_skew fault runs it fast
        "count": count,
    }
    options.update(seams)
    return SnapshotWorker(
        store=backend.store, blobs=backend.blobs, pending=backend.pending, queue=backend.queue,
        body_of=document.body,
        takeover_after=int(environ.get("SEGLOG_TAKEOVER_SECONDS", str(DEFAULT_TAKEOVER_SECONDS))),
        chunk_cells=int(environ.get("SEGLOG_CHUNK_CELLS", "20000")),
        order_wait=float(environ.get("SEGLOG_ORDER_WAIT_SECONDS", ORDER_WAIT_SECONDS)), **options,
    )


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = event.get("Records", [])
    with runtime.invocation("snapshot_worker", context, batch_size=len(records)):
        return _handle(event, context)


def _handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    snapshots = worker()

    def record_handler(record: SQSRecord) -> None:
        message = QueueMessage(message_id=record.message_id, receipt_handle=record.receipt_handle,
                               body=record.body,
                               receive_count=int(record.attributes.approximate_receive_count or 1))
        try:
            outcome = snapshots.process(message, remaining=lambda: runtime.remaining_seconds(context))
        except Exception as exc:  # reported as a batch item failure by Powertools: the message comes back
            log.warning("snapshot job failed: the message will be delivered again", message_id=record.message_id,
                        error_type=type(exc).__name__, error=str(exc))
            raise
        if outcome.keeps_message:
            raise MessageKept(outcome)

    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    response = process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)
    return dict(response)


def count(metric: str) -> None:
    """Add 1 to ``metric``: an embedded-metric-format line (its ``_aws`` member names the metric, its unit and
    dimension; the root members hold the values)."""
    log.warning("snapshot metric", FunctionName=os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "snapshot_worker"),
                **{metric: 1}, _aws={"Timestamp": int(time.time() * 1000), "CloudWatchMetrics": [
                    {"Namespace": METRIC_NAMESPACE, "Dimensions": [["FunctionName"]],
                     "Metrics": [{"Name": metric, "Unit": "Count"}]}]})
