"""The worker process: one warm Lambda execution environment for one function, driven over stdin/stdout.

Started by :class:`seglog_emulator.invoker.LambdaInvoker` in the sandbox :mod:`seglog_emulator.sandbox` makes: an
isolated interpreter whose path is the function's unpacked artifact, this wrapper's runtime directory and the
standard library, with the function's environment already in place (``_HANDLER`` names the handler, as Lambda's
runtime reads it). Everything this module imports at run time must therefore be in the standard library, in the
runtime directory (the emulator modules it imports, found by following its imports, and the SDK Lambda's Python
runtime includes: botocore, boto3) or in the artifact; nothing of the application's, and no logging library: its own
lines are JSON written by :mod:`seglog_emulator.jsonlog`, and the handler configures its logging itself, as on
Lambda. The variables in :data:`WRAPPER_VARIABLES` are read by :func:`main` and removed before the handler is
imported.

An application that has named crash points (DESIGN §7) names, in its template's
``Metadata: SeglogEmulator: InvocationHook``, a module of its artifact with ``arm(points, *, clock_skew)`` and
``disarm()``; the invoker passes that name in :data:`HOOK_VARIABLE`, and the wrapper imports the module (the very
one the handler uses) on the first invocation that carries crash points or a clock skew. An application with no
hook still meets a clock skew: the worker runs the ``time`` module's wall clock ahead for that invocation.

Like Lambda's execution environment lifecycle (AWS Lambda Developer Guide, lambda-runtime-environment) it
runs an Init phase once — import the handler's module — then any number of Invoke phases that reuse the
imported module, its globals and its clients.

Protocol, one JSON object per line (the same data Lambda's Runtime API carries):

    worker -> invoker   {"type": "ready", "pid": 123, "init_ms": 41.2}
                        {"type": "init_error", "error_type": ..., "error_message": ..., "stack_trace": [...]}
    invoker -> worker   {"request_id": ..., "event": {...}, "deadline_ms": 1700000000000,
                         "invoked_function_arn": ..., "crash_points": ["after_claim"],
                         "crash_after_call": {"call": 3, "key": ...},       (optional: the crash_after_call fault)
                         "environment": {"SEGLOG_CHUNK_CELLS": "7"}}      (optional, this invocation only)
    worker -> invoker   {"request_id": ..., "status": "success", "payload": ...}
                        (after writing :data:`DONE_MARK` and the request id on stderr: the invoker's log tap has
                        then copied every line the invocation wrote before ``invoke`` returns)
                        {"request_id": ..., "status": "error", "error_type": ..., "error_message": ...,
                         "stack_trace": [...]}

The invoker's end of the protocol is :class:`seglog_emulator.worker_handle.WorkerProcess`.

The worker keeps private duplicates of the original stdin and stdout; file descriptors 0 and 1 are then
pointed at /dev/null and at standard error, so a handler that prints or reads standard input cannot corrupt
it (Lambda sends a function's standard output to its logs, too). The worker exits when its stdin closes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import logging
import os
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, Final

from seglog_awsmodel.lambda_logging import APPLICATION_LOG_LEVELS
from seglog_emulator import jsonlog
from seglog_emulator.faults.call_crash import REQUEST_FIELD, CallCounter, kill_self
from seglog_emulator.faults.runtime import ENV_DIR, ENV_PLAN, ENV_WRITES
from seglog_emulator.iam import ENV_VAR as IAM_ENV_VAR
from seglog_emulator.usage import UsageCounter

log = jsonlog.get_logger("seglog.worker")

#: Frames kept in an error's stack trace (the innermost ones).
STACK_FRAMES = 30

Handler = Callable[[Any, Any], Any]

#: The application's invocation hook: a module of the artifact, with ``arm(points, *, clock_skew)`` and ``disarm()``.
HOOK_VARIABLE: Final = "SEGLOG_EMULATOR_HOOK"
#: Emulator-only settings the invoker hands the wrapper in its environment (the fault plan and its directory, the
#: function's IAM permissions, the invocation hook), removed from ``os.environ`` before the handler is imported: a
#: handler never sees them, as on AWS.
#: A descriptor the worker inherits: where its lines go if the invoker's log tap is gone (the invoker's own
#: destination), so an invocation that outlives its invoker keeps its log.
FALLBACK_VARIABLE: Final = "SEGLOG_LOG_FALLBACK_FD"
WRAPPER_VARIABLES: Final = (ENV_PLAN, ENV_DIR, ENV_WRITES, IAM_ENV_VAR, HOOK_VARIABLE, FALLBACK_VARIABLE)
#: The wall clock as the worker started: a clock_skew without a hook moves ``time.time``, never the deadline.
_TRUE_TIME: Final = time.time
#: Written on stderr, with the request id, once an invocation is over and before its reply (see the protocol).
DONE_MARK: Final = b"\x1eseglog-invocation-done "

#: How long past its deadline a handler may run before the worker kills itself (the invoker normally kills
#: it first, at the deadline).
DEADLINE_GRACE_SECONDS = 0.5


def _past_deadline(request_id: str) -> None:
    log.error("invocation past its deadline with no invoker to stop it: this worker kills itself",
              request_id=request_id, pid=os.getpid())
    kill_self()


class LambdaContext:
    """The context object Lambda's Python runtime passes to a handler (AWS Lambda Developer Guide,
    python-context): identity of the function and the invocation, and the time left."""

    def __init__(self, *, request_id: str, deadline_ms: int, invoked_function_arn: str) -> None:
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = invoked_function_arn
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.aws_request_id = request_id
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", f"/aws/lambda/{self.function_name}")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity: Any = None
        self.client_context: Any = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the invoker kills this invocation (never negative)."""
        return max(0, self._deadline_ms - int(_TRUE_TIME() * 1000))  # the deadline, whatever skew the handler meets


