"""LambdaInvoker: runs one function's handler in separate worker processes, the way Lambda runs it.

Each worker process is one execution environment (AWS Lambda Developer Guide, lambda-runtime-environment):
started on demand (a cold start), it imports the handler's module once with the function's environment set
and then serves invocations one at a time, warm, until it times out, crashes or the invoker closes. At most
``concurrency`` invocations run at once; idle workers wait in a pool and the most recently used is reused
first, so a steady trickle of invocations keeps landing on a warm one.

Why ``subprocess`` with JSON lines on stdin/stdout rather than ``multiprocessing`` "spawn":

- The function's environment (SDK endpoints, resource names, Lambda's reserved variables) is the process's
  environment from exec on, before the interpreter imports anything, as in Lambda. A spawned
  ``multiprocessing`` child inherits the parent's ``os.environ`` instead, which threads cannot change safely.
- The messages are what Lambda's Runtime API carries: a JSON event in, a JSON result out. A return value that
  is not JSON fails as it fails on Lambda (Runtime.MarshalError); pickle would let it through.
- A worker killed with SIGKILL shows up as a plain end of file on its stdout — unambiguous, with no shared
  locks or semaphores left behind, and no re-import of the supervisor's ``__main__`` in the child.

The protocol itself is described in :mod:`seglog_emulator.worker_process`.

What a worker can import is the function's code and nothing of the emulator's virtualenv: ``code`` lists the
directories on its path (the unpacked artifact ``seglog build`` made, like /var/task; tests put a directory of
their own handlers first), and :mod:`seglog_emulator.sandbox` makes the isolated interpreter and the environment.
A handler whose module or dependency is missing fails its Init with Runtime.ImportModuleError, logged as Lambda's
INIT_REPORT line is, with the Init Duration.

Faults: :meth:`LambdaInvoker.kill` and :meth:`LambdaInvoker.workers` let a fault injector kill -9 a worker at
will; ``invoke(..., crash_points=...)`` arms named crash points in the worker for one invocation
(:mod:`seglog_emulator.crash`), and ``invoke(..., crash_after_call=...)`` kills it after one of its AWS calls, in
any function (:mod:`seglog_emulator.faults.call_crash`). A killed or crashed worker is never reused; the next
invocation starts a new one.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

import structlog

from seglog_awsmodel.config import FunctionSpec as FunctionSpec  # what an invoker runs; importable from here too
from seglog_emulator import logfeed, sandbox
from seglog_emulator.errors import InvokerClosedError as InvokerClosedError  # importable from here too
from seglog_emulator.faults.call_crash import REQUEST_FIELD, request_field
from seglog_emulator.iam import ENV_VAR as IAM_ENV_VAR
from seglog_emulator.iam.arns import function_arn
from seglog_emulator.invocation_result import InvocationResult as InvocationResult  # importable from here too
from seglog_emulator.invocation_result import Outcome as Outcome
from seglog_emulator.invocation_result import WorkerInfo as WorkerInfo
from seglog_emulator.worker_handle import EXIT_GRACE_SECONDS, WorkerDiedError, WorkerProcess
from seglog_emulator.worker_process import HOOK_VARIABLE

if TYPE_CHECKING:
    from seglog_emulator.faults.schedule import Decision
    from seglog_emulator.iam.evaluation import FunctionPermissions

log = structlog.get_logger("seglog.invoker")

#: Lambda's Init phase may take up to 10 seconds before the first invocation (AWS Lambda Developer Guide,
#: lambda-runtime-environment); a longer function timeout extends it, as Lambda retries Init with it.
INIT_TIMEOUT_SECONDS = 10.0
#: The account id in emulated ARNs (LocalStack's default account).
LOCAL_ACCOUNT_ID = "000000000000"


class _InitFailedError(Exception):
    """A new worker's Init failed; carries what the invocation reports instead."""

    def __init__(self, outcome: Outcome, pid: int, init_ms: float, error_type: str, message: str,
                 stack: Iterable[str] = ()) -> None:
        self.outcome, self.pid, self.init_ms = outcome, pid, init_ms
        self.error_type, self.message, self.stack = error_type, message, tuple(stack)
        super().__init__(message)


