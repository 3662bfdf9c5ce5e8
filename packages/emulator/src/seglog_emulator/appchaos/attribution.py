"""Who wrote a record that differs: each difference of a differential verdict named with the invocations that wrote
its record, and the deliveries they handled (issue 37, point 3: "reported with the delivery that caused it, the
invocation ids, and the seed that replays it").

The faulted run's workers log each successful writing call (:mod:`seglog_emulator.faults.writes`, by request id);
the invokers log each invocation (function, source, attempt, outcome, the delivery's ids: message id, API request
id, stream sequence number, scheduled time). A differing record is matched to the writes of its resource whose
logged key holds the record's key, and each writer is shown with its delivery. Writers whose delivery was handed
to the function more than once (a duplicate, an expired visibility, a retry after a crash or a timeout) or that did
not end in success come first: they are what makes a handler that is not idempotent write twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from seglog_emulator.appchaos.state import Difference
from seglog_emulator.faults.writes import WRITE_EVENT, matches
from seglog_emulator.jsonlog import read_json_lines

#: An invocation line's fields that name the delivery it handled.
DELIVERY_FIELDS: Final = ("message_id", "api_request_id", "first_sequence_number", "shard_id", "scheduled_time",
                          "event_id", "method", "path")


def attribute(differences: list[Difference], log_file: Path, names: Mapping[str, str]) -> list[Difference]:
    """``differences`` with their writers (``written_by``), read from the faulted run's log; ``names`` maps the
    run's logical ids to physical names (a queue's URL)."""
    if not differences:
        return differences
    logical_of = {physical: logical for logical, physical in names.items()}
    writes: dict[str, list[tuple[str, dict[str, Any], str]]] = {}  # logical id -> (operation, key, request id)
    invocations: dict[str, dict[str, Any]] = {}
    for record in read_json_lines(log_file):
        if record.get("event") == WRITE_EVENT:
            for written in record.get("records") or []:
                logical = logical_of.get(str(written.get("resource")))
                if logical is not None and isinstance(written.get("key"), dict):
                    writes.setdefault(logical, []).append((str(record.get("operation")), written["key"],
                                                           str(record.get("invocation"))))
        elif record.get("event") == "invocation" and record.get("request_id"):
            invocations[str(record["request_id"])] = record
    handed = Counter(_delivery(line) for line in invocations.values())
    out = []
    for difference in differences:
        writers: dict[str, dict[str, Any]] = {}
        for key in difference.keys:
            for operation, written, request_id in writes.get(difference.resource, []):
                if matches(key, written) and request_id not in writers:
                    writers[request_id] = _writer(request_id, operation, invocations.get(request_id), handed)
        ranked = sorted(writers.values(), key=lambda w: (not w["suspect"], w.get("time", "")))
        out.append(replace(difference, written_by=tuple(ranked)))
    return out


def _delivery(line: Mapping[str, Any]) -> str:
    return json.dumps([line.get("function"), line.get("source"), *(line.get(f) for f in DELIVERY_FIELDS
                                                                    if f not in ("method", "path"))], default=str)


def _writer(request_id: str, operation: str, line: Mapping[str, Any] | None, handed: Counter[str]) -> dict[str, Any]:
    if line is None:  # its worker died before the invoker logged it, or the line was cut
        return {"request_id": request_id, "operation": operation, "suspect": True,
                "outcome": "no invocation line (its worker died before the invoker logged it?)"}
    times = handed[_delivery(line)]
    outcome, attempt = str(line.get("outcome", "?")), int(line.get("attempt") or 1)
    ids = ", ".join(f"{f} {line[f]}" for f in DELIVERY_FIELDS if line.get(f))
    return {"request_id": request_id, "operation": operation, "function": line.get("function"),
            "source": line.get("source"), "delivery": ids, "attempt": attempt, "outcome": outcome,
            "time": line.get("timestamp", ""), "handled": times,
            "suspect": times > 1 or attempt > 1 or outcome != "success"}

