"""What an invocation gives back, and what a fault injector sees of a worker: the invoker's results
(:class:`seglog_emulator.invoker.LambdaInvoker` makes them; pollers, the gateway and the Lambda API read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """How an invocation ended."""

    SUCCESS = "success"
    ERROR = "error"  # the handler raised (or could not be loaded, or returned what is not JSON)
    TIMEOUT = "timeout"  # past the function's timeout; the worker was killed
    CRASHED = "crashed"  # the worker died mid-invocation (kill -9, os._exit, a crash point, a segfault)


@dataclass(frozen=True, kw_only=True)
class InvocationResult:
    """What one invocation gave: the handler's return value, or why there is none.

    ``duration_ms`` runs from sending the event to the outcome; for a failed Init it is the Init's time.
    ``init_duration_ms`` is set on cold starts (process start and module import, Lambda's "Init Duration").
    """

    outcome: Outcome
    function: str
    request_id: str
    pid: int
    duration_ms: float
    cold_start: bool
    init_duration_ms: float | None = None
    payload: Any = None
    #: AWS requests the invocation made, per service (``{"dynamodb": {"requests": 3, "rcu": 1.0, ...}}``);
    #: empty when the worker died before it could say.
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    #: CPU time the handler took in its worker process, and the process's peak memory (Lambda's REPORT line's
    #: "Max Memory Used"); None when the worker died before it could say.
    cpu_ms: float | None = None
    max_rss_mb: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    stack_trace: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.SUCCESS


@dataclass(frozen=True, kw_only=True)
class WorkerInfo:
    """One live worker process, as a fault injector sees it."""

    pid: int
    busy: bool
    request_id: str | None
    invocations: int
