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

from seglog_core.crashpoints import ENV_VAR, armed, should_crash


def arm(points: Iterable[str]) -> None:
    """Arm exactly ``points`` in this process (replacing any armed before)."""
    chosen = sorted(set(points))
    if chosen:
        os.environ[ENV_VAR] = ",".join(chosen)
    else:
        os.environ.pop(ENV_VAR, None)


def disarm() -> None:
    """Arm nothing."""
    arm(())


__all__ = ["ENV_VAR", "arm", "armed", "disarm", "should_crash"]
