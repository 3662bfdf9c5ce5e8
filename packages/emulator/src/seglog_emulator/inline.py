"""InlinePipeline: the stream router and the snapshot worker run in this process, fed like Lambda feeds them.

A stand-in until the supervisor (separate worker processes, every event source mapping behaviour of DESIGN
§9, faults) arrives: one thread polls each stream shard about 4 times a second and hands batches to the
stream router's handler as DynamoDB Streams events, resuming from the lowest reported failure; worker
threads receive from the queue and hand messages to the snapshot worker's handler as SQS events. The
handlers are the deployed ones, reading their configuration from the environment.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import structlog

from seglog_aws.clients import client, local_session
from seglog_aws.events.dynamodb_stream import StreamReader, stream_event
from seglog_aws.events.sqs import sqs_event
from seglog_aws.local import LocalDeployment

log = structlog.get_logger("seglog.inline")

#: AWS polls each shard about four times a second (AWS Lambda Developer Guide, with-ddb).
STREAM_POLL_SECONDS = 0.25


class _Context:
    """The few LambdaContext members the handlers use."""

    def __init__(self, function: str, timeout: float) -> None:
        self.function_name = function
        self.aws_request_id = f"inline-{time.monotonic_ns()}"
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class InlinePipeline:
    """Polls the Entries stream and the snapshot queue of a local deployment and invokes the handlers."""

    def __init__(self, deployment: LocalDeployment, *, workers: int = 2, worker_timeout: float = 60.0) -> None:
        self.deployment = deployment
        os.environ.update(deployment.env())
        session = local_session(deployment.region)
        self.streams = StreamReader.for_table(
            client("dynamodbstreams", session=session, endpoint_url=deployment.endpoints["dynamodbstreams"]),
            client("dynamodb", session=session, endpoint_url=deployment.endpoints["dynamodb"]),
            deployment.resources.entries_table)
        self.sqs = client("sqs", session=session, endpoint_url=deployment.endpoints["sqs"])
        self.queue_arn = self.sqs.get_queue_attributes(
            QueueUrl=deployment.resources.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.workers = workers
        self.worker_timeout = worker_timeout
        self.stats: Counter[str] = Counter()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._positions: dict[str, str] = {}

    def start(self, *, from_now: bool = True) -> None:
        from seglog_services import snapshot_worker, stream_router

        if from_now:
            self._skip_to_end()
        self._threads = [threading.Thread(target=self._poll_stream, args=(stream_router.handler,), daemon=True)]
        self._threads += [threading.Thread(target=self._poll_queue, args=(snapshot_worker.handler,), daemon=True)
                          for _ in range(self.workers)]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)

    # ---------------------------------------------------------------------------------------- stream

    def _skip_to_end(self) -> None:
        for shard in self.streams.shards():
            shard_id = shard["ShardId"]
            while records := self.streams.read_after(shard_id, self._positions.get(shard_id)):
                self._positions[shard_id] = records[-1]["dynamodb"]["SequenceNumber"]

    def _poll_stream(self, handler: Any) -> None:
        while not self._stop.is_set():
            try:
                for shard in self.streams.shards():
                    self._shard_once(shard["ShardId"], handler)
            except Exception as exc:  # keep polling: a poller never dies of one bad poll
                log.warning("stream poll failed", error=str(exc))
            self._stop.wait(STREAM_POLL_SECONDS)

    def _shard_once(self, shard_id: str, handler: Any) -> None:
        records = self.streams.read_after(shard_id, self._positions.get(shard_id), limit=100)
        if not records:
            return
        arn, region = self.streams.stream_arn, self.deployment.region
        response = handler(stream_event(records, event_source_arn=arn, region=region),
                           _Context("stream_router", 30.0)) or {}
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        done = records
        if failed:
            # Resume from the lowest failed sequence number (AWS Lambda Developer Guide,
            # services-ddb-batchfailurereporting): everything before it is checkpointed.
            lowest = min(failed, key=int)
            done = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) < int(lowest)]
            self.stats["stream_failures"] += 1
        if done:
            self._positions[shard_id] = done[-1]["dynamodb"]["SequenceNumber"]
        self.stats["stream_records"] += len(done)

    # ---------------------------------------------------------------------------------------- queue

    def _poll_queue(self, handler: Any) -> None:
        url = self.deployment.resources.queue_url
        while not self._stop.is_set():
            try:
                messages = self.sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1, MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"]).get("Messages", [])
                if not messages:
                    continue
                event = sqs_event(messages, queue_arn=self.queue_arn, region=self.deployment.region)
                response = handler(event, _Context("snapshot_worker", self.worker_timeout)) or {}
                failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
                for m in messages:
                    if m["MessageId"] in failed:
                        self.stats["messages_kept"] += 1
                    else:  # success: the event source mapping deletes the message
                        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                        self.stats["messages_done"] += 1
            except Exception as exc:
                log.warning("queue poll failed", error=str(exc))
                self._stop.wait(1.0)
