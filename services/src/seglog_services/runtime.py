"""What every function shares: configuration from the environment, clients built once per container, logs.

Resource names come from the environment the template sets (SEGLOG_*); endpoints from the SDK's own
variables, so the same code runs on AWS, under the emulator and in tests.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

import structlog

from seglog_aws.backend import Backend
from seglog_aws.resources import Resources
from seglog_core import logs


@functools.cache
def backend() -> Backend:
    """Clients and stores, built on first use and reused by later invocations of the same container."""
    if not structlog.is_configured():  # in Lambda; a host process (the demo, tests) configured its own
        logs.configure(json=True, level=os.environ.get("SEGLOG_LOG_LEVEL", "INFO"))
    return Backend.connect(Resources.from_env())


def bind(function: str, context: Any, **ids: Any) -> None:
    """Clear and bind the correlation ids of one invocation (STYLE "Logging")."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(
        function_name=function, request_id=getattr(context, "aws_request_id", None), **ids)


def remaining_seconds(context: Any) -> float:
    """Seconds before the function's time limit (a generous default when run without a Lambda context)."""
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return getter() / 1000.0 if getter else 900.0


# Powertools logs partial-batch failures through the standard library; keep them out of structlog's lines.
logging.getLogger("aws_lambda_powertools").setLevel(logging.WARNING)
