"""The Lambda Invoke API, so that one function's ``boto3.client("lambda").invoke(...)`` reaches another function of
the template (issue 36, point 3): the supervisor runs this server when a function's policies may invoke one, and
points every worker's SDK at it (``AWS_ENDPOINT_URL_LAMBDA``; the SDK's service-specific endpoint variable).

What it answers, as Lambda does (AWS Lambda API Reference, API_Invoke; Developer Guide, invocation-async,
invocation-async-retain-records):

1. ``POST /2015-03-31/functions/{FunctionName}/invocations``; the name may be the function's name (the emulator
   runs a function under its logical id, which ``!Ref Function`` gives), its ARN or ``name:qualifier``. Anything
   else: 404 ``ResourceNotFoundException`` ("Function not found: <arn>"); a body that is not JSON: 400
   ``InvalidRequestContentException``.
2. ``RequestResponse`` (the default): runs the function and answers 200 with its return value as JSON; a function
   error (or a crash, or a timeout) is still 200, with ``X-Amz-Function-Error: Unhandled`` and the error's
   ``errorMessage``/``errorType``/``stackTrace`` as the payload.
3. ``Event``: answers 202 at once and runs the function in the background; a failed try is retried after 1 and
   then 2 minutes, at most ``EventInvokeConfig.MaximumRetryAttempts`` times (2 by default) while the event is
   younger than ``MaximumEventAgeInSeconds`` (6 h); when retries are exhausted the event goes to the
   ``OnFailure`` destination (an SQS queue: a record with ``requestContext``, ``requestPayload``,
   ``responseContext`` and ``responsePayload``), else to the function's ``DeadLetterQueue`` (the event as the
   message body, with RequestID, ErrorCode and ErrorMessage message attributes).
4. ``DryRun``: 204, nothing run.

::

    caller worker ──invoke(Event)──► LambdaApi ──202──► caller
                                        └─ thread: try ─✗─ 60 s ─ try ─✗─ 120 s ─ try ─✗─► OnFailure queue
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import structlog

from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import FaultKind
from seglog_awsmodel.template import Template
from seglog_emulator.faults.call_crash import draw_crash_after_call
from seglog_emulator.faults.invocation import draw_clock_skew, draw_timeout
from seglog_emulator.faults.schedule import Decision, FaultSchedule
from seglog_emulator.iam import arns
from seglog_emulator.invoker import LOCAL_ACCOUNT_ID, InvocationResult
from seglog_emulator.pollers.common import Invoker

log = structlog.get_logger("seglog.lambda_api")

#: Where the SDK finds the Lambda endpoint (the service-specific form of AWS_ENDPOINT_URL).
ENDPOINT_VARIABLE: Final = "AWS_ENDPOINT_URL_LAMBDA"
#: The listening socket the supervisor hands its Lambda API child (the API's own, like the gateway's).
LISTENER_ENV: Final = "SEGLOG_LAMBDA_LISTENER_FD"
_PREFIX: Final = "/2015-03-31/functions/"
#: Lambda's waits before the first and the second retry of an asynchronous invocation (invocation-async).
RETRY_DELAYS: Final = (60.0, 120.0)
DEFAULT_RETRIES: Final = 2
DEFAULT_MAX_AGE: Final = 21600
#: Invoke's payload limits: "For synchronous invocations, the maximum payload size is 6 MB. For asynchronous
#: invocations, the maximum payload size is 1 MB" (Lambda API Reference, API_Invoke).
MAX_REQUEST_PAYLOAD: Final = 6 * 1024 * 1024
MAX_EVENT_PAYLOAD: Final = 1024 * 1024


def wanted(template: Template) -> bool:
    """Whether any function may invoke another: a policy of the template grants lambda:InvokeFunction (SAM's
    LambdaInvokePolicy, or a statement naming the action or lambda:*)."""
    text = json.dumps(template.resources)
    return any(marker in text for marker in ("LambdaInvokePolicy", "lambda:InvokeFunction", '"lambda:*"'))


@dataclass(frozen=True, kw_only=True)
class AsyncConfig:
    """A function's handling of asynchronous invocations (EventInvokeConfig, DeadLetterQueue)."""

    max_retries: int = DEFAULT_RETRIES
    max_age: float = DEFAULT_MAX_AGE
    #: OnFailure destination: an SQS queue's URL.
    on_failure: str | None = None
    #: DeadLetterQueue: an SQS queue's URL (used when there is no OnFailure destination).
    dead_letter: str | None = None


