"""Arming named crash points for one invocation (DESIGN §7, §10.4); the points themselves are in
:mod:`seglog_core.crashpoints`, where the services call :func:`should_crash`.

The fault injector names the points an invocation should die at (``crash_points`` on
:meth:`seglog_emulator.invoker.LambdaInvoker.invoke`); the worker process arms them here, in-process, just
before it calls the handler and disarms them after. No environment variable or other input a deployed
function could be given arms them.
"""

from __future__ import annotations

from seglog_core.crashpoints import arm, armed, disarm, should_crash

__all__ = ["arm", "armed", "disarm", "should_crash"]
