"""Reading fed events: values checked and cut to size, lanes put in their group, ids picked for hovers.

Everything a process sends is untrusted input here (a handler's log line carries whatever it bound): a value of
the wrong type becomes a default, a long one is cut, so nothing fed can make the state large or fail to encode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: Longest string kept from an event (names, ids, labels).
MAX_TEXT: Final = 80
#: Correlation ids shown on hover (the report model's ``Ids``).
ID_KEYS: Final = ("request_id", "attempt", "source", "pid", "shard_id", "message_id", "log_id", "segment", "entry",
                  "crash_point", "key", "child")


def text(value: Any, default: str) -> str:
    """``value`` as a short string (``default`` when it is not a string or a number)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return default
    return str(value)[:MAX_TEXT] or default


def group(lane: str) -> str:
    """The report model's lane group: ``client <name>`` lanes are clients, ``<Function> <pid>`` lanes are
    functions' worker processes, the rest (supervisor, children, the chaos runner) the operator's."""
    if lane.startswith("client "):
        return "client"
    _, sep, last = lane.rpartition(" ")
    return "function" if sep and last.isdigit() else "operator"


def ids(event: Mapping[str, Any], job: Mapping[str, Any] | None = None) -> dict[str, str | int]:
    """The event's correlation ids (and its snapshot job's log, segment and entry), each short."""
    found: dict[str, str | int] = {}
    for source in (event, job or {}):
        for key in ID_KEYS:
            value = source.get(key)
            if isinstance(value, list):  # a batch's message ids
                value = ",".join(str(v) for v in value[:3]) + (f" (+{len(value) - 3})" if len(value) > 3 else "")
            if isinstance(value, bool) or value is None:
                continue
            if isinstance(value, int):
                found[key] = value
            elif isinstance(value, str | float):
                found[key] = str(value)[:MAX_TEXT]
    return found


def try_outcome(status: str) -> str:
    """A client try's outcome colour: answered 2xx "success", no answer "lost", throttled or unavailable
    "busy", other refusals and errors "error" (the keys of :data:`seglog_report.model.OUTCOME_COLOURS`)."""
    if status == "lost":
        return "lost"
    if status.startswith("2"):
        return "success"
    if status in ("429", "503"):
        return "busy"
    return "error"
