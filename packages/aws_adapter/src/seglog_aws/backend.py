"""Wiring: the boto3-backed stores and the core objects that use them, for one set of resources."""

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


@dataclass(kw_only=True)
class Backend:
    """Everything needed to use seglog against one deployment (local stack or AWS)."""

    resources: Resources
    store: DynamoDBLogStore
    blobs: S3BlobStore
    pending: DynamoDBPendingStore
    queue: SqsJobQueue
    sqs: Any
    meter: Meter = field(default_factory=Meter)

    @classmethod
    def connect(cls, resources: Resources, *, endpoints: dict[str, str] | None = None,
                session: boto3.Session | None = None) -> Backend:
        """Clients for each service; ``endpoints`` (service -> URL) override the SDK's resolution."""
        endpoints = endpoints or {}
        meter = Meter()

        def make(service: str) -> Any:
            return client(service, session=session, endpoint_url=endpoints.get(service))

        ddb, sqs = make("dynamodb"), make("sqs")
        store = DynamoDBLogStore(ddb, segments_table=resources.segments_table,
                                 entries_table=resources.entries_table, meter=meter)
        return cls(resources=resources, store=store, blobs=S3BlobStore(make("s3"), bucket=resources.bucket),
                   pending=DynamoDBPendingStore(ddb, table=resources.pending_table, meter=meter),
                   queue=SqsJobQueue(sqs, queue_url=resources.queue_url), sqs=sqs, meter=meter)

    def event_log(self, **options: Any) -> EventLog:
        return EventLog(store=self.store, blobs=self.blobs, **options)

    def reader(self) -> LogReader:
        return LogReader(store=self.store)

    def document(self) -> SheetDocument:
        return SheetDocument(reader=self.reader(), blobs=self.blobs)
