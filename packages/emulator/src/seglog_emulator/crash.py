"""Named crash points: kill -9 of a handler's own process at a chosen step (DESIGN §7).

The fault injector names the points an invocation should die at (``crash_points`` on
:meth:`seglog_emulator.invoker.LambdaInvoker.invoke`); the worker process arms them here just before it calls
the handler and disarms them after. Code under test calls :func:`should_crash` at each named step (the
snapshot worker's ``crash`` hook, DESIGN §5); an armed point kills the process with SIGKILL, so nothing after
it runs — no ``finally``, no flushed buffers, no goodbye — as when Lambda loses an execution environment.

The armed points are mirrored in the ``SEGLOG_CRASH_POINTS`` environment variable (comma-separated) for code
that would rather not import the emulator.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable

import structlog

#: The environment variable that mirrors the armed points, comma-separated.
ENV_VAR = "SEGLOG_CRASH_POINTS"

log = structlog.get_logger("seglog.crash")

_armed: frozenset[str] = frozenset()


def arm(points: Iterable[str]) -> None:
    """Arm exactly ``points`` in this process (replacing any armed before)."""
    global _armed
    _armed = frozenset(points)
    if _armed:
        os.environ[ENV_VAR] = ",".join(sorted(_armed))
    else:
        os.environ.pop(ENV_VAR, None)


def disarm() -> None:
    """Arm nothing."""
    arm(())


def armed() -> frozenset[str]:
    """The points armed in this process."""
    return _armed


def should_crash(point: str) -> None:
    """Kill this process with SIGKILL if ``point`` is armed; return otherwise.

    One log line names the point first (flushed, so it survives the kill), so a chaos run's logs show where
    each worker died.
    """
    if point not in _armed:
        return
    log.warning("crash point reached: killing this process", crash_point=point, pid=os.getpid())
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream must not stop the crash
            stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)