class InitError(Exception):
    """The handler could not be loaded; carries Lambda's error type (Runtime.ImportModuleError, ...)."""

    def __init__(self, error_type: str, message: str, stack_trace: list[str] | None = None) -> None:
        self.error_type = error_type
        self.message = message
        self.stack_trace = stack_trace or []
        super().__init__(message)


def load_handler(spec: str) -> Handler:
    """Import ``module.function`` (the module may be dotted) the way Lambda's Python runtime does.

    Raises:
        InitError: with the error type Lambda's Python runtime reports for the same failure.
    """
    module_name, _, function_name = spec.rpartition(".")
    if not module_name or not function_name:
        raise InitError("Runtime.MalformedHandlerName", f"Bad handler '{spec}': not enough values to unpack")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InitError("Runtime.ImportModuleError", f"Unable to import module '{module_name}': {exc}",
                        _stack(exc)) from exc
    except SyntaxError as exc:
        raise InitError("Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {exc}",
                        _stack(exc)) from exc
    except Exception as exc:  # module-level code raised: Lambda reports the exception itself
        raise InitError(type(exc).__name__, str(exc), _stack(exc)) from exc
    handler = getattr(module, function_name, None)
    if not callable(handler):
        raise InitError("Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module_name}'")
    return handler  # type: ignore[no-any-return]