class LambdaInvoker:
    """Invokes one function in pooled worker processes; ``invoke`` is blocking and thread-safe.

    Args:
        function: the function to run.
        code: the directories on the workers' path, first first: the function's unpacked artifact (its ``code/``
            from ``seglog build``), after any directory of handlers a test puts first.
        concurrency: at most this many invocations at once (callers beyond it wait); 1 by default.
        stderr: where workers' standard error (their JSON log lines and prints) goes; inherited by default.
        iam: the function's permissions, enforced on every AWS call its handler makes (None: no enforcement).
        invocation_hook: the application's hook module in the artifact (``arm``/``disarm``), which crash points
            and clock skew need (:mod:`seglog_emulator.worker_process`); None: ``invoke`` refuses them.
        crash_points: the points the application declares in this function's code (template Metadata
            SeglogEmulator CrashPoints), which crash faults choose from.
        log_level: workers' JSON lines under this level are read (console, metrics) but not copied to ``stderr``.

    Raises:
        ValueError: no code directory, one that does not exist, or a concurrency under 1.
    """

    def __init__(self, function: FunctionSpec, *, code: Sequence[Path], concurrency: int = 1,
                 stderr: int | IO[Any] | None = None, iam: FunctionPermissions | None = None,
                 invocation_hook: str | None = None, crash_points: Sequence[str] = (), log_level: int = 0) -> None:
        self.concurrency = concurrency
        if self.concurrency < 1:
            raise ValueError(f"concurrency of {function.logical_id!r} must be at least 1, got {concurrency}")
        missing = [str(path) for path in code if not Path(path).is_dir()]
        if not code or missing:
            raise ValueError(f"{function.logical_id!r} needs its code directories (the unpacked artifact of "
                             f"`seglog build`); {'none given' if not code else f'missing: {missing}'}")
        self.code = tuple(Path(path).resolve() for path in code)
        self.function = function
        here = f"python{sys.version_info.major}.{sys.version_info.minor}"
        if function.Runtime.startswith("python") and function.Runtime != here:
            log.warning("runtime not installed here: runs on the nearest installed interpreter",
                        function=function.logical_id, runtime=function.Runtime, interpreter=here)
        self._stderr = stderr
        self._hook = invocation_hook
        #: The crash points the application declares in this function (empty without an invocation hook).
        self.crash_points = tuple(crash_points) if invocation_hook else ()
        self._log_level = log_level
        self._iam = iam.to_json() if iam is not None else None
        self._region = (function.Environment.get("AWS_REGION") or os.environ.get("AWS_REGION")
                        or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
        self.arn = function_arn(self._region, LOCAL_ACCOUNT_ID, function.name)
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Condition()
        self._idle: list[WorkerProcess] = []  # most recently used last
        self._workers: dict[int, WorkerProcess] = {}
        self._in_flight = 0
        #: Invocations started so far.
        self.invocations = 0
        self._closed = False

    @property
    def hooked(self) -> bool:
        """Whether the application named an invocation hook: crash points and clock skew can be armed."""
        return self._hook is not None

    # ------------------------------------------------------------------------------------------- invoke

    def invoke(self, event: Any, *, attempt: int = 1, source: str = "",
               crash_points: Iterable[str] = (), timeout: float | None = None, clock_skew: float = 0.0,
               environment: Mapping[str, str] | None = None,
               log_fields: Mapping[str, Any] | None = None,
               crash_after_call: Decision | None = None) -> InvocationResult:
        """Run the handler on ``event`` in a worker and wait for the outcome.

        Args:
            event: the event, as AWS sends it (JSON-serializable).
            attempt: which delivery of this event this is (1 for the first), for the log line.
            source: what sent it (an event source mapping's name, "api", ...), for the log line.
            crash_points: named points at which the worker kills itself during this invocation.
            timeout: ends this invocation as timed out after so many seconds, if sooner than the function's
                timeout (the function_timeout fault: the handler sees the function's own deadline).
            clock_skew: seconds the clock runs ahead during this invocation (the clock_skew fault): the application's
                hook skews its own clock; without one, the worker skews the ``time`` module's wall clock.
            environment: variables set for this invocation only, over the function's own (the mixed_version
                fault: another code version's settings); the worker restores its environment after.
            log_fields: more correlation ids for the invocation's log line (shard, message id, ...).
            crash_after_call: the crash_after_call fault drawn for this delivery: the worker dies as the AWS call
                it names completes (no invocation hook needed).

        Raises:
            InvokerClosedError: after :meth:`close`.
            TypeError: the event is not JSON-serializable.
            ValueError: crash points, and no invocation hook.
        """
        event_json = json.dumps(event)  # once, and here: a bad event is the caller's error, not a worker fault
        crash_points = sorted(set(crash_points))
        if crash_points and self._hook is None:
            raise ValueError(f"{self.function.logical_id!r}: crash points need the application's invocation hook "
                             f"(template Metadata SeglogEmulator.InvocationHook); it names none")
        body: dict[str, Any] = {"invoked_function_arn": self.arn, "crash_points": crash_points}
        if clock_skew:
            body["clock_skew_seconds"] = clock_skew
        if environment:
            body["environment"] = dict(environment)
        armed = request_field(crash_after_call)
        if armed is not None:
            body[REQUEST_FIELD] = armed
        request_id = str(uuid.uuid4())
        ids = {"function": self.function.logical_id, "request_id": request_id, "source": source, "attempt": attempt,
               **(log_fields or {})}
        self._enter()
        try:
            result = self._invoke(request_id, body, event_json, timeout, ids)
        finally:
            self._leave()
        line: dict[str, Any] = {
            **ids, "outcome": str(result.outcome), "duration_ms": round(result.duration_ms, 1), "pid": result.pid,
            "cold_start": result.cold_start, "memory_mb": self.function.MemorySize}
        if clock_skew:
            line["clock_skew_ms"] = round(clock_skew * 1000)
        if environment:
            line["environment"] = dict(environment)
        if armed is not None:
            line[REQUEST_FIELD] = armed["call"]
        if isinstance(event, Mapping) and isinstance(event.get("Records"), list):  # any JSON value is an event
            line["batch_size"] = len(event["Records"])
        if result.init_duration_ms is not None:
            line["init_duration_ms"] = round(result.init_duration_ms, 1)
        if result.usage:
            line["usage"] = result.usage
        if result.cpu_ms is not None:
            line.update(cpu_ms=result.cpu_ms, max_rss_mb=result.max_rss_mb)
        if result.ok:
            log.info("invocation", **line)
        else:
            log.warning("invocation", **line, error_type=result.error_type, error_message=result.error_message)
        return result

    def _invoke(self, request_id: str, body: dict[str, Any], event_json: str,
                cut_short: float | None = None, ids: Mapping[str, Any] | None = None) -> InvocationResult:
        try:
            worker, init_ms = self._checkout()
        except _InitFailedError as exc:
            # Lambda's line for a failed Init (lambda-runtime-environment, "Failures during the Init phase"):
            # INIT_REPORT Init Duration: 1236.04 ms Phase: init Status: error Error Type: Runtime.ImportModuleError
            log.warning("INIT_REPORT", function=self.function.logical_id, init_duration_ms=round(exc.init_ms, 2),
                        phase="init", status="timeout" if exc.outcome is Outcome.TIMEOUT else "error",
                        error_type=exc.error_type, error_message=exc.message)
            return InvocationResult(outcome=exc.outcome, function=self.function.logical_id, request_id=request_id,
                                    pid=exc.pid, duration_ms=exc.init_ms, cold_start=True,
                                    init_duration_ms=exc.init_ms, error_type=exc.error_type,
                                    error_message=exc.message, stack_trace=exc.stack)
        cold = init_ms is not None
        timeout = float(self.function.Timeout)
        # In flight from here: the live console learns it at once (the log keeps it at debug: one line per
        # invocation there is the invocation's end).
        log.debug("invocation started", **(ids or {}), pid=worker.pid, cold_start=cold)
        logfeed.send({"event": "invocation started", **(ids or {}), "pid": worker.pid, "cold_start": cold})
        started = time.monotonic()
        # Lambda's runtime API hands the runtime a wall-clock deadline (Lambda-Runtime-Deadline-Ms); the
        # context counts down to it while this process enforces the same limit on its monotonic clock.
        request = {"request_id": request_id, "deadline_ms": int((time.time() + timeout) * 1000), **body}
        worker.request_id = request_id
        worker.invocations += 1

        def result(outcome: Outcome, **fields: Any) -> InvocationResult:
            return InvocationResult(outcome=outcome, function=self.function.logical_id, request_id=request_id,
                                    pid=worker.pid, duration_ms=(time.monotonic() - started) * 1000,
                                    cold_start=cold, init_duration_ms=init_ms, **fields)

        try:
            worker.send(request, event_json=event_json)
            reply = worker.receive(started + min(timeout, cut_short if cut_short is not None else timeout))
        except TimeoutError:
            worker.kill()
            self._discard(worker)
            return result(Outcome.TIMEOUT, error_type="Sandbox.Timedout",
                          error_message=f"Task timed out after {timeout:.2f} seconds")
        except WorkerDiedError:
            self._discard(worker, grace=EXIT_GRACE_SECONDS)  # let it finish dying, to learn how it ended
            return result(Outcome.CRASHED, error_type="Runtime.ExitError",
                          error_message=f"RequestId: {request_id} Error: Runtime exited with error: "
                                        f"{worker.exit_status()}")
        except BaseException:  # a garbled reply, or the caller interrupted: the worker's state is unknown
            worker.kill()
            self._discard(worker)
            raise
        if reply.get("request_id") != request_id:  # cannot happen with a sound worker: do not trust it again
            worker.kill()
            self._discard(worker)
            return result(Outcome.CRASHED, error_type="Runtime.InvalidResponse",
                          error_message=f"the worker answered {reply.get('request_id')!r}, not {request_id!r}")
        worker.logs_through(request_id)
        self._checkin(worker)
        measured = {"usage": reply.get("usage") or {}, "cpu_ms": reply.get("cpu_ms"),
                    "max_rss_mb": reply.get("max_rss_mb")}
        if reply["status"] == "success":
            return result(Outcome.SUCCESS, payload=reply.get("payload"), **measured)
        return result(Outcome.ERROR, error_type=reply["error_type"], error_message=reply["error_message"],
                      stack_trace=tuple(reply.get("stack_trace", ())), **measured)

    @property
    def in_flight(self) -> int:
        """Invocations running or waiting for a worker now."""
        with self._lock:
            return self._in_flight

    # ------------------------------------------------------------------------------------------- pool

    def _enter(self) -> None:
        with self._lock:
            if self._closed:
                raise InvokerClosedError(self.function.logical_id)
            self._in_flight += 1
            self.invocations += 1
        self._slots.acquire()
        if self._closed:  # closed while this caller waited for a slot
            self._leave()
            raise InvokerClosedError(self.function.logical_id)

    def _leave(self) -> None:
        self._slots.release()
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def _checkout(self) -> tuple[WorkerProcess, float | None]:
        """A warm idle worker (init time None), else a new one after its Init (init time in ms).

        Raises:
            _InitFailedError: the new worker's Init failed, timed out or crashed.
        """
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker, None
                self._workers.pop(worker.pid, None)
                worker.reap()  # killed while idle: the next invocation gets a new environment
        return self._start()

    def _checkin(self, worker: WorkerProcess) -> None:
        with self._lock:
            worker.request_id = None
            if self._closed or not worker.alive():
                self._workers.pop(worker.pid, None)
            else:
                self._idle.append(worker)
                return
        worker.reap(EXIT_GRACE_SECONDS)

    def _discard(self, worker: WorkerProcess, grace: float = 0.0) -> None:
        with self._lock:
            self._workers.pop(worker.pid, None)
        worker.reap(grace)

    def _start(self) -> tuple[WorkerProcess, float]:
        """Start a worker and wait for its Init; returns it and the Init's time in ms.

        Raises:
            _InitFailedError: the Init failed (Lambda's error), timed out, or the process died in it.
        """
        started = time.monotonic()
        worker = WorkerProcess.start(sandbox.command(self.code), self._environment(), stderr=self._stderr,
                                     lane=self.function.logical_id, level=self._log_level)
        with self._lock:
            self._workers[worker.pid] = worker
        init_timeout = max(INIT_TIMEOUT_SECONDS, float(self.function.Timeout))
        try:
            ready = worker.receive(started + init_timeout)
        except TimeoutError:
            worker.kill()
            self._discard(worker)
            raise _InitFailedError(Outcome.TIMEOUT, worker.pid, init_timeout * 1000, "Runtime.InitTimeout",
                                   f"Init timed out after {init_timeout:.2f} seconds") from None
        except WorkerDiedError:
            self._discard(worker, grace=EXIT_GRACE_SECONDS)
            raise _InitFailedError(Outcome.CRASHED, worker.pid, (time.monotonic() - started) * 1000,
                                   "Runtime.ExitError",
                                   f"Init: Runtime exited with error: {worker.exit_status()}") from None
        except BaseException:  # a garbled line, or the caller interrupted: do not keep the process
            worker.kill()
            self._discard(worker)
            raise
        init_ms = (time.monotonic() - started) * 1000
        worker.logs_through("init")
        if ready.get("type") != "ready":
            self._discard(worker, grace=EXIT_GRACE_SECONDS)
            raise _InitFailedError(Outcome.ERROR, worker.pid, init_ms, ready.get("error_type", "Runtime.Unknown"),
                                   ready.get("error_message", ""), ready.get("stack_trace", ()))
        return worker, init_ms

    def _environment(self) -> dict[str, str]:
        """The function's variables, Lambda's reserved ones and the SDK's endpoints (see :mod:`.sandbox`), and the
        function's permissions for the wrapper, which takes them out of the environment before it imports the
        handler."""
        env = sandbox.environment(self.function, code=self.code, region=self._region)
        if self._iam is not None:
            env[IAM_ENV_VAR] = self._iam
        if self._hook is not None:
            env[HOOK_VARIABLE] = self._hook
        return env

    # ------------------------------------------------------------------------------------------- faults

    def workers(self) -> list[WorkerInfo]:
        """The live worker processes, busy or idle."""
        with self._lock:
            idle = {w.pid for w in self._idle}
            return [WorkerInfo(pid=w.pid, busy=w.pid not in idle, request_id=w.request_id,
                               invocations=w.invocations) for w in self._workers.values() if w.alive()]

    def kill(self, pid: int) -> None:
        """kill -9 one of this invoker's workers; its invocation in flight, if any, ends ``crashed``.

        Raises:
            KeyError: ``pid`` is not one of this invoker's live workers.
        """
        with self._lock:
            worker = self._workers.get(pid)
            if worker is None:
                raise KeyError(f"process {pid} is not a worker of {self.function.logical_id!r}: see workers()")
            worker.kill()

    # ------------------------------------------------------------------------------------------- close

    def close(self, grace: float = 30.0) -> None:
        """Stop taking invocations, wait up to ``grace`` seconds for those in flight, then stop every worker.

        Invocations still running after the grace period are killed and end ``crashed``. Idle workers exit on
        their own when their stdin closes, as an environment Lambda shuts down. Callers still waiting for a
        slot get InvokerClosedError when one frees::

            caller A  ──invoke──[ running ........................ ]── result (or crashed, if past grace)
            caller B  ──invoke──[ waits for a slot ]── InvokerClosedError
            close()          ──closed──[ wait ≤ grace for A and B ]──kill busy, close idle──[ wait for reaping ]
        """
        with self._lock:
            self._closed = True
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=grace)
            idle, self._idle = self._idle, []
            for worker in idle:
                self._workers.pop(worker.pid, None)
            for worker in self._workers.values():  # still busy: their invoking threads reap them
                worker.kill()
        for worker in idle:
            worker.reap(EXIT_GRACE_SECONDS)
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=EXIT_GRACE_SECONDS + 5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
