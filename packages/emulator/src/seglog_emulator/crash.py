"""Arming named crash points for one invocation (DESIGN §7); the points themselves are in
:mod:`seglog_core.crashpoints`, where the services call :func:`should_crash`.

The fault injector names the points an invocation should die at (``crash_points`` on
:meth:`seglog_emulator.invoker.LambdaInvoker.invoke`); the worker process arms them here just before it calls
the handler and disarms them after. Arming sets ``SEGLOG_CRASH_POINTS`` in the worker's environment, which is
all the services read, so they never import the emulator.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from seglog_core.crashpoints import CLOCK_SKEW_ENV, ENV_VAR, armed, should_crash


def arm(points: Iterable[str], *, clock_skew: float = 0.0) -> None:
    """Arm exactly ``points`` in this process (replacing any armed before), and set the services' clock
    (:func:`seglog_core.crashpoints.clock`) ``clock_skew`` seconds ahead."""
    chosen = sorted(set(points))
    if chosen:
        os.environ[ENV_VAR] = ",".join(chosen)
    else:
        os.environ.pop(ENV_VAR, None)
    if clock_skew:
        os.environ[CLOCK_SKEW_ENV] = repr(float(clock_skew))
    else:
        os.environ.pop(CLOCK_SKEW_ENV, None)


def disarm() -> None:
    """Arm nothing; the clock is the real one again."""
    arm(())


__all__ = ["CLOCK_SKEW_ENV", "ENV_VAR", "arm", "armed", "disarm", "should_crash"]
