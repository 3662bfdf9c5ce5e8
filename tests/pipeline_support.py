"""A test driver for the snapshot pipeline on the real local stack, before the emulator exists.

It reads the Entries stream with the AWS adapter's StreamReader, routes new entries of the test's own logs
with the stream router's logic, receives real SQS messages from a queue of the test's own, and hands them to
a SnapshotWorker built on the AWS adapters — each step callable on its own so tests can reorder, duplicate,
crash and redeliver.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from seglog_aws.backend import Backend
from seglog_aws.clients import client, local_session
from seglog_aws.items import item_to_entry
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_awsmodel.events.dynamodb_stream import StreamReader
from seglog_core.document import SheetDocument
from seglog_core.pipeline import SnapshotWorker, route
from seglog_core.ports import QueueMessage
from seglog_plugin.resources import backend_of, resources_of
from seglog_stack.local import LocalDeployment


class Crash(Exception):
    """Raised at a named crash point: the invocation dies there."""


class PipelineDriver:
    """Stream -> router -> (own) queue -> worker, step by step, for the logs a test creates."""

    def __init__(self, deployment: LocalDeployment, *, max_receive: int | None = None) -> None:
        """``max_receive``: give the queue a DLQ (``dlq_url``) that takes a message at that receive count."""
        self.backend: Backend = backend_of(deployment)
        session = local_session(deployment.region)
        self.sqs = client("sqs", session=session, endpoint_url=deployment.endpoints["sqs"])
        name = f"t-{uuid.uuid4().hex[:12]}"
        attributes = {"VisibilityTimeout": "30"}
        self.dlq_url: str | None = None
        if max_receive is not None:
            self.dlq_url = self.sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
            arn = self.sqs.get_queue_attributes(QueueUrl=self.dlq_url,
                                                AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive})
        url = self.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        self.queue = SqsJobQueue(self.sqs, queue_url=url)
        streams = client("dynamodbstreams", session=session, endpoint_url=deployment.endpoints["dynamodbstreams"])
        ddb = client("dynamodb", session=session, endpoint_url=deployment.endpoints["dynamodb"])
        self.reader = StreamReader.for_table(streams, ddb, resources_of(deployment).entries_table)
        #: Last sequence number read per shard; the table lives for the test session, so reading from
        #: TRIM_HORIZON and keeping only our logs' entries is cheap.
        self.positions: dict[str, str] = {}
        self.logs: set[uuid.UUID] = set()
        self.document = SheetDocument(reader=self.backend.reader(), blobs=self.backend.blobs)

    def event_log(self, **options: Any) -> Any:
        return self.backend.event_log(**options)

    @property
    def _log_bytes(self) -> set[bytes]:
        return {log_id.bytes for log_id in self.logs}

    def create_log(self, **options: Any) -> uuid.UUID:
        log_id = self.backend.event_log(**options).create()
        self.logs.add(log_id)
        return log_id

    def worker(self, **options: Any) -> SnapshotWorker:
        defaults: dict[str, Any] = {"takeover_after": 30, "defer_base": 0.5, "defer_cap": 1.0, "chunk_cells": 50}
        defaults.update(options)
        return SnapshotWorker(store=self.backend.store, blobs=self.backend.blobs, pending=self.backend.pending,
                              queue=self.queue, body_of=self.document.body, **defaults)

    def route_new(self) -> int:
        """Route every entry of our logs that appeared on the stream since the last call; returns how many."""
        routed = 0
        for shard in self.reader.shards():
            shard_id = shard["ShardId"]
            records: list[dict[str, Any]] = []
            while more := self.reader.read_after(shard_id, self.positions.get(shard_id)):
                records += more
                self.positions[shard_id] = more[-1]["dynamodb"]["SequenceNumber"]
            for record in records:
                if record.get("eventName") != "INSERT":
                    continue
                if bytes(record["dynamodb"]["Keys"]["G"]["B"])[:16] not in self._log_bytes:
                    continue  # another test's record (some are deliberately not seglog entries)
                entry = item_to_entry(record["dynamodb"]["NewImage"])
                if entry.log_id in self.logs:
                    route(entry, queue=self.queue, blobs=self.backend.blobs)
                    routed += 1
        return routed

    def receive(self, max_messages: int = 10, *, visibility: int = 30, wait: float = 0.0) -> list[QueueMessage]:
        response = self.sqs.receive_message(QueueUrl=self.queue.queue_url, MaxNumberOfMessages=max_messages,
                                            VisibilityTimeout=visibility, WaitTimeSeconds=int(wait),
                                            MessageSystemAttributeNames=["All"])
        return [QueueMessage(message_id=m["MessageId"], receipt_handle=m["ReceiptHandle"], body=m["Body"],
                             receive_count=int(m["Attributes"]["ApproximateReceiveCount"]))
                for m in response.get("Messages", [])]

    def receive_one(self, *, visibility: int = 30, timeout: float = 10.0) -> QueueMessage:
        """Wait for one message (LocalStack makes expired messages visible again on a ~1 s tick)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.receive(1, visibility=visibility)
            if got:
                return got[0]
            time.sleep(0.2)
        raise AssertionError(f"no message became visible within {timeout}s")

    def drain(self, worker: SnapshotWorker | None = None, *, timeout: float = 60.0) -> int:
        """Route and work until the stream has nothing new and the queue is empty; returns invocations."""
        worker = worker or self.worker()
        deadline = time.monotonic() + timeout
        invocations = 0
        while time.monotonic() < deadline:
            self.route_new()
            messages = self.receive(10, visibility=30)
            for message in messages:
                worker.process(message)
                invocations += 1
            if not messages:
                if self.queue.depth() == 0 and self.route_new() == 0:
                    return invocations
                time.sleep(0.3)
        raise AssertionError(f"the pipeline did not quiesce within {timeout}s (queue depth {self.queue.depth()})")

    def close(self) -> None:
        self.sqs.delete_queue(QueueUrl=self.queue.queue_url)
        if self.dlq_url is not None:
            self.sqs.delete_queue(QueueUrl=self.dlq_url)
