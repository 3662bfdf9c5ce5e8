"""Gateway: an HTTP server in front of the API function, speaking API Gateway HTTP API payload 2.0 (DESIGN §8).

Each request becomes the event API Gateway sends (:func:`seglog_awsmodel.events.api_gateway.request_event`), with
the route key of the template's HttpApi event that matches (:func:`~seglog_awsmodel.events.api_gateway.match_route`;
the simulator's in-process gateway builds its events with the same two); the handler's return value becomes the
response
(:func:`~seglog_awsmodel.events.api_gateway.http_api_response`), as API Gateway makes it. A function error or a
crash answers 500 ``{"message":"Internal Server Error"}`` and a timeout 503 ``{"message":"Service
Unavailable"}``, API Gateway's own answers (Amazon API Gateway Developer Guide, http-api-troubleshooting-lambda);
a path no route matches answers 404 ``{"message":"Not Found"}``. Clients use one base URL, locally and on AWS.
An answer from the integration (or API Gateway's 500/503 for it) names the request in the ``apigw-requestid``
header, the event's ``requestContext.requestId``, which the invocation's log line carries as ``api_request_id``
(:data:`seglog_client.hooks.REQUEST_ID_HEADER`, where the AWS page is cited).

Before the function runs, the gateway does what API Gateway does for the route: an AWS_IAM route needs a valid
SigV4 signature (:mod:`seglog_emulator.api_auth`: 403 and API Gateway's message otherwise; the event then carries
``requestContext.authorizer.iam``), and with a CorsConfiguration a preflight no route catches is answered by the
gateway itself, and answers to allowed origins carry the CORS headers (:mod:`seglog_awsmodel.cors`).

Fault (DESIGN §7): lost_response — the function ran (the write happened) but the connection is closed
without an answer, so the client sees an error and must retry safely (with its entry id).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import structlog

from seglog_awsmodel.config import AWS_IAM, HttpRoute
from seglog_awsmodel.cors import PREFLIGHT_STATUS, CorsConfiguration, is_preflight
from seglog_awsmodel.events.api_gateway import (
    function_failure,
    http_api_response,
    match_route,
    query_pairs,
    request_event,
)
from seglog_awsmodel.events.api_gateway_v1 import (
    MISSING_AUTHENTICATION_TOKEN,
    function_failure_v1,
    proxy_response,
    request_event_v1,
)
from seglog_awsmodel.fault_sites import site
from seglog_awsmodel.faults import FaultKind
from seglog_client.hooks import REQUEST_ID_HEADER
from seglog_client.sigv4 import header_map
from seglog_emulator.access_log import AccessLog
from seglog_emulator.api_auth import IamAuthorizer, Refusal
from seglog_emulator.faults.call_crash import draw_crash_after_call
from seglog_emulator.faults.invocation import draw_clock_skew, draw_timeout
from seglog_emulator.faults.schedule import Decision, FaultSchedule
from seglog_emulator.invoker import Outcome
from seglog_emulator.pollers.common import Invoker

log = structlog.get_logger("seglog.gateway")

#: Payloads larger than this are refused, as API Gateway refuses them (HTTP API quotas: 10 MB payload).
MAX_BODY_BYTES = 10 * 1024 * 1024

_ERRORS = {
    404: b'{"message":"Not Found"}',
    413: b'{"message":"Request Entity Too Large"}',
    500: b'{"message":"Internal Server Error"}',
}


class Gateway:
    """Serves the routes of one API on ``host:port`` until :meth:`stop`, each by the function its route names.

    Args:
        routes: the API's HttpApi events, of any number of functions.
        invoker: runs the functions: one invoker per function's logical id, or one for every route.
        faults: the seeded schedule, if faults are in play.
        authorizer: verifies the signatures of AWS_IAM routes (required when a route has that authorizer).
        cors: the API's CorsConfiguration, if it has one.
        access_log: the API's access log (AccessLogSettings), if it has one: one line per request.
    """

    def __init__(self, routes: Sequence[HttpRoute], invoker: Invoker | Mapping[str, Invoker], *,
                 host: str = "127.0.0.1", port: int = 0,
                 faults: FaultSchedule | None = None, authorizer: IamAuthorizer | None = None,
                 cors: CorsConfiguration | None = None, access_log: AccessLog | None = None,
                 sock: socket.socket | None = None) -> None:
        guarded = [f"{r.Method} {r.Path}" for r in routes if r.Authorizer == AWS_IAM]
        if guarded and authorizer is None:
            raise ValueError(f"routes {guarded} need IAM authorization: give the gateway an IamAuthorizer")
        self.routes = tuple(routes)
        self.invokers: Mapping[str, Invoker] = (
            invoker if isinstance(invoker, Mapping) else {r.function: invoker for r in self.routes})
        missing = sorted({r.function for r in self.routes} - set(self.invokers))
        if missing:
            raise ValueError(f"no invoker for the functions of routes: {missing}")
        self.faults = faults
        self.authorizer = authorizer
        self.cors = cors
        self.access_log = access_log
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        if sock is None:
            self.server = ThreadingHTTPServer((host, port), self._handler_class())
        else:  # a listening socket that outlives this process (seglog_emulator.settings.LISTENER_ENV)
            self.server = ThreadingHTTPServer(sock.getsockname()[:2], self._handler_class(), bind_and_activate=False)
            self.server.socket.close()
            self.server.socket = sock
            self.server.server_address = sock.getsockname()[:2]
            self.server.server_name, self.server.server_port = host, self.server.server_address[1]
        self.server.daemon_threads = True
        self.requests = 0
        #: A REST API's gateway (its routes are Api events): its errors and stage-prefixed paths are REST's.
        self.rest = bool(self.routes) and all(r.Rest for r in self.routes)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def serve(self) -> None:
        log.info("gateway listening", url=self.url, routes=[f"{r.Method} {r.Path}" for r in self.routes])
        self.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------------------------------ a request

    def answer(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, *,
               source_ip: str = "127.0.0.1") -> tuple[int, list[tuple[str, str]], bytes] | None:
        """The response to one request from a client at ``source_ip``, or None to drop the connection (an
        injected lost response); with an access log, one line for it."""
        if self.access_log is None:
            return self._answer(method, target, headers, body, {}, source_ip)
        started = time.time()
        context: dict[str, Any] = {
            "httpMethod": method, "path": urlsplit(target).path or "/", "protocol": "HTTP/1.1",
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(started)),
            "requestTimeEpoch": int(started * 1000)}
        reply = self._answer(method, target, headers, body, context, source_ip)
        context.setdefault("status", reply[0] if reply is not None else None)
        context["responseLatency"] = int((time.time() - started) * 1000)
        self.access_log.write(context)
        return reply

    def _answer(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes,
                context: dict[str, Any], source_ip: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        with self._lock:
            self.requests += 1
        parts = urlsplit(target)
        path = parts.path or "/"
        fields = header_map(headers)
        if self.rest:  # the deployed URL names the stage (/Prod/orders/1); sam local's does not (/orders/1)
            stage, _, rest_of_path = path[1:].partition("/")
            if stage in {r.Stage for r in self.routes}:
                path = f"/{rest_of_path}"
                target = path + (f"?{parts.query}" if parts.query else "")
        matched = match_route(self.routes, method, path)
        if matched is None:
            if self.cors is not None and is_preflight(method, fields):
                return PREFLIGHT_STATUS, self.cors.preflight(fields), b""
            if self.rest:  # a REST API answers a path it has no resource for as an unsigned request
                status, headers_, payload_ = MISSING_AUTHENTICATION_TOKEN
                return status, list(headers_), payload_
            return 404, [("content-type", "application/json")], _ERRORS[404]
        if len(body) > MAX_BODY_BYTES:
            return 413, [("content-type", "application/json")], _ERRORS[413]
        route, key, path_parameters = matched
        authorized = None
        if route.Authorizer == AWS_IAM:
            assert self.authorizer is not None  # checked in __init__
            # The signature is checked against the query's pairs as the event will carry them: one decoding
            # decides both what was signed and what the function gets.
            verdict = self.authorizer.authorize(method, parts.path or "/", query_pairs(parts.query), fields,
                                                body or None)  # the path as signed (a stage in it too)
            if isinstance(verdict, Refusal):
                log.info("request refused", method=method, path=path, error_type=verdict.error_type)
                return verdict.response()
            authorized = {"iam": verdict.iam_context()}
            context["identity.userArn"] = authorized["iam"]["userArn"]
        # The listener is this server's: plain HTTP on its port (x-forwarded-port, x-forwarded-proto).
        listener = (self.server.server_address[1], "http")
        v1 = route.PayloadFormatVersion == "1.0"
        if v1:
            event = request_event_v1(method, target, headers, body, resource=route.Path,
                                     path_parameters=path_parameters, rest=route.Rest, stage=route.Stage,
                                     authorizer=authorized, source_ip=source_ip, listener=listener)
        else:
            event = request_event(method, target, headers, body, route_key=key, path_parameters=path_parameters,
                                  authorizer=authorized, source_ip=source_ip, listener=listener)
        request = event["requestContext"]
        context.update({"requestId": request["requestId"], "routeKey": key, "identity.sourceIp": source_ip})
        # The invocation's log line and the answer both carry the request id, so a client's try can be matched
        # with the invocation that served it (the report's "served by" link).
        crash, timeout, skew = self._invocation_faults(method, path, body)
        result = self.invokers[route.function].invoke(event, source="api", log_fields={
            "method": method, "path": path, "api_request_id": request["requestId"]},
            crash_after_call=crash, timeout=timeout, clock_skew=skew)
        named = [(REQUEST_ID_HEADER, request["requestId"])]
        if not result.ok:
            context["integrationErrorMessage"] = result.error_message
            timed_out = result.outcome is Outcome.TIMEOUT
            status, answer_headers, payload = (function_failure_v1(rest=route.Rest, timed_out=timed_out) if v1
                                               else function_failure(timed_out=timed_out))
            return status, answer_headers + named, payload
        if self._lose(method, path, body):
            return None
        status, answer_headers, payload = (proxy_response(result.payload, rest=route.Rest) if v1
                                           else http_api_response(result.payload))
        if self.cors is not None:
            answer_headers = self.cors.response(fields, answer_headers)
        return status, [*answer_headers, *named], payload

    def _invocation_faults(self, method: str, path: str,
                           body: bytes) -> tuple[Decision | None, float | None, float]:
        """crash_after_call, function_timeout and clock_skew for this request: their site is the request and how many
        times it came (a client's retry rolls again). A crashed or timed-out function is answered as API Gateway
        answers any function that did not return."""
        if self.faults is None:
            return None, None, 0.0
        request = site(method.upper(), path, body.decode("utf-8", "replace"))
        with self._lock:
            self._seen[f"call:{request}"] += 1
            n = self._seen[f"call:{request}"]
        return (draw_crash_after_call(self.faults, "gateway", request, n),
                draw_timeout(self.faults, site("timeout", "gateway", request, n)),
                draw_clock_skew(self.faults, site("skew", "gateway", request, n)))

    def _lose(self, method: str, path: str, body: bytes) -> bool:
        if self.faults is None or method.upper() in ("GET", "HEAD", "OPTIONS"):
            return False
        request = site(method.upper(), path, body.decode("utf-8", "replace"))
        with self._lock:
            self._seen[request] += 1
            n = self._seen[request]
        return self.faults.decide(FaultKind.LOST_RESPONSE, site("gateway", request, n)) is not None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    answer = gateway.answer(self.command, self.path, list(self.headers.items()), body,
                                            source_ip=self.client_address[0])
                except Exception as exc:  # never leave a client hanging
                    log.error("gateway failed", error=str(exc), exc_info=True)
                    answer = 500, [("content-type", "application/json")], _ERRORS[500]
                if answer is None:
                    log.warning("response dropped (injected lost_response)", method=self.command, path=self.path)
                    self.close_connection = True
                    return
                status, headers, payload = answer
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection"):
                        self.send_header(name, value)
                if status != 204:  # a 204 carries no body, and no Content-Length (RFC 9110 §8.6)
                    self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

            def __getattr__(self, name: str) -> Any:
                # Any other method (TRACE, CONNECT, a made-up one) goes the same way and, no route declaring it,
                # is answered 404 {"message":"Not Found"} as an HTTP API answers it, not http.server's 501 page
                # (only a $default route catches what no route matches: API Gateway Developer Guide, "Create
                # routes for HTTP APIs", https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-routes.html).
                if name.startswith("do_"):
                    return self._serve
                raise AttributeError(name)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the invoker logs one line per request

        return Handler