def async_configs(template: Template, resolve: Callable[[Any], Any], queue_url: Callable[[str], str],
                  ) -> dict[str, AsyncConfig]:
    """Each function's :class:`AsyncConfig` from its (and Globals') EventInvokeConfig and DeadLetterQueue;
    ``resolve`` resolves intrinsics, ``queue_url`` makes a queue's URL of its ARN."""
    global_props = (template.body.get("Globals") or {}).get("Function") or {}
    found = {}
    for logical, res in template.resources.items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = {**global_props, **(res.get("Properties") or {})}
        config = props.get("EventInvokeConfig") or {}
        on_failure = ((config.get("DestinationConfig") or {}).get("OnFailure") or {})
        dead = props.get("DeadLetterQueue") or {}

        def url(value: Any) -> str | None:
            arn = resolve(value) if isinstance(value, Mapping) else value
            return queue_url(str(arn)) if arn else None

        found[logical] = AsyncConfig(
            max_retries=int(config.get("MaximumRetryAttempts", DEFAULT_RETRIES)),
            max_age=float(config.get("MaximumEventAgeInSeconds", DEFAULT_MAX_AGE)),
            on_failure=url(on_failure.get("Destination")) if on_failure.get("Type") == "SQS" else None,
            dead_letter=url(dead.get("TargetArn")) if dead.get("Type") == "SQS" else None)
    return found


class AsyncInvoker:
    """Lambda's asynchronous invocation of a function (invocation-async): the event is accepted at once, then tried,
    retried after 1 and 2 minutes while retries and the event's age allow, and on failure sent to the function's
    OnFailure destination or its DeadLetterQueue (see the module docstring). Used for Invoke's Event type and for the
    services that invoke asynchronously (S3 notifications).

    Args:
        invoker: the invoker of a function by logical id.
        configs: each function's asynchronous handling.
        sqs: a client for the destinations and dead-letter queues.
        sleep: waits between retries (a test's clock).
        faults: the seeded schedule, if faults are in play (crash_after_call, per try of an event).
    """

    def __init__(self, invoker: Callable[[str], Invoker], *, configs: Mapping[str, AsyncConfig], sqs: Any,
                 region: str, sleep: Callable[[float], None] = time.sleep,
                 faults: FaultSchedule | None = None) -> None:
        self.invoker = invoker
        self.configs = configs
        self.sqs = sqs
        self.region = region
        self.sleep = sleep
        self.faults = faults
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._unfinished = 0

    @property
    def unfinished(self) -> int:
        """Events accepted and not yet done with: running, or waiting for a retry (Lambda's waits of 1 and 2
        minutes), which no invoker counts as in flight (a chaos run waits for them before it judges)."""
        with self._lock:
            return self._unfinished

    def submit(self, function: str, event: Any, *, source: str, delay: float = 0.0) -> None:
        """Accept ``event`` for ``function``; it runs on a thread of its own, after ``delay`` seconds (a late
        delivery: the reorder fault)."""
        with self._lock:
            self._unfinished += 1
        thread = threading.Thread(target=self._run_counted, args=(function, event, source, delay), daemon=True,
                                  name=f"async {function}")
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _run_counted(self, function: str, event: Any, source: str, delay: float) -> None:
        try:
            if delay:
                self.sleep(delay)
            self._run(function, event, source)
        finally:
            with self._lock:
                self._unfinished -= 1

    def join(self, timeout: float) -> None:
        """Wait for the invocations accepted so far (a test's, or a draining child's)."""
        for thread in list(self._threads):
            thread.join(timeout)

    def _run(self, function: str, event: Any, source: str) -> None:
        config = self.configs.get(function, AsyncConfig())
        started = time.monotonic()
        result: InvocationResult | None = None
        for attempt in range(1, config.max_retries + 2):
            if attempt > 1:
                self.sleep(RETRY_DELAYS[min(attempt - 2, len(RETRY_DELAYS) - 1)])
                if time.monotonic() - started > config.max_age:
                    break
            delivery = (source, function, site(event), attempt)
            result = self.invoker(function).invoke(
                event, attempt=attempt, source=source, crash_after_call=draw_crash_after_call(self.faults, *delivery),
                timeout=draw_timeout(self.faults, site("timeout", *delivery)),
                clock_skew=draw_clock_skew(self.faults, site("skew", *delivery)))
            if result.ok:
                return
        assert result is not None
        self._failed(function, event, result, attempts=attempt)

    def _failed(self, function: str, event: Any, result: InvocationResult, *, attempts: int) -> None:
        config = self.configs.get(function, AsyncConfig())
        if config.on_failure is not None:
            record = {
                "version": "1.0", "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace(
                    "+00:00", "Z"),
                "requestContext": {"requestId": result.request_id,
                                   "functionArn": f"{function_arn(self.region, function)}:$LATEST",
                                   "condition": "RetriesExhausted", "approximateInvokeCount": attempts},
                "requestPayload": event,
                "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
                "responsePayload": _payload(result)}
            self.sqs.send_message(QueueUrl=config.on_failure, MessageBody=json.dumps(record))
            log.warning("asynchronous invocation failed: sent to its OnFailure destination", function=function,
                        request_id=result.request_id, attempts=attempts)
        elif config.dead_letter is not None:
            self.sqs.send_message(QueueUrl=config.dead_letter, MessageBody=json.dumps(event), MessageAttributes={
                "RequestID": {"DataType": "String", "StringValue": result.request_id},
                "ErrorCode": {"DataType": "Number", "StringValue": "200"},
                "ErrorMessage": {"DataType": "String", "StringValue": (result.error_message or "")[:256]}})
            log.warning("asynchronous invocation failed: sent to its dead-letter queue", function=function,
                        request_id=result.request_id, attempts=attempts)
        else:
            log.warning("asynchronous invocation failed: discarded (no OnFailure destination, no DeadLetterQueue)",
                        function=function, request_id=result.request_id, attempts=attempts)


