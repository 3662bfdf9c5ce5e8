"""An application's final state, and two of them compared: the differential verdict (issue 37, point 3).

After a run is quiet, each resource the template provisioned is read by its logical id:

* a table (``AWS::DynamoDB::Table``, ``AWS::Serverless::SimpleTable``): every item (a consistent Scan, all pages),
  as plain JSON;
* a bucket: every object's key and content (a JSON object body parsed, any other by its SHA-256);
* a queue: every message's body (parsed if JSON), received until the queue answers empty (the run is over: this
  is the last reader). A queue a function is fed from is empty when the run is quiet; a dead-letter queue or a
  queue nobody reads keeps what the app sent it.

Two states compare as multisets of records per resource, after the fields named by ``--ignore`` are dropped at any
depth (timestamps, generated ids): a record only one run holds, or held a different number of times, is a
difference. Records that share their key (a table's key attributes, an object's key) are paired and shown as one
record changed.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from boto3.dynamodb.types import TypeDeserializer

from seglog_emulator.faults.writes import body

TABLE_TYPES: Final = frozenset({"AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable"})
#: A resource's records: (key, record), both canonical JSON text.
Records = list[tuple[str, str]]
#: Messages a queue is drained of at most (a run that sent more is reported as cut).
MAX_MESSAGES: Final = 10_000


def _plain(value: Any) -> Any:
    """DynamoDB's deserialized values as JSON can hold them: numbers as numbers, sets as sorted lists, bytes as
    base64."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "value") and isinstance(value.value, bytes):  # boto3's Binary
        return base64.b64encode(value.value).decode()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _without(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_without(v, ignore) for v in value]
    return value


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class AppState:
    """Each resource's records by logical id, as read (nothing ignored yet)."""

    resources: dict[str, list[tuple[Any, Any]]]
    #: Resources read only in part, and why (a queue with more than MAX_MESSAGES).
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"resources": {k: [{"key": key, "record": rec} for key, rec in v] for k, v in self.resources.items()},
                "notes": list(self.notes)}

    def records(self, ignore: frozenset[str]) -> dict[str, Records]:
        return {logical: sorted((_text(_without(key, ignore)), _text(_without(record, ignore)))
                                for key, record in found)
                for logical, found in self.resources.items()}


def read_state(names: Mapping[str, str], types: Mapping[str, str], clients: Any) -> AppState:
    """Read every table, bucket and queue in ``names`` (by logical id; ``types`` says which is which).
    ``clients(service)`` gives a boto3 client."""
    resources: dict[str, list[tuple[Any, Any]]] = {}
    notes: list[str] = []
    for logical in sorted(names):
        kind, name = types.get(logical, ""), names[logical]
        if kind in TABLE_TYPES:
            resources[logical] = _table(clients("dynamodb"), name)
        elif kind == "AWS::S3::Bucket":
            resources[logical] = _bucket(clients("s3"), name)
        elif kind == "AWS::SQS::Queue":
            resources[logical], cut = _queue(clients("sqs"), name)
            if cut:
                notes.append(f"{logical}: more than {MAX_MESSAGES} messages; the first {MAX_MESSAGES} compared")
    return AppState(resources, tuple(notes))


def _table(ddb: Any, name: str) -> list[tuple[Any, Any]]:
    keys = [k["AttributeName"] for k in ddb.describe_table(TableName=name)["Table"]["KeySchema"]]
    deserialize = TypeDeserializer().deserialize
    found = []
    for page in ddb.get_paginator("scan").paginate(TableName=name, ConsistentRead=True):
        for item in page["Items"]:
            plain = {k: _plain(deserialize(v)) for k, v in item.items()}
            found.append(({k: plain.get(k) for k in keys}, plain))
    return found


def _bucket(s3: Any, name: str) -> list[tuple[Any, Any]]:
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        for entry in page.get("Contents", []):
            content = s3.get_object(Bucket=name, Key=entry["Key"])["Body"].read()
            found.append(({"key": entry["Key"]}, {"key": entry["Key"], "body": body(content)}))
    return found


def _queue(sqs: Any, url: str) -> tuple[list[tuple[Any, Any]], bool]:
    found: list[tuple[Any, Any]] = []
    while len(found) < MAX_MESSAGES:
        # A long visibility timeout: each message is received once here, whatever the queue's own setting.
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                     VisibilityTimeout=300)
        messages = answer.get("Messages", [])
        if not messages:
            return found, False
        found += [(None, {"body": body(m["Body"])}) for m in messages]
    return found, True


@dataclass(frozen=True)
class Difference:
    """One resource's records that differ between the fault-free run and the faulted one."""

    resource: str
    #: Records only (or more often) in the fault-free run, and in the faulted run, as canonical JSON.
    expected: tuple[str, ...]
    found: tuple[str, ...]
    #: The keys of the records that differ (a message's: the message), to find who wrote them.
    keys: tuple[dict[str, Any], ...] = ()
    #: The faulted run's invocations that wrote them, suspect ones first (:mod:`.attribution`).
    written_by: tuple[dict[str, Any], ...] = ()

    def lines(self, limit: int = 5) -> list[str]:
        """The difference as a reader wants it: the records missing, then the extra ones, then who wrote them
        (``limit`` of each)."""
        out = [f"{self.resource}: {len(self.expected)} record(s) of the fault-free run not in the faulted one, "
               f"{len(self.found)} the other way"]
        for kind, records in (("missing", self.expected), ("extra", self.found)):
            for record in records[:limit]:
                out.append(f"  {kind}: {record}")
            if len(records) > limit:
                out.append(f"  ... {len(records) - limit} more {kind}")
        if self.written_by:
            suspect = sum(1 for w in self.written_by if w.get("suspect"))
            out.append(f"  written in the faulted run by {len(self.written_by)} invocation(s), {suspect} of them "
                       f"handling a delivery handled more than once, a retry, or failed:")
            for writer in self.written_by[:limit]:
                handled = f", delivery handled {writer['handled']} times" if writer.get("handled", 1) > 1 else ""
                out.append(f"    {writer.get('function', '?')} request {writer['request_id']}: "
                           f"{writer['operation']} from {writer.get('source', '?')}"
                           f"{' (' + writer['delivery'] + ')' if writer.get('delivery') else ''}, attempt "
                           f"{writer.get('attempt', '?')}, {writer.get('outcome', '?')}{handled}")
            if len(self.written_by) > limit:
                out.append(f"    ... {len(self.written_by) - limit} more")
        elif self.keys:
            out.append("  written by: no write the functions logged matches (the workload's own, or none)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"resource": self.resource, "missing": list(self.expected), "extra": list(self.found),
                "written_by": list(self.written_by)}


def compare(clean: AppState, faulted: AppState, ignore: Iterable[str] = ()) -> list[Difference]:
    """What differs between the two runs' final states, per resource, ignoring the named fields."""
    dropped = frozenset(ignore)
    left, right = clean.records(dropped), faulted.records(dropped)
    differences = []
    for logical in sorted(set(left) | set(right)):
        a = Counter(record for _, record in left.get(logical, []))
        b = Counter(record for _, record in right.get(logical, []))
        if a != b:
            missing, extra = (a - b), (b - a)
            key_of = {record: key for key, record in [*left.get(logical, []), *right.get(logical, [])]}
            keys = {key_of[r] if key_of[r] != "null" else r for r in (*missing, *extra)}
            differences.append(Difference(logical, tuple(sorted(missing.elements())),
                                          tuple(sorted(extra.elements())),
                                          keys=tuple(json.loads(k) for k in sorted(keys))))
    return differences
