"""Reading a run's log events — fed live to the console, or read from a run's log for its report: values checked
and cut to size, lanes named and put in their group, ids picked for hovers, a client try's outcome. One set of
rules, so the console and report.html name and colour the same run the same way.

Everything a process logs is untrusted input here (a handler's log line carries whatever it bound): a value of
the wrong type becomes a default, a long one is cut, so nothing read can make the state large or fail to encode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

#: Longest string kept from an event (names, ids, labels).
MAX_TEXT: Final = 80
#: Correlation ids shown on hover (the report model's ``Ids``); ``api_request_id`` is the gateway's request id,
#: on the API invocation's line and a client's answer alike (what :func:`seglog_report.causes.connect` links).
ID_KEYS: Final = ("request_id", "api_request_id", "attempt", "source", "pid", "shard_id", "message_id", "log_id",
                  "segment", "entry", "crash_point", "key", "child")


def text(value: Any, default: str) -> str:
    """``value`` as a short string (``default`` when it is not a string or a number)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return default
    return str(value)[:MAX_TEXT] or default


#: A worker process's lane (:func:`function_lane`).
_FUNCTION_LANE: Final = re.compile(r".+ pid \d+$")


def function_lane(function: str, pid: int) -> str:
    """The lane of one worker process of ``function``: ``"SnapshotWorkerFunction pid 4242"``."""
    return f"{function} pid {pid}"


def client_lane(client: str) -> str:
    """A client's lane: its thread's name; the chaos runner's main thread only creates the sheets."""
    return "setup (creates the sheets)" if client == "MainThread" else client


def group(lane: str) -> str:
    """The report model's lane group of a process's lane: worker processes' (``<Function> pid <n>``) are the
    functions', the rest (the supervisor, its children, the chaos runner) the operator's."""
    return "function" if _FUNCTION_LANE.fullmatch(lane) else "operator"


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


def try_outcome(status: int | str | None) -> str:
    """A client try's outcome from its HTTP status (a number, its text, or None/"lost" for no answer): no answer
    "lost", answered 2xx "acknowledged", 5xx or 429 "retried", any other answer "error"."""
    if isinstance(status, str):
        status = int(status) if status.isdigit() else None
    if status is None:
        return "lost"
    if 200 <= status < 300:
        return "acknowledged"
    return "retried" if status >= 500 or status == 429 else "error"
