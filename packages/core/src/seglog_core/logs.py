"""structlog set-up: JSON lines for machines (Lambda, emulator workers, CI), the console renderer on a terminal.

Correlation ids (log_id, segment, entry, message_id, shard_id, attempt) travel as context variables bound
where the work starts (STYLE "Logging").
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog


def configure(*, json: bool | None = None, level: int | str = logging.INFO, stream: Any = None) -> None:
    """Configure structlog once for this process.

    Args:
        json: JSON lines when true; the console renderer when false; by default JSON unless ``stream`` is a tty.
        level: the lowest level that is printed.
        stream: where lines go (standard error by default, so command output on stdout stays clean).
    """
    stream = stream or sys.stderr
    if json is None:
        json = not (hasattr(stream, "isatty") and stream.isatty())
    if isinstance(level, str):
        level = logging.getLevelNamesMapping()[level.upper()]
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # One write per line (message and newline together): the emulator's processes share one stderr, and
        # print()'s two writes, unbuffered in Lambda workers (PYTHONUNBUFFERED), let another process's line land
        # between a message and its newline. A pipe keeps writes up to PIPE_BUF (4 KiB) whole.
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