def invoke(handler: Handler, request: dict[str, Any], usage: UsageCounter | None = None,
           calls: CallCounter | None = None) -> dict[str, Any]:
    """Run one invocation and return the reply to send (never raises for the handler's exceptions).

    With ``calls``, the invocation's AWS calls are counted, and the request's ``crash_after_call`` kills this
    process as the call it names completes (:mod:`seglog_emulator.faults.call_crash`).

    With ``usage``, the reply carries the AWS requests the invocation made (``usage``, per service). Every reply
    carries the CPU time the invocation took in this process (``cpu_ms``) and the process's peak resident memory
    so far (``max_rss_mb``, Lambda's "Max Memory Used"): bench_memory prices each MemorySize from them."""
    before = usage.totals() if usage is not None else {}
    cpu = time.process_time()
    if calls is not None:
        calls.arm(request.get(REQUEST_FIELD), request_id=str(request.get("request_id", "")))
    try:
        reply = _invoke(handler, request)
    finally:
        if calls is not None:
            calls.disarm()
    reply["cpu_ms"] = round((time.process_time() - cpu) * 1000, 2)
    reply["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux
    if usage is not None:
        reply["usage"] = usage.since(before)
    return reply


def _invoke(handler: Handler, request: dict[str, Any]) -> dict[str, Any]:
    request_id = str(request["request_id"])
    context = LambdaContext(request_id=request_id, deadline_ms=int(request["deadline_ms"]),
                            invoked_function_arn=str(request.get("invoked_function_arn", "")))
    jsonlog.bind(function_name=context.function_name, request_id=request_id)  # the wrapper's own lines
    points, skew = request.get("crash_points") or (), float(request.get("clock_skew_seconds") or 0.0)
    hook = _hook() if points or (skew and _hook_name) else None
    if hook is not None:
        hook.arm(points, clock_skew=skew)
    # The sandbox enforces the timeout itself, as Lambda's does: the invoker kills a late worker too, but an
    # invoker that died (its poller or gateway was killed) cannot, and a handler running past its deadline
    # could then write after a client's retry had already been accepted.
    watchdog = threading.Timer(max(0.0, context.get_remaining_time_in_millis() / 1000) + DEADLINE_GRACE_SECONDS,
                               _past_deadline, args=(request_id,))
    watchdog.daemon = True
    watchdog.start()
    try:
        with _environment(request.get("environment") or {}), _skewed_clock(skew if hook is None else 0.0):
            payload = handler(request["event"], context)
    except Exception as exc:
        log.error("invocation failed", request_id=request_id, error_type=type(exc).__name__, exc_info=True)
        return _error(request_id, type(exc).__name__, str(exc), _stack(exc, skip=1))
    finally:
        watchdog.cancel()
        if hook is not None:
            hook.disarm()
        jsonlog.clear()
    try:
        # Lambda serializes the return value as JSON; what cannot be serialized fails the invocation.
        encoded = json.dumps(payload)
    except (TypeError, ValueError) as exc:
        return _error(request_id, "Runtime.MarshalError", f"Unable to marshal response: {exc}", [])
    return {"request_id": request_id, "status": "success", "payload": json.loads(encoded)}


@contextlib.contextmanager
def _skewed_clock(seconds: float) -> Iterator[None]:
    """clock_skew for an application with no invocation hook: for this invocation the wall clock read through the
    ``time`` module (``time.time()``, ``time.time_ns()``: a DynamoDB TTL, a lease's expiry, a token's age) runs
    ``seconds`` ahead, as on an execution environment whose clock is off. A name bound to the function before
    (``from time import time``) and ``datetime.now()`` keep the true clock (``datetime.datetime`` is not swapped:
    ``isinstance`` checks in the SDK would fail); an application's hook skews its own clock instead."""
    if not seconds:
        yield
        return
    real_time, real_ns = time.time, time.time_ns
    time.time = lambda: real_time() + seconds
    time.time_ns = lambda: real_ns() + int(seconds * 1_000_000_000)
    try:
        yield
    finally:
        time.time, time.time_ns = real_time, real_ns


@contextlib.contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Set ``variables`` for one invocation, then put back what was there (the mixed_version fault runs one
    invocation as another code version, configured otherwise, would; the next one is this version again)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_hook_name: str | None = None
_hook_module: Any = None


def _hook() -> Any:
    """The application's invocation hook (:data:`HOOK_VARIABLE`), imported from the artifact on first use.

    Raises:
        RuntimeError: crash points or a clock skew were asked for and the application names no hook (the
            invoker refuses that before it sends: this is the wrapper's own guard).
    """
    global _hook_module
    if _hook_module is None:
        if not _hook_name:
            raise RuntimeError(f"crash points or a clock skew need an invocation hook ({HOOK_VARIABLE}); "
                               "the application names none")
        _hook_module = importlib.import_module(_hook_name)
    return _hook_module


def main() -> int:
    """Init once, then serve invocations until stdin closes."""
    global _hook_name
    requests, replies = _protocol_streams()
    fallback = os.environ.get(FALLBACK_VARIABLE)
    jsonlog.install_worker_stderr(int(fallback) if fallback else None)
    jsonlog.write_directly()
    _lambda_logging()
    started = time.perf_counter()
    _enforce_iam()
    usage, calls = _instrument()
    _hook_name = os.environ.get(HOOK_VARIABLE) or None
    for name in WRAPPER_VARIABLES:
        os.environ.pop(name, None)
    try:
        handler = load_handler(os.environ["_HANDLER"])
    except InitError as exc:
        log.error("init failed", error_type=exc.error_type, error_message=exc.message)
        _done("init")
        _send(replies, {"type": "init_error", "error_type": exc.error_type, "error_message": exc.message,
                        "stack_trace": exc.stack_trace})
        return 1
    try:
        _done("init")
        _send(replies, {"type": "ready", "pid": os.getpid(), "init_ms": (time.perf_counter() - started) * 1000})
        for line in requests:
            if line.strip():
                reply = invoke(handler, json.loads(line), usage, calls)
                _done(str(reply["request_id"]))
                _send(replies, reply)
    except BrokenPipeError:
        # The invoker is gone (its poller was killed or restarted): nobody waits for the result. The
        # invocation's effects stand, as when Lambda loses the connection to a finishing environment.
        log.warning("invoker gone: this worker exits", pid=os.getpid())
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), replies.fileno())  # no second error on exit's flush
        return 0
    return 0


def _done(request_id: str) -> None:
    """Tell the invoker's log tap that every line of ``request_id`` ("init": of the Init) is written."""
    for stream in (sys.stdout, sys.stderr):  # a handler's unfinished print() line first
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    jsonlog.write_line(DONE_MARK + request_id.encode() + b"\n")


