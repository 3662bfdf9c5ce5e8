"""Named crash points: where a fault injector may kill -9 the process running a handler (DESIGN §7).

Code under test calls :func:`should_crash` at each named step (the snapshot worker's ``crash`` hook, the
stream router after SendMessage). A point is armed by naming it in the ``SEGLOG_CRASH_POINTS`` environment
variable (comma-separated); the emulator's worker process sets it for one invocation
(:mod:`seglog_emulator.crash`). An armed point kills the process with SIGKILL, so nothing after it runs — no
``finally``, no flushed buffers — as when Lambda loses an execution environment. Unarmed, a point costs one
environment lookup; on AWS nothing ever arms one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import Final

import structlog

#: The environment variable naming the armed points, comma-separated.
ENV_VAR: Final = "SEGLOG_CRASH_POINTS"
#: Seconds this process's :func:`clock` runs ahead of the real one (the emulator's clock_skew fault).
CLOCK_SKEW_ENV: Final = "SEGLOG_CLOCK_SKEW_SECONDS"

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


def armed() -> frozenset[str]:
    """The points armed in this process."""
    return frozenset(p for p in os.environ.get(ENV_VAR, "").split(",") if p)


def should_crash(point: str) -> None:
    """Kill this process with SIGKILL if ``point`` is armed; return otherwise.

    One log line names the point first (flushed, so it survives the kill), so a chaos run's logs show where
    each worker died.
    """
    if point not in armed():
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
    clock_skew fault sets for one invocation (``SEGLOG_CLOCK_SKEW_SECONDS``; on AWS nothing sets it)."""
    skew = os.environ.get(CLOCK_SKEW_ENV)
    return time.time() + (float(skew) if skew else 0.0)
