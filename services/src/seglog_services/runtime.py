"""What every function shares: configuration from the environment, clients built once per container, logs, and
the invocation's deadline.

Resource names come from the environment the template sets (SEGLOG_*); endpoints from the SDK's own
variables, so the same code runs on AWS, under the emulator and in tests.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator
from typing import Any

import structlog

from seglog_aws.backend import Backend
from seglog_aws.resources import Resources
from seglog_core import logs, retry


def configure_logs() -> None:
    """JSON lines on standard error, as CloudWatch Logs reads them, unless this process configured structlog
    already (a host process: the demo, tests, the simulator). In Lambda, and under the emulator, nothing else
    configures it: Lambda's runtime (and the emulator's worker wrapper) leave a function's logging to it."""
    if not structlog.is_configured():
        logs.configure(json=True, level=os.environ.get("SEGLOG_LOG_LEVEL", "INFO"))


@functools.cache
def backend() -> Backend:
    """Clients and stores, built on first use and reused by later invocations of the same container."""
    configure_logs()
    return Backend.connect(Resources.from_env())


def bind(function: str, context: Any, **ids: Any) -> None:
    """Clear and bind the correlation ids of one invocation (STYLE "Logging")."""
    configure_logs()
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=function, request_id=getattr(context, "aws_request_id", None), **ids)


@contextlib.contextmanager
def invocation(function: str, context: Any, **ids: Any) -> Iterator[None]:
    """One invocation: its correlation ids bound, and its deadline set for every retry the stores make, so that none
    runs past the function's time limit (``context.get_remaining_time_in_millis``, AWS Lambda Developer Guide,
    python-context). Without a Lambda context (a direct call) there is no deadline."""
    bind(function, context, **ids)
    getter = getattr(context, "get_remaining_time_in_millis", None)
    with retry.deadline(None if getter is None else lambda: getter() / 1000.0):
        yield


def remaining_seconds(context: Any) -> float:
    """Seconds before the function's time limit (a generous default when run without a Lambda context)."""
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return getter() / 1000.0 if getter else 900.0


# Powertools logs partial-batch failures through the standard library; keep them out of structlog's lines.
logging.getLogger("aws_lambda_powertools").setLevel(logging.WARNING)
