"""The invoker's end of a worker process (:mod:`seglog_emulator.worker_process` is the worker's): the protocol
over its stdin and stdout, and a tap on its standard error.

The tap (:class:`LogTap`) reads every line the worker writes on stderr — the handler's logs and prints, the
wrapper's own JSON lines — and copies it to the invoker's destination unchanged (the console, the emulator's log
file), as Lambda copies a function's output to its log stream. JSON lines are also read for what they stand for,
here, in the emulator's process, so any handler gets them whatever it logs with: the live console's events
(:data:`seglog_emulator.logfeed.FORWARDED`) and the CloudWatch metrics of embedded-metric-format lines
(:func:`seglog_emulator.metrics.points_of`; CloudWatch Logs extracts them from a function's log the same way).

The worker writes :data:`seglog_emulator.worker_process.DONE_MARK` and a request id when an invocation (or the
Init) is over, before it replies; the invoker waits for the tap to pass that mark (:meth:`WorkerProcess.logs_through`)
so every line of an invocation is copied before ``invoke`` returns::

    worker   stderr: line line DONE <id>      stdout: reply
    tap             copy copy  └─ done = id
    invoker                                   receive(reply) ── logs_through(id) ── return
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any, Final

from seglog_emulator import logfeed, metrics
from seglog_emulator.worker_process import DONE_MARK, FALLBACK_VARIABLE

#: How long a worker gets to exit on its own (stdin closed, or dying) before it is killed.
EXIT_GRACE_SECONDS = 1.0
#: How long the invoker waits for the tap to copy an invocation's lines (they are in the pipe already).
TAP_WAIT_SECONDS: Final = 5.0
_LEVELS: Final = logging.getLevelNamesMapping()


class LogTap:
    """Copies a worker's stderr to ``destination`` line by line, and reads its JSON lines for the console and
    the metrics (see the module docstring). One thread per worker, ending at the pipe's end of file.

    Args:
        fd: the read end of the worker's stderr pipe (owned and closed by the tap).
        lane: names the worker on the live console ("<Function> pid <pid>").
        destination: where lines are copied: a file descriptor, a file, ``subprocess.DEVNULL`` (nowhere) or None
            (this process's stderr).
        level: JSON lines under this level are not copied (they are still read: the handler logs at info for the
            console and the metrics when the emulator's log keeps only warnings).
    """

    def __init__(self, fd: int, *, lane: str, destination: int | IO[Any] | None, level: int = 0) -> None:
        self._fd = fd
        self.lane = lane
        self._write = _writer(destination)
        self.level = level
        self._done = threading.Condition()
        self.last_done: str | None = None
        self.ended = False
        self._thread = threading.Thread(target=self._run, name=f"log tap {lane}", daemon=True)
        self._thread.start()

    def wait_for(self, request_id: str, timeout: float = TAP_WAIT_SECONDS) -> bool:
        """Wait until the worker's mark for ``request_id`` (or its end of file) has been read."""
        with self._done:
            return self._done.wait_for(lambda: self.last_done == request_id or self.ended, timeout=timeout)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self._fd, 1 << 16):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._line(line)
            if buffer:
                self._line(buffer)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            with self._done:
                self.ended = True
                self._done.notify_all()

    def _line(self, line: bytes) -> None:
        if line.startswith(DONE_MARK):
            with self._done:
                self.last_done = line[len(DONE_MARK):].decode(errors="replace")
                self._done.notify_all()
            return
        if line.startswith(b"{") and (metrics.directory() is not None or logfeed.address() is not None
                                      or self.level > logging.INFO):
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                self._read(event)
                if _LEVELS.get(str(event.get("level", "info")).upper(), logging.INFO) < self.level:
                    return
        self._write(line + b"\n")

    def _read(self, event: dict[str, Any]) -> None:
        if event.get("event") in logfeed.FORWARDED:
            logfeed.send(event, lane=self.lane)
        if metrics.directory() is not None:
            try:
                for namespace, name, dims, value in metrics.points_of(event):
                    metrics.put(namespace, name, dims, value)
            except Exception:  # a line that is not what it seems: the line matters more than its metric
                metrics.dropped += 1


def _descriptor(destination: int | IO[Any] | None) -> int | None:
    """The file descriptor ``destination`` writes to (None: nowhere, or an object without one)."""
    if destination == subprocess.DEVNULL:
        return None
    if isinstance(destination, int):
        return destination if destination >= 0 else None
    try:
        return (sys.stderr if destination is None else destination).fileno()
    except (AttributeError, OSError, ValueError):  # a test's StringIO, pytest's capture: no descriptor
        return 2 if destination is None else None


def _writer(destination: int | IO[Any] | None) -> Any:
    """A function writing one line, whole, to ``destination`` (see :class:`LogTap`): to its descriptor, or, for a
    file object without one (a test's StringIO), through its ``write``."""
    fd = _descriptor(destination)
    if fd is None:
        if destination is None or isinstance(destination, int):
            return lambda _line: None
        stream = destination
        return lambda line: (stream.write(line.decode(errors="replace")), stream.flush())

    def write(line: bytes) -> None:
        with contextlib.suppress(OSError):
            os.write(fd, line)
    return write


class WorkerDiedError(Exception):
    """The worker's stdout closed: the process is gone."""


class WorkerProcess:
    """The invoker's handle on one worker process: its end of the protocol. Used by one thread at a time."""

    @classmethod
    def start(cls, argv: list[str], env: Mapping[str, str], *, stderr: int | IO[Any] | None = None,
              lane: str = "worker", level: int = 0) -> WorkerProcess:
        """Start ``argv`` (the sandbox's command, :func:`seglog_emulator.sandbox.command`) with exactly ``env`` as
        its environment; its stderr goes to ``stderr`` through a :class:`LogTap` (``lane``, ``level``: its own).

        A new session keeps the terminal's Ctrl-C away from workers: the invoker decides when they stop.
        """
        read_end, write_end = os.pipe()
        # The worker writes here itself if this process dies while it runs on (its lines are not lost).
        fallback = _descriptor(stderr)
        passed = (os.dup(fallback),) if fallback is not None else ()
        env = {**env, **({FALLBACK_VARIABLE: str(passed[0])} if passed else {})}
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=write_end,
                                    env=dict(env), start_new_session=True, pass_fds=passed)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
            for fd in passed:
                os.close(fd)
        return cls(proc, LogTap(read_end, lane=f"{lane} pid {proc.pid}", destination=stderr, level=level))

    def __init__(self, proc: subprocess.Popen[bytes], tap: LogTap | None = None) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.pid = proc.pid
        self.tap = tap
        self.stdin: IO[bytes] = proc.stdin
        self._fd = proc.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._buffer = bytearray()
        self.invocations = 0
        self.request_id: str | None = None
        self.killed = False

    def alive(self) -> bool:
        return not self.killed and self.proc.poll() is None

    def send(self, message: Mapping[str, Any], *, event_json: str | None = None) -> None:
        """Write one line, with ``event_json`` (already encoded) as its "event".

        Raises:
            WorkerDiedError: the worker is gone.
        """
        line = json.dumps(message)
        if event_json is not None:
            line = f'{line[:-1]}{", " if message else ""}"event": {event_json}}}'
        try:
            self.stdin.write(line.encode() + b"\n")
            self.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:  # ValueError: reap() closed the pipe
            raise WorkerDiedError from exc

    def receive(self, deadline: float) -> dict[str, Any]:
        """Read one line before ``deadline`` (time.monotonic()).

        Raises:
            TimeoutError: the deadline passed first.
            WorkerDiedError: end of file, the worker is gone.
        """
        while (end := self._buffer.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise TimeoutError
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                raise WorkerDiedError
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        message: dict[str, Any] = json.loads(line)
        return message

    def logs_through(self, request_id: str) -> None:
        """Wait (briefly) until the tap has copied every line the worker wrote for ``request_id``."""
        if self.tap is not None:
            self.tap.wait_for(request_id)

    def kill(self) -> None:
        self.killed = True
        with contextlib.suppress(ProcessLookupError):  # already gone
            self.proc.send_signal(signal.SIGKILL)

    def reap(self, grace: float = 0.0) -> None:
        """Wait for the process (killing it after ``grace`` seconds) and close its pipes."""
        for stream in (self.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:  # a broken pipe on close's flush: the process is gone already
                pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
        self._selector.close()
        if self.tap is not None:  # the process is gone: its last lines are in the pipe (a grandchild may hold it)
            self.tap.join(EXIT_GRACE_SECONDS)

    def exit_status(self) -> str:
        """How the process ended, in the words Lambda uses for Runtime.ExitError."""
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:  # "signal: killed", "signal: segmentation fault", as Lambda words it
            return f"signal: {(signal.strsignal(-code) or str(-code)).lower()}"
        return f"exit status {code}"
