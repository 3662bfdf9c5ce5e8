"""The exact events AWS Lambda hands a function, built from what boto3 reads off the local stack.

- :mod:`.dynamodb_stream`: DynamoDB Streams records -> the stream event; :class:`StreamReader` reads a stream.
- :mod:`.sqs`: received SQS messages -> the SQS event.
- :mod:`.api_gateway`: an HTTP request -> the HTTP API payload format 2.0 event, and a handler's return -> the
  HTTP response.
- :mod:`.scheduled`: one firing of a scheduled EventBridge rule -> the "Scheduled Event" event.

The emulator's pollers, gateway and scheduler build every event here, so handlers see locally what they see on
AWS (DESIGN §9 item 10).
"""

from __future__ import annotations

from seglog_awsmodel.events.api_gateway import (
    function_failure,
    http_api_event,
    http_api_response,
    match_route,
    request_event,
)
from seglog_awsmodel.events.dynamodb_stream import (
    ShardIteratorType,
    StreamReader,
    lambda_stream_arn,
    order_shards,
    stream_event,
    stream_record,
)
from seglog_awsmodel.events.scheduled import rule_arn, scheduled_event
from seglog_awsmodel.events.sqs import sqs_event, sqs_record

__all__ = [
    "ShardIteratorType",
    "StreamReader",
    "function_failure",
    "http_api_event",
    "http_api_response",
    "lambda_stream_arn",
    "match_route",
    "order_shards",
    "request_event",
    "rule_arn",
    "scheduled_event",
    "sqs_event",
    "sqs_record",
    "stream_event",
    "stream_record",
]
