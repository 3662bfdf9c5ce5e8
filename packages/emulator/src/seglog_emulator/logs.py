"""The emulator's own processes (supervisor, children, the worker wrapper) log one JSON object per line to standard
error: the supervisor's console and the live feed read them back (:mod:`seglog_emulator.logfeed`), and CloudWatch
Logs reads a Lambda function's the same way. The tool's configuration, apart from the application's (issue 36).
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure_json_lines(level: str) -> None:
    """Configure structlog in this process: JSON lines on standard error from ``level`` ("INFO", "DEBUG", ...) up,
    with the bound correlation ids, the level and an ISO UTC timestamp (the fields the console feed reads)."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        # One write per line: the emulator's processes share one stderr, and a pipe keeps writes up to PIPE_BUF
        # (4 KiB) whole, so another process's line never lands inside this one.
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
