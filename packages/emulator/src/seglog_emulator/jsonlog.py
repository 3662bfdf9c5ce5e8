"""The log of emulator modules that also run inside a worker process (the wrapper, the IAM guard, the fault
schedule): structlog in the emulator's own processes, and in a worker one JSON object per line written straight to
standard error, with no library at all (issue 36: a handler's artifact need not hold structlog, and the wrapper
must not configure the handler's logging — Lambda's runtime does not configure structlog either).

A worker's lines have the shape structlog's JSONRenderer writes in the emulator's processes (``event``,
``level``, ``timestamp``, the fields), plus ``function_name`` and ``request_id`` while an invocation runs; the
invoker reads them back off the worker's standard error (:class:`seglog_emulator.invoker.LogTap`) for the console
and the metrics, exactly as it reads the handler's own JSON lines.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

#: Set by the worker wrapper (:func:`write_directly`): lines go straight to fd 2, not through structlog.
_direct = False
#: Where a worker's lines go once its invoker is gone (:class:`WorkerStderr`); None: dropped.
_fallback: int | None = None


def write_line(data: bytes) -> None:
    """Write ``data`` to the worker's standard error in one write: the invoker's log tap; once that pipe has no
    reader (the invoker's process died: a poller_restart, a child killed), the fallback descriptor the invoker
    handed down (its own destination), so the lines of an invocation that runs on are kept and the handler never
    sees a broken pipe, as a Lambda function never does when the service loses its connection."""
    global _fallback
    try:
        os.write(2, data)
        return
    except OSError:
        pass
    target, _fallback = _fallback, None
    if target is not None:
        try:
            os.dup2(target, 2)  # every later write (print, structlog, logging) goes there directly
            os.dup2(target, 1)
            os.write(2, data)
            return
        except OSError:
            pass
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


class WorkerStderr:
    """``sys.stdout`` and ``sys.stderr`` of a worker: text written through :func:`write_line`, whole lines at a
    time (a partial line is held until its newline or a flush)."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self) -> None:
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            whole, _, self._pending = self._pending.rpartition("\n")
            write_line((whole + "\n").encode("utf-8", "replace"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            write_line(text.encode("utf-8", "replace"))

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 2

    def writable(self) -> bool:
        return True


def install_worker_stderr(fallback: int | None) -> None:
    """In a worker: its stdout and stderr write through :func:`write_line`, falling back to ``fallback``."""
    global _fallback
    _fallback = fallback
    sys.stdout = sys.stderr = WorkerStderr()
#: The worker's ids for the invocation in flight (``function_name``, ``request_id``).
_context: dict[str, Any] = {}


def write_directly() -> None:
    """From now on, this process's lines are written to standard error without structlog (a worker)."""
    global _direct
    _direct = True


def bind(**ids: Any) -> None:
    """Ids added to every line this worker writes until :func:`clear`."""
    _context.update(ids)


def clear() -> None:
    _context.clear()


class Logger:
    """A named logger with structlog's methods (``debug`` ... ``error``; ``exc_info=True`` adds the traceback)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", event, fields)

    def _emit(self, level: str, event: str, fields: dict[str, Any]) -> None:
        if not _direct:
            import structlog

            getattr(structlog.get_logger(self.name), level)(event, **fields)
            return
        write_line(render(level, event, fields))


def get_logger(name: str) -> Logger:
    return Logger(name)


def render(level: str, event: str, fields: dict[str, Any]) -> bytes:
    """One line: the context, the fields, ``event``, ``level`` and an ISO UTC ``timestamp`` (one write: a pipe
    keeps writes up to PIPE_BUF whole, so another process's line never lands inside it)."""
    line: dict[str, Any] = {**_context, **fields}
    if line.pop("exc_info", False):
        line["exception"] = traceback.format_exc()
    line.update(event=event, level=level, timestamp=dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z"))
    return json.dumps(line, default=str).encode() + b"\n"


def current_request_id() -> str:
    """The request id of the invocation in flight in this worker ("" between invocations)."""
    return str(_context.get("request_id", ""))


def embedded_metric(namespace: str, name: str, dimensions: dict[str, str], value: float) -> dict[str, Any]:
    """The fields of a log line in CloudWatch's embedded metric format for one datapoint (CloudWatch User Guide,
    CloudWatch_Embedded_Metric_Format_Specification): the emulator's metrics read them back from the log
    (:func:`seglog_emulator.metrics.points_of`), whichever process wrote the line."""
    return {"_aws": {"Timestamp": int(dt.datetime.now(dt.UTC).timestamp() * 1000),
                     "CloudWatchMetrics": [{"Namespace": namespace, "Dimensions": [sorted(dimensions)],
                                            "Metrics": [{"Name": name, "Unit": "Count"}]}]},
            **dimensions, name: value}


def json_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The lines that are JSON objects (a log also has plain lines, and a killed process's last may be cut): how a
    chaos run reads its emulator's log."""
    for line in lines:
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def read_json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """:func:`json_lines` of the file at ``path`` (nothing if there is none)."""
    if path.is_file():
        yield from json_lines(path.read_text(errors="replace").splitlines())