class LambdaApi:
    """Answers Invoke for the template's functions (see the module docstring).

    Args:
        names: every name a caller may use for a function -> its logical id.
        invoker: the invoker of a function by logical id (made on first use by the caller of this class).
        configs: each function's asynchronous handling.
        sqs: a client for the destinations and dead-letter queues.
        sleep: waits between retries (a test's clock).
        faults: the seeded schedule, if faults are in play (crash_after_call, per invocation).
    """

    def __init__(self, names: Mapping[str, str], invoker: Callable[[str], Invoker], *,
                 configs: Mapping[str, AsyncConfig], sqs: Any, region: str,
                 sleep: Callable[[float], None] = time.sleep, faults: FaultSchedule | None = None) -> None:
        self.names = dict(names)
        self.invoker = invoker
        self.region = region
        self.faults = faults
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        #: Runs the Event invocations.
        self.asynchronous = AsyncInvoker(invoker, configs=configs, sqs=sqs, region=region, sleep=sleep,
                                         faults=faults)

    def arn(self, function: str) -> str:
        return function_arn(self.region, function)

    def function_of(self, name: str) -> str | None:
        """The logical id ``name`` (a name, ARN or name:qualifier) stands for, or None."""
        if name.startswith("arn:"):
            parts = name.split(":")
            name = parts[6] if len(parts) > 6 else ""
        else:
            name = name.split(":", 1)[0]
        return self.names.get(name)

    def answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[
            int, dict[str, str], bytes]:
        """(status, headers, body) for one request."""
        route = urlsplit(path).path
        if method != "POST" or not route.startswith(_PREFIX) or not route.endswith("/invocations"):
            return _error(400, "InvalidRequestContentException",
                          f"the emulator's Lambda endpoint answers Invoke only, not {method} {route}")
        name = unquote(route[len(_PREFIX):-len("/invocations")])
        function = self.function_of(name)
        if function is None:
            return _error(404, "ResourceNotFoundException", f"Function not found: {self.arn(name)}")
        try:
            event = json.loads(body) if body.strip() else {}
        except ValueError as exc:
            return _error(400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}")
        kind = headers.get("x-amz-invocation-type", "RequestResponse")
        limit = MAX_EVENT_PAYLOAD if kind == "Event" else MAX_REQUEST_PAYLOAD
        if len(body) > limit:  # an app's fallback for large payloads (to S3, say) must meet the same wall as on AWS
            return _error(413, "RequestEntityTooLargeException",
                          f"Request must be smaller than {limit} bytes for the InvokeFunction operation")
        if kind == "DryRun":
            return 204, {}, b""
        if kind == "Event":
            for _ in range(1 + self._copies(function, event)):
                self.asynchronous.submit(function, event, source="lambda-event")
            return 202, {}, b""
        if kind != "RequestResponse":
            return _error(400, "InvalidParameterValueException",
                          f"X-Amz-Invocation-Type {kind!r}: send RequestResponse, Event or DryRun")
        crash, timeout, skew = self._invocation_faults(function, event)
        result = self.invoker(function).invoke(event, source="lambda-invoke", crash_after_call=crash, timeout=timeout,
                                               clock_skew=skew)
        answer_headers = {"x-amz-executed-version": "$LATEST", "content-type": "application/json"}
        if not result.ok:
            answer_headers["x-amz-function-error"] = "Unhandled"
        return 200, answer_headers, json.dumps(_payload(result)).encode()

    def _invocation_faults(self, function: str, event: Any) -> tuple[Decision | None, float | None, float]:
        """crash_after_call, function_timeout and clock_skew for a synchronous Invoke: their site is the function, the
        event and how many times that event came (a caller's retry rolls again). The caller gets a crash or a timeout
        as a function error, as from Lambda."""
        if self.faults is None:
            return None, None, 0.0
        request = site(function, event)
        with self._lock:
            self._seen[request] += 1
            n = self._seen[request]
        return (draw_crash_after_call(self.faults, "lambda-invoke", request, n),
                draw_timeout(self.faults, site("timeout", "lambda-invoke", request, n)),
                draw_clock_skew(self.faults, site("skew", "lambda-invoke", request, n)))

    def _copies(self, function: str, event: Any) -> int:
        """duplicate_delivery for an ``Event`` Invoke: how many more times the event is handed to the function.
        Lambda's internal queue is eventually consistent: "even if your function doesn't return an error, it's
        possible for it to receive the same event from Lambda multiple times" (AWS Lambda Developer Guide,
        invocation-async-error-handling). Its site is the function, the event and how many times it came."""
        if self.faults is None:
            return 0
        request = site(function, event)
        with self._lock:
            self._seen[f"event:{request}"] += 1
            n = self._seen[f"event:{request}"]
        decision = self.faults.decide(FaultKind.DUPLICATE_DELIVERY, site("lambda-event", request, n))
        if decision is None:
            return 0
        log.warning("event delivered again (injected fault)", function=function, key=decision.key)
        return decision.amount or 1

    def server(self, sock: Any) -> ThreadingHTTPServer:
        """An HTTP server answering on the listening socket ``sock``."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    status, answer_headers, payload = api.answer(self.command, self.path, headers, body)
                except Exception as exc:  # never leave a caller hanging
                    log.error("lambda api failed", error=str(exc), exc_info=True)
                    status, answer_headers, payload = _error(500, "ServiceException", str(exc))
                self.send_response(status)
                for name, value in answer_headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_DELETE = do_POST  # the same answer: Invoke only

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(sock.getsockname()[:2], Handler, bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.daemon_threads = True
        return server


def function_arn(region: str, function: str) -> str:
    return arns.function_arn(region, LOCAL_ACCOUNT_ID, function)


def _payload(result: InvocationResult) -> Any:
    if result.ok:
        return result.payload
    return {"errorMessage": result.error_message or "", "errorType": result.error_type or "Unhandled",
            "requestId": result.request_id, "stackTrace": list(result.stack_trace)}


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"x-amzn-errortype": code, "content-type": "application/json"}, json.dumps(
        {"Type": "User", "message": message}).encode()
