"""Named crash points: where a fault injector may kill -9 the process running a handler (DESIGN §7, §10.4).

Code under test calls :func:`should_crash` at each named step (the snapshot worker's ``crash`` hook, the
stream router after SendMessage). Points are armed only in-process, by :func:`arm`, which only the emulator's
worker wrapper calls (:mod:`seglog_emulator.crash`), for one invocation. Nothing here reads the environment
or any other input a deployed function could be given, so on AWS no configuration can arm a point or skew
the clock: unarmed, a point is one set lookup.

An armed point kills the process with SIGKILL, so nothing after it runs — no ``finally``, no flushed
buffers — as when Lambda loses an execution environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable
from typing import Final

import structlog

#: The snapshot worker's points, in protocol order (DESIGN §5, §7).
WORKER_CRASH_POINTS: Final = (
    "after_pending_upsert",
    "after_claim",
    "mid_chunk",
    "after_root",
    "after_segment_update",
    "before_delete_message",
)
#: The stream router's point: after SendMessage, before the batch is checkpointed (DESIGN §7).
ROUTER_AFTER_SEND: Final = "router_after_send"

log = structlog.get_logger("seglog.crash")

_armed: frozenset[str] = frozenset()
_clock_skew: float = 0.0


def arm(points: Iterable[str], *, clock_skew: float = 0.0) -> None:
    """Arm exactly ``points`` in this process (replacing any armed before), and run :func:`clock`
    ``clock_skew`` seconds ahead. Called by the emulator's worker wrapper around one invocation."""
    global _armed, _clock_skew
    _armed = frozenset(points)
    _clock_skew = float(clock_skew)


def disarm() -> None:
    """Arm nothing; the clock is the real one again."""
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
    kill_self()


def kill_self() -> None:
    """SIGKILL this process after flushing what it printed (a log line saying why should come first)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream must not stop the crash
            stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def clock() -> float:
    """The wall clock the snapshot worker stamps claims with: ``time.time()``, plus the skew the emulator's
    clock_skew fault arms for one invocation (on AWS nothing arms it)."""
    return time.time() + _clock_skew
