"""Wiring: the boto3-backed stores and the core objects that use them, for one set of resources.

Retries. botocore's own are off on these clients (one attempt per call): every store retries throttles and 5xx
itself with :data:`REQUEST_RETRY`, which knows the invocation's deadline and which writes may be sent again after
a lost answer. The append path is the exception: :meth:`Backend.event_log` gets stores that make each call once,
because EventLog retries itself, knowing which failures leave a write's outcome unknown (DESIGN §3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3

from seglog_aws.clients import client
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.dynamodb_pending_store import DynamoDBPendingStore
from seglog_aws.meter import Meter
from seglog_aws.resources import Resources
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_aws.sqs_job_queue import SqsJobQueue
from seglog_core.document import SheetDocument
from seglog_core.log import EventLog
from seglog_core.reader import LogReader
from seglog_core.retry import RetryPolicy

#: The stores' retries: 10 attempts, full jitter from 50 ms with ceilings doubling to 5 s (at most ~16 s of backoff,
#: ~8 s expected), the attempts and base botocore's legacy mode gives DynamoDB (its data/_retry.json); retry with
#: exponential backoff as the DynamoDB Developer Guide says (Programming.Errors "Error retries and exponential
#: backoff") — and never past the invocation's deadline.
REQUEST_RETRY = RetryPolicy(max_attempts=10, base=0.05, cap=5.0)


@dataclass(kw_only=True)
class Backend:
    """Everything needed to use seglog against one deployment (local stack or AWS).

    ``store``, ``blobs``, ``pending`` and ``queue`` retry; ``append_store`` and ``append_blobs`` (the same
    clients) make each call once, for EventLog. ``sqs`` is the raw client, without retries.
    """

    resources: Resources
    store: DynamoDBLogStore
    blobs: S3BlobStore
    pending: DynamoDBPendingStore
    queue: SqsJobQueue
    sqs: Any
    append_store: DynamoDBLogStore
    append_blobs: S3BlobStore
    meter: Meter = field(default_factory=Meter)

    @classmethod
    def connect(cls, resources: Resources, *, endpoints: dict[str, str] | None = None,
                session: boto3.Session | None = None, retry: RetryPolicy = REQUEST_RETRY) -> Backend:
        """Clients for each service; ``endpoints`` (service -> URL) override the SDK's resolution; ``retry`` is
        the stores' retry policy."""
        endpoints = endpoints or {}

        def make(service: str) -> Any:
            return client(service, session=session, endpoint_url=endpoints.get(service), retries=1)

        return cls.over(resources, dynamodb=make("dynamodb"), s3=make("s3"), sqs=make("sqs"), retry=retry)

    @classmethod
    def over(cls, resources: Resources, *, dynamodb: Any, s3: Any, sqs: Any, retry: RetryPolicy) -> Backend:
        """The stores on given boto3-shaped clients (:meth:`connect`'s, or the simulator's), wired as deployed."""
        ddb, meter = dynamodb, Meter()

        def log_store(policy: RetryPolicy | None) -> DynamoDBLogStore:
            return DynamoDBLogStore(ddb, segments_table=resources.segments_table,
                                    entries_table=resources.entries_table, meter=meter, retry=policy)

        return cls(resources=resources, store=log_store(retry), append_store=log_store(None),
                   blobs=S3BlobStore(s3, bucket=resources.bucket, retry=retry),
                   append_blobs=S3BlobStore(s3, bucket=resources.bucket),
                   pending=DynamoDBPendingStore(ddb, table=resources.pending_table, meter=meter, retry=retry,
                                                entries_table=resources.entries_table),
                   queue=SqsJobQueue(sqs, queue_url=resources.queue_url, retry=retry), sqs=sqs, meter=meter)

    def event_log(self, **options: Any) -> EventLog:
        return EventLog(store=self.append_store, blobs=self.append_blobs, **options)

    def reader(self) -> LogReader:
        return LogReader(store=self.store)

    def document(self) -> SheetDocument:
        return SheetDocument(reader=self.reader(), blobs=self.blobs)
