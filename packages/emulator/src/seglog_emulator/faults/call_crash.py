"""crash_after_call: kill -9 between any two AWS calls of an invocation, in any application (issue 37, point 1).

Unlike worker_crash, which needs the application's named crash points and its invocation hook, this kind needs
nothing of the application. Two halves:

* where an invocation is sent (a poller, the gateway, the scheduler, the Lambda API), :func:`draw_crash_after_call`
  peeks at the decision for the delivery's stable site: ``call``, the number of the AWS call after which the worker
  dies. The invoker hands it to the worker with the request (``"crash_after_call": {"call": N, "key": ...}``);
* in the worker, a :class:`CallCounter` on every botocore client counts the calls the invocation completes
  (``after-call``: the service answered, its side effect stands) and, as call N returns, logs
  :data:`CRASH_AFTER_CALL_EVENT`, records the fault in the run's fault log and SIGKILLs the process. The answer never
  reaches the handler: the "lost answer after a side effect" of a Lambda execution environment that dies.

The fault is recorded when it happens, not when it is drawn: an invocation that makes fewer than N calls is not
crashed and leaves no trace, so a chaos report counts crashes, and its coverage the kind, only where one happened.
The invoker then sees the worker die (Runtime.ExitError) and the trigger retries as AWS does (AWS Lambda Developer
Guide, "Understanding retry behavior in Lambda").
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import FaultKind
from seglog_emulator import jsonlog
from seglog_emulator.faults.schedule import Decision, FaultSchedule
from seglog_emulator.faults.writes import WRITE_EVENT, written

log = jsonlog.get_logger("seglog.emulator.faults")

#: The worker's last line before it kills itself (a chaos run's log and timeline read it).
CRASH_AFTER_CALL_EVENT: Final = "crash after call: killing this process"
#: The request's field that arms the counter for one invocation.
REQUEST_FIELD: Final = "crash_after_call"
#: Where a call's writes wait, in botocore's request context, for the service's answer.
_WRITES: Final = "seglog_writes"


def draw_crash_after_call(faults: FaultSchedule | None, *parts: object) -> Decision | None:
    """The crash_after_call decision for the delivery ``parts`` name (stable across runs, as worker_crash's site is:
    a message's body and receive count, a batch's keys and attempt), peeked and not recorded: the worker records it
    if the call comes. None: no fault, or no plan."""
    if faults is None:
        return None
    return faults.peek(FaultKind.CRASH_AFTER_CALL, site("call", *parts))


def request_field(decision: Decision | None) -> dict[str, Any] | None:
    """What the invoker sends the worker for ``decision`` (None: nothing to arm)."""
    if decision is None or decision.amount is None:
        return None
    return {"call": decision.amount, "key": decision.key}


def kill_self() -> None:
    """SIGKILL this process after flushing what it printed (the line saying why comes first)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream must not stop the kill
            stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class CallCounter:
    """Counts the AWS calls of the invocation in flight on every client :meth:`attach` is given, and kills the
    process when the armed call completes.

    Args:
        record: where the fault goes when it happens (the run's fault log); None: only the log line.
        kill: how the process dies, a seam for tests (SIGKILL of this process by default).
    """

    def __init__(self, *, record: Callable[[Decision], None] | None = None,
                 kill: Callable[[], None] = kill_self, writes: bool = False) -> None:
        self._record = record
        self._kill = kill
        self._writes = writes
        self._lock = threading.Lock()
        self._calls = 0
        self._armed: tuple[int, str] | None = None
        self._request_id: str | None = None

    @classmethod
    def for_worker(cls, process: str) -> CallCounter:
        """The counter of a worker process, recording into the run's fault log when the supervisor set a plan (and
        logging the invocations' writes when the plan's runtime asks for them)."""
        from seglog_emulator.faults.runtime import FaultRuntime

        runtime = FaultRuntime.from_env()
        return cls(record=runtime.schedule(process).record if runtime is not None else None,
                   writes=runtime is not None and runtime.record_writes)

    def attach(self, client: Any) -> None:
        """Count ``client``'s calls, whatever its service. First among the after-call hooks, so a hook that raises
        (the injector's lost response) cannot hide a call from the count. With ``writes``, each successful writing
        call of an invocation is logged (:mod:`.writes`) before the count can kill the process."""
        service = client.meta.service_model.service_name

        def stash(params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            context[_WRITES] = written(service, model.name, params)

        def counted(model: Any, context: dict[str, Any] | None = None, http_response: Any = None,
                    **_: Any) -> None:
            records = (context or {}).get(_WRITES)
            if records and http_response is not None and http_response.status_code < 300:
                self._wrote(service, model.name, records)
            self._completed(service, model.name)

        if self._writes:  # last: boto3's DynamoDB resources turn their values into AttributeValues before it
            client.meta.events.register_last("before-parameter-build.*.*", stash,
                                             unique_id=f"seglog-call-writes-{id(self)}")
        client.meta.events.register_first("after-call.*.*", counted, unique_id=f"seglog-call-counter-{id(self)}")

    def arm(self, armed: Mapping[str, Any] | None, *, request_id: str | None = None) -> None:
        """Start counting one invocation's calls from zero; with ``armed`` (:func:`request_field`), die after call
        ``armed["call"]``. ``request_id`` names the invocation in the lines of its writes."""
        with self._lock:
            self._calls = 0
            self._armed = (int(armed["call"]), str(armed.get("key", ""))) if armed else None
            self._request_id = request_id

    def disarm(self) -> None:
        """The invocation is over: its background calls, if any, are not counted."""
        with self._lock:
            self._armed = None
            self._request_id = None

    def _wrote(self, service: str, operation: str, records: list[dict[str, Any]]) -> None:
        with self._lock:
            request_id = self._request_id
        if request_id is not None:
            log.info(WRITE_EVENT, service=service, operation=operation, records=records, invocation=request_id,
                     pid=os.getpid())

    def _completed(self, service: str, operation: str) -> None:
        with self._lock:
            if self._armed is None:
                return
            self._calls += 1
            call, key = self._armed
            if self._calls != call:
                return
        log.warning(CRASH_AFTER_CALL_EVENT, fault=str(FaultKind.CRASH_AFTER_CALL), call=call, service=service,
                    operation=operation, key=key, pid=os.getpid())
        if self._record is not None:
            self._record(Decision(kind=FaultKind.CRASH_AFTER_CALL, key=key, amount=call))
        self._kill()


__all__ = ["CRASH_AFTER_CALL_EVENT", "REQUEST_FIELD", "CallCounter", "draw_crash_after_call", "kill_self",
           "request_field"]
