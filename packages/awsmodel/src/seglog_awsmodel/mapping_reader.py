"""Reading a function's event source mappings (DynamoDB streams and SQS queues) and the queues they read, for
:class:`~seglog_awsmodel.template_reader.TemplateReader`, whose helpers and problem list they use; AWS's defaults and
ranges are cited where they are applied."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from seglog_awsmodel.config import (
    LOCAL_MAX_CONCURRENCY,
    FunctionSpec,
    QueueMapping,
    QueueSpec,
    StreamMapping,
    StreamPosition,
)

if TYPE_CHECKING:
    from seglog_awsmodel.template_reader import TemplateReader

#: DynamoDB event properties the emulator reads; others are ignored with a note (sam-property-function-dynamodb).
_DYNAMODB_PROPERTIES: Final = frozenset({
    "Stream", "StartingPosition", "BatchSize", "MaximumBatchingWindowInSeconds", "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds", "BisectBatchOnFunctionError", "ParallelizationFactor", "FunctionResponseTypes",
    "DestinationConfig", "FilterCriteria", "Enabled",
})
#: SQS event properties the emulator reads (sam-property-function-sqs).
_SQS_PROPERTIES: Final = frozenset({
    "Queue", "BatchSize", "MaximumBatchingWindowInSeconds", "ScalingConfig", "FunctionResponseTypes",
    "FilterCriteria", "Enabled",
})


def queue_spec(reader: TemplateReader, logical: str, props: Mapping[str, Any]) -> QueueSpec:
    where = logical
    # AWS::SQS::Queue: VisibilityTimeout defaults to 30 s, 0..43,200.
    visibility = reader._int(props.get("VisibilityTimeout", 30), f"{where}.VisibilityTimeout", low=0, high=43200)
    redrive = props.get("RedrivePolicy") or {}
    dead_letter = None
    max_receive = None
    if redrive:
        dead_letter = reader._target(redrive.get("deadLetterTargetArn"), "Arn", ("AWS::SQS::Queue",),
                                   f"{where}.RedrivePolicy.deadLetterTargetArn")
        max_receive = reader._int(redrive.get("maxReceiveCount"), f"{where}.RedrivePolicy.maxReceiveCount",
                                low=1, high=1000)
    return QueueSpec(logical_id=logical, VisibilityTimeout=30 if visibility is None else visibility,
                     FifoQueue=reader._bool(props.get("FifoQueue", False), f"{where}.FifoQueue"),
                     dead_letter_queue=dead_letter, maxReceiveCount=max_receive)

def stream_mapping(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any],
                   where: str) -> StreamMapping | None:
    # Defaults and ranges: AWS Lambda Developer Guide, services-ddb-params (BatchSize 100, max 10,000;
    # MaximumBatchingWindowInSeconds 0; MaximumRecordAgeInSeconds -1, max 604,800; MaximumRetryAttempts -1,
    # max 10,000; ParallelizationFactor 1, max 10; BisectBatchOnFunctionError false; StartingPosition
    # required, TRIM_HORIZON or LATEST) and the SAM page sam-property-function-dynamodb. The SAM page gives
    # BatchSize a maximum of 1,000; Lambda's own pages say 10,000, which is what Lambda enforces.
    reader._note_unread(props, _DYNAMODB_PROPERTIES, where)
    table = reader._target(props.get("Stream"), "StreamArn", ("AWS::DynamoDB::Table",), f"{where}.Stream")
    if table is not None and not (reader.resources[table].get("Properties") or {}).get("StreamSpecification"):
        reader._problem(f"{where}.Stream: table {table} has no StreamSpecification, so it has no stream")
    position = reader._choice(props.get("StartingPosition"), StreamPosition, f"{where}.StartingPosition")
    batch = reader._int(props.get("BatchSize", 100), f"{where}.BatchSize", low=1, high=10000)
    window = reader._int(props.get("MaximumBatchingWindowInSeconds", 0), f"{where}.MaximumBatchingWindowInSeconds",
                       low=0, high=300)
    retries = reader._int(props.get("MaximumRetryAttempts", -1), f"{where}.MaximumRetryAttempts",
                        low=-1, high=10000)
    age = reader._int(props.get("MaximumRecordAgeInSeconds", -1), f"{where}.MaximumRecordAgeInSeconds",
                    low=-1, high=604800)
    parallel = reader._int(props.get("ParallelizationFactor", 1), f"{where}.ParallelizationFactor", low=1, high=10)
    if parallel is not None and parallel > 1:
        reader._note(f"{where}.ParallelizationFactor: {parallel} is read; one batch per shard runs at a time "
                   "locally (DESIGN §9.1)")
    on_failure = None
    destination = ((props.get("DestinationConfig") or {}).get("OnFailure") or {})
    if destination:
        on_failure = reader._target(destination.get("Destination"), "Arn", ("AWS::SQS::Queue", "AWS::SNS::Topic"),
                                  f"{where}.DestinationConfig.OnFailure.Destination")
    filters = reader._filters(props.get("FilterCriteria"), f"{where}.FilterCriteria")
    responses = reader._response_types(props.get("FunctionResponseTypes"), f"{where}.FunctionResponseTypes")
    bisect = reader._bool(props.get("BisectBatchOnFunctionError", False), f"{where}.BisectBatchOnFunctionError")
    enabled = reader._bool(props.get("Enabled", True), f"{where}.Enabled")
    if (table is None or position is None or batch is None or window is None or retries is None or age is None
            or parallel is None or filters is None or responses is None):
        return None
    return StreamMapping(function=function, event=event, table=table, StartingPosition=position,
                         BatchSize=batch, MaximumBatchingWindowInSeconds=window, MaximumRetryAttempts=retries,
                         MaximumRecordAgeInSeconds=age, BisectBatchOnFunctionError=bisect,
                         ParallelizationFactor=parallel, FunctionResponseTypes=responses, OnFailure=on_failure,
                         FilterCriteria=filters, Enabled=enabled)

def queue_mapping(reader: TemplateReader, function: str, event: str, props: Mapping[str, Any], where: str,
                  spec: FunctionSpec | None, queues: Mapping[str, QueueSpec]) -> QueueMapping | None:
    # Defaults and ranges: AWS Lambda Developer Guide, services-sqs-parameters (BatchSize 10; "For standard
    # queues, the maximum is 10,000. For FIFO queues, the maximum is 10."; MaximumBatchingWindowInSeconds 0,
    # "Batching window is not supported for FIFO queues"), Lambda API Reference ScalingConfig
    # (MaximumConcurrency 2..1,000) and sam-property-function-sqs.
    reader._note_unread(props, _SQS_PROPERTIES, where)
    queue = reader._target(props.get("Queue"), "Arn", ("AWS::SQS::Queue",), f"{where}.Queue")
    queue_spec = queues.get(queue) if queue is not None else None
    fifo = queue_spec is not None and queue_spec.FifoQueue
    batch = reader._int(props.get("BatchSize", 10), f"{where}.BatchSize", low=1, high=10 if fifo else 10000)
    window = reader._int(props.get("MaximumBatchingWindowInSeconds", 0), f"{where}.MaximumBatchingWindowInSeconds",
                       low=0, high=0 if fifo else 300)
    # "For streams and Amazon SQS event sources, when you set BatchSize to a value greater than 10, you must set
    # MaximumBatchingWindowInSeconds to at least 1" (Lambda API Reference, CreateEventSourceMapping). Checked
    # for SQS only: the stream defaults themselves (BatchSize 100, window 0) contradict it for streams.
    if batch is not None and window is not None and batch > 10 and window < 1:
        reader._problem(f"{where}.BatchSize: {batch} > 10 needs MaximumBatchingWindowInSeconds >= 1 "
                      "(CreateEventSourceMapping, 'Related setting')")
    scaling = props.get("ScalingConfig") or {}
    concurrency = reader._int(scaling.get("MaximumConcurrency", 1000),
                            f"{where}.ScalingConfig.MaximumConcurrency", low=2, high=1000)
    if concurrency is not None and concurrency > LOCAL_MAX_CONCURRENCY:
        reader._note(f"{where}.ScalingConfig.MaximumConcurrency: {concurrency} runs as {LOCAL_MAX_CONCURRENCY} "
                   "concurrent batches locally (LOCAL_MAX_CONCURRENCY)")
    if spec is not None and queue_spec is not None:
        _check_visibility(reader, spec, queue_spec, where)
    filters = reader._filters(props.get("FilterCriteria"), f"{where}.FilterCriteria")
    responses = reader._response_types(props.get("FunctionResponseTypes"), f"{where}.FunctionResponseTypes")
    enabled = reader._bool(props.get("Enabled", True), f"{where}.Enabled")
    if (queue is None or batch is None or window is None or concurrency is None or filters is None
            or responses is None):
        return None
    return QueueMapping(function=function, event=event, queue=queue, BatchSize=batch,
                        MaximumBatchingWindowInSeconds=window, MaximumConcurrency=concurrency,
                        FunctionResponseTypes=responses, FilterCriteria=filters, Enabled=enabled)

def _check_visibility(reader: TemplateReader, spec: FunctionSpec, queue: QueueSpec, where: str) -> None:
    # "Your function's timeout must be less than or equal to the queue's visibility timeout. Lambda validates
    # this requirement when you create or update an event source mapping and will return an error if the
    # function timeout exceeds the queue's visibility timeout." (AWS Lambda Developer Guide,
    # services-sqs-configure). DESIGN §9.8.
    if spec.Timeout > queue.VisibilityTimeout:
        reader._problem(f"{where}: function {spec.logical_id} has Timeout {spec.Timeout} s, more than queue "
                      f"{queue.logical_id}'s VisibilityTimeout {queue.VisibilityTimeout} s; Lambda refuses "
                      "such a mapping (services-sqs-configure): raise the visibility timeout (AWS advises six "
                      "times the function timeout) or lower the function's")
    elif queue.VisibilityTimeout < 6 * spec.Timeout:
        # Same page: "set the source queue's visibility timeout to at least six times the configuration
        # timeout on your function". Advice, not a rule.
        reader._note(f"{where}: queue {queue.logical_id}'s VisibilityTimeout {queue.VisibilityTimeout} s is "
                   f"less than 6 x the function's Timeout {spec.Timeout} s that AWS recommends")
