"""The faults of one invocation that every trigger draws alike (issue 37, point 1), where the invocation is sent, at a
site named after the delivery (``site(<what>, <trigger>, <delivery>, <attempt>)``), so a seed replays them.

function_timeout: the invocation ends as timed out ``after_ms`` into its run,
as when Lambda stops a function at its configured timeout — its worker is stopped, what it wrote so far stands, and
the trigger's caller sees what AWS shows for a timeout:

* a queue or stream mapping: a failed batch, delivered again (the message after its visibility timeout, the batch by
  the shard's retry);
* the gateway: the answer API Gateway gives for an integration that timed out
  (``seglog_awsmodel.events.api_gateway.function_failure``);
* a schedule, a notification, an ``Event`` Invoke: an asynchronous invocation that failed, retried after 1 and 2
  minutes (AWS Lambda Developer Guide, "Error handling and automatic retries in Lambda");
* a ``RequestResponse`` Invoke: ``X-Amz-Function-Error: Unhandled`` with "Task timed out" in the payload.

clock_skew: the invocation's clock runs ``ahead_ms`` ahead — the application's own clock through its invocation hook,
or, with no hook, the worker's ``time`` module (:func:`seglog_emulator.worker_process._skewed_clock`).
"""

from __future__ import annotations

from seglog_awsmodel.faults import FaultKind
from seglog_emulator.faults.schedule import FaultSchedule


def draw_timeout(faults: FaultSchedule | None, key: str) -> float | None:
    """Seconds after which the invocation at decision site ``key`` ends as timed out; None: no fault (or no plan)."""
    if faults is None:
        return None
    cut = faults.decide(FaultKind.FUNCTION_TIMEOUT, key)
    return cut.amount / 1000 if cut is not None and cut.amount is not None else None


def draw_clock_skew(faults: FaultSchedule | None, key: str) -> float:
    """Seconds the clock of the invocation at decision site ``key`` runs ahead; 0: no fault (or no plan)."""
    if faults is None:
        return 0.0
    ahead = faults.decide(FaultKind.CLOCK_SKEW, key)
    return ahead.amount / 1000 if ahead is not None and ahead.amount is not None else 0.0
