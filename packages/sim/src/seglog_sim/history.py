"""A seed's history as people read it: who did what, when (simulated seconds), to which log, segment and entry.

Storage calls are kept raw during the run (the parameters the adapter sent); they are decoded only here, when a
failing seed is printed, so a passing seed pays nothing for them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from seglog_core.schema import split_pending_key, split_segment_key
from seglog_core.violations import Violation
from seglog_sim.cloud import Call


def _value(attribute: dict[str, Any]) -> Any:
    (kind, raw), = attribute.items()
    return int(raw) if kind == "N" else raw


def describe_key(item: dict[str, Any]) -> tuple[str | None, str]:
    """(log id, "segment/entry" or "segment") of a DynamoDB key or item, decoded from its one-letter names."""
    if "G" in item:
        log_uuid, segment = split_segment_key(bytes(item["G"]["B"]))
        return str(log_uuid), f"{segment}/{_value(item['N'])}" if "N" in item else str(segment)
    if "P" in item and "L" in item:
        segment, entry = split_pending_key(bytes(item["P"]["B"]))
        return str(uuid.UUID(bytes=bytes(item["L"]["B"]))), f"pending {segment}/{entry}"
    if "L" in item:
        log_id = str(uuid.UUID(bytes=bytes(item["L"]["B"])))
        return log_id, f"segment {_value(item['N'])}" if "N" in item else "segments"
    return None, ""


def describe(call: Call) -> tuple[str | None, str]:
    """(log id, text) for one call."""
    p = call.params
    if call.service == "dynamodb":
        key = p.get("Key") or p.get("Item") or (p.get("ExpressionAttributeValues") or {})
        if "TransactItems" in p:
            described = [describe_key(next(iter(t.values())).get("Item") or next(iter(t.values())).get("Key", {}))
                         for t in p["TransactItems"]]
            return (described[0][0] if described else None), "tx[" + ", ".join(w for _, w in described) + "]"
        if call.operation == "Query":
            values = p.get("ExpressionAttributeValues", {})
            log_id, where = describe_key({k.lstrip(":").upper(): v for k, v in values.items() if k in (":g", ":l")})
            start = values.get(":s", {}).get("N")
            return log_id, f"{p.get('TableName')} {where}{'' if start is None else f' from {start}'}" + (
                "" if p.get("ConsistentRead") else " (eventually consistent)")
        log_id, where = describe_key(key)
        extra = f" {p['UpdateExpression']}" if "UpdateExpression" in p else ""
        return log_id, f"{p.get('TableName')} {where}{extra}"
    if call.service == "s3":
        key = str(p.get("Key") or p.get("Prefix") or "")
        parts = key.split("/")
        return (parts[1] if len(parts) > 1 else None), key
    body = str(p.get("MessageBody", ""))
    handle = str(p.get("ReceiptHandle", ""))[:8]
    return None, body or (f"receipt {handle}" if handle else "")


def lines(history: Iterable[Call]) -> list[str]:
    out = []
    for call in history:
        _, what = describe(call)
        out.append(f"{call.at - 1_700_000_000.0:10.3f}s  {call.task:<22} {call.service} {call.operation:<24} "
                   f"{what}  -> {call.outcome}")
    return out


def around(history: list[Call], violation: Violation, *, limit: int = 60) -> list[str]:
    """The calls that touched the violation's log (its segment and entry when known), the last ``limit``."""
    if violation.log_id is None:
        return lines(history[-limit:])
    picked = []
    for call in history:
        log_id, what = describe(call)
        if call.service == "sqs" or log_id == violation.log_id or (log_id is None and violation.log_id in what):
            picked.append(call)
    return lines(picked[-limit:])


def entry_writes(call: Call) -> list[tuple[dict[str, Any], bool]]:
    """(key, sets the root?) of every Snapshot entry the call writes."""
    p = call.params
    if call.operation == "PutItem":
        item = p.get("Item", {})
        return [(item, False)] if item.get("T", {}).get("S") == "snap" else []
    if call.operation == "UpdateItem":
        return [(p["Key"], True)] if str(p.get("UpdateExpression", "")).startswith("SET R =") else []
    if call.operation == "TransactWriteItems":
        found: list[tuple[dict[str, Any], bool]] = []
        for action in p.get("TransactItems", []):
            put = action.get("Put")
            if put and put.get("Item", {}).get("T", {}).get("S") == "snap":
                found.append((put["Item"], False))
        return found
    return []


#: A Snapshot entry: (log id, segment, entry).
SnapshotKey = tuple[str, int, int]


def snapshot_times(history: Iterable[Call]) -> dict[SnapshotKey, tuple[float, float | None]]:
    """When each Snapshot entry was appended and when it completed (its root set; None: never), from the writes
    that took effect (a write whose answer was lost took effect too). A log's first Snapshot entry is born
    complete."""
    appeared: dict[SnapshotKey, float] = {}
    completed: dict[SnapshotKey, float] = {}
    for call in history:
        if call.service != "dynamodb" or not (call.outcome.startswith("ok") or call.outcome.startswith("applied")):
            continue
        for item, sets_root in entry_writes(call):
            log_id, where = describe_key(item)
            if log_id is None:
                continue
            segment, _, entry = where.partition("/")
            key = (log_id, int(segment), int(entry or 0))
            if not sets_root:
                appeared.setdefault(key, call.at)
            if sets_root or "R" in item:
                completed.setdefault(key, call.at)
    return {key: (at, completed.get(key)) for key, at in appeared.items()}
