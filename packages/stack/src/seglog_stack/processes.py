"""Detached server processes and their pid files: start, recognise, stop.

A process is started in a new session (``start_new_session=True``), so it outlives the ``seglog up`` that
started it and a Ctrl-C in that terminal does not reach it; its process group id is its pid, which lets
``stop`` also end its children (LocalStack's DynamoDB Local JVM).

The pid file ``<run dir>/<name>.pid`` holds JSON: pid, the process's start time (so a recycled pid is not
mistaken for ours), port, profile and log path.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import structlog

log = structlog.get_logger("seglog.stack")

# Processes this Python process started, kept so it can reap them (wait) after stopping them; a process
# started by an earlier `seglog up` is not our child and is reaped by init instead.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True, kw_only=True)
class PidRecord:
    """What we wrote down when we started a process."""

    name: str
    pid: int
    create_time: float
    port: int
    profile: str
    log_path: str

    @classmethod
    def load(cls, path: Path) -> PidRecord | None:
        """The record in ``path``; None if it is missing or unreadable (a torn write, an old format)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None

    def save(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def is_alive(record: PidRecord) -> bool:
    """Whether the process of ``record`` still runs: same pid and start time, and not a zombie."""
    return pid_running(record.pid, record.create_time)


def pid_running(pid: int | None, create_time: float | None = None) -> bool:
    """Whether process ``pid`` runs (not a zombie) and, given ``create_time``, is the one started then (a pid
    can be reused once its process is gone)."""
    if not pid:
        return False
    try:
        process = psutil.Process(pid)
        if create_time is not None and abs(process.create_time() - create_time) > 1.0:
            return False
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def spawn(
    *,
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    log_path: Path,
    port: int,
    profile: str,
) -> PidRecord:
    """Start ``argv`` detached, its output appended to ``log_path``; return its record (not yet saved)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log_file:
        log_file.write(
            f"\n=== seglog: starting {name} at {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(argv)}\n".encode()
        )
        log_file.flush()
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[popen.pid] = popen
    try:
        create_time = psutil.Process(popen.pid).create_time()
    except psutil.Error:
        create_time = time.time()  # already gone; the health wait reports its exit with the log
    log.info("stack.process.started", process=name, pid=popen.pid, port=port, log=str(log_path))
    return PidRecord(
        name=name, pid=popen.pid, create_time=create_time, port=port, profile=profile, log_path=str(log_path)
    )


def _wait_gone(record: PidRecord, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the process to end (reaping it if it is our child)."""
    popen = _CHILDREN.get(record.pid)
    if popen is not None:
        try:
            popen.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive(record):
            return True
        time.sleep(0.1)
    return not is_alive(record)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop(record: PidRecord, *, timeout: float = 15.0) -> None:
    """SIGTERM the process, wait up to ``timeout`` s, then SIGKILL its whole process group.

    Stragglers of the group (children that outlived their parent) are killed too, but only when the leader
    was seen alive as ours: a stale record's pid may since belong to an unrelated process group.
    """
    ours = is_alive(record)
    if ours:
        log.info("stack.process.stopping", process=record.name, pid=record.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGTERM)
        if not _wait_gone(record, timeout):
            log.warning("stack.process.kill", process=record.name, pid=record.pid, waited_seconds=timeout)
            _signal_group(record.pid, signal.SIGKILL)
            _wait_gone(record, 5.0)
    if ours:
        # The group id is the leader's pid (new session): kill what is left of it.
        _signal_group(record.pid, signal.SIGKILL)
    popen = _CHILDREN.pop(record.pid, None)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(5.0)


def forget(record: PidRecord) -> None:
    """Drop a dead process we started (reaping it, so it leaves no zombie)."""
    popen = _CHILDREN.pop(record.pid, None)
    if popen is not None:
        popen.poll()


def exit_code(record: PidRecord) -> int | None:
    """The exit code if this Python started the process and it has ended, else None."""
    popen = _CHILDREN.get(record.pid)
    return popen.poll() if popen is not None else None


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log file ('' if it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 64_000))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