class _LambdaLogHandler(logging.Handler):
    """The standard library's log as Lambda's Python runtime writes it in its text format: ``[LEVEL]``, the UTC
    time, the request id and the message, tab-separated, on one line (AWS Lambda Developer Guide, python-logging:
    "Using the Python logging library"). Lambda's runtime installs such a handler on the root logger, whose level
    stays WARNING until the function sets another."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            when = dt.datetime.fromtimestamp(record.created, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            text = self.format(record).replace("\n", "\r")  # one line: Lambda's runtime does the same
            jsonlog.write_line(f"[{record.levelname}]\t{when}Z\t{jsonlog.current_request_id()}\t{text}\n".encode())
        except Exception:
            self.handleError(record)


class _LambdaJsonLogHandler(logging.Handler):
    """The standard library's log as Lambda's Python runtime writes it with ``LoggingConfig: LogFormat: JSON``: one
    JSON object a line, with ``timestamp`` (UTC, milliseconds), ``level``, ``message``, ``logger`` and
    ``requestId``, a record's ``extra`` fields, and for an exception ``errorType``, ``errorMessage``, ``stackTrace``
    and ``location`` (AWS Lambda Developer Guide, python-logging: "Using Lambda advanced logging controls")."""

    _OWN = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            when = dt.datetime.fromtimestamp(record.created, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            line: dict[str, Any] = {"timestamp": when, "level": logging.getLevelName(record.levelno // 10 * 10),
                                    "message": record.getMessage(), "logger": record.name,
                                    "requestId": jsonlog.current_request_id() or None}
            if record.exc_info and record.exc_info[0] is not None:
                line.update(errorType=record.exc_info[0].__name__, errorMessage=str(record.exc_info[1]),
                            stackTrace=traceback.format_tb(record.exc_info[2]),
                            location=f"{record.pathname}:{record.funcName}:{record.lineno}")
            line.update((k, v) for k, v in vars(record).items() if k not in self._OWN and k not in line)
            text = json.dumps({k: v for k, v in line.items() if v is not None}, default=str, ensure_ascii=False)
            jsonlog.write_line(text.encode() + b"\n")
        except Exception:
            self.handleError(record)


def _lambda_logging() -> None:
    root = logging.getLogger()
    if os.environ.get("AWS_LAMBDA_LOG_FORMAT") == "JSON":
        root.addHandler(_LambdaJsonLogHandler())
        root.setLevel(APPLICATION_LOG_LEVELS.get(os.environ.get("AWS_LAMBDA_LOG_LEVEL", ""), logging.INFO))
    else:
        root.addHandler(_LambdaLogHandler())
        root.setLevel(logging.WARNING)


def _enforce_iam() -> None:
    """IAM as AWS enforces it (:mod:`seglog_emulator.iam`): the invoker passed the function's permissions in one
    emulator-only variable, which is removed from the environment here, before the handler is imported, so the
    function never sees it. Every boto3 client built from now on evaluates its calls against them; installed
    before the fault and usage hooks, so a denied call is neither faulted nor sent."""
    from seglog_emulator.iam.guard import install_from_env

    install_from_env()


def _instrument() -> tuple[UsageCounter, CallCounter]:
    """Count every AWS request the handler makes and each invocation's calls (the crash_after_call fault needs
    them, :mod:`seglog_emulator.faults.call_crash`) and, when the supervisor set a fault plan, inject its
    DynamoDB and S3 faults (:mod:`seglog_emulator.faults.runtime`) — on each client as it is built. The call
    counter goes before the injector, whose after-call hooks may raise."""
    from seglog_emulator.client_hooks import attach_to_every_client
    from seglog_emulator.faults.runtime import install_in_worker

    process = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "worker")
    usage = UsageCounter()
    calls = CallCounter.for_worker(process)
    attach_to_every_client(calls.attach)
    attach_to_every_client(usage.attach)
    install_in_worker(process)
    return usage, calls


def _protocol_streams() -> tuple[IO[bytes], IO[bytes]]:
    """Take fds 0 and 1 for the protocol; leave the handler /dev/null as stdin and stderr as stdout."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return requests, replies


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def _error(request_id: str, error_type: str, message: str, stack: list[str]) -> dict[str, Any]:
    return {"request_id": request_id, "status": "error", "error_type": error_type, "error_message": message,
            "stack_trace": stack}


def _stack(exc: BaseException, *, skip: int = 0) -> list[str]:
    """Lambda's ``stackTrace``: one formatted frame per entry, innermost last; ``skip`` drops our own frames."""
    frames = traceback.extract_tb(exc.__traceback__)[skip:]
    return traceback.format_list(frames[-STACK_FRAMES:])


if __name__ == "__main__":
    sys.exit(main())
