"""The probe function of the fidelity tests, run by LambdaInvoker in worker processes (this directory comes first
among the workers' code directories, before the artifact; only the standard library is imported).

Every invocation appends two JSON lines to the current test's log: a ``start`` line with the whole event as the
function received it, and an ``end`` line once the handler is done (an invocation killed on its timeout has no
``end`` line). The log's path is read, at each invocation, from the file named by ``PROBE_POINTER``, so warm
workers serve test after test. Each record says what the probe does with it, in a stream record's NewImage
(``action`` S, ``times`` N, ``seconds`` N) or in an SQS message's JSON body (``action``, ``times``, ``seconds``):

- ``ok`` (the default): nothing;
- ``fail``: the invocation raises, failing the whole batch;
- ``report``: the record's identifier goes into ``batchItemFailures``;
- ``report_empty`` / ``report_unknown``: an empty identifier / one that is in no batch goes there instead;
- ``sleep``: the handler sleeps ``seconds``.

With ``times`` n the action applies to the record's first n deliveries only (counted from the log), after
which the record is ``ok``. An empty event is not logged: it only starts a worker (a cold start) ahead of a
test that times its invocations.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

#: What the probe puts in batchItemFailures for ``report_unknown``: an identifier of no record in any batch.
UNKNOWN_IDENTIFIER = "not-in-this-batch"


class ProbeError(Exception):
    """Raised for records whose action is ``fail``."""


def handler(event: dict[str, Any], context: Any) -> Any:
    if not event:
        return None  # an empty event only warms a worker up (its cold start out of the way), unlogged
    if "Records" not in event:
        return _http(event, context) if "rawPath" in event else _other(event, context)
    records = [instructions(record) for record in event["Records"]]
    history = _read_log()
    _append({"phase": "start", "request_id": context.aws_request_id, "pid": os.getpid(), "time": time.time(),
             "ids": [r["id"] for r in records], "names": [r["name"] for r in records], "event": event})
    earlier = {r["id"]: sum(1 for line in history if line["phase"] == "start" and r["id"] in line["ids"])
               for r in records}
    seconds, failed, failures = plan(records, earlier)
    time.sleep(seconds)
    _append({"phase": "end", "request_id": context.aws_request_id, "time": time.time(), "failed": failed,
             "reported": failures})
    if failed:
        raise ProbeError(f"records {failed} are set to fail")
    # Reported in reverse stream order: Lambda must take the lowest sequence number, not the first listed.
    return {"batchItemFailures": [{"itemIdentifier": identifier} for identifier in reversed(failures)]}


def plan(records: list[dict[str, Any]], earlier: dict[str, int]) -> tuple[float, list[str], list[str]]:
    """What one invocation does with its records (their :func:`instructions`), given how many times each was
    delivered before: (seconds to sleep, names of the records that fail it, identifiers to report). The
    simulator's fidelity driver runs the same rules on its own clock."""
    seconds, failed, failures = 0.0, [], []
    for record in records:
        if record["times"] is not None and earlier.get(record["id"], 0) >= record["times"]:
            continue  # past its first ``times`` deliveries: ok
        match record["action"]:
            case "sleep":
                seconds += record["seconds"]
            case "fail":
                failed.append(record["name"])
            case "report":
                failures.append(record["id"])
            case "report_empty":
                failures.append("")
            case "report_unknown":
                failures.append(UNKNOWN_IDENTIFIER)
    return seconds, failed, failures


def _http(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An API Gateway payload 2.0 event: logged, and answered with a response that names the path."""
    _append({"phase": "start", "request_id": context.aws_request_id, "pid": os.getpid(), "time": time.time(),
             "ids": [], "names": [], "event": event})
    _append({"phase": "end", "request_id": context.aws_request_id, "time": time.time(), "failed": [],
             "reported": []})
    return {"statusCode": 201, "headers": {"content-type": "application/json", "x-probe": "yes"},
            "body": json.dumps({"rawPath": event["rawPath"]})}


def _other(event: dict[str, Any], context: Any) -> None:
    """Any other event (an EventBridge scheduled event, a Schedule's Input): logged as received, nothing more."""
    _append({"phase": "start", "request_id": context.aws_request_id, "pid": os.getpid(), "time": time.time(),
             "ids": [], "names": [], "event": event})
    _append({"phase": "end", "request_id": context.aws_request_id, "time": time.time(), "failed": [],
             "reported": []})


def instructions(record: dict[str, Any]) -> dict[str, Any]:
    """A record's identifier (SequenceNumber or messageId), name and instructions."""
    if "dynamodb" in record:
        image = record["dynamodb"].get("NewImage", {})
        fields = {name: next(iter(value.values())) for name, value in image.items()
                  if name in ("name", "action", "times", "seconds")}
        identifier = record["dynamodb"]["SequenceNumber"]
    else:
        try:
            body = json.loads(record["body"])
        except ValueError:
            body = {}
        fields = body if isinstance(body, dict) else {}
        identifier = record["messageId"]
    times = fields.get("times")
    return {"id": identifier, "name": fields.get("name"), "action": fields.get("action", "ok"),
            "times": None if times is None else int(times), "seconds": float(fields.get("seconds", 0))}


def _log_path() -> str:
    with open(os.environ["PROBE_POINTER"]) as f:
        return f.read().strip()


def _read_log() -> list[dict[str, Any]]:
    try:
        with open(_log_path()) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def _append(line: dict[str, Any]) -> None:
    # One write(2) on an O_APPEND descriptor: lines of concurrent workers never interleave.
    fd = os.open(_log_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)
