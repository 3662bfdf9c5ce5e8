"""Handlers for test_invoker.py and test_sandbox.py, run in the invoker's worker processes (this directory comes
first among their code directories, before the artifact)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from seglog_core import crashpoints
from seglog_core.crashpoints import clock

#: Counts invocations served by this process: survives between invocations only in a warm worker.
invocations = 0


def echo(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global invocations
    invocations += 1
    return {"event": event, "pid": os.getpid(), "invocations": invocations}


def trivial(event: dict[str, Any], context: Any) -> None:
    return None


def fail(event: dict[str, Any], context: Any) -> None:
    raise ValueError(f"bad record {event['id']}")


def sleep(event: dict[str, Any], context: Any) -> dict[str, Any]:
    before = context.get_remaining_time_in_millis()
    started = time.time()
    time.sleep(event["seconds"])
    return {"before": before, "after": context.get_remaining_time_in_millis(), "pid": os.getpid(),
            "started": started, "ended": time.time()}


def environment(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"env": {name: os.environ.get(name) for name in event["names"]},
            "context": {name: getattr(context, name) for name in (
                "function_name", "function_version", "invoked_function_arn", "memory_limit_in_mb",
                "aws_request_id", "log_group_name", "log_stream_name")}}


def steps(event: dict[str, Any], context: Any) -> list[str]:
    """Walks named steps, calling the crash hook at each, as the snapshot worker does."""
    done = []
    for point in event["steps"]:
        crashpoints.should_crash(point)
        done.append(point)
    return done


def clock_ahead(event: dict[str, Any], context: Any) -> float:
    """How far the services' clock runs ahead of the real one in this invocation (the clock_skew fault)."""
    return clock() - time.time()


def exit_process(event: dict[str, Any], context: Any) -> None:
    os._exit(3)


def not_json(event: dict[str, Any], context: Any) -> object:
    return object()


def segfault(event: dict[str, Any], context: Any) -> None:
    import ctypes

    ctypes.string_at(0)


def noisy(event: dict[str, Any], context: Any) -> str:
    """Prints to stdout and reads stdin, which must not disturb the invoker's protocol."""
    print("a line a handler prints", flush=True)
    return f"stdin gave {sys.stdin.read()!r}"


def environment_and_dynamodb_call(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The variables named, and the error code of one DynamoDB call (made with the artifact's boto3, through
    seglog's client factory, so the worker wrapper's fault injection sees it; nothing answers at the endpoint)."""
    from botocore.exceptions import ClientError, EndpointConnectionError

    from seglog_aws.clients import client, local_session

    dynamodb = client("dynamodb", session=local_session(), endpoint_url="http://127.0.0.1:9")
    try:
        dynamodb.get_item(TableName="t", Key={"k": {"S": "x"}})
        code = None
    except ClientError as exc:
        code = exc.response["Error"]["Code"]
    except EndpointConnectionError:
        code = "no fault: the call went out"
    return {"env": {name: os.environ.get(name) for name in event["names"]}, "error_code": code}


def imports(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Which of the modules named the worker can import (None) or not (the error), and its sys.path."""
    import importlib

    found: dict[str, str | None] = {}
    for name in event["names"]:
        try:
            importlib.import_module(name)
            found[name] = None
        except ImportError as exc:
            found[name] = f"{type(exc).__name__}: {exc}"
    return {"imports": found, "path": sys.path, "flags": {"isolated": sys.flags.isolated,
                                                          "no_site": sys.flags.no_site,
                                                          "dont_write_bytecode": sys.flags.dont_write_bytecode}}


def burn(event: dict[str, Any], context: Any) -> int:
    """Busy for ``event["seconds"]`` of CPU, then sleeps ``event["idle"]`` and holds ``event["mb"]`` MB meanwhile."""
    held = bytearray(int(event.get("mb", 0)) * 1024 * 1024)
    for i in range(0, len(held), 4096):
        held[i] = 1  # touched, so resident
    started, n = time.process_time(), 0
    while time.process_time() - started < float(event.get("seconds", 0)):
        n += 1
    time.sleep(float(event.get("idle", 0)))
    return len(held)
