"""QueuePoller: an SQS event source mapping (DESIGN §9, behaviours 5-9).

The queue itself is real (LocalStack's SQS): receiving hides a message for the queue's visibility timeout and
bumps its ApproximateReceiveCount, a message not deleted reappears, and past the RedrivePolicy's
maxReceiveCount the queue moves it to the dead-letter queue (with-sqs, services-sqs-errorhandling). What
Lambda adds, this poller adds:

* up to ``concurrency`` batches at once — MaximumConcurrency from ScalingConfig (services-sqs-scaling),
  capped locally (:data:`seglog_awsmodel.config.LOCAL_MAX_CONCURRENCY`) — each poller thread long-polls,
  gathers up to BatchSize messages within MaximumBatchingWindowInSeconds, and invokes;
* on success every message is deleted; with ReportBatchItemFailures all but the reported messageIds are
  deleted, and an empty, null or unknown itemIdentifier fails the whole batch (services-sqs-errorhandling);
  on an error, a timeout or a crash nothing is deleted and the batch reappears after its visibility timeout;
* messages no filter matches are deleted without an invocation (invocation-eventfiltering: "Lambda
  automatically deletes the messages that don't match").

Faults (DESIGN §7), decided per message from its body and receive count (a seed replays them):
duplicate_delivery invokes the same message again beside the first; visibility_expiry makes the message
visible again while the first invocation still runs, so a second receive delivers it concurrently;
reorder puts a message back for ``delay_ms`` so later ones overtake it; worker_crash arms a named crash point;
crash_after_call kills the worker after one of the invocation's AWS calls (any function);
function_timeout cuts the invocation short; clock_skew runs the invocation's clock fast (any app: the hook's clock,
or the worker's time module); mixed_version runs it
with another chunk size; poller_restart ends this process before the deletes.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import structlog

from seglog_awsmodel.config import QueueMapping
from seglog_awsmodel.events.sqs import sqs_record
from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import CHUNK_CELLS_ENV, FaultKind
from seglog_awsmodel.filtering import matches
from seglog_awsmodel.queue_batches import settled_messages
from seglog_emulator.faults.call_crash import draw_crash_after_call
from seglog_emulator.faults.invocation import draw_clock_skew, draw_timeout
from seglog_emulator.faults.schedule import Decision, FaultSchedule
from seglog_emulator.invoker import InvocationResult
from seglog_emulator.pollers.common import Invoker, maybe_restart
from seglog_emulator.pollers.usage import OldestMessage, PollerUsage

log = structlog.get_logger("seglog.poller.queue")

#: Long-poll wait per ReceiveMessage: short enough that stop() is prompt (AWS's pollers use 20 s).
WAIT_SECONDS: Final = 1
#: ReceiveMessage returns at most 10 messages per call (SQS API Reference, MaxNumberOfMessages).
MAX_RECEIVE: Final = 10
#: A Lambda invocation payload is at most 6 MB.
MAX_EVENT_BYTES: Final = 6 * 1024 * 1024
#: A generous bound on what an SQS event record adds around a message's body (ids, attributes, ARN).
RECORD_OVERHEAD_BYTES: Final = 1024


class QueuePoller:
    """Receives from one queue for one mapping and invokes the function with its batches.

    Args:
        mapping: the event source mapping from the template.
        invoker: runs the function (its own concurrency should be at least the mapping's).
        sqs: a boto3 SQS client.
        queue_url, queue_arn: the queue.
        region: the region put in event records.
        faults: the seeded schedule, if faults are in play.
    """

    def __init__(self, mapping: QueueMapping, invoker: Invoker, sqs: Any, *, queue_url: str, queue_arn: str,
                 region: str, faults: FaultSchedule | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.mapping = mapping
        self.invoker = invoker
        self.sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.region = region
        self.faults = faults
        self.name = f"{mapping.function}.{mapping.event}"
        self._sleep = sleep
        self._stop = threading.Event()
        self._side: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.batches = 0
        self.oldest = OldestMessage()
        self.usage = PollerUsage(self.name, "sqs", sqs, self.oldest.figures)

    def run(self) -> None:
        """Run ``concurrency`` poller threads until :meth:`stop`; returns once their batches finished."""
        log.info("queue poller started", poller=self.name, queue=self.queue_url,
                 concurrency=self.mapping.concurrency)
        self.usage.start()
        threads = [threading.Thread(target=self._poll, name=f"{self.name}-{i}", daemon=True)
                   for i in range(self.mapping.concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with self._lock:
            side = list(self._side)
        for thread in side:
            thread.join()
        self.usage.stop()
        log.info("queue poller stopped", poller=self.name)

    def stop(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------------------------------ polling

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                messages = self._receive()
                if messages:
                    self._handle(messages)
            except Exception as exc:  # a poller thread never dies of one failed call
                log.warning("queue poll failed", poller=self.name, error=str(exc))
                self._stop.wait(1.0)

    def _receive(self) -> list[dict[str, Any]]:
        """Up to BatchSize messages, gathered for at most MaximumBatchingWindowInSeconds."""
        wanted = self.mapping.BatchSize
        deadline = time.monotonic() + self.mapping.MaximumBatchingWindowInSeconds
        messages: list[dict[str, Any]] = []
        while len(messages) < wanted and not self._stop.is_set():
            got = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=min(MAX_RECEIVE, wanted - len(messages)),
                WaitTimeSeconds=WAIT_SECONDS, MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"]).get("Messages", [])
            self.oldest.received(got)
            messages.extend(got)
            if time.monotonic() >= deadline and (messages or not got):
                break
        # A window longer than the visibility timeout can receive one message twice: keep its latest receipt.
        latest = {m["MessageId"]: m for m in messages}
        return self._cap(list(latest.values()))

    def _cap(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """At most 6 MB of event (services-sqs-parameters: "... or the payload limit of 6 MB"); what does not
        fit is made visible again for the next batch."""
        taken: list[dict[str, Any]] = []
        size = len('{"Records": []}')
        for message in messages:
            size += len(message.get("Body", "")) + RECORD_OVERHEAD_BYTES
            if taken and size > MAX_EVENT_BYTES:
                self._release(message)
                continue
            taken.append(message)
        return taken

    def _release(self, message: dict[str, Any]) -> None:
        try:
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"],
                                               VisibilityTimeout=0)
        except Exception as exc:
            log.warning("could not put a message back", message_id=message["MessageId"], error=str(exc))

    def _handle(self, messages: list[dict[str, Any]]) -> None:
        records: list[dict[str, Any]] = []
        handles: dict[str, str] = {}
        for message in messages:
            record = sqs_record(message, queue_arn=self.queue_arn, region=self.region)
            if self.mapping.FilterCriteria and not matches(self.mapping.FilterCriteria, record):
                self._delete(message["ReceiptHandle"], message["MessageId"], "filtered out")
                continue
            if self._held_back(record, message["ReceiptHandle"]):
                continue
            records.append(record)
            handles[record["messageId"]] = message["ReceiptHandle"]
        if not records:
            return
        crash_points, timeout = self._invocation_faults(records)
        expiry = self._visibility_expiry(records, handles)
        duplicates = self._duplicates(records)
        attempt = max(int(r["attributes"]["ApproximateReceiveCount"]) for r in records)
        first = records[0]
        crash_after_call = draw_crash_after_call(self.faults, "sqs", first["body"],
                                                 first["attributes"]["ApproximateReceiveCount"])
        result = self._invoke(records, attempt, crash_points, timeout, self._clock_skew(records, "skew"),
                              self._version(records, "version"), crash_after_call)
        if expiry is not None:
            expiry.cancel()
        for thread in duplicates:
            thread.join()
        self._settle(records, handles, result)

    def _invoke(self, records: list[dict[str, Any]], attempt: int, crash_points: list[str],
                timeout: float | None, clock_skew: float = 0.0,
                environment: dict[str, str] | None = None,
                crash_after_call: Decision | None = None) -> InvocationResult:
        with self._lock:
            self.batches += 1
        ids = [r["messageId"] for r in records]
        return self.invoker.invoke({"Records": records}, attempt=attempt, source=self.name,
                                   crash_points=crash_points, timeout=timeout, clock_skew=clock_skew,
                                   environment=environment, log_fields={"message_id": ids[0] if len(ids) == 1 else ids},
                                   crash_after_call=crash_after_call)

    def _settle(self, records: list[dict[str, Any]], handles: dict[str, str], result: InvocationResult) -> None:
        """Delete what the invocation finished with (the model's rule: :mod:`seglog_awsmodel.queue_batches`)."""
        done = settled_messages(self.mapping, list(handles), result.payload, failed=not result.ok)
        if done is None:
            if result.ok:
                log.warning("invalid batch item failures: the whole batch fails", poller=self.name,
                            payload=str(result.payload)[:200])
            return  # the whole batch reappears after its visibility timeout
        maybe_restart(self.faults, self.name, site(*(r["body"] for r in records),
                                                   *(r["attributes"]["ApproximateReceiveCount"] for r in records)))
        for message_id in done:
            self._delete(handles[message_id], message_id, "done")

    def _delete(self, receipt_handle: str, message_id: str, why: str) -> None:
        try:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle)
        except Exception as exc:  # a stale receipt handle: the message was received again meanwhile
            log.warning("delete failed", poller=self.name, message_id=message_id, why=why, error=str(exc))

    # ------------------------------------------------------------------------------------------ faults

    def _key(self, record: dict[str, Any], what: str) -> str:
        return site(what, record["body"], record["attributes"]["ApproximateReceiveCount"])

    def _held_back(self, record: dict[str, Any], receipt_handle: str) -> bool:
        """reorder: put the message back for ``delay_ms`` without invoking, so later ones overtake it."""
        if self.faults is None:
            return False
        decision = self.faults.decide(FaultKind.REORDER, self._key(record, "reorder"))
        if decision is None or decision.amount is None:
            return False
        seconds = max(1, math.ceil(decision.amount / 1000))  # visibility is set in whole seconds
        try:
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle,
                                               VisibilityTimeout=seconds)
        except Exception as exc:
            log.warning("reorder failed", error=str(exc))
        return True

    def _invocation_faults(self, records: list[dict[str, Any]]) -> tuple[list[str], float | None]:
        crash_points: list[str] = []
        if self.faults is None:
            return crash_points, None
        first = records[0]
        points = tuple(getattr(self.invoker, "crash_points", ()))
        crash = self.faults.decide(FaultKind.WORKER_CRASH, self._key(first, "crash"), points=points) if points else None
        if crash is not None and crash.crash_point is not None:
            crash_points.append(crash.crash_point)
        return crash_points, draw_timeout(self.faults, self._key(first, "timeout"))

    def _clock_skew(self, records: list[dict[str, Any]], what: str) -> float:
        """clock_skew: seconds this invocation's clock runs ahead (0 when the fault does not fire)."""
        return draw_clock_skew(self.faults, self._key(records[0], what))

    def _version(self, records: list[dict[str, Any]], what: str) -> dict[str, str] | None:
        """mixed_version: the environment of another code version for this invocation — another chunk size,
        as while a deploy rolls out mid-build (None when the fault does not fire)."""
        if self.faults is None:
            return None
        decision = self.faults.decide(FaultKind.MIXED_VERSION, self._key(records[0], what))
        if decision is None or decision.amount is None:
            return None
        return {CHUNK_CELLS_ENV: str(decision.amount)}

    def _visibility_expiry(self, records: list[dict[str, Any]], handles: dict[str, str]) -> threading.Timer | None:
        """visibility_expiry: ``after_ms`` into the run, the message becomes visible again (as if the
        visibility timeout were shorter than the run), so another receive delivers it concurrently."""
        if self.faults is None:
            return None
        first = records[0]
        decision = self.faults.decide(FaultKind.VISIBILITY_EXPIRY, self._key(first, "visibility"))
        if decision is None or decision.amount is None:
            return None

        def expire() -> None:
            try:
                self.sqs.change_message_visibility(QueueUrl=self.queue_url,
                                                   ReceiptHandle=handles[first["messageId"]], VisibilityTimeout=0)
            except Exception as exc:  # already deleted: the run finished first
                log.info("visibility expiry came too late", error=str(exc))

        timer = threading.Timer(decision.amount / 1000, expire)
        timer.daemon = True
        timer.start()
        return timer

    def _duplicates(self, records: list[dict[str, Any]]) -> list[threading.Thread]:
        """duplicate_delivery: the same message (same id and receipt handle) handed to another invocation
        at once, as at-least-once delivery allows (with-sqs: "Lambda might process a message more than
        once"). Duplicates run without crash points (their clocks may be skewed, their code version another)
        and are not settled: the first invocation decides."""
        if self.faults is None:
            return []
        decision = self.faults.decide(FaultKind.DUPLICATE_DELIVERY, self._key(records[0], "duplicate"))
        if decision is None:
            return []
        attempt = int(records[0]["attributes"]["ApproximateReceiveCount"])
        threads = [threading.Thread(target=self._invoke, daemon=True,
                                    args=(records, attempt, [], None, self._clock_skew(records, f"skew-copy-{i}"),
                                          self._version(records, f"version-copy-{i}")))
                   for i in range(decision.amount or 1)]
        for thread in threads:
            thread.start()
        return threads
