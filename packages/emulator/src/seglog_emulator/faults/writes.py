"""What an AWS call writes, by resource and record key: how a differential verdict names the invocation that wrote
each record that differs (issue 37, point 3).

In a worker of a faulted app run, every successful call that writes (DynamoDB PutItem, UpdateItem, DeleteItem,
BatchWriteItem, TransactWriteItems; S3 PutObject, CopyObject, CompleteMultipartUpload, DeleteObject(s); SQS
SendMessage(Batch)) logs :data:`WRITE_EVENT` with the invocation's request id and, per record written, the resource
as the call named it (table name, bucket, queue URL) and the record's key as :mod:`seglog_emulator.appchaos.state`
reads it back: a table item's scalar attributes (its key attributes among them: the worker does not know the key
schema, the reader does), an object's ``{"key": ...}``, a message's ``{"body": ...}``. The line is written when the
service has answered, before a ``crash_after_call`` kill, so a write whose answer was lost is named too.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

#: The worker's line for one successful writing call.
WRITE_EVENT: Final = "aws write"
#: A record's attribute longer than this is left out of the logged key (a key attribute is short).
LONGEST_VALUE: Final = 512


def written(service: str, operation: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records a call writes: ``[{"resource": ..., "key": {...}}]`` (empty for a call that writes nothing this
    module reads back)."""
    if service == "dynamodb":
        return _dynamodb(operation, params)
    if service == "s3":
        bucket = params.get("Bucket")
        if operation in ("PutObject", "CopyObject", "CompleteMultipartUpload", "DeleteObject"):
            return [{"resource": bucket, "key": {"key": params.get("Key")}}]
        if operation == "DeleteObjects":
            return [{"resource": bucket, "key": {"key": o.get("Key")}}
                    for o in (params.get("Delete") or {}).get("Objects", [])]
    if service == "sqs":
        url = params.get("QueueUrl")
        if operation == "SendMessage":
            return [{"resource": url, "key": {"body": body(params.get("MessageBody", ""))}}]
        if operation == "SendMessageBatch":
            return [{"resource": url, "key": {"body": body(e.get("MessageBody", ""))}}
                    for e in params.get("Entries", [])]
    return []


def _dynamodb(operation: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    if operation == "PutItem":
        return [{"resource": params.get("TableName"), "key": _scalars(params.get("Item") or {})}]
    if operation in ("UpdateItem", "DeleteItem"):
        return [{"resource": params.get("TableName"), "key": _scalars(params.get("Key") or {})}]
    found: list[dict[str, Any]] = []
    if operation == "BatchWriteItem":
        for table, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                put, delete = request.get("PutRequest"), request.get("DeleteRequest")
                item = (put or {}).get("Item") or (delete or {}).get("Key") or {}
                found.append({"resource": table, "key": _scalars(item)})
    elif operation == "TransactWriteItems":
        for entry in params.get("TransactItems", []):
            for kind, field in (("Put", "Item"), ("Update", "Key"), ("Delete", "Key")):
                if kind in entry:
                    found.append({"resource": entry[kind].get("TableName"),
                                  "key": _scalars(entry[kind].get(field) or {})})
    return found


def _scalars(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item's string, number and binary attributes as the state reader writes them (numbers as numbers, bytes as
    base64), the long ones left out."""
    plain: dict[str, Any] = {}
    for name, value in item.items():
        if not isinstance(value, Mapping) or len(value) != 1:
            continue
        (kind, raw), = value.items()
        if kind == "S" and isinstance(raw, str) and len(raw) <= LONGEST_VALUE:
            plain[name] = raw
        elif kind == "N":
            number = Decimal(str(raw))
            plain[name] = int(number) if number == number.to_integral_value() else float(number)
        elif kind == "B" and isinstance(raw, bytes | bytearray) and len(raw) <= LONGEST_VALUE:
            plain[name] = base64.b64encode(bytes(raw)).decode()
    return plain


def body(raw: bytes | str) -> Any:
    """A body as a record holds it: parsed if it is JSON, else its SHA-256 and size (the state reader's rule for
    objects and messages, and the logged key of a message sent)."""
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        return json.loads(data)
    except ValueError:
        return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def matches(key: Mapping[str, Any], written_key: Mapping[str, Any]) -> bool:
    """Whether a record read back with ``key`` is the one a write logged as ``written_key``: every attribute of
    ``key`` equal in the write (a table item's key attributes among all its scalars)."""
    if not key:
        return False
    return all(name in written_key and written_key[name] == value for name, value in key.items())
