"""stream_router: Entries stream -> snapshot queue, and large bodies untagged (DESIGN §4).

The event source mapping's FilterCriteria pass only INSERTs of Snapshot entries or of entries with an
external body; anything else that still arrives is ignored. Failures are reported per record by sequence
number (ReportBatchItemFailures): Lambda retries from the lowest failed one (AWS Lambda Developer Guide,
services-ddb-batchfailurereporting).
"""

from __future__ import annotations

import base64
from typing import Any

import structlog
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from seglog_aws.backend import Backend
from seglog_aws.items import item_to_entry
from seglog_core.crashpoints import ROUTER_AFTER_SEND, should_crash
from seglog_core.errors import InvalidInputError
from seglog_core.pipeline import RouteAction, keep_body, route
from seglog_services import runtime

log = structlog.get_logger("seglog.stream_router")


def image_to_item(image: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A stream image as the Lambda event carries it (binary as base64 text) in boto3's item form."""
    item: dict[str, dict[str, Any]] = {}
    for name, value in image.items():
        (kind, raw), = value.items()
        item[name] = {kind: base64.b64decode(raw) if kind == "B" else raw}
    return item


def record_handler(record: DynamoDBRecord) -> None:
    action = route_record(record.raw_event, runtime.backend())
    if action is not None and action.enqueued is not None:
        should_crash(ROUTER_AFTER_SEND)  # sent, not yet checkpointed: the batch will be delivered again


def route_record(raw: dict[str, Any], backend: Backend) -> RouteAction | None:
    """Route one stream record as Lambda delivers it (the simulator calls this too, with its own backend);
    None for a record that needs nothing."""
    if raw.get("eventName") != "INSERT" or "NewImage" not in raw.get("dynamodb", {}):
        return None
    item = image_to_item(raw["dynamodb"]["NewImage"])
    try:
        entry = item_to_entry(item)
    except InvalidInputError as exc:
        # Written by newer code (an unknown type or version): still keep its large body so it never expires
        # under its entry, and never block the shard on a record this version cannot read.
        if "E" in item:
            keep_body(backend.blobs, item["E"]["S"])
        log.warning("record not understood: body kept, no job", error=str(exc))
        return None
    with structlog.contextvars.bound_contextvars(log_id=str(entry.log_id), segment=entry.segment,
                                                 entry=entry.num,
                                                 sequence_number=raw["dynamodb"].get("SequenceNumber")):
        action = route(entry, queue=backend.queue, blobs=backend.blobs)
        log.info("routed", enqueued=action.enqueued is not None, kept=action.kept, gone=action.gone)
        return action


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = event.get("Records", [])
    shard = records[0].get("eventID", "").split(":")[0] if records else None
    with runtime.invocation("stream_router", context, shard_id=shard, batch_size=len(records)):
        processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        response = process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                            context=context)
        return dict(response)
