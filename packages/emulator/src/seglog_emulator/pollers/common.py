"""What both pollers share: the invoker they call, the poller_restart fault (its site is the model's)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from seglog_awsmodel.fault_sites import restart_site
from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.schedule import Decision, FaultSchedule
from seglog_emulator.invoker import InvocationResult

log = structlog.get_logger("seglog.poller")

#: Exit status of a poller process that a poller_restart fault stopped (the supervisor starts it again).
RESTART_EXIT_STATUS = 75


class Invoker(Protocol):
    """The part of :class:`seglog_emulator.invoker.LambdaInvoker` a poller uses."""

    def invoke(self, event: Any, *, attempt: int = 1, source: str = "",
               crash_points: Iterable[str] = (), timeout: float | None = None, clock_skew: float = 0.0,
               environment: Mapping[str, str] | None = None,
               log_fields: Mapping[str, Any] | None = None,
               crash_after_call: Decision | None = None) -> InvocationResult: ...


def maybe_restart(faults: FaultSchedule | None, name: str, key: str) -> None:
    """The poller_restart fault: this poller process exits here, its in-memory state lost (the supervisor
    starts it again). Called between an invocation and its checkpoint or deletes, the worst moment. The site
    carries the process's incarnation, so no restart repeats in the next process (two SQS messages with the same
    body and receive count — a job the router sent twice — made the same site in tests/emulator/test_liveness.py)."""
    if faults is not None and faults.decide(FaultKind.POLLER_RESTART,
                                            restart_site(name, key, faults.incarnation)):
        log.warning("poller restart (injected fault): exiting", poller=name)
        os._exit(RESTART_EXIT_STATUS)
